// The local cluster's Services and endpoints, as the plugin reads them:
// from the kubernetes plugin's cache when the server block has one, else
// from an informer of its own. Fallback zones, derived Services and PTR
// ownership depend on them.

package multicluster

import (
	"net"
	"reflect"
	"strings"
	"sync/atomic"

	"github.com/coredns/coredns/plugin/kubernetes"
	"github.com/coredns/coredns/plugin/kubernetes/object"
	"k8s.io/client-go/tools/cache"
)

// localServices is what the plugin reads of this cluster's own Services.
// Fallback zones consult it only for names an import exists for, so it is
// off the path of nearly every cluster-local query.
type localServices interface {
	// service returns the local Service namespace/name, or nil.
	service(namespace, name string) *object.Service
	// readyEndpoints reports whether some EndpointSlice of the Service
	// namespace/name has a ready address (failover).
	readyEndpoints(namespace, name string) bool
	// byClusterIP returns the Services that have ip, in its canonical form,
	// among their ClusterIPs (PTR of derived Services).
	byClusterIP(ip string) []*object.Service
	// byEndpointIP returns the local endpoints at ip, in its canonical form
	// (PTR: local wins), of every namespace. Multicluster slices, which
	// name no local Service, are not among them; mixed reports that the
	// cache holds such a slice with ip too, in a namespace whose addresses
	// the kubernetes plugin names in PTR answers (reverseExposed): its
	// answer would then hold a name it cannot send.
	byEndpointIP(ip string) (eps []localEndpoint, mixed bool)
	// exposed reports whether the kubernetes plugin answers names of
	// namespace at all (its namespaces and namespace_labels options): the
	// plugin never names a local object of any other namespace.
	exposed(namespace string) bool
	// reverseExposed reports whether the kubernetes plugin's PTR answers
	// name the local objects of namespace.
	reverseExposed(namespace string) bool
	// modified returns a value that changes whenever a local Service does,
	// so that the serial follows derived Services.
	modified() int64
	// zone is the zone local endpoints are named in.
	zone() string
	hasSynced() bool
}

// kubernetesCache is the part of the kubernetes plugin's API connection the
// plugin reads. Sharing it means Services and their endpoints are cached once
// per server.
type kubernetesCache interface {
	SvcIndex(string) []*object.Service
	SvcIndexReverse(string) []*object.Service
	EpIndex(string) []*object.Endpoints
	EpIndexReverse(string) []*object.Endpoints
	GetNamespaceByName(string) (*object.Namespace, error)
	Modified(kubernetes.ModifiedMode) int64
	HasSynced() bool
}

// localEndpoint is an endpoint of a local Service: its name in the
// cluster's own zone is host.svc.ns.svc.zone.
type localEndpoint struct {
	key  serviceKey
	host string
}

// kubernetesServices reads local Services from the kubernetes plugin's cache.
type kubernetesServices struct {
	cache kubernetesCache
	// primaryZone is the kubernetes plugin's first zone, which it names
	// endpoints in.
	primaryZone string
	// namespaces are those of the kubernetes plugin's namespaces option
	// (Kubernetes.Namespaces); empty: all.
	namespaces map[string]struct{}
}

// newKubernetesServices reads local Services from the cache of the
// kubernetes plugin k.
func newKubernetesServices(k *kubernetes.Kubernetes) kubernetesServices {
	return kubernetesServices{cache: k.APIConn, primaryZone: firstForwardZone(k.Zones), namespaces: k.Namespaces}
}

func (k kubernetesServices) service(namespace, name string) *object.Service {
	for _, s := range k.cache.SvcIndex(object.ServiceKey(name, namespace)) {
		if s.Name == name && s.Namespace == namespace {
			return s
		}
	}
	return nil
}

// readyEndpoints looks at the slices labelled kubernetes.io/service-name=name.
// The kubernetes plugin keeps only the ready addresses of a slice (ready
// condition unset or true), so any address left means a ready endpoint.
func (k kubernetesServices) readyEndpoints(namespace, name string) bool {
	for _, e := range k.cache.EpIndex(object.EndpointsKey(name, namespace)) {
		for _, s := range e.Subsets {
			if len(s.Addresses) > 0 {
				return true
			}
		}
	}
	return false
}

func (k kubernetesServices) byClusterIP(ip string) []*object.Service {
	return k.cache.SvcIndexReverse(ip)
}

// byEndpointIP reads the Service of each slice from the kubernetes plugin's
// index key, svc.ns (object.EndpointsKey). The kubernetes plugin caches every
// EndpointSlice, multicluster ones too, unless its labels selector leaves
// them out (the shipped Corefiles leave out those with a source cluster);
// those that carry no kubernetes.io/service-name label have an empty service
// part.
func (k kubernetesServices) byEndpointIP(ip string) (eps []localEndpoint, mixed bool) {
	for _, e := range k.cache.EpIndexReverse(ip) {
		name, _, ok := strings.Cut(e.Index, ".")
		if !ok || name == "" {
			mixed = mixed || k.reverseExposed(e.Namespace)
			continue
		}
		for _, sub := range e.Subsets {
			for _, a := range sub.Addresses {
				if a.IP == ip {
					eps = append(eps, localEndpoint{key: serviceKey{namespace: e.Namespace, name: name}, host: a.Hostname})
				}
			}
		}
	}
	return eps, mixed
}

// exposed is the kubernetes plugin's namespaceExposed
// (plugin/kubernetes/namespace.go), which is not exported, from what is: a
// namespace of its namespaces option, if it has one, that its cache of
// namespaces holds. That cache holds only the namespaces its
// namespace_labels selector matches (namespaceListFunc, controller.go).
func (k kubernetesServices) exposed(namespace string) bool {
	if _, ok := k.namespaces[namespace]; len(k.namespaces) > 0 && !ok {
		return false
	}
	_, err := k.cache.GetNamespaceByName(namespace)
	return err == nil
}

// reverseExposed follows serviceRecordForIP (plugin/kubernetes/reverse.go),
// which asks namespaceExposed only when the namespaces option is set: with
// namespace_labels alone, the kubernetes plugin names every namespace's
// ClusterIPs and endpoints in PTR answers.
func (k kubernetesServices) reverseExposed(namespace string) bool {
	return len(k.namespaces) == 0 || k.exposed(namespace)
}

func (k kubernetesServices) modified() int64 { return k.cache.Modified(kubernetes.ModifiedInternal) }

func (k kubernetesServices) zone() string { return k.primaryZone }

func (k kubernetesServices) hasSynced() bool { return k.cache.HasSynced() }

// kubernetesCachesEndpoints reports whether the kubernetes plugin k watches
// endpoints. With its `noendpoints` option it does not, and every Service
// would look as if it had no ready endpoint: failover must not trust that.
// The option is not exported, so it is read by name; should a later CoreDNS
// rename it, the answer is false and start-up says why, rather than failing
// over every Service.
func kubernetesCachesEndpoints(k *kubernetes.Kubernetes) bool {
	opts := reflect.ValueOf(k).Elem().FieldByName("opts")
	if !opts.IsValid() || opts.Kind() != reflect.Struct {
		return false
	}
	f := opts.FieldByName("initEndpointsCache")
	return f.IsValid() && f.Kind() == reflect.Bool && f.Bool()
}

// informerServices reads local Services from the plugin's own informer, for
// servers without a kubernetes plugin. It does not watch endpoints: setup
// refuses failover without the kubernetes plugin.
type informerServices struct {
	store   cache.Indexer // indexed by ClusterIP, see clusterIPIndexers
	synced  func() bool
	changes *atomic.Int64 // moved by the informer on every Service event
}

// byClusterIPIndex is the index of informerServices.store by ClusterIP.
const byClusterIPIndex = "clusterIP"

// clusterIPIndexers index Services by each of their ClusterIPs.
var clusterIPIndexers = cache.Indexers{byClusterIPIndex: func(obj any) ([]string, error) {
	svc, ok := obj.(*object.Service)
	if !ok {
		return nil, nil
	}
	return svc.ClusterIPs, nil
}}

func (s informerServices) service(namespace, name string) *object.Service {
	obj, ok, err := s.store.GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil
	}
	svc, _ := obj.(*object.Service)
	return svc
}

func (s informerServices) readyEndpoints(string, string) bool { return false }

func (s informerServices) byEndpointIP(string) ([]localEndpoint, bool) { return nil, false }

// Without a kubernetes plugin no namespace is hidden: the plugin names no
// local object but derived Services, whose names are the imports'.
func (s informerServices) exposed(string) bool        { return true }
func (s informerServices) reverseExposed(string) bool { return true }

func (s informerServices) zone() string { return "" }

func (s informerServices) modified() int64 {
	if s.changes == nil {
		return 0
	}
	return s.changes.Load()
}

func (s informerServices) byClusterIP(ip string) []*object.Service {
	objs, err := s.store.ByIndex(byClusterIPIndex, ip)
	if err != nil {
		return nil
	}
	svcs := make([]*object.Service, 0, len(objs))
	for _, o := range objs {
		if svc, ok := o.(*object.Service); ok {
			svcs = append(svcs, svc)
		}
	}
	return svcs
}

func (s informerServices) hasSynced() bool { return s.synced() }

// clusterIPs returns the ClusterIPs of svc by family, or nothing for a
// headless or ExternalName Service.
func clusterIPs(svc *object.Service) (v4, v6 []net.IP) {
	for _, s := range svc.ClusterIPs {
		ip := net.ParseIP(s)
		switch {
		case ip == nil: // "None", or empty
		case ip.To4() != nil:
			v4 = append(v4, ip.To4())
		default:
			v6 = append(v6, ip)
		}
	}
	return v4, v6
}
