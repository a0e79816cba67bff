// The informer stores of ServiceImports and EndpointSlices, which are the
// sources' own maps seen through the interface an informer asks of a store,
// so that each spec is kept once.

package multicluster

import (
	"strings"

	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// informerStore is what an informer (newInformer) asks of its store: what it
// holds of an object and under which key, for a relist's deletions and for
// telling an object delivered again from a change.
type informerStore interface {
	ListKeys() []string
	GetByKey(key string) (any, bool, error)
	Get(obj any) (any, bool, error)
	Add(obj any) error
	Delete(obj any) error
	List() []any
}

// The stores of the ServiceImport and EndpointSlice informers are the
// sources' own maps, seen through importStore and sliceStore: the informer's
// handler (importHandler, sliceHandler) writes them, so that each spec is
// filed once, with no map of "namespace/name" keys beside. Add and Delete do
// nothing: the handler newInformer calls right after files or withdraws the
// spec. Keys are cache.MetaNamespaceKeyFunc's; a store sees its informer's
// namespace, or all ("").

// storeScope is the sources and the namespace ("": all) a store sees.
type storeScope struct {
	s         *sources
	namespace string
}

// getByKey returns what get, called under the sources' lock, finds under
// key in the scope's namespace; get returns nil when nothing is there.
func (sc storeScope) getByKey(key string, get func(namespace, name string) any) (any, bool, error) {
	ns, name := splitKey(key)
	if sc.namespace != "" && ns != sc.namespace {
		return nil, false, nil
	}
	sc.s.mu.Lock()
	defer sc.s.mu.Unlock()
	if obj := get(ns, name); obj != nil {
		return obj, true, nil
	}
	return nil, false, nil
}

func (sc storeScope) sees(namespace string) bool {
	return sc.namespace == "" || namespace == sc.namespace
}

// importStore is the store of a ServiceImport informer: the imports the
// sources hold, per-cluster copies included.
type importStore struct{ storeScope }

// sliceStore is the store of an EndpointSlice informer.
type sliceStore struct{ storeScope }

func (st *importStore) GetByKey(key string) (any, bool, error) {
	return st.getByKey(key, func(ns, name string) any {
		if spec := st.s.importLocked(serviceKey{namespace: ns, name: name}); spec != nil {
			return spec
		}
		return nil
	})
}

func (st *importStore) Get(obj any) (any, bool, error) { return st.GetByKey(storeKey(obj)) }

func (st *importStore) ListKeys() []string {
	var keys []string
	st.each(func(spec *importSpec) { keys = append(keys, spec.key.String()) })
	return keys
}

func (st *importStore) List() []any {
	var out []any
	st.each(func(spec *importSpec) { out = append(out, spec) })
	return out
}

func (st *importStore) each(f func(*importSpec)) {
	st.s.mu.Lock()
	defer st.s.mu.Unlock()
	for _, m := range []map[serviceKey]*importSpec{st.s.imports, st.s.copies} {
		for key, spec := range m {
			if st.sees(key.namespace) {
				f(spec)
			}
		}
	}
}

func (*importStore) Add(any) error    { return nil }
func (*importStore) Delete(any) error { return nil }

func (st *sliceStore) GetByKey(key string) (any, bool, error) {
	return st.getByKey(key, func(ns, name string) any {
		if spec := st.s.sliceLocked(sliceID{namespace: ns, name: name}); spec != nil {
			return spec
		}
		return nil
	})
}

func (st *sliceStore) Get(obj any) (any, bool, error) { return st.GetByKey(storeKey(obj)) }

func (st *sliceStore) ListKeys() []string {
	var keys []string
	st.each(func(id sliceID, _ *sliceSpec) { keys = append(keys, id.namespace+"/"+id.name) })
	return keys
}

func (st *sliceStore) List() []any {
	var out []any
	st.each(func(_ sliceID, spec *sliceSpec) { out = append(out, spec) })
	return out
}

func (st *sliceStore) each(f func(sliceID, *sliceSpec)) {
	st.s.mu.Lock()
	defer st.s.mu.Unlock()
	for id := range st.s.sliceOf {
		if st.sees(id.namespace) {
			if spec := st.s.sliceLocked(id); spec != nil {
				f(id, spec)
			}
		}
	}
}

func (*sliceStore) Add(any) error    { return nil }
func (*sliceStore) Delete(any) error { return nil }

// importLocked is the spec of the import key, served or a per-cluster copy.
func (s *sources) importLocked(key serviceKey) *importSpec {
	if spec, ok := s.imports[key]; ok {
		return spec
	}
	return s.copies[key]
}

// sliceLocked is the spec of the slice id.
func (s *sources) sliceLocked(id sliceID) *sliceSpec {
	key, ok := s.sliceOf[id]
	if !ok {
		return nil
	}
	if ss := s.slices[key]; ss != nil {
		return ss.byName[id.name]
	}
	return nil
}

// storeKey is the key of an object, or of the spec it was converted to.
func storeKey(obj any) string {
	if o, ok := obj.(meta.Object); ok {
		return objectKey(o)
	}
	return ""
}

// splitKey splits a "namespace/name" key; a key without a slash is a name.
func splitKey(key string) (namespace, name string) {
	if ns, n, ok := strings.Cut(key, "/"); ok {
		return ns, n
	}
	return "", key
}
