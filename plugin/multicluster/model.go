// The model every answer is read from: a view of one service (its flags,
// addresses, ports and, for a headless import, its endpoints by slice) and
// the keys and ports it is made of.

package multicluster

import (
	"cmp"
	"net"
	"slices"
)

// serviceKey names a service in the cluster set.
type serviceKey struct {
	namespace string
	name      string
}

func (k serviceKey) String() string { return k.namespace + "/" + k.name }

// servicePort is a port of an import, names and protocols lower case as DNS
// names them.
type servicePort struct {
	name     string
	protocol string
	port     uint16
}

// endpoint is one ready address of a headless import. Its cluster is its
// slice's.
type endpoint struct {
	// host is the endpoint's hostname, else its address with '.' and ':'
	// turned into '-'; empty when it has no host.cluster name (its slice
	// names no cluster, or the name would not fit in a DNS name).
	host string
	ip   net.IP // in the slice's one array of addresses
	v6   bool
	// named: host is the endpoint's hostname, not made of its address.
	named bool
}

// addressSource says where the prepared addresses of a ClusterSetIP view
// come from. A derived Service, read at query time, ranks between the two:
// an answer's addresses may come from one (clusterSetIPs), a view's never.
type addressSource uint8

const (
	sourceNone    addressSource = iota // no static address: only a derived Service can answer
	sourceSpec                         // spec.ips: they answer, whatever else exists
	sourceSlices                       // the ready addresses of the import's slices
	sourceDerived                      // the derived Service its annotation names
	sourcePrefix                       // the derived Service derived_prefix names
)

// view is everything the answers for one service need, prepared once when
// the objects behind it change. Views are immutable once published: readers
// use them without locks.
type view struct {
	key      serviceKey
	headless bool
	source   addressSource
	// preferClose: spec.trafficDistribution prefers close endpoints.
	preferClose bool
	// slicesAbsent: the import's controller writes no EndpointSlices for
	// it (status.endpointSliceObjects: Absent), so an import without an
	// address is not waiting for one: its denials are not pending.
	slicesAbsent bool
	// localOnly: the answers hold the local cluster's addresses alone
	// (preferClose, and the local cluster has a ready one).
	localOnly bool
	// scope is the fallback scope's verdict on the import, which the
	// sources gave its spec when they filed it: whether it answers in
	// fallback zones, and if not, by which rule.
	scope scopeVerdict
	// perClusterCopy marks the spec of a ServiceImport labelled with
	// multicluster.kubernetes.io/service-name: a controller's per-cluster
	// bookkeeping copy of an import (Lighthouse keeps them in its agent's
	// namespace), not a service. Such a spec is kept in the store, counted
	// under a kind of its own, and never becomes a view. (It lives here,
	// beside the other flags, where it takes no room of its own.)
	perClusterCopy bool
	// dropped counts the distinct addresses of the import's slices past
	// the maxImportAddresses of each family the view answers with.
	dropped int32
	// ClusterSetIP addresses from source, by family.
	ipv4 []net.IP
	ipv6 []net.IP
	// derived names the local Service whose ClusterIPs answer for a
	// ClusterSetIP import without spec.ips (its derived-service annotation).
	derived string
	// owned are other local Services that carry the import's addresses,
	// named by another controller's own annotation (AWS): PTR of their
	// ClusterIPs is the import's, as for derived.
	// Behind a pointer, since one controller alone writes them: every
	// other view is 16 bytes smaller.
	owned *[]string
	ports []servicePort
	// eps are the endpoints of a headless import; nil for ClusterSetIP
	// imports, whose views are their specs: the pointer keeps those small.
	eps *endpointSet
}

// endpointSet is the ready endpoints of a headless import: the specs of its
// slices themselves, shared with the sources and with the views before and
// after, so that a slice's change costs that slice and a copy of pointers.
type endpointSet struct {
	// slices are ordered by cluster, then slice name; each slice's
	// endpoints by host name, then address.
	slices []*sliceSpec
	// served are the slices whose endpoints the service's own names answer
	// with: all of them, or the local cluster's alone (localOnly).
	served []*sliceSpec
	n4, n6 int // addresses in slices, by family
	s4, s6 int // addresses in served, by family
	// dups: some address, or some host name, occurs in more than one slice
	// (or under two names), so answers built from several slices drop
	// repeated records before they are sent.
	dups bool
	// repeats: some address occurs twice. addrs4 and addrs6 are then the
	// distinct addresses of served, lowest first, which A and AAAA answers
	// are made of.
	repeats        bool
	addrs4, addrs6 []net.IP
	// ents are the names of multi-label cluster ids ("east.west.prod",
	// "west.prod" and "prod" of host.east.west.prod), which exist because
	// names exist below them (RFC 8020): NODATA, not NXDOMAIN. Nil when no
	// cluster id has several labels; a one-label id is found in slices.
	ents map[string]struct{}
}

// hasNamesBelow reports whether the labels c, between a host and the
// service, are a cluster id or its end, with host names below: an empty
// non-terminal.
func (eps *endpointSet) hasNamesBelow(c string) bool {
	if _, ok := eps.ents[c]; ok {
		return true
	}
	i, _ := slices.BinarySearchFunc(eps.slices, c, func(s *sliceSpec, c string) int { return cmp.Compare(s.cluster, c) })
	for _, s := range eps.slices[i:] {
		if s.cluster != c {
			return false
		}
		if len(s.endpoints) > s.anonymous {
			return true
		}
	}
	return false
}

// readyEndpoints reports whether a headless import has a ready address.
func (v *view) readyEndpoints() bool { return v.eps != nil && v.eps.n4+v.eps.n6 > 0 }

// eachEndpoint calls f for every ready endpoint of a headless import, with
// its cluster, slice by slice.
func (v *view) eachEndpoint(f func(cluster string, e endpoint)) {
	if v.eps == nil {
		return
	}
	for _, s := range v.eps.slices {
		for _, e := range s.endpoints {
			f(s.cluster, e)
		}
	}
}

// compareSlices orders slices by cluster, then name.
func compareSlices(a, b *sliceSpec) int {
	return cmp.Or(cmp.Compare(a.cluster, b.cluster), cmp.Compare(a.name, b.name))
}
