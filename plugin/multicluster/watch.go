// The watcher: it starts and stops every informer of a plugin, tracks
// their stores for the objects gauge, and holds the list-watches,
// conversions and event handlers its informers are built from.

package multicluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coredns/coredns/plugin/kubernetes/object"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

const (
	mcsGroup       = "multicluster.x-k8s.io"
	importResource = "serviceimports"

	// maxRetry bounds the wait between attempts while degraded, and so how
	// long the plugin takes to heal once the CRD or the permission appears.
	maxRetry = 5 * time.Second
)

// watcher runs the informers that feed the index: ServiceImports (in the
// version the API server serves), the EndpointSlices of imports, and, when no
// kubernetes plugin shares its cache, local Services.
type watcher struct {
	kube       kubernetes.Interface
	imports    importAPI
	namespaces []string // empty: all
	sources    *sources
	health     *health

	// ownServices makes the watcher cache local Services itself: the
	// store, its informer's sync and a count of its events, which
	// localServices reads.
	ownServices bool
	services    cache.Indexer
	servicesOK  func() bool
	// serviceChanges moves on every event of the own Service informer.
	serviceChanges atomic.Int64

	// longestZone is the length of the longest zone names are answered in:
	// host names that would not fit below it are dropped.
	longestZone int

	// dynamic, when set, follows the ClusterProperty that names the local
	// cluster (clusterid.go); nil when the Corefile gives cluster_id.
	dynamic dynamic.Interface

	// retry is the first wait before another attempt while the CRD or a
	// permission is missing; it doubles up to maxRetry.
	retry time.Duration

	// running counts every goroutine start begins, informers included:
	// stop waits for all of them, so that nothing writes to the index or
	// the gauges after it.
	running sync.WaitGroup
	// rediscover is signalled when a list or watch of ServiceImports
	// answers NotFound: the version watched may no longer be served.
	rediscover chan struct{}

	// unreachable are the resources whose last list or watch call got no
	// answer from the API server (a refused or timed-out connection), for
	// the api_unreachable gauge.
	unreachableMu sync.Mutex
	unreachable   map[string]bool
	// undecodable are the resources whose last list answer could not be
	// decoded as a whole, so that it is logged once.
	undecodable map[string]bool

	mu       sync.Mutex
	stores   map[informerStore]string // every store, by metric kind, for the objects gauge
	cancel   context.CancelFunc
	stopOnce sync.Once
}

// track returns store after noting it for stop.
func (w *watcher) track(kind string, store informerStore) informerStore {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stores == nil {
		w.stores = map[informerStore]string{}
	}
	w.stores[store] = strings.ToLower(kind)
	return store
}

// forget stops tracking store, whose objects stay counted: another store
// sees the same ones (the ServiceImport stores of two versions are views of
// the sources' imports).
func (w *watcher) forget(store informerStore) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.stores, store)
}

// start begins watching in the background; onSynced runs once every
// informer has synced.
func (w *watcher) start(onSynced func()) {
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	w.rediscover = make(chan struct{}, 1)
	degradedReasons.join(w.health)

	if w.ownServices {
		store := newStore(clusterIPIndexers)
		ctrl := newInformer("Service", serviceListWatch(w.kube), &corev1.Service{}, toService, w.guard(reasonServiceRBAC, "services"), w.retry, serviceHandler(&w.serviceChanges), store)
		w.track("Service", store)
		w.services = store
		w.servicesOK = ctrl.HasSynced
		w.running.Go(func() { ctrl.RunWithContext(ctx) })
	}
	if w.dynamic != nil {
		w.running.Go(func() { w.watchClusterID(ctx) })
	}
	w.running.Go(func() { w.watchImports(ctx, onSynced) })
}

// localServices reads the local Services the watcher caches itself
// (ownServices), once start has begun caching them.
func (w *watcher) localServices() informerServices {
	return informerServices{store: w.services, synced: w.servicesOK, changes: &w.serviceChanges}
}

// stop ends every informer and waits for them and every other goroutine
// start began. What their stores held leaves the objects gauge, and the
// watcher's degraded reasons leave the degraded gauge, so that a reload does
// not count objects twice nor keep a reason of an instance that is gone.
func (w *watcher) stop() {
	w.stopOnce.Do(func() {
		if w.cancel == nil {
			return
		}
		w.cancel()
		w.running.Wait()
		w.mu.Lock()
		for store, kind := range w.stores {
			for _, obj := range store.List() {
				objects.WithLabelValues(metricKindOf(obj, kind)).Dec()
			}
		}
		w.stores = nil
		w.mu.Unlock()
		degradedReasons.leave(w.health)
	})
}

func (w *watcher) watchNamespaces() []string {
	if len(w.namespaces) == 0 {
		return []string{corev1.NamespaceAll}
	}
	return w.namespaces
}

// EndpointSlices and Services, unlike ServiceImports (imports.go), are
// decoded whole by the typed clientset, in protobuf (clientConfig). No object
// the API server stored can fail that: it decoded it into the same Go types,
// and these kinds' protobuf decoding parses no text (k8s.io/api generated.pb.go
// of discovery/v1 and core/v1; time_proto.go of k8s.io/apimachinery). Only
// broken bytes fail a list or an event.
func sliceListWatch(c kubernetes.Interface, ns string) *cache.ListWatch {
	withLabel := func(o meta.ListOptions) meta.ListOptions {
		o.LabelSelector = labelServiceName
		return o
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o meta.ListOptions) (runtime.Object, error) {
			return c.DiscoveryV1().EndpointSlices(ns).List(ctx, withLabel(o))
		},
		WatchFuncWithContext: func(ctx context.Context, o meta.ListOptions) (watch.Interface, error) {
			return c.DiscoveryV1().EndpointSlices(ns).Watch(ctx, withLabel(o))
		},
	}
}

func serviceListWatch(c kubernetes.Interface) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o meta.ListOptions) (runtime.Object, error) {
			return c.CoreV1().Services(corev1.NamespaceAll).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o meta.ListOptions) (watch.Interface, error) {
			return c.CoreV1().Services(corev1.NamespaceAll).Watch(ctx, o)
		},
	}
}

// Conversions from API objects to what the stores keep.

// toImportSpec converts a ServiceImport as decoded (importObject). One that
// did not decode fails with why: the informer drops it, and its former
// version.
func toImportSpec(obj meta.Object) (meta.Object, error) {
	si, ok := obj.(*importObject)
	if !ok {
		return nil, fmt.Errorf("unexpected object %T", obj)
	}
	if si.err != nil {
		return nil, si.err
	}
	return reported(newImportSpec(si.fields()))
}

func (w *watcher) toSliceSpec(obj meta.Object) (meta.Object, error) {
	es, ok := obj.(*discovery.EndpointSlice)
	if !ok {
		return nil, fmt.Errorf("unexpected object %T", obj)
	}
	return reported(newSliceSpec(es, w.longestZone))
}

func toService(obj meta.Object) (meta.Object, error) { return object.ToService(obj) }

// Handlers from store events to sources.

func importHandler(s *sources) *informerHandler {
	return &informerHandler{
		set:    func(o meta.Object) { s.setImport(o.(*importSpec)) },
		delete: func(o meta.Object) { s.deleteImport(o.(*importSpec).key) },
	}
}

func sliceHandler(s *sources) *informerHandler {
	return &informerHandler{
		set:    func(o meta.Object) { s.setSlice(o.(*sliceSpec)) },
		delete: func(o meta.Object) { s.deleteSlice(o.GetNamespace(), o.GetName()) },
	}
}

// serviceHandler counts the events of the own Service informer (a change
// of a derived Service moves the serial).
func serviceHandler(changes *atomic.Int64) *informerHandler {
	bump := func(meta.Object) { changes.Add(1) }
	return &informerHandler{set: bump, delete: bump}
}
