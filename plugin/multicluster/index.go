package multicluster

import (
	"bytes"
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

// ptrClaim is one object's claim on an address: a slice of a headless
// import, whose endpoints at the address point back to their host.cluster
// names (or to the service's own name, those without one), or the view of a
// ClusterSetIP import, whose own name the address points back to. The
// reverse map holds the claim, not the names: they are found in the slice
// or view when a PTR query asks, so that an endpoint costs the map one
// entry of an address and two pointers. A slice claims by its sliceRef,
// which its versions share: a changed slice moves the claims of the
// addresses that changed, not of all.
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

// appendTargets appends the names addr points back to by claim c.
func (c ptrClaim) appendTargets(dst []ptrTarget, addr netip.Addr) []ptrTarget {
	if c.slice == nil {
		return append(dst, ptrTarget{key: c.view.key})
	}
	var a [16]byte
	b := a[:]
	if addr.Is4() {
		a4 := addr.As4()
		b = a4[:]
	} else {
		a = addr.As16()
	}
	s := c.slice.spec.Load()
	for _, e := range s.endpoints {
		if bytes.Equal(e.ip, b) {
			dst = append(dst, e.target(s))
		}
	}
	return dst
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

	rmu sync.RWMutex
	// rev4 and rev6 are the reverse map: what claims each address, by
	// family, keyed by the address's bytes alone.
	rev4 reverseMap[[4]byte]
	rev6 reverseMap[[16]byte]
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
		rev4:       newReverseMap[[4]byte](),
		rev6:       newReverseMap[[16]byte](),
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

// reverseLookup appends to dst the names an address points back to, once
// each claim gives them: two slices may report one endpoint.
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
	var owned []string
	if v != nil && v.owned != nil {
		owned = *v.owned
	}
	if v == nil || (v.derived == "" && len(owned) == 0) {
		return nil
	}
	if v.derived == "" {
		return owned
	}
	return append([]string{v.derived}, owned...)
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

// compareSlices orders slices by cluster, then name.
func compareSlices(a, b *sliceSpec) int {
	return cmp.Or(cmp.Compare(a.cluster, b.cluster), cmp.Compare(a.name, b.name))
}

// target is the name an endpoint's address points back to: its host.cluster
// name, or the service's own name when it has none.
func (e endpoint) target(s *sliceSpec) ptrTarget {
	if e.host == "" {
		return ptrTarget{key: s.key}
	}
	return ptrTarget{key: s.key, host: e.host, cluster: s.cluster}
}

// eachUpdate calls f with each update of the reverse map that c makes. A
// view's addresses move to its next version (each address of the new
// view's claim in place of the old one's, then those of the old one that
// it did not take are taken back); so do the addresses of a slice that came
// or went, or whose next version has another sliceRef. A slice's next
// version with the same sliceRef is compared with it endpoint by endpoint
// (both are ordered by host, then address): only addresses that came or
// went change.
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
				if !slices.ContainsFunc(b, func(e endpoint) bool { return e.ip.Equal(a[i].ip) }) {
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
