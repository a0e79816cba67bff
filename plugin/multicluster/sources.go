// The sources: per service, the import and slices the informers delivered;
// each change rebuilds that service's view and publishes it in the index.
// The only writer of the index.

package multicluster

import (
	"sync"
)

// sliceID names an EndpointSlice.
type sliceID struct{ namespace, name string }

// sources holds, per service, the objects the informers delivered, and
// publishes that service's view in the index whenever one of them changes.
// It is written by the informer goroutines only; ServeDNS reads the index.
// Its maps are the informers' stores too (importStore, sliceStore).
type sources struct {
	mu      sync.Mutex
	imports map[serviceKey]*importSpec
	copies  map[serviceKey]*importSpec // per-cluster copies, never served
	slices  map[serviceKey]*serviceSlices
	sliceOf map[sliceID]serviceKey // where a slice was filed, for relabelled slices
	index   *index
	policy  viewPolicy
	// scope is the fallback scope, whose verdict each import's spec gets
	// as it is filed (scoped).
	scope *fallbackScope
}

func newSources(x *index) *sources {
	return &sources{
		imports: make(map[serviceKey]*importSpec),
		copies:  make(map[serviceKey]*importSpec),
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
			objectLog.printf("ServiceImport %s is labelled %s: a controller's per-cluster copy of an import, not served", spec.key, labelServiceName)
		}
		s.copies[spec.key] = spec
		// Labelled after it was served: withdraw it.
		s.deleteImportLocked(spec.key)
		return
	}
	delete(s.copies, spec.key)
	s.imports[spec.key] = s.scoped(spec)
	s.rebuildLocked(spec.key)
}

// scoped returns spec with the fallback scope's verdict: spec itself when
// it has the verdict already, else a copy that has it. Specs are immutable
// once made, and the informer that made this one keeps none: the copy is
// what the sources file, and what the view of a ClusterSetIP import is.
func (s *sources) scoped(spec *importSpec) *importSpec {
	verdict := s.scope.verdict(spec.key.namespace, spec.key.name)
	if spec.scope == verdict {
		return spec
	}
	c := *spec
	c.scope = verdict
	return &c
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
		ss = &serviceSlices{byName: make(map[string]*sliceSpec)}
		s.slices[spec.key] = ss
	}
	old := ss.byName[spec.name]
	switch {
	case old == spec:
	case old != nil && old.cluster == spec.cluster && old.ref != nil:
		spec.ref = old.ref
	default:
		spec.ref = &sliceRef{}
	}
	// The reverse map's claims of the slice read this version from now on.
	spec.ref.spec.Store(spec)
	ss.replace(old, spec)
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

// setScope sets the fallback scope; imports filed from then on follow it.
// Setup calls it before any object arrives.
func (s *sources) setScope(scope *fallbackScope) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scope = scope
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

// setMaxAddresses sets the most distinct addresses of each family a view
// answers with from its import's slices (max_import_addresses), before the
// informers start.
func (s *sources) setMaxAddresses(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policy.maxAddresses = n
	s.index.maxAddresses.Store(int64(n))
	for key := range s.imports {
		s.rebuildLocked(key)
	}
}

func (s *sources) localCluster() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.policy.localCluster
}
