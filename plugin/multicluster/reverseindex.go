// The index's reverse map: which imports claim each address, kept up to
// date change by change, with work proportional to the change, and the
// names a PTR query finds through those claims.

package multicluster

import (
	"bytes"
	"cmp"
	"net"
	"net/netip"
	"slices"
	"sync/atomic"
)

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

// ptrClaim is one object's claim on an address: a headless import's slice,
// whose endpoints there point back to their host.cluster names (or to the
// service's), or a ClusterSetIP import's view, which points back to its own
// name. The map holds claims, not names, so an endpoint costs it one entry; a
// slice claims by its sliceRef, which its versions share, so a changed slice
// moves only the claims of the addresses that changed.
type ptrClaim struct {
	slice *sliceRef
	view  *view
}

// sliceRef stands for one slice of a service (by cluster and name) in the
// reverse map, through its versions. The sources own it: they give it to
// each version of the slice they file (sliceSpec.ref), and point it at that
// version before they publish the view that holds it, so that a claim
// finds the names of the slice's latest version. The index only reads it.
type sliceRef struct{ spec atomic.Pointer[sliceSpec] }

// namespace is the namespace of the import the claim is for.
func (c ptrClaim) namespace() string {
	if c.slice != nil {
		return c.slice.spec.Load().key.namespace
	}
	return c.view.key.namespace
}

// appendTargets appends the name addr points back to by claim c: of a
// slice's endpoints at addr, the first by host name, the one comparePTR
// puts first, found in the slice's index of addresses.
func (c ptrClaim) appendTargets(dst []ptrTarget, addr netip.Addr) []ptrTarget {
	if c.slice == nil {
		return append(dst, ptrTarget{key: c.view.key})
	}
	s := c.slice.spec.Load()
	var e endpoint
	var ok bool
	if addr.Is4() {
		a := addr.As4()
		e, ok = s.at(a[:])
	} else {
		a := addr.As16()
		e, ok = s.at(a[:])
	}
	if ok {
		dst = append(dst, e.target(s))
	}
	return dst
}

// at returns the endpoint of s at ip of the lowest host name, if any.
func (s *sliceSpec) at(ip []byte) (endpoint, bool) {
	idx := s.addressesOf(len(ip) == net.IPv6len)
	i, found := slices.BinarySearchFunc(idx, ip, func(k int32, ip []byte) int { return bytes.Compare(s.endpoints[k].ip, ip) })
	if !found {
		return endpoint{}, false
	}
	return s.endpoints[idx[i]], true
}

// manyClaims marks, in a reverse map's one, an address several objects
// claim: their claims are in its many.
var manyClaims = &view{}

// reverseMap maps the addresses of one family to their claims. Nearly every
// address has one claim, held in one; the few with several have a list in
// many, which is copied on change, never edited in place: readers may hold
// it.
type reverseMap[K comparable] struct {
	one  map[K]ptrClaim
	many map[K][]ptrClaim
}

func newReverseMap[K comparable]() reverseMap[K] {
	return reverseMap[K]{one: make(map[K]ptrClaim), many: make(map[K][]ptrClaim)}
}

// get returns the claims of k; a single claim is returned in buf.
func (m *reverseMap[K]) get(k K, buf *[1]ptrClaim) []ptrClaim {
	c, ok := m.one[k]
	switch {
	case !ok:
		return nil
	case c.view == manyClaims:
		return m.many[k]
	}
	buf[0] = c
	return buf[:]
}

// update takes claim old of k back, if k has it, and gives k claim c, if it
// does not have it already; either may be the zero claim. Where old is k's
// only claim, c takes its place: the common case of a changed slice or view,
// one lookup and one write. It reports whether k had or has several claims,
// and if so returns its claims before: only then may a conflict change.
func (m *reverseMap[K]) update(k K, old, c ptrClaim) (before []ptrClaim, several bool) {
	cur, ok := m.one[k]
	switch {
	case !ok:
		if c != (ptrClaim{}) {
			m.one[k] = c
		}
		return nil, false
	case cur.view != manyClaims:
		switch {
		case cur == old && c == (ptrClaim{}):
			delete(m.one, k)
		case cur == old:
			m.one[k] = c
		case c == (ptrClaim{}) || cur == c:
		default:
			m.one[k] = ptrClaim{view: manyClaims}
			m.many[k] = []ptrClaim{cur, c}
			return []ptrClaim{cur}, true
		}
		return nil, false
	}
	list := m.many[k]
	next := list
	if i := slices.Index(next, old); i >= 0 && old != (ptrClaim{}) {
		next = slices.Delete(slices.Clone(next), i, i+1)
	}
	if c != (ptrClaim{}) && !slices.Contains(next, c) {
		next = append(slices.Clip(next), c)
	}
	switch len(next) {
	case 0:
		delete(m.one, k)
		delete(m.many, k)
	case 1:
		m.one[k] = next[0]
		delete(m.many, k)
	default:
		m.many[k] = next
	}
	return list, true
}

// claimChange replaces the claims of a view's addresses, or of a slice's,
// with those of its next version; either may be nil (none).
type claimChange struct {
	oldView, newView   *view
	oldSlice, newSlice *sliceSpec
}

// reverseLookup appends to dst the name each claim of an address points it
// back to.
func (x *index) reverseLookup(addr netip.Addr, dst []ptrTarget) []ptrTarget {
	var buf [1]ptrClaim
	x.rmu.RLock()
	defer x.rmu.RUnlock()
	for _, c := range x.claimsLocked(addr, &buf) {
		dst = c.appendTargets(dst, addr)
	}
	return dst
}

// claimsLocked returns the claims of addr; a single one in buf.
func (x *index) claimsLocked(addr netip.Addr, buf *[1]ptrClaim) []ptrClaim {
	if addr.Is4() {
		return x.rev4.get(addr.As4(), buf)
	}
	return x.rev6.get(addr.As16(), buf)
}

// reverseLen returns the number of addresses in the reverse map.
func (x *index) reverseLen() int {
	x.rmu.RLock()
	defer x.rmu.RUnlock()
	return len(x.rev4.one) + len(x.rev6.one)
}

// reverseDiff lists the claims that change when old is replaced by v
// (either may be nil): the views' own, when they hold addresses, and those of
// the slices that are not in both. Slices both views hold are skipped, so the
// work is proportional to what changed.
func reverseDiff(old, v *view) []claimChange {
	var changes []claimChange
	if hasAddresses(old) || hasAddresses(v) {
		c := claimChange{}
		if hasAddresses(old) {
			c.oldView = old
		}
		if hasAddresses(v) {
			c.newView = v
		}
		changes = append(changes, c)
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
			changes = append(changes, claimChange{oldSlice: before[i]})
			i++
		case c > 0:
			changes = append(changes, claimChange{newSlice: after[j]})
			j++
		default:
			if before[i] != after[j] {
				changes = append(changes, claimChange{oldSlice: before[i], newSlice: after[j]})
			}
			i++
			j++
		}
	}
	return changes
}

// hasAddresses reports whether v is a view with ClusterSetIP addresses.
func hasAddresses(v *view) bool { return v != nil && len(v.ipv4)+len(v.ipv6) > 0 }

// target is the name an endpoint's address points back to: its host.cluster
// name, or the service's own name when it has none.
func (e endpoint) target(s *sliceSpec) ptrTarget {
	if e.host == "" {
		return ptrTarget{key: s.key}
	}
	return ptrTarget{key: s.key, host: e.host, cluster: s.cluster}
}

// eachUpdate calls f with each update of the reverse map that c makes. The
// addresses of a view, or of a slice that came, went or has a new sliceRef,
// move whole: the new claims first, then the old addresses the new one lacks
// are released. A slice's next version with the same sliceRef is compared
// endpoint by endpoint (both ordered by host, then address): only addresses
// that came or went change.
func (c claimChange) eachUpdate(f func(addr netip.Addr, old, new ptrClaim)) {
	call := func(ip net.IP, old, new ptrClaim) {
		if a, ok := netip.AddrFromSlice(ip); ok {
			f(a.Unmap(), old, new)
		}
	}
	if c.oldView != nil || c.newView != nil {
		old, new := ptrClaim{view: c.oldView}, ptrClaim{view: c.newView}
		if c.oldView == nil {
			old = ptrClaim{}
		}
		if c.newView == nil {
			new = ptrClaim{}
		}
		for _, ips := range [][]net.IP{viewIPs(c.newView, false), viewIPs(c.newView, true)} {
			for _, ip := range ips {
				call(ip, old, new)
			}
		}
		for _, ips := range [][]net.IP{viewIPs(c.oldView, false), viewIPs(c.oldView, true)} {
			for _, ip := range ips {
				call(ip, old, ptrClaim{})
			}
		}
	}
	if c.oldSlice != nil && c.newSlice != nil && c.oldSlice.ref == c.newSlice.ref {
		ref := ptrClaim{slice: c.newSlice.ref}
		a, b := c.oldSlice.endpoints, c.newSlice.endpoints
		i, j := 0, 0
		for i < len(a) || j < len(b) {
			d := 0
			switch {
			case i == len(a):
				d = 1
			case j == len(b):
				d = -1
			default:
				d = cmp.Or(cmp.Compare(a[i].host, b[j].host), compareIP(a[i].ip, b[j].ip))
			}
			switch {
			case d < 0:
				// Gone, unless the slice still gives it under another name.
				if _, kept := c.newSlice.at(a[i].ip); !kept {
					call(a[i].ip, ref, ptrClaim{})
				}
				i++
			case d > 0:
				call(b[j].ip, ptrClaim{}, ref)
				j++
			default:
				i++
				j++
			}
		}
		return
	}
	if c.newSlice != nil {
		for _, e := range c.newSlice.endpoints {
			call(e.ip, ptrClaim{}, ptrClaim{slice: c.newSlice.ref})
		}
	}
	if c.oldSlice != nil {
		for _, e := range c.oldSlice.endpoints {
			call(e.ip, ptrClaim{slice: c.oldSlice.ref}, ptrClaim{})
		}
	}
}

// viewIPs returns the ClusterSetIP addresses of v (nil if none) of one
// family.
func viewIPs(v *view, v6 bool) []net.IP {
	switch {
	case v == nil:
		return nil
	case v6:
		return v.ipv6
	}
	return v.ipv4
}

// applyReverseLocked applies changes, and returns the addresses whose
// conflict changed: claimed by imports of several namespaces where they were
// not, no longer, or by another set of namespaces. Only addresses with
// several claims, before or after, can be in conflict; the others cost no
// more than the change.
func (x *index) applyReverseLocked(changes []claimChange) []conflictChange {
	var before map[netip.Addr][]ptrClaim // the claims, before changes, of addresses claimed several times at some point
	for _, c := range changes {
		c.eachUpdate(func(addr netip.Addr, old, new ptrClaim) {
			var claims []ptrClaim
			var several bool
			if addr.Is4() {
				claims, several = x.rev4.update(addr.As4(), old, new)
			} else {
				claims, several = x.rev6.update(addr.As16(), old, new)
			}
			if !several {
				return
			}
			if _, seen := before[addr]; !seen {
				if before == nil {
					before = make(map[netip.Addr][]ptrClaim)
				}
				before[addr] = claims
			}
		})
	}
	var out []conflictChange
	for addr, old := range before {
		var buf [1]ptrClaim
		claims := x.claimsLocked(addr, &buf)
		was, is := claimsContested(old), claimsContested(claims)
		if !was && !is {
			continue
		}
		after := claimsNamespaces(claims)
		if was && is && slices.Equal(claimsNamespaces(old), after) {
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

// claimsContested reports whether claims are of imports of several
// namespaces.
func claimsContested(claims []ptrClaim) bool {
	for _, c := range claims[min(1, len(claims)):] {
		if c.namespace() != claims[0].namespace() {
			return true
		}
	}
	return false
}

// claimsNamespaces returns the namespaces of claims, sorted, each once.
func claimsNamespaces(claims []ptrClaim) []string {
	var out []string
	for _, c := range claims {
		if !slices.Contains(out, c.namespace()) {
			out = append(out, c.namespace())
		}
	}
	slices.Sort(out)
	return out
}
