package multicluster

import (
	"net/netip"
	"slices"
	"sync"
)

// sliceID names an EndpointSlice.
type sliceID struct{ namespace, name string }

// sources holds, per service, the objects the informers delivered, and
// publishes that service's view in the index whenever one of them changes.
// It is written by the informer goroutines only; ServeDNS reads the index.
type sources struct {
	mu      sync.Mutex
	imports map[serviceKey]*importSpec
	copies  map[serviceKey]struct{} // per-cluster copies, never served
	slices  map[serviceKey]*serviceSlices
	sliceOf map[sliceID]serviceKey // where a slice was filed, for relabelled slices
	index   *index
	policy  viewPolicy
}

// serviceSlices is what is known of the slices of one service.
type serviceSlices struct {
	byName map[string]*sliceSpec
	// ordered are the same slices by cluster, then name. A change replaces
	// the list, never edits it: published views hold it.
	ordered []*sliceSpec
	// How many times each address and each host name occurs across the
	// slices, and how many of them occur more than once: a view is built
	// to de-duplicate its answers only while some do.
	addrs            map[netip.Addr]int32
	names            map[hostKey]int32
	dupAddr, dupName int
}

// hostKey is a host.cluster name.
type hostKey struct{ host, cluster string }

func newSources(x *index) *sources {
	return &sources{
		imports: make(map[serviceKey]*importSpec),
		copies:  make(map[serviceKey]struct{}),
		slices:  make(map[serviceKey]*serviceSlices),
		sliceOf: make(map[sliceID]serviceKey),
		index:   x,
	}
}

func (s *sources) setImport(spec *importSpec) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if spec.perClusterCopy {
		if _, seen := s.copies[spec.key]; !seen {
			log.Infof("ServiceImport %s is labelled %s: a controller's per-cluster copy of an import, not served", spec.key, labelServiceName)
			s.copies[spec.key] = struct{}{}
		}
		// Labelled after it was served: withdraw it.
		s.deleteImportLocked(spec.key)
		return
	}
	delete(s.copies, spec.key)
	s.imports[spec.key] = spec
	s.rebuildLocked(spec.key)
}

func (s *sources) deleteImport(key serviceKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.copies, key)
	s.deleteImportLocked(key)
}

func (s *sources) deleteImportLocked(key serviceKey) {
	if _, ok := s.imports[key]; !ok {
		return
	}
	delete(s.imports, key)
	s.rebuildLocked(key)
}

func (s *sources) setSlice(spec *sliceSpec) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := sliceID{namespace: spec.key.namespace, name: spec.name}
	if old, ok := s.sliceOf[id]; ok && old != spec.key {
		s.removeSliceLocked(old, spec.name)
		s.rebuildLocked(old)
	}
	ss := s.slices[spec.key]
	if ss == nil {
		ss = &serviceSlices{byName: make(map[string]*sliceSpec), addrs: make(map[netip.Addr]int32), names: make(map[hostKey]int32)}
		s.slices[spec.key] = ss
	}
	ss.replace(ss.byName[spec.name], spec)
	s.sliceOf[id] = spec.key
	s.rebuildLocked(spec.key)
}

func (s *sources) deleteSlice(namespace, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := sliceID{namespace: namespace, name: name}
	key, ok := s.sliceOf[id]
	if !ok {
		return
	}
	delete(s.sliceOf, id)
	s.removeSliceLocked(key, name)
	s.rebuildLocked(key)
}

func (s *sources) removeSliceLocked(key serviceKey, name string) {
	ss := s.slices[key]
	if ss == nil {
		return
	}
	ss.replace(ss.byName[name], nil)
	if len(ss.byName) == 0 {
		delete(s.slices, key)
	}
}

// replace puts slice b in place of a (either may be nil; both have the same
// name), with work proportional to the two slices and a copy of the list.
func (ss *serviceSlices) replace(a, b *sliceSpec) {
	if a != nil {
		ss.count(a, -1)
		delete(ss.byName, a.name)
	}
	if b != nil {
		ss.count(b, 1)
		ss.byName[b.name] = b
	}
	ordered := slices.Clone(ss.ordered)
	if a != nil {
		if i, found := slices.BinarySearchFunc(ordered, a, compareSlices); found {
			ordered = slices.Delete(ordered, i, i+1)
		}
	}
	if b != nil {
		i, _ := slices.BinarySearchFunc(ordered, b, compareSlices)
		ordered = slices.Insert(ordered, i, b)
	}
	ss.ordered = ordered
}

// count adds (delta 1) or removes (-1) the addresses and names of sl.
func (ss *serviceSlices) count(sl *sliceSpec, delta int32) {
	for i, e := range sl.endpoints {
		if addr, ok := netip.AddrFromSlice(e.ip); ok {
			tally(ss.addrs, addr, delta, &ss.dupAddr)
		}
		// A name with several addresses is one name: count it once a slice.
		if e.host != "" && (i == 0 || sl.endpoints[i-1].host != e.host) {
			tally(ss.names, hostKey{host: e.host, cluster: e.cluster}, delta, &ss.dupName)
		}
	}
}

// tally adds delta to the count of k in m, and keeps *dups, the number of
// keys counted more than once, up to date.
func tally[K comparable](m map[K]int32, k K, delta int32, dups *int) {
	before := m[k]
	after := before + delta
	if after <= 0 {
		delete(m, k)
	} else {
		m[k] = after
	}
	switch {
	case before <= 1 && after > 1:
		*dups++
	case before > 1 && after <= 1:
		*dups--
	}
}

// duplicates reports whether some address or name occurs twice.
func (ss *serviceSlices) duplicates() bool {
	return ss != nil && (ss.dupAddr > 0 || ss.dupName > 0)
}

// rebuildLocked publishes the view of key built from what is known of it
// now. Slices without an import are kept, but answer nothing until the
// import arrives.
func (s *sources) rebuildLocked(key serviceKey) {
	// Only sources writes the index, under its lock: what the index holds
	// is what was published last.
	old := s.index.lookup(key.namespace, key.name)
	imp := s.imports[key]
	if imp == nil {
		s.index.put(key, old, nil)
		return
	}
	s.index.put(key, old, newView(imp, s.slices[key], s.policy))
}

// setScope sets the fallback scope; views built from then on follow it.
// Setup calls it before any object arrives.
func (s *sources) setScope(scope *fallbackScope) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policy.scope = scope
}

// setLocalCluster sets the id of the cluster this server runs in, and
// rebuilds every view, since which endpoints are local changes with it. It
// is rare: when the ClusterProperty appears, changes or goes.
func (s *sources) setLocalCluster(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.policy.localCluster == id {
		return
	}
	s.policy.localCluster = id
	for key := range s.imports {
		s.rebuildLocked(key)
	}
}

func (s *sources) localCluster() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.policy.localCluster
}
