package multicluster

import "sync"

// sliceID names an EndpointSlice.
type sliceID struct{ namespace, name string }

// sources holds, per service, the objects the informers delivered, and
// rebuilds that service's view in the index whenever one of them changes.
// It is written by the informer goroutines only; ServeDNS reads the index.
type sources struct {
	mu      sync.Mutex
	imports map[serviceKey]*importSpec
	copies  map[serviceKey]struct{}              // per-cluster copies, never served
	slices  map[serviceKey]map[string]*sliceSpec // by slice name
	sliceOf map[sliceID]serviceKey               // where a slice was filed, for relabelled slices
	index   *index
	policy  viewPolicy
}

func newSources(x *index) *sources {
	return &sources{
		imports: make(map[serviceKey]*importSpec),
		copies:  make(map[serviceKey]struct{}),
		slices:  make(map[serviceKey]map[string]*sliceSpec),
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
	bySlice := s.slices[spec.key]
	if bySlice == nil {
		bySlice = make(map[string]*sliceSpec)
		s.slices[spec.key] = bySlice
	}
	bySlice[spec.name] = spec
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
	bySlice := s.slices[key]
	delete(bySlice, name)
	if len(bySlice) == 0 {
		delete(s.slices, key)
	}
}

// rebuildLocked publishes the view of key built from what is known of it
// now. Slices without an import are kept, but answer nothing until the
// import arrives.
func (s *sources) rebuildLocked(key serviceKey) {
	imp := s.imports[key]
	if imp == nil {
		s.index.put(key, nil)
		return
	}
	s.index.put(key, newView(imp, s.slices[key], s.policy))
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
