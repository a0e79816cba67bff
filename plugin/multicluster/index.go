package multicluster

import (
	"cmp"
	"maps"
	"math"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
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

// endpoint is one ready address of a headless import.
type endpoint struct {
	// host is the endpoint's hostname, else its address with '.' and ':'
	// turned into '-'; empty when it has no host.cluster name (its slice
	// names no cluster, or the name would not fit in a DNS name).
	host    string
	cluster string // empty when its slice names no source cluster
	ip      net.IP
	v6      bool
}

// addressSource says where the prepared addresses of a ClusterSetIP view
// come from. A derived Service, read at query time, ranks between the two.
type addressSource uint8

const (
	sourceNone   addressSource = iota // no static address: only a derived Service can answer
	sourceSpec                        // spec.ips: they answer, whatever else exists
	sourceSlices                      // the ready addresses of the import's slices
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
	// localOnly: the answers hold the local cluster's addresses alone
	// (preferClose, and the local cluster has a ready one).
	localOnly bool
	// outOfScope: the fallback scope keeps this import out of fallback zones.
	outOfScope bool
	// perClusterCopy marks the spec of a ServiceImport labelled with
	// multicluster.kubernetes.io/service-name: a controller's per-cluster
	// bookkeeping copy of an import (Lighthouse keeps them in its agent's
	// namespace), not a service. Such a spec is kept in the store, counted
	// under a kind of its own, and never becomes a view. (It lives here,
	// beside the other flags, where it takes no room of its own.)
	perClusterCopy bool
	// ClusterSetIP addresses from source, by family.
	ipv4 []net.IP
	ipv6 []net.IP
	// derived names the local Service whose ClusterIPs answer for a
	// ClusterSetIP import without spec.ips (its derived-service annotation).
	derived string
	// owned are other local Services that carry the import's addresses,
	// named by another controller's own annotation (AWS): PTR of their
	// ClusterIPs is the import's, as for derived.
	owned []string
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

// eachEndpoint calls f for every ready endpoint of a headless import, slice
// by slice.
func (v *view) eachEndpoint(f func(endpoint)) {
	if v.eps == nil {
		return
	}
	for _, s := range v.eps.slices {
		for _, e := range s.endpoints {
			f(e)
		}
	}
}

// ptrTarget is what a known address points back to.
type ptrTarget struct {
	key     serviceKey
	host    string // empty for the service's own name
	cluster string
}

// rank puts a service's own name (0) before an endpoint's (1).
func (t ptrTarget) rank() int {
	if t.host == "" {
		return 0
	}
	return 1
}

// comparePTR orders the names an address may point back to, so that an
// address with several always answers the same one: a service's own name
// before an endpoint's, then by namespace, service, cluster and host.
func comparePTR(a, b ptrTarget) int {
	return cmp.Or(
		cmp.Compare(a.rank(), b.rank()),
		cmp.Compare(a.key.namespace, b.key.namespace),
		cmp.Compare(a.key.name, b.key.name),
		cmp.Compare(a.cluster, b.cluster),
		cmp.Compare(a.host, b.host),
	)
}

// ptrRef is a name an address points back to, and how many times the
// objects behind the index give it: two slices may report one endpoint.
type ptrRef struct {
	ptrTarget
	refs int32
}

// reverseChange adds (delta 1) or removes (-1) one reference of an address
// to a name.
type reverseChange struct {
	addr  netip.Addr
	t     ptrTarget
	delta int32
}

// index is the plugin's only shared state: the views of all imported
// services, how many imports each namespace holds, and a reverse map for PTR.
// Views are built outside any lock: publishing one is a pointer swap under
// mu. The reverse map has its own lock, so that a change to it, whose work
// is proportional to the change, never delays a forward lookup.
type index struct {
	mu         sync.RWMutex
	views      map[serviceKey]*view
	namespaces map[string]int
	// derivedBy maps a derived Service, named by an import's annotation,
	// back to the imports that name it, for PTR queries of its ClusterIPs.
	derivedBy map[serviceKey][]serviceKey
	derived   atomic.Int32 // len(derivedBy)

	rmu     sync.RWMutex
	reverse map[netip.Addr][]ptrRef
	// conflicts counts the addresses that imports of several namespaces
	// claim (the trust model: passed on, not answered).
	conflicts atomic.Int64

	serial serialClock // the zones' SOA serial
	// localModified is the last change of local Services seen, by which the
	// serial follows derived Services (resolver.serial).
	localModified atomic.Int64
}

func newIndex() *index {
	x := &index{
		views:      make(map[serviceKey]*view),
		namespaces: make(map[string]int),
		reverse:    make(map[netip.Addr][]ptrRef),
		derivedBy:  make(map[serviceKey][]serviceKey),
	}
	x.serial.start()
	return x
}

// lookup returns the view of a service, or nil.
func (x *index) lookup(namespace, name string) *view {
	x.mu.RLock()
	v := x.views[serviceKey{namespace: namespace, name: name}]
	x.mu.RUnlock()
	return v
}

// hasNamespace reports whether some import lives in namespace.
func (x *index) hasNamespace(namespace string) bool {
	x.mu.RLock()
	n := x.namespaces[namespace]
	x.mu.RUnlock()
	return n > 0
}

// reverseLookup returns the names an address points back to. The slice is
// never changed once returned.
func (x *index) reverseLookup(addr netip.Addr) []ptrRef {
	x.rmu.RLock()
	t := x.reverse[addr]
	x.rmu.RUnlock()
	return t
}

// derivedImports returns the imports whose derived-service annotation names
// the local Service key.
func (x *index) derivedImports(key serviceKey) []serviceKey {
	x.mu.RLock()
	k := x.derivedBy[key]
	x.mu.RUnlock()
	return k
}

// hasDerived reports whether some import names a derived Service.
func (x *index) hasDerived() bool { return x.derived.Load() > 0 }

// snapshot returns every view, ordered by namespace and name.
func (x *index) snapshot() []*view {
	x.mu.RLock()
	views := slices.Collect(maps.Values(x.views))
	x.mu.RUnlock()
	slices.SortFunc(views, func(a, b *view) int {
		return cmp.Or(cmp.Compare(a.key.namespace, b.key.namespace), cmp.Compare(a.key.name, b.key.name))
	})
	return views
}

// len returns the number of services in the index.
func (x *index) len() int {
	x.mu.RLock()
	n := len(x.views)
	x.mu.RUnlock()
	return n
}

// put publishes v as the view of key in place of old, the view published
// before (nil if none); a nil v removes it. Only the writer of key calls it
// (sources, under its lock), so old is current. The reverse map changes by
// what differs between old and v, and the serial moves.
func (x *index) put(key serviceKey, old, v *view) {
	if old == v {
		return
	}
	if changes := reverseDiff(old, v); len(changes) > 0 {
		x.rmu.Lock()
		changed := x.applyReverseLocked(changes)
		x.rmu.Unlock()
		conflictLogger.log(key, changed)
	}
	x.mu.Lock()
	if v != nil {
		x.views[key] = v
	} else {
		delete(x.views, key)
	}
	if (old == nil) != (v == nil) {
		n := x.namespaces[key.namespace] - 1
		if v != nil {
			n += 2
		}
		if n <= 0 {
			delete(x.namespaces, key.namespace)
		} else {
			x.namespaces[key.namespace] = n
		}
	}
	if before, after := ownedOf(old), ownedOf(v); !slices.Equal(before, after) {
		x.relinkDerivedLocked(key, before, after)
	}
	x.mu.Unlock()
	x.serial.tick()
}

// ownedOf returns the local Services whose ClusterIPs are the import v's:
// its derived Service, and those another controller names.
func ownedOf(v *view) []string {
	if v == nil || (v.derived == "" && len(v.owned) == 0) {
		return nil
	}
	if v.derived == "" {
		return v.owned
	}
	return append([]string{v.derived}, v.owned...)
}

// relinkDerivedLocked moves key from the imports of the local Services
// before to those of after. Lists are copied, never edited in place:
// readers may hold the old ones.
func (x *index) relinkDerivedLocked(key serviceKey, before, after []string) {
	for _, name := range before {
		d := serviceKey{namespace: key.namespace, name: name}
		kept := slices.DeleteFunc(slices.Clone(x.derivedBy[d]), func(k serviceKey) bool { return k == key })
		if len(kept) == 0 {
			delete(x.derivedBy, d)
		} else {
			x.derivedBy[d] = kept
		}
	}
	for _, name := range after {
		d := serviceKey{namespace: key.namespace, name: name}
		if !slices.Contains(x.derivedBy[d], key) {
			x.derivedBy[d] = append(slices.Clip(x.derivedBy[d]), key)
		}
	}
	x.derived.Store(int32(min(len(x.derivedBy), math.MaxInt32))) // #nosec G115 -- bounded above
}

// reverseDiff lists what changes in the reverse map when old is replaced by
// v (either may be nil). Slices both views hold are skipped; a slice that
// changed is compared with its former self endpoint by endpoint, so the work
// is proportional to what changed.
func reverseDiff(old, v *view) []reverseChange {
	var changes []reverseChange
	if old == nil || v == nil || !slices.EqualFunc(old.ipv4, v.ipv4, net.IP.Equal) || !slices.EqualFunc(old.ipv6, v.ipv6, net.IP.Equal) {
		changes = appendAddresses(changes, old, -1)
		changes = appendAddresses(changes, v, 1)
	}
	var before, after []*sliceSpec
	if old != nil && old.eps != nil {
		before = old.eps.slices
	}
	if v != nil && v.eps != nil {
		after = v.eps.slices
	}
	// Both are ordered by cluster and name: walk them side by side.
	i, j := 0, 0
	for i < len(before) || j < len(after) {
		c := 0
		switch {
		case i == len(before):
			c = 1
		case j == len(after):
			c = -1
		default:
			c = compareSlices(before[i], after[j])
		}
		switch {
		case c < 0:
			changes = appendEndpoints(changes, before[i].endpoints, old.key, -1)
			i++
		case c > 0:
			changes = appendEndpoints(changes, after[j].endpoints, v.key, 1)
			j++
		default:
			if before[i] != after[j] {
				changes = diffEndpoints(changes, before[i].endpoints, after[j].endpoints, v.key)
			}
			i++
			j++
		}
	}
	return changes
}

// appendAddresses appends a change for each ClusterSetIP address of v.
func appendAddresses(changes []reverseChange, v *view, delta int32) []reverseChange {
	if v == nil {
		return changes
	}
	for _, ip := range v.ipv4 {
		changes = appendChange(changes, ip, ptrTarget{key: v.key}, delta)
	}
	for _, ip := range v.ipv6 {
		changes = appendChange(changes, ip, ptrTarget{key: v.key}, delta)
	}
	return changes
}

// compareSlices orders slices by cluster, then name.
func compareSlices(a, b *sliceSpec) int {
	return cmp.Or(cmp.Compare(a.cluster, b.cluster), cmp.Compare(a.name, b.name))
}

func appendEndpoints(changes []reverseChange, eps []endpoint, key serviceKey, delta int32) []reverseChange {
	for _, e := range eps {
		changes = appendChange(changes, e.ip, e.target(key), delta)
	}
	return changes
}

// diffEndpoints appends the changes from the endpoints a to b of one slice,
// both ordered by host and address.
func diffEndpoints(changes []reverseChange, a, b []endpoint, key serviceKey) []reverseChange {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		c := 0
		switch {
		case i == len(a):
			c = 1
		case j == len(b):
			c = -1
		default:
			c = cmp.Or(cmp.Compare(a[i].host, b[j].host), cmp.Compare(a[i].cluster, b[j].cluster), compareIP(a[i].ip, b[j].ip))
		}
		switch {
		case c < 0:
			changes = appendChange(changes, a[i].ip, a[i].target(key), -1)
			i++
		case c > 0:
			changes = appendChange(changes, b[j].ip, b[j].target(key), 1)
			j++
		default:
			i++
			j++
		}
	}
	return changes
}

// target is the name an endpoint's address points back to: its host.cluster
// name, or the service's own name when it has none.
func (e endpoint) target(key serviceKey) ptrTarget {
	if e.host == "" {
		return ptrTarget{key: key}
	}
	return ptrTarget{key: key, host: e.host, cluster: e.cluster}
}

func appendChange(changes []reverseChange, ip net.IP, t ptrTarget, delta int32) []reverseChange {
	addr, ok := netip.AddrFromSlice(ip)
	if !ok {
		return changes
	}
	return append(changes, reverseChange{addr: addr.Unmap(), t: t, delta: delta})
}

// applyReverseLocked applies changes, and returns the addresses whose
// conflict changed: claimed by imports of several namespaces where they were
// not, no longer, or by another set of namespaces. Addresses out of conflict
// before and after cost no more than the change.
func (x *index) applyReverseLocked(changes []reverseChange) []conflictChange {
	var before map[netip.Addr][]ptrRef // the claims, before changes, of addresses in conflict at some point
	for _, c := range changes {
		old := x.reverse[c.addr]
		x.applyOneLocked(c)
		if _, seen := before[c.addr]; !seen && (contested(old) || contested(x.reverse[c.addr])) {
			if before == nil {
				before = make(map[netip.Addr][]ptrRef)
			}
			before[c.addr] = old
		}
	}
	var out []conflictChange
	for addr, old := range before {
		refs := x.reverse[addr]
		was, is := contested(old), contested(refs)
		after := claimNamespaces(refs)
		if was && is && slices.Equal(claimNamespaces(old), after) {
			continue
		}
		switch {
		case is && !was:
			x.conflicts.Add(1)
		case was && !is:
			x.conflicts.Add(-1)
		}
		out = append(out, conflictChange{addr: addr, namespaces: after})
	}
	slices.SortFunc(out, func(a, b conflictChange) int { return a.addr.Compare(b.addr) })
	return out
}

// applyOneLocked applies one change. The list of an address is copied,
// never edited in place: readers may hold the old one.
func (x *index) applyOneLocked(c reverseChange) {
	old := x.reverse[c.addr]
	i := slices.IndexFunc(old, func(r ptrRef) bool { return r.ptrTarget == c.t })
	switch {
	case i < 0 && c.delta > 0:
		x.reverse[c.addr] = append(slices.Clip(old), ptrRef{ptrTarget: c.t, refs: c.delta})
	case i < 0:
		// Never given: nothing to take back.
	case old[i].refs+c.delta > 0:
		refs := slices.Clone(old)
		refs[i].refs += c.delta
		x.reverse[c.addr] = refs
	case len(old) == 1:
		delete(x.reverse, c.addr)
	default:
		x.reverse[c.addr] = slices.Delete(slices.Clone(old), i, i+1)
	}
}
