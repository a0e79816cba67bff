package multicluster

import (
	"github.com/coredns/coredns/plugin/kubernetes/object"
	"k8s.io/client-go/tools/cache"
)

// localServices tells whether a Service exists in this cluster. Fallback
// zones consult it only for names an import exists for.
type localServices interface {
	exists(namespace, name string) bool
	hasSynced() bool
}

// kubernetesCache is the part of the kubernetes plugin's API connection the
// plugin reads. Sharing it means Services are cached once per server.
type kubernetesCache interface {
	SvcIndex(string) []*object.Service
	HasSynced() bool
}

// kubernetesServices reads local Services from the kubernetes plugin's cache.
type kubernetesServices struct{ cache kubernetesCache }

func (k kubernetesServices) exists(namespace, name string) bool {
	for _, s := range k.cache.SvcIndex(object.ServiceKey(name, namespace)) {
		if s.Name == name && s.Namespace == namespace {
			return true
		}
	}
	return false
}

func (k kubernetesServices) hasSynced() bool { return k.cache.HasSynced() }

// informerServices reads local Services from the plugin's own informer, for
// servers without a kubernetes plugin.
type informerServices struct {
	store  cache.Store
	synced func() bool
}

func (s informerServices) exists(namespace, name string) bool {
	_, ok, err := s.store.GetByKey(namespace + "/" + name)
	return err == nil && ok
}

func (s informerServices) hasSynced() bool { return s.synced() }
