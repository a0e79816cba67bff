package multicluster

import (
	"github.com/coredns/coredns/plugin/kubernetes/object"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// localServices tells whether a Service exists in this cluster. Fallback
// zones consult it only for names an import exists for.
type localServices interface {
	service(namespace, name string) (localService, bool)
	hasSynced() bool
}

// localService is what the plugin needs to know of a local Service.
type localService struct {
	clusterIPs   []string
	externalName bool
}

// kubernetesCache is the part of the kubernetes plugin's API connection the
// plugin reads. Sharing it means Services are cached once per server.
type kubernetesCache interface {
	SvcIndex(string) []*object.Service
	HasSynced() bool
}

// kubernetesServices reads local Services from the kubernetes plugin's cache.
type kubernetesServices struct{ cache kubernetesCache }

func (k kubernetesServices) service(namespace, name string) (localService, bool) {
	for _, s := range k.cache.SvcIndex(object.ServiceKey(name, namespace)) {
		if s.Name == name && s.Namespace == namespace {
			return toLocalService(s), true
		}
	}
	return localService{}, false
}

func (k kubernetesServices) hasSynced() bool { return k.cache.HasSynced() }

// informerServices reads local Services from the plugin's own informer, for
// servers without a kubernetes plugin.
type informerServices struct {
	store  cache.Store
	synced func() bool
}

func (s informerServices) service(namespace, name string) (localService, bool) {
	obj, ok, err := s.store.GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return localService{}, false
	}
	svc, ok := obj.(*object.Service)
	if !ok {
		return localService{}, false
	}
	return toLocalService(svc), true
}

func (s informerServices) hasSynced() bool { return s.synced() }

func toLocalService(s *object.Service) localService {
	return localService{clusterIPs: s.ClusterIPs, externalName: s.Type == corev1.ServiceTypeExternalName}
}
