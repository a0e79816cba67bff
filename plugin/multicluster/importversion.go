// The ServiceImport and EndpointSlice informers, and the following of the
// ServiceImport version the API server serves: when the one watched is no
// longer served and another is, the informers move to it without a restart.

package multicluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/miekg/dns"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

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
		ss := &sliceStore{storeScope{s: w.sources, namespace: ns}}
		sc := newInformer(kindEndpointSlice, sliceListWatch(w.kube, ns), &discovery.EndpointSlice{}, w.toSliceSpec, w.guard(reasonSliceRBAC, "endpointslices"), w.retry, sliceHandler(w.sources), ss)
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
// informers start, and once they have synced (their first list deleted what
// only current had: withdraw), current's stop. follow returns the import
// watch to go on with.
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
			w.withdraw(next)
			return current
		case <-w.rediscover:
			// The version changed again before next synced.
			if v, err := servedImportVersion(w.kube); err == nil && v != next.version {
				next.stop()
				w.withdraw(next)
				return w.follow(ctx, current)
			}
		case <-tick.C:
		}
	}
	current.stop()
	w.withdraw(current)
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
	stores  []informerStore
	synced  []cache.InformerSynced
	cancel  context.CancelFunc
	running sync.WaitGroup
}

// startImports starts the ServiceImport informers of version.
func (w *watcher) startImports(ctx context.Context, version string) *importWatch {
	ctx, cancel := context.WithCancel(ctx)
	iw := &importWatch{version: version, cancel: cancel}
	h := importHandler(w.sources)
	for _, ns := range w.watchNamespaces() {
		store := &importStore{storeScope{s: w.sources, namespace: ns}}
		ctrl := newInformer(kindServiceImport, w.imports.listWatch(version, ns), &importObject{}, toImportSpec, w.guard(reasonImportRBAC, importResource), w.retry, h, store)
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

// withdraw stops tracking the stores of old, stopped, for the objects gauge.
// Nothing else is left to withdraw: the stores of two versions are views of
// the same imports in the sources (importStore), so the first list of the
// version that follows found among its known objects every import old had
// and the API server no longer lists, and deleted it; and the gauge counts
// each import once, through the stores of the version still watched.
func (w *watcher) withdraw(old *importWatch) {
	for _, store := range old.stores {
		w.forget(store)
	}
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

// apiVersions are the versions of the MCS APIs (multicluster.x-k8s.io's
// ServiceImport, about.k8s.io's ClusterProperty) the plugin reads, the one
// it prefers first: both have the same fields.
var apiVersions = []string{"v1beta1", "v1alpha1"}

var errCRDMissing = errors.New("the ServiceImport CRD (" + importResource + "." + mcsGroup + ") is not installed, or serves neither " + apiVersions[0] + " nor " + apiVersions[1] + ": apply manifests/crds")

// servedImportVersion asks discovery which ServiceImport version is served.
func servedImportVersion(kube kubernetes.Interface) (string, error) {
	version, err := servedVersion(kube, mcsGroup, importResource, apiVersions...)
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
