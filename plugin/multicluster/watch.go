package multicluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coredns/coredns/plugin/kubernetes/object"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"
)

const (
	mcsGroup       = "multicluster.x-k8s.io"
	importResource = "serviceimports"

	// maxRetry bounds the wait between attempts while degraded, and so how
	// long the plugin takes to heal once the CRD or the permission appears.
	maxRetry = 5 * time.Second
)

// Reasons the plugin can be degraded, the reason label of degradedGauge.
const (
	reasonCRD         = "crd"
	reasonImportRBAC  = "rbac_serviceimports"
	reasonSliceRBAC   = "rbac_endpointslices"
	reasonServiceRBAC = "rbac_services"
)

// watcher runs the informers that feed the index: ServiceImports (in the
// version the API server serves), the EndpointSlices of imports, and, when no
// kubernetes plugin shares its cache, local Services.
type watcher struct {
	kube       kubernetes.Interface
	mcs        mcsclient.Interface
	namespaces []string // empty: all
	sources    *sources
	health     *health

	// ownServices makes the watcher cache local Services itself.
	ownServices bool
	services    cache.Indexer
	servicesOK  func() bool
	// serviceChanges moves on every event of the own Service informer.
	serviceChanges atomic.Int64

	// longestZone is the length of the longest zone names are answered in:
	// host names that would not fit below it are dropped.
	longestZone int

	// scope is the fallback scope, whose verdict conversion stamps on
	// each import.
	scope *fallbackScope

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
	// importsMu orders the ServiceImport handler against the withdrawal of
	// what an informer of a version no longer served left behind.
	importsMu sync.Mutex

	// unreachable are the resources whose last list or watch call got no
	// answer from the API server (a refused or timed-out connection), for
	// the api_unreachable gauge.
	unreachableMu sync.Mutex
	unreachable   map[string]bool

	mu       sync.Mutex
	stores   map[cache.Store]string // every store, by metric kind, for the objects gauge
	cancel   context.CancelFunc
	stopOnce sync.Once
}

// reach records whether the last call about resource got an answer from the
// API server: any answer, an error status included, says that it is
// reachable; an error without a status (a connection refused, reset or
// timed out) that it is not. A call cancelled because the watcher stops
// says nothing.
func (w *watcher) reach(resource string, err error) {
	if err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return
	}
	var status apierrors.APIStatus
	down := err != nil && !errors.As(err, &status)
	w.unreachableMu.Lock()
	defer w.unreachableMu.Unlock()
	if w.unreachable[resource] == down {
		return
	}
	if down {
		if w.unreachable == nil {
			w.unreachable = map[string]bool{}
		}
		if len(w.unreachable) == 0 {
			log.Warningf("Kubernetes API unreachable, serving what the cache holds: %v", err)
		}
		w.unreachable[resource] = true
		return
	}
	delete(w.unreachable, resource)
	if len(w.unreachable) == 0 {
		log.Infof("Kubernetes API reachable again")
	}
}

// apiUnreachable reports whether some resource's last call got no answer.
func (w *watcher) apiUnreachable() bool {
	w.unreachableMu.Lock()
	defer w.unreachableMu.Unlock()
	return len(w.unreachable) > 0
}

// track returns store after noting it for stop.
func (w *watcher) track(kind string, store cache.Store) cache.Store {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stores == nil {
		w.stores = map[cache.Store]string{}
	}
	w.stores[store] = strings.ToLower(kind)
	return store
}

// untrack takes what store holds out of the objects gauge, and forgets it.
func (w *watcher) untrack(store cache.Store) {
	w.mu.Lock()
	defer w.mu.Unlock()
	kind, ok := w.stores[store]
	if !ok {
		return
	}
	for _, obj := range store.List() {
		objects.WithLabelValues(metricKindOf(obj, kind)).Dec()
	}
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
		store, ctrl := newInformer("Service", serviceListWatch(w.kube), &corev1.Service{}, toService, w.guard(reasonServiceRBAC, "services"), w.retry, serviceHandler(&w.serviceChanges), clusterIPIndexers)
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

// watchImports discovers the ServiceImport version, watches ServiceImports
// in it and the EndpointSlices of imports, and follows the version: when
// the one watched answers NotFound and discovery names another (the CRD was
// upgraded to serve only v1beta1, say), it watches that one instead,
// without a restart. It returns when ctx ends, once its informers have.
func (w *watcher) watchImports(ctx context.Context, onSynced func()) {
	version, ok := w.discover(ctx)
	if !ok {
		return
	}
	log.Infof("Watching ServiceImports %s/%s", mcsGroup, version)

	var synced []cache.InformerSynced
	for _, ns := range w.watchNamespaces() {
		ss, sc := newInformer(kindEndpointSlice, sliceListWatch(w.kube, ns), &discovery.EndpointSlice{}, w.toSliceSpec, w.guard(reasonSliceRBAC, "endpointslices"), w.retry, sliceHandler(w.sources), nil)
		w.track(kindEndpointSlice, ss)
		w.running.Go(func() { sc.RunWithContext(ctx) })
		synced = append(synced, sc.HasSynced)
	}
	current := w.startImports(ctx, version)
	defer func() { current.stop() }()
	if !cache.WaitForCacheSync(ctx.Done(), append(synced, current.synced...)...) {
		return
	}
	log.Infof("Synced %d ServiceImports", w.sources.index.len())
	onSynced()

	for {
		select {
		case <-ctx.Done():
			return
		case <-w.rediscover:
		}
		current = w.follow(ctx, current)
	}
}

// follow asks discovery again after the version current watches answered
// NotFound. While that version is served, or none is (the CRD is gone: the
// guard reports it), current goes on retrying. When another is served, its
// informers start, and once they have synced, current's stop and what only
// current had is withdrawn. follow returns the import watch to go on with.
func (w *watcher) follow(ctx context.Context, current *importWatch) *importWatch {
	version, err := servedImportVersion(w.kube)
	if err != nil || version == current.version {
		return current
	}
	log.Infof("ServiceImports %s/%s are no longer served: watching %s/%s", mcsGroup, current.version, mcsGroup, version)
	next := w.startImports(ctx, version)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !next.hasSynced() {
		select {
		case <-ctx.Done():
			next.stop()
			return current
		case <-w.rediscover:
			// The version changed again before next synced.
			if v, err := servedImportVersion(w.kube); err == nil && v != next.version {
				next.stop()
				return w.follow(ctx, current)
			}
		case <-tick.C:
		}
	}
	current.stop()
	w.withdraw(current, next)
	// next has listed, so the CRD is served; the NotFound answers of
	// current, until it stopped, had said otherwise.
	w.health.clear(reasonCRD)
	log.Infof("Synced %d ServiceImports from %s/%s", w.sources.index.len(), mcsGroup, version)
	return next
}

// importWatch is the ServiceImport informers of one version, one per
// watched namespace.
type importWatch struct {
	version string
	stores  []cache.Store
	synced  []cache.InformerSynced
	cancel  context.CancelFunc
	running sync.WaitGroup
}

// startImports starts the ServiceImport informers of version.
func (w *watcher) startImports(ctx context.Context, version string) *importWatch {
	ctx, cancel := context.WithCancel(ctx)
	iw := &importWatch{version: version, cancel: cancel}
	h := w.importHandler()
	for _, ns := range w.watchNamespaces() {
		store, ctrl := newInformer(kindServiceImport, importListWatch(w.mcs, version, ns), importObjectType(version), w.toImportSpec, w.guard(reasonImportRBAC, importResource), w.retry, h, nil)
		w.track(kindServiceImport, store)
		iw.stores = append(iw.stores, store)
		iw.synced = append(iw.synced, ctrl.HasSynced)
		iw.running.Go(func() { ctrl.RunWithContext(ctx) })
	}
	return iw
}

func (iw *importWatch) hasSynced() bool {
	for _, synced := range iw.synced {
		if !synced() {
			return false
		}
	}
	return true
}

// stop ends the informers and waits for them.
func (iw *importWatch) stop() {
	iw.cancel()
	iw.running.Wait()
}

// importHandler hands ServiceImports to the sources, one event at a time
// with withdraw.
func (w *watcher) importHandler() *handler {
	h := importHandler(w.sources)
	return &handler{
		set: func(o meta.Object) {
			w.importsMu.Lock()
			defer w.importsMu.Unlock()
			h.set(o)
		},
		delete: func(o meta.Object) {
			w.importsMu.Lock()
			defer w.importsMu.Unlock()
			h.delete(o)
		},
	}
}

// withdraw deletes from the sources the imports that old, stopped, held and
// next does not, and takes old's stores out of the objects gauge. It holds
// the handler's lock, so an import next adds meanwhile is set after it is
// looked for, never deleted after it was set.
func (w *watcher) withdraw(old, next *importWatch) {
	w.importsMu.Lock()
	h := importHandler(w.sources)
	for _, store := range old.stores {
		for _, obj := range store.List() {
			o := obj.(meta.Object)
			if !slices.ContainsFunc(next.stores, func(s cache.Store) bool { _, ok, _ := s.GetByKey(objectKey(o)); return ok }) {
				h.delete(o)
			}
		}
	}
	w.importsMu.Unlock()
	for _, store := range old.stores {
		w.untrack(store)
	}
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

// discover finds the ServiceImport version to watch, preferring v1beta1.
// While neither is served the plugin is degraded, and discovery is retried
// with a growing wait, so that installing the CRD heals it.
func (w *watcher) discover(ctx context.Context) (string, bool) {
	wait := w.retry
	for {
		version, err := servedImportVersion(w.kube)
		w.reach("discovery", discoveryAnswer(err))
		if err == nil {
			w.health.clear(reasonCRD)
			return version, true
		}
		if errors.Is(err, errCRDMissing) {
			w.health.set(reasonCRD, err.Error(), dns.ExtendedErrorCodeOther, "ServiceImport CRD not installed")
		} else {
			w.health.set(reasonCRD, err.Error(), dns.ExtendedErrorCodeNetworkError, "Kubernetes API unreachable")
		}
		select {
		case <-ctx.Done():
			return "", false
		case <-time.After(wait):
		}
		wait = min(2*wait, maxRetry)
	}
}

// discoveryAnswer is err as reach reads it: a CRD found missing is an
// answer of the API server.
func discoveryAnswer(err error) error {
	if errors.Is(err, errCRDMissing) {
		return nil
	}
	return err
}

var errCRDMissing = errors.New("the ServiceImport CRD (" + importResource + "." + mcsGroup + ") is not installed, or serves neither v1beta1 nor v1alpha1: apply manifests/crds")

// servedImportVersion asks discovery which ServiceImport version is served.
func servedImportVersion(kube kubernetes.Interface) (string, error) {
	version, err := servedVersion(kube, mcsGroup, importResource, "v1beta1", "v1alpha1")
	if errors.Is(err, errNotServed) {
		return "", errCRDMissing
	}
	return version, err
}

var errNotServed = errors.New("not served")

// servedVersion returns the first of versions in which the API server
// serves group/resource, or errNotServed.
func servedVersion(kube kubernetes.Interface, group, resource string, versions ...string) (string, error) {
	for _, version := range versions {
		list, err := kube.Discovery().ServerResourcesForGroupVersion(group + "/" + version)
		if err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return "", fmt.Errorf("discovery of %s/%s: %w", group, version, err)
		}
		if slices.ContainsFunc(list.APIResources, func(r meta.APIResource) bool { return r.Name == resource }) {
			return version, nil
		}
	}
	return "", errNotServed
}

// guard reports list and watch failures that no retry will fix (a missing
// RBAC rule or CRD) as a degraded reason, and clears it on success.
func (w *watcher) guard(reason, resource string) func(error) {
	return func(err error) {
		w.reach(resource, err)
		switch {
		case err == nil:
			w.health.clear(reason)
			if reason == reasonImportRBAC {
				// A CRD deleted and installed again while watching.
				w.health.clear(reasonCRD)
			}
		case apierrors.IsForbidden(err):
			w.health.set(reason, fmt.Sprintf("not allowed to list and watch %s: grant the ClusterRole in manifests/rbac (%v)", resource, err),
				dns.ExtendedErrorCodeOther, "RBAC forbids "+forbiddenVerb(err)+" on "+resource)
		case apierrors.IsNotFound(err) && reason == reasonImportRBAC:
			w.health.set(reasonCRD, errCRDMissing.Error(), dns.ExtendedErrorCodeOther, "ServiceImport CRD not installed")
			// The version watched may be gone while another is served.
			select {
			case w.rediscover <- struct{}{}:
			default:
			}
		}
	}
}

func importObjectType(version string) runtime.Object {
	if version == "v1alpha1" {
		return &mcsv1alpha1.ServiceImport{}
	}
	return &mcsv1beta1.ServiceImport{}
}

func importListWatch(c mcsclient.Interface, version, ns string) *cache.ListWatch {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o meta.ListOptions) (runtime.Object, error) {
			return c.MulticlusterV1beta1().ServiceImports(ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o meta.ListOptions) (watch.Interface, error) {
			return c.MulticlusterV1beta1().ServiceImports(ns).Watch(ctx, o)
		},
	}
	if version == "v1alpha1" {
		lw = &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o meta.ListOptions) (runtime.Object, error) {
				return c.MulticlusterV1alpha1().ServiceImports(ns).List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o meta.ListOptions) (watch.Interface, error) {
				return c.MulticlusterV1alpha1().ServiceImports(ns).Watch(ctx, o)
			},
		}
	}
	return lw
}

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

// toImportSpec converts a ServiceImport, and records whether the fallback
// scope keeps it out of fallback zones: the scope does not change while the
// plugin runs, so its verdict belongs to the spec, and views need no copy of
// it to carry the verdict.
func (w *watcher) toImportSpec(obj meta.Object) (meta.Object, error) {
	out, err := toImportSpec(obj)
	if err != nil {
		return nil, err
	}
	spec, _ := out.(*importSpec)
	if p, ok := out.(*withProblems); ok {
		spec = p.Object.(*importSpec)
	}
	spec.outOfScope = !w.scope.allows(spec.key.namespace, spec.key.name)
	return out, nil
}

func toImportSpec(obj meta.Object) (meta.Object, error) {
	var f importFields
	switch si := obj.(type) {
	case *mcsv1beta1.ServiceImport:
		f = importFromV1beta1(si)
	case *mcsv1alpha1.ServiceImport:
		f = importFromV1alpha1(si)
	default:
		return nil, fmt.Errorf("unexpected object %T", obj)
	}
	return reported(newImportSpec(f))
}

func (w *watcher) toSliceSpec(obj meta.Object) (meta.Object, error) {
	es, ok := obj.(*discovery.EndpointSlice)
	if !ok {
		return nil, fmt.Errorf("unexpected object %T", obj)
	}
	return reported(newSliceSpec(es, w.longestZone))
}

// withProblems carries the problems of a conversion to the informer, which
// logs them and stores the object alone.
type withProblems struct {
	meta.Object
	problems []string
}

// reported returns what a conversion returns to the informer: the object,
// wrapped with its problems if it has any.
func reported[T meta.Object](obj T, problems []string, err error) (meta.Object, error) {
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return &withProblems{Object: obj, problems: problems}, nil
	}
	return obj, nil
}

func toService(obj meta.Object) (meta.Object, error) { return object.ToService(obj) }

// Handlers from store events to sources.

type handler struct {
	set    func(meta.Object)
	delete func(meta.Object)
}

func importHandler(s *sources) *handler {
	return &handler{
		set:    func(o meta.Object) { s.setImport(o.(*importSpec)) },
		delete: func(o meta.Object) { s.deleteImport(o.(*importSpec).key) },
	}
}

func sliceHandler(s *sources) *handler {
	return &handler{
		set:    func(o meta.Object) { s.setSlice(o.(*sliceSpec)) },
		delete: func(o meta.Object) { s.deleteSlice(o.GetNamespace(), o.GetName()) },
	}
}

// serviceHandler counts the events of the own Service informer (a change
// of a derived Service moves the serial).
func serviceHandler(changes *atomic.Int64) *handler {
	bump := func(meta.Object) { changes.Add(1) }
	return &handler{set: bump, delete: bump}
}

// metricKinded is a stored object that the objects gauge counts under a
// kind of its own rather than its informer's.
type metricKinded interface{ metricKind() string }

// metricKindOf is the kind the objects gauge counts obj under.
func metricKindOf(obj any, informerKind string) string {
	if k, ok := obj.(metricKinded); ok {
		return k.metricKind()
	}
	return informerKind
}

// newInformer returns a store of converted objects, with indexers if any,
// and the controller that fills it. Unlike a plain informer it logs an object
// that fails conversion once per version and drops it (an earlier good
// version is withdrawn), and it keeps the reflector quiet about errors
// onError turns into a degraded state.
func newInformer(kind string, lw *cache.ListWatch, objType runtime.Object, convert object.ToFunc, onError func(error), retry time.Duration, h *handler, indexers cache.Indexers) (cache.Indexer, cache.Controller) {
	store := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, indexers)
	metricKind := strings.ToLower(kind)
	count := func(obj any) prometheus.Gauge { return objects.WithLabelValues(metricKindOf(obj, metricKind)) }
	// skipped holds the version of each object dropped whole, which the store
	// does not remember, so that a relist does not log it again. Only
	// process, which runs on one goroutine, uses it. An object deleted while
	// the watch was down stays until its key comes back: a few bytes.
	skipped := map[string]string{}
	process := func(obj any, _ bool) error {
		for _, d := range obj.(cache.Deltas) {
			switch d.Type {
			case cache.Sync, cache.Replaced, cache.Added, cache.Updated:
				in, ok := d.Object.(meta.Object)
				if !ok {
					continue
				}
				old, exists, _ := store.Get(in)
				sameVersion := exists && old.(meta.Object).GetResourceVersion() == in.GetResourceVersion()
				key := objectKey(in)
				if unchanged(in, exists, sameVersion, skipped[key]) {
					// A relist (after 410 Gone, or an API server restart)
					// delivers every object again: one already stored, or
					// already skipped, in this version changes nothing, so
					// the index, its views and the SOA serial stay as they are.
					continue
				}
				out, err := convert(in)
				if err != nil {
					if v, ok := skipped[key]; !sameVersion && (!ok || v != in.GetResourceVersion()) {
						log.Warningf("Skipping %s %s/%s (resourceVersion %s): %v", kind, in.GetNamespace(), in.GetName(), in.GetResourceVersion(), err)
						malformedTotal.WithLabelValues(metricKind).Inc()
					}
					skipped[key] = in.GetResourceVersion()
					if exists {
						_ = store.Delete(old)
						count(old).Dec()
						if h != nil {
							h.delete(old.(meta.Object))
						}
					}
					continue
				}
				delete(skipped, key)
				if p, ok := out.(*withProblems); ok {
					out = p.Object
					if !sameVersion {
						log.Warningf("%s %s/%s (resourceVersion %s): %s", kind, in.GetNamespace(), in.GetName(), in.GetResourceVersion(), strings.Join(p.problems, "; "))
						malformedTotal.WithLabelValues(metricKind).Inc()
					}
				}
				if err := store.Add(out); err != nil {
					return err
				}
				if !exists {
					count(out).Inc()
				} else if before, after := metricKindOf(old, metricKind), metricKindOf(out, metricKind); before != after {
					objects.WithLabelValues(before).Dec()
					objects.WithLabelValues(after).Inc()
				}
				if h != nil {
					h.set(out.(meta.Object))
				}
			case cache.Deleted:
				var key string
				switch o := d.Object.(type) {
				case cache.DeletedFinalStateUnknown:
					key = o.Key
				case meta.Object:
					key = objectKey(o)
				default:
					continue
				}
				delete(skipped, key)
				old, exists, _ := store.GetByKey(key)
				if !exists {
					continue
				}
				_ = store.Delete(old)
				count(old).Dec()
				if h != nil {
					h.delete(old.(meta.Object))
				}
			}
		}
		return nil
	}
	cfg := &cache.Config{
		Queue:            cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{KeyFunction: cache.MetaNamespaceKeyFunc, KnownObjects: store, EmitDeltaTypeReplaced: true}),
		ListerWatcher:    cache.ToListWatcherWithWatchListSemantics(reporting(lw, onError, retry), listThenWatch{}),
		ObjectType:       objType,
		Process:          process,
		FullResyncPeriod: 0,
		WatchErrorHandlerWithContext: func(ctx context.Context, r *cache.Reflector, err error) {
			if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
				return // reported once as a degraded state
			}
			cache.DefaultWatchErrorHandler(ctx, r, err)
		},
	}
	return store, cache.New(cfg)
}

// unchanged reports whether in, delivered again, is the version of it the
// store holds (exists, sameVersion) or the version last dropped as malformed
// (skippedVersion). An object without a resourceVersion is never taken as
// unchanged: the API server always sets one.
func unchanged(in meta.Object, exists, sameVersion bool, skippedVersion string) bool {
	rv := in.GetResourceVersion()
	if rv == "" {
		return false
	}
	return (exists && sameVersion) || (!exists && skippedVersion == rv)
}

// listThenWatch makes the reflectors list, in pages, then watch, instead of
// streaming the initial objects as watch events (client-go's WatchListClient,
// on by default since 1.35). Against kube-apiserver 1.37, make bench measured
// the stream slower to Ready: with 50,000 Services and 50,000 imports the
// server was Ready in 7.5 to 9.8 s streaming, 5.8 to 6.2 s with this plugin
// listing (the kubernetes plugin still streams its Services); with no import
// at all, 1.1 s streaming, most of it waiting for the bookmark that ends the
// initial events, against 0.15 s listing. The stream spares the API server a
// large list response; a DNS server, which restarts rarely and must be Ready
// soon, is better served by the list.
type listThenWatch struct{}

func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }

// objectKey is the store key of o: namespace/name, or name.
func objectKey(o meta.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

// reporting returns lw with the outcome of every list and watch call passed
// to report. A call refused for a reason only an administrator can fix (a
// missing RBAC rule or CRD) is retried here, the wait doubling from retry to
// maxRetry, instead of failing: the reflector would back off for up to a
// minute between attempts, and the plugin must heal soon after the fix. A
// refused watch after an allowed list so stays one degraded state, rather
// than one that clears and returns with every attempt.
func reporting(lw *cache.ListWatch, report func(error), retry time.Duration) *cache.ListWatch {
	list, watchFunc := lw.ListWithContextFunc, lw.WatchFuncWithContext
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o meta.ListOptions) (runtime.Object, error) {
			return retryRefused(ctx, retry, report, func() (runtime.Object, error) { return list(ctx, o) })
		},
		WatchFuncWithContext: func(ctx context.Context, o meta.ListOptions) (watch.Interface, error) {
			return retryRefused(ctx, retry, report, func() (watch.Interface, error) { return watchFunc(ctx, o) })
		},
	}
}

// retryRefused calls f, and again while it is refused as Forbidden or
// NotFound, until ctx ends; a retry of 0 calls it once.
func retryRefused[T any](ctx context.Context, retry time.Duration, report func(error), f func() (T, error)) (T, error) {
	wait := retry
	for {
		v, err := f()
		report(err)
		if retry <= 0 || !(apierrors.IsForbidden(err) || apierrors.IsNotFound(err)) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(wait):
		}
		wait = min(2*wait, maxRetry)
	}
}

// health tracks why the plugin is degraded. Each reason is logged when it
// appears and when it clears, not on every retry.
type health struct {
	mu      sync.Mutex
	reasons map[string]degradation
	publish func(*degradation) // sets the plugin's degraded state
}

func newHealth(publish func(*degradation)) *health {
	return &health{reasons: map[string]degradation{}, publish: publish}
}

// set records reason, with the log message and the Extended DNS Error
// (info code, short text) that SERVFAIL answers carry while it lasts.
func (h *health) set(reason, msg string, infoCode uint16, text string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.reasons[reason]; !ok {
		log.Errorf("Degraded, clusterset zones answer SERVFAIL until this is fixed: %s", msg)
		degradedReasons.update(h, reason, true)
	}
	h.reasons[reason] = degradation{message: msg, infoCode: infoCode, text: text}
	h.publishLocked()
}

func (h *health) clear(reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.reasons[reason]; !ok {
		return
	}
	delete(h.reasons, reason)
	degradedReasons.update(h, reason, false)
	log.Infof("Recovered: %s", reason)
	h.publishLocked()
}

// publishLocked publishes every message, and the Extended DNS Error of the
// first reason in name order, so that it does not change from query to
// query.
func (h *health) publishLocked() {
	if len(h.reasons) == 0 {
		h.publish(nil)
		return
	}
	reasons := slices.Sorted(maps.Keys(h.reasons))
	msgs := make([]string, 0, len(reasons))
	for _, r := range reasons {
		msgs = append(msgs, h.reasons[r].message)
	}
	slices.Sort(msgs)
	d := h.reasons[reasons[0]]
	d.message = strings.Join(msgs, "; ")
	h.publish(&d)
}

// forbiddenVerb is the verb a Forbidden error from the API server names
// ("... cannot watch resource ..."), or "list and watch".
func forbiddenVerb(err error) string {
	if m := forbiddenVerbRE.FindStringSubmatch(err.Error()); m != nil {
		return m[1]
	}
	return "list and watch"
}

var forbiddenVerbRE = regexp.MustCompile(`cannot (\w+) resource`)
