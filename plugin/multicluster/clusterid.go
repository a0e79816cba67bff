// The local cluster's id, followed from the ClusterProperty
// cluster.clusterset.k8s.io when the Corefile gives no cluster_id: imports
// that prefer close endpoints answer with the local cluster's alone.

package multicluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/coredns/coredns/plugin/kubernetes/object"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
)

// The cluster's own id, as KEP-2149 (ClusterId for ClusterSet
// identification) stores it: the cluster-scoped ClusterProperty named
// cluster.clusterset.k8s.io, whose spec.value is the id. The API is that of
// kubernetes-sigs/about-api (api/v1alpha1/clusterproperty_types.go), which
// serves v1alpha1 and, in later releases, v1beta1 with the same field.
const (
	aboutGroup              = "about.k8s.io"
	clusterPropertyResource = "clusterproperties"
	clusterIDProperty       = "cluster.clusterset.k8s.io"

	// clusterIDRetry bounds the wait between looks for the ClusterProperty
	// API while it is not served. Many clusters never install it, so the
	// look is rare; once the API is served, changes arrive by watch.
	clusterIDRetry = 30 * time.Second
)

// clusterIDSpec is the ClusterProperty cluster.clusterset.k8s.io reduced to
// its value, what the informer's store keeps.
type clusterIDSpec struct {
	*object.Empty
	name, resourceVersion string
	id                    string // empty when the value is no cluster id
}

func (s *clusterIDSpec) GetNamespace() string           { return "" }
func (s *clusterIDSpec) SetNamespace(string)            {}
func (s *clusterIDSpec) GetName() string                { return s.name }
func (s *clusterIDSpec) SetName(string)                 {}
func (s *clusterIDSpec) GetResourceVersion() string     { return s.resourceVersion }
func (s *clusterIDSpec) SetResourceVersion(string)      {}
func (s *clusterIDSpec) DeepCopyObject() runtime.Object { c := *s; return &c }

// toClusterIDSpec reads the id from a ClusterProperty. A value that cannot be
// a cluster id in DNS names (the id is a DNS label per KEP-2149; this
// plugin, like the source-cluster label it compares with, also takes dotted
// ids) is dropped, as if there were none, and reported.
func toClusterIDSpec(obj meta.Object) (meta.Object, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("unexpected object %T", obj)
	}
	value, _, _ := unstructured.NestedString(u.Object, "spec", "value")
	spec := &clusterIDSpec{name: u.GetName(), resourceVersion: u.GetResourceVersion(), id: strings.ToLower(value)}
	if errs := validation.IsDNS1123Subdomain(spec.id); len(errs) > 0 {
		spec.id = ""
		return reported(spec, []string{fmt.Sprintf("spec.value %q is not a cluster id: %s; the local cluster is taken as unknown", short(value), strings.Join(errs, "; "))}, nil)
	}
	return spec, nil
}

// watchClusterID follows the ClusterProperty cluster.clusterset.k8s.io and
// hands its id to the sources, which rebuild their views when it changes.
// Nothing about it can degrade the plugin: without the API, the object or
// the permission to read it, the local cluster is unknown and no answer
// prefers it. It returns when ctx ends.
func (w *watcher) watchClusterID(ctx context.Context) {
	version, ok := w.discoverClusterProperty(ctx)
	if !ok {
		return
	}
	log.Infof("Watching ClusterProperty %s (%s/%s) for the local cluster id", clusterIDProperty, aboutGroup, version)
	gvr := schema.GroupVersionResource{Group: aboutGroup, Version: version, Resource: clusterPropertyResource}
	var once sync.Once
	onError := func(err error) {
		if apierrors.IsForbidden(err) {
			once.Do(func() {
				log.Warningf("Not allowed to read ClusterProperty %s, so answers do not prefer the local cluster: grant the ClusterRole in manifests/rbac (%v)", clusterIDProperty, err)
			})
		}
	}
	// The field selector asks for that one object; the names are checked
	// again all the same, as the other well-known property,
	// clusterset.k8s.io, names the cluster set and not the cluster.
	handler := &informerHandler{
		set: func(o meta.Object) {
			if o.GetName() == clusterIDProperty {
				w.sources.setLocalCluster(o.(*clusterIDSpec).id)
			}
		},
		delete: func(o meta.Object) {
			if o.GetName() == clusterIDProperty {
				w.sources.setLocalCluster("")
			}
		},
	}
	store := newStore(nil)
	ctrl := newInformer("ClusterProperty", clusterPropertyListWatch(w.dynamic, gvr), &unstructured.Unstructured{}, toClusterIDSpec, onError, w.retry, handler, store)
	w.track("ClusterProperty", store)
	ctrl.RunWithContext(ctx)
}

// discoverClusterProperty waits until the ClusterProperty API is served and
// returns its version, preferring v1beta1; false when ctx ends first.
func (w *watcher) discoverClusterProperty(ctx context.Context) (string, bool) {
	wait, logged := w.retry, false
	for {
		version, err := servedVersion(w.kube, aboutGroup, clusterPropertyResource, apiVersions...)
		if err == nil {
			return version, true
		}
		if !logged {
			what := "is not installed"
			if !errors.Is(err, errNotServed) {
				what = "cannot be looked up: " + err.Error()
			}
			log.Infof("The ClusterProperty API (%s.%s) %s: the local cluster id is unknown and no answer prefers the local cluster; set cluster_id, or apply the CRD in manifests/crds and create ClusterProperty %s", clusterPropertyResource, aboutGroup, what, clusterIDProperty)
			logged = true
		}
		select {
		case <-ctx.Done():
			return "", false
		case <-time.After(wait):
		}
		wait = min(2*wait, clusterIDRetry)
	}
}

// clusterPropertyListWatch lists and watches the one ClusterProperty named
// cluster.clusterset.k8s.io. The dynamic client parses no field until it is
// read (k8s.io/apimachinery pkg/apis/meta/v1/unstructured/helpers.go), and
// toClusterIDSpec reads only the name, the resourceVersion and spec.value
// (empty when not a string): whatever else the object holds, it decodes.
func clusterPropertyListWatch(c dynamic.Interface, gvr schema.GroupVersionResource) *cache.ListWatch {
	byName := func(o meta.ListOptions) meta.ListOptions {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", clusterIDProperty).String()
		return o
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o meta.ListOptions) (runtime.Object, error) {
			return c.Resource(gvr).List(ctx, byName(o))
		},
		WatchFuncWithContext: func(ctx context.Context, o meta.ListOptions) (watch.Interface, error) {
			return c.Resource(gvr).Watch(ctx, byName(o))
		},
	}
}
