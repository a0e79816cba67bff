// Building views: the view of a service made from its import and the
// slices of every cluster, once per change, from the specs themselves.

package multicluster

import (
	"bytes"
	"cmp"
	"net"
	"slices"
	"strings"
)

// viewPolicy is what decides a view beyond its objects: the id of the
// cluster this server runs in (empty when unknown), which imports that
// prefer close endpoints favour. (The fallback scope's verdict is the
// spec's own: the sources give it when they file the spec.)
type viewPolicy struct {
	localCluster string
}

// newView builds the view of a service from its import and the slices of
// every cluster (ss, nil when there are none). imp must not be nil. Its work
// is proportional to the number of slices, not of endpoints: the view holds
// the slices themselves.
func newView(imp *importSpec, ss *serviceSlices, policy viewPolicy) *view {
	var ordered []*sliceSpec
	if ss != nil {
		ordered = ss.ordered
	}
	if !imp.headless {
		return newClusterSetIPView(imp, ordered, policy)
	}
	v := &view{key: imp.key, headless: true, preferClose: imp.preferClose, scope: imp.scope}
	eps := &endpointSet{slices: ordered, served: ordered, dups: ss.duplicates()}
	// A headless import's ports come from its slices (each cluster exports
	// the same Service, so they agree), merged as they change
	// (updatePorts); the import's ports are the fallback. Both are in
	// order.
	if ss != nil {
		v.ports = ss.ports
	}
	if len(v.ports) == 0 {
		v.ports = imp.ports
	}
	for i, s := range ordered {
		eps.n4 += s.n4
		eps.n6 += s.n6
		// Each cluster id of several labels once: its names, each of which
		// has names below it.
		if strings.IndexByte(s.cluster, '.') > 0 && len(s.endpoints) > s.anonymous && (i == 0 || ordered[i-1].cluster != s.cluster) {
			if eps.ents == nil {
				eps.ents = make(map[string]struct{})
			}
			for c := s.cluster; ; {
				eps.ents[c] = struct{}{}
				dot := strings.IndexByte(c, '.')
				if dot < 0 {
					break
				}
				c = c[dot+1:]
			}
		}
	}
	eps.s4, eps.s6 = eps.n4, eps.n6
	if imp.preferClose && policy.localCluster != "" {
		// Ordered by cluster, the local cluster's slices are one run.
		lo, _ := slices.BinarySearchFunc(ordered, policy.localCluster, func(s *sliceSpec, c string) int { return cmp.Compare(s.cluster, c) })
		s4, s6, hi := 0, 0, lo
		for ; hi < len(ordered) && ordered[hi].cluster == policy.localCluster; hi++ {
			s4 += ordered[hi].n4
			s6 += ordered[hi].n6
		}
		if s4+s6 > 0 {
			eps.served, eps.s4, eps.s6, v.localOnly = ordered[lo:hi:hi], s4, s6, true
		}
	}
	v.eps = eps
	return v
}

// newClusterSetIPView is the view of a ClusterSetIP import. With spec.ips, or
// without any ready slice address, it is the spec itself (specs are
// immutable, as views are). Otherwise it carries the ready addresses of the import's slices, which
// answer when no derived Service does: Lighthouse, without clusterset IPs,
// writes one slice per cluster whose endpoint is that cluster's ClusterIP.
// An import that prefers close endpoints answers with the local cluster's
// addresses alone while it has one.
func newClusterSetIPView(imp *importSpec, ordered []*sliceSpec, policy viewPolicy) *view {
	if imp.source == sourceSpec || len(ordered) == 0 {
		return &imp.view
	}
	collect := func(cluster string, all bool) (v4, v6 []net.IP) {
		for _, s := range ordered {
			if !all && s.cluster != cluster {
				continue
			}
			for _, e := range s.endpoints {
				if e.v6 {
					v6 = append(v6, e.ip)
				} else {
					v4 = append(v4, e.ip)
				}
			}
		}
		return v4, v6
	}
	var v4, v6 []net.IP
	localOnly := false
	if imp.preferClose && policy.localCluster != "" {
		v4, v6 = collect(policy.localCluster, false)
		localOnly = len(v4) > 0 || len(v6) > 0
	}
	if !localOnly {
		v4, v6 = collect("", true)
	}
	if len(v4) == 0 && len(v6) == 0 {
		return &imp.view
	}
	v := imp.view
	v.source, v.localOnly = sourceSlices, localOnly
	v.ipv4, v.ipv6 = sortedUnique(v4), sortedUnique(v6)
	return &v
}

// sortedUnique sorts ips and drops repeats: every cluster reports its own
// addresses, and an answer names each once, in an order that does not
// depend on the order slices arrived in.
func sortedUnique(ips []net.IP) []net.IP {
	slices.SortFunc(ips, compareIP)
	return slices.CompactFunc(ips, net.IP.Equal)
}

func compareIP(a, b net.IP) int { return bytes.Compare(a, b) }
