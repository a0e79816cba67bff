package multicluster

import (
	"cmp"
	"maps"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"
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
	host    string // the endpoint's hostname, else its address with '.' and ':' turned into '-'
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
	// ClusterSetIP addresses from source, by family.
	ipv4 []net.IP
	ipv6 []net.IP
	// derived names the local Service whose ClusterIPs answer for a
	// ClusterSetIP import without spec.ips (its derived-service annotation).
	derived string
	ports   []servicePort
	// endpoints of a headless import, ordered by cluster, host and address:
	// every cluster's, for host.cluster names and PTR.
	endpoints []endpoint
	// served are the endpoints the service's own names answer with: all of
	// them, or the local cluster's alone (localOnly).
	served []endpoint
}

// readyEndpoints reports whether a headless import has a ready address.
func (v *view) readyEndpoints() bool { return len(v.endpoints) > 0 }

// ptrTarget is what a known address points back to.
type ptrTarget struct {
	key     serviceKey
	host    string // empty for a ClusterSetIP, or an endpoint without a cluster
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

// index is the plugin's only shared state: the views of all imported
// services, how many imports each namespace holds, and a reverse map for PTR.
// Writers replace whole views under the lock; readers take the read lock only
// for the map lookup.
type index struct {
	mu         sync.RWMutex
	views      map[serviceKey]*view
	namespaces map[string]int
	reverse    map[netip.Addr][]ptrTarget
	// derivedBy maps a derived Service, named by an import's annotation,
	// back to the imports that name it, for PTR queries of its ClusterIPs.
	derivedBy map[serviceKey][]serviceKey

	serial atomic.Uint32 // Unix time of the last change, the zones' SOA serial
}

func newIndex() *index {
	x := &index{
		views:      make(map[serviceKey]*view),
		namespaces: make(map[string]int),
		reverse:    make(map[netip.Addr][]ptrTarget),
		derivedBy:  make(map[serviceKey][]serviceKey),
	}
	x.touch()
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

// reverseLookup returns the names an address points back to.
func (x *index) reverseLookup(addr netip.Addr) []ptrTarget {
	x.mu.RLock()
	t := x.reverse[addr]
	x.mu.RUnlock()
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
func (x *index) hasDerived() bool {
	x.mu.RLock()
	n := len(x.derivedBy)
	x.mu.RUnlock()
	return n > 0
}

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

// put publishes v, replacing the view of the same service; a nil v removes
// the view of key.
func (x *index) put(key serviceKey, v *view) {
	x.mu.Lock()
	old := x.views[key]
	if old != nil {
		x.unlinkLocked(old)
	}
	if v != nil {
		x.views[key] = v
		x.namespaces[key.namespace]++
		x.linkLocked(v)
	} else if old != nil {
		delete(x.views, key)
	}
	x.mu.Unlock()
	x.touch()
}

func (x *index) linkLocked(v *view) {
	if v.derived != "" {
		d := serviceKey{namespace: v.key.namespace, name: v.derived}
		x.derivedBy[d] = append(slices.Clip(x.derivedBy[d]), v.key)
	}
	for _, ip := range v.ipv4 {
		x.addReverseLocked(ip, ptrTarget{key: v.key})
	}
	for _, ip := range v.ipv6 {
		x.addReverseLocked(ip, ptrTarget{key: v.key})
	}
	for _, e := range v.endpoints {
		t := ptrTarget{key: v.key, host: e.host, cluster: e.cluster}
		if e.cluster == "" {
			t.host = "" // no host.cluster name: the service's own name
		}
		x.addReverseLocked(e.ip, t)
	}
}

func (x *index) unlinkLocked(v *view) {
	if n := x.namespaces[v.key.namespace]; n <= 1 {
		delete(x.namespaces, v.key.namespace)
	} else {
		x.namespaces[v.key.namespace] = n - 1
	}
	if v.derived != "" {
		// Copied, not edited in place: readers may hold the old slice.
		d := serviceKey{namespace: v.key.namespace, name: v.derived}
		kept := slices.DeleteFunc(slices.Clone(x.derivedBy[d]), func(k serviceKey) bool { return k == v.key })
		if len(kept) == 0 {
			delete(x.derivedBy, d)
		} else {
			x.derivedBy[d] = kept
		}
	}
	for _, ip := range v.ipv4 {
		x.removeReverseLocked(ip, v.key)
	}
	for _, ip := range v.ipv6 {
		x.removeReverseLocked(ip, v.key)
	}
	for _, e := range v.endpoints {
		x.removeReverseLocked(e.ip, v.key)
	}
}

func (x *index) addReverseLocked(ip net.IP, t ptrTarget) {
	addr, ok := netip.AddrFromSlice(ip)
	if !ok {
		return
	}
	addr = addr.Unmap()
	for _, have := range x.reverse[addr] {
		if have == t {
			return
		}
	}
	x.reverse[addr] = append(x.reverse[addr], t)
}

// removeReverseLocked drops every target of key at ip. The slice is copied,
// never edited in place, because readers may hold the old one.
func (x *index) removeReverseLocked(ip net.IP, key serviceKey) {
	addr, ok := netip.AddrFromSlice(ip)
	if !ok {
		return
	}
	addr = addr.Unmap()
	old := x.reverse[addr]
	kept := make([]ptrTarget, 0, len(old))
	for _, t := range old {
		if t.key != key {
			kept = append(kept, t)
		}
	}
	if len(kept) == 0 {
		delete(x.reverse, addr)
		return
	}
	x.reverse[addr] = kept
}

func (x *index) touch() { x.serial.Store(uint32(time.Now().Unix())) } // #nosec G115 -- Unix time as SOA serial, as the kubernetes plugin does
