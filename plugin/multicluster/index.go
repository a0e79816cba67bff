// The index, the plugin's only shared state: the published view of every
// imported service, read by queries without waiting for writers, and the
// forward lookups on it. Its reverse map is in reverseindex.go.

package multicluster

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

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
	// dropped counts the addresses every view left out past
	// maxAddresses.
	dropped atomic.Int64
	// maxAddresses is the sources' viewPolicy.maxAddresses, for the log.
	maxAddresses atomic.Int64

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
	if was, is := droppedOf(old), droppedOf(v); was != is {
		x.dropped.Add(int64(is - was))
		if was == 0 {
			limit := int(x.maxAddresses.Load())
			if limit == 0 {
				limit = maxImportAddresses
			}
			objectLog.printf("ServiceImport %s: its slices hold %d more addresses than the %d of each family it answers with (max_import_addresses); the lowest answer, the rest are left out", key, is, limit)
		}
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

func droppedOf(v *view) int32 {
	if v == nil {
		return 0
	}
	return v.dropped
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
