// Building views: the view of a service made from its import and the
// slices of every cluster, once per change, from the specs themselves.

package multicluster

import (
	"bytes"
	"cmp"
	"container/heap"
	"math"
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
	// maxAddresses is the most distinct addresses of each family a view
	// answers with from its import's slices (max_import_addresses); 0:
	// maxImportAddresses.
	maxAddresses int
}

// addressLimit is p's maxAddresses, or maxImportAddresses when unset.
func (p viewPolicy) addressLimit() int {
	if p.maxAddresses > 0 {
		return p.maxAddresses
	}
	return maxImportAddresses
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
		return newClusterSetIPView(imp, ss, policy)
	}
	v := &view{key: imp.key, headless: true, preferClose: imp.preferClose, slicesAbsent: imp.slicesAbsent, scope: imp.scope}
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
		if local, s4, s6 := clusterRun(ordered, policy.localCluster); s4+s6 > 0 {
			eps.served, eps.s4, eps.s6, v.localOnly = local, s4, s6, true
		}
	}
	if eps.repeats = ss.repeatsAddresses(); eps.repeats {
		// The answers' addresses are prepared here, each once, rather
		// than found among the repeats by every query.
		limit := policy.addressLimit()
		eps.addrs4, eps.addrs6 = lowestAddresses(eps.served, false, limit), lowestAddresses(eps.served, true, limit)
		v.dropped = droppedAddresses(ss, eps.served, len(eps.addrs4), len(eps.addrs6))
	}
	v.eps = eps
	return v
}

// maxImportAddresses is the most distinct addresses of each family a view
// answers with from its import's slices: a ClusterSetIP import's without
// spec.ips, and a headless import's whose slices repeat addresses. It is
// what one answer carries. The API server lets slices hold far more (1,000
// endpoints of 100 addresses each, and any number of slices); the lowest
// are kept, the rest dropped and counted (view.dropped), so that neither a
// change nor a query walks them all.
const maxImportAddresses = maxAnswerRecords

// newClusterSetIPView is the view of a ClusterSetIP import. With spec.ips, or
// without any ready slice address, it is the spec itself (specs are
// immutable, as views are). Otherwise it carries the ready addresses of the
// import's slices, which answer when no derived Service does: Lighthouse,
// without clusterset IPs, writes one slice per cluster whose endpoint is
// that cluster's ClusterIP. An import that prefers close endpoints answers
// with the local cluster's addresses alone while it has one.
func newClusterSetIPView(imp *importSpec, ss *serviceSlices, policy viewPolicy) *view {
	if imp.source == sourceSpec || ss == nil || len(ss.ordered) == 0 {
		return &imp.view
	}
	served, localOnly := ss.ordered, false
	if imp.preferClose && policy.localCluster != "" {
		if local, n4, n6 := clusterRun(ss.ordered, policy.localCluster); n4+n6 > 0 {
			served, localOnly = local, true
		}
	}
	limit := policy.addressLimit()
	v4, v6 := lowestAddresses(served, false, limit), lowestAddresses(served, true, limit)
	if len(v4) == 0 && len(v6) == 0 {
		return &imp.view
	}
	v := imp.view
	v.source, v.localOnly = sourceSlices, localOnly
	v.ipv4, v.ipv6 = v4, v6
	v.dropped = droppedAddresses(ss, served, len(v4), len(v6))
	return &v
}

// clusterRun returns the slices of cluster in ordered (one run, ordered by
// cluster), and their addresses by family.
func clusterRun(ordered []*sliceSpec, cluster string) (run []*sliceSpec, n4, n6 int) {
	lo, _ := slices.BinarySearchFunc(ordered, cluster, func(s *sliceSpec, c string) int { return cmp.Compare(s.cluster, c) })
	hi := lo
	for ; hi < len(ordered) && ordered[hi].cluster == cluster; hi++ {
		n4 += ordered[hi].n4
		n6 += ordered[hi].n6
	}
	return ordered[lo:hi:hi], n4, n6
}

// lowestAddresses returns the lowest limit distinct addresses of one
// family in slices, in order. Each slice's are sorted and distinct
// already (byAddr): they are merged, lowest first, until enough are taken,
// so that the work is that of the addresses taken, and of their repeats in
// other slices, however many the slices hold.
func lowestAddresses(in []*sliceSpec, v6 bool, limit int) []net.IP {
	h := addressHeap{}
	n := 0
	for _, s := range in {
		if idx := s.addressesOf(v6); len(idx) > 0 {
			h = append(h, addressCursor{s: s, idx: idx})
			n += len(idx)
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]net.IP, 0, min(n, limit))
	heap.Init(&h)
	for len(h) > 0 && len(out) < limit {
		c := &h[0]
		if ip := c.ip(); len(out) == 0 || !out[len(out)-1].Equal(ip) {
			out = append(out, ip)
		}
		if c.idx = c.idx[1:]; len(c.idx) == 0 {
			heap.Pop(&h)
		} else {
			heap.Fix(&h, 0)
		}
	}
	return out
}

// addressCursor is where a merge of slices' addresses is in one slice's.
type addressCursor struct {
	s   *sliceSpec
	idx []int32 // what is left of the slice's byAddr
}

func (c *addressCursor) ip() net.IP { return c.s.endpoints[c.idx[0]].ip }

// addressHeap orders cursors by their next address.
type addressHeap []addressCursor

func (h addressHeap) Len() int           { return len(h) }
func (h addressHeap) Less(i, j int) bool { return compareIP(h[i].ip(), h[j].ip()) < 0 }
func (h addressHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *addressHeap) Push(x any)        { *h = append(*h, x.(addressCursor)) }
func (h *addressHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// droppedAddresses returns how many distinct addresses of the slices served
// a view left out, having kept n4 and n6: exact when it serves one slice or
// all of them (whose addresses ss counts), else at most the sum of the
// served slices' (an address in two of them counts twice).
func droppedAddresses(ss *serviceSlices, served []*sliceSpec, n4, n6 int) int32 {
	d4, d6 := 0, 0
	switch {
	case len(served) == len(ss.ordered):
		d4, d6 = ss.distinct(false), ss.distinct(true)
	default:
		for _, s := range served {
			d4 += len(s.addressesOf(false))
			d6 += len(s.addressesOf(true))
		}
	}
	return int32(min(max(d4-n4, 0)+max(d6-n6, 0), math.MaxInt32)) // #nosec G115 -- bounded above
}

// addressesOf returns the byAddr index of one family's addresses.
func (s *sliceSpec) addressesOf(v6 bool) []int32 {
	if v6 {
		return s.byAddr[s.distinct4:]
	}
	return s.byAddr[:s.distinct4]
}

func compareIP(a, b net.IP) int { return bytes.Compare(a, b) }
