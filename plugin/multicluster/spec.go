// The specs the informer stores hold: a ServiceImport or an EndpointSlice
// reduced to what DNS reads, immutable once made, and what makes them
// objects to client-go's stores.

package multicluster

import (
	"strings"

	"github.com/coredns/coredns/plugin/kubernetes/object"
	"k8s.io/apimachinery/pkg/runtime"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// Labels that tie an EndpointSlice to an import (the same in every mcs-api
// version), and the annotation of an import that names its derived Service.
const (
	labelServiceName   = mcsv1beta1.LabelServiceName
	labelSourceCluster = mcsv1beta1.LabelSourceCluster
	// annotationDerivedService names the local Service that carries an
	// import's ClusterIPs. The mcs-api reference controller sets it
	// (controllers/common.go, DerivedServiceAnnotation), and so does Cilium.
	annotationDerivedService = "multicluster.kubernetes.io/derived-service"
	// annotationAWSDerived lists, as JSON, the local Services that carry a
	// ServiceImport's addresses, one per exporting cluster: the AWS Cloud
	// Map MCS controller's own record of its derived Services
	// (pkg/controllers/multicluster/utils.go, DerivedServiceAnnotation, in
	// aws/aws-cloud-map-mcs-controller-for-k8s); its spec.ips are their
	// ClusterIPs.
	annotationAWSDerived = "multicluster.k8s.aws/derived-service"
)

// importSpec is a ServiceImport reduced to what DNS needs; v1alpha1 and
// v1beta1 objects reduce to the same thing. Informers store it in place of the
// full object, so the cache holds only this. Parts that fail validation are
// dropped, and the conversion reports them beside the spec, which does not
// keep them.
//
// Its fields are those of the view a ClusterSetIP import answers from, so
// that view is the spec itself: one allocation per import, not two.
type importSpec struct {
	object.Empty    // no room: a pointer would take 8 bytes of every spec
	view            // key, flags, source, ipv4, ipv6, ports, derived; no endpoints
	resourceVersion string
}

// sliceSpec is a multicluster EndpointSlice reduced to its ready endpoints.
// Like views, it is immutable once made: the view of a headless import holds
// the specs of its slices themselves, so that a slice's change replaces one
// of them and leaves the others as they are.
type sliceSpec struct {
	object.Empty
	key             serviceKey // the import it belongs to
	name            string     // the slice's own name
	resourceVersion string
	cluster         string // empty when the slice has no source-cluster label
	ports           []servicePort
	// endpoints are ordered by host name, then address: those without a
	// host name first, the addresses of one name adjacent.
	endpoints []endpoint
	anonymous int // endpoints[:anonymous] have no host name
	names     int // the host names of endpoints[anonymous:], each once
	n4, n6    int // addresses by family
	// selfDups: answers from this slice alone must be de-duplicated (some
	// address is listed under two names, or some hostname could be an
	// address's name): set whenever the counts of a service's slices
	// (serviceSlices) would find a repeat, were this its only slice.
	selfDups bool
	// byAddr indexes endpoints by address: for each distinct address, IPv4
	// ones first, then in order, the first endpoint at it (the one of the
	// lowest host name). PTR answers and the addresses of views read it
	// instead of walking every endpoint.
	byAddr    []int32
	distinct4 int // byAddr[:distinct4] are IPv4
	// ref stands for the slice in the reverse map; the sources give it
	// when they file the slice, the former version's if it had the same
	// cluster.
	ref *sliceRef
}

// importFields is the part of a ServiceImport, in any version, that DNS reads.
type importFields struct {
	namespace, name, resourceVersion string
	typ                              string
	ips                              []string
	ports                            []portFields
	labels, annotations              map[string]string
	trafficDistribution              string
	endpointSliceObjects             string // status.endpointSliceObjects
}

type portFields struct {
	name, protocol string
	port           int32
}

// The specs are what informer stores hold, so they are Kubernetes objects as
// far as the store's key function and the reflector care.

// kindServiceImportCopy is the objects gauge's kind of per-cluster copies.
const kindServiceImportCopy = "serviceimport_copy"

func (s *importSpec) metricKind() string {
	if s.perClusterCopy {
		return kindServiceImportCopy
	}
	return strings.ToLower(kindServiceImport)
}

func (s *importSpec) GetNamespace() string           { return s.key.namespace }
func (s *importSpec) SetNamespace(string)            {}
func (s *importSpec) GetName() string                { return s.key.name }
func (s *importSpec) SetName(string)                 {}
func (s *importSpec) GetResourceVersion() string     { return s.resourceVersion }
func (s *importSpec) SetResourceVersion(string)      {}
func (s *importSpec) DeepCopyObject() runtime.Object { c := *s; return &c }
func (s *sliceSpec) GetNamespace() string            { return s.key.namespace }
func (s *sliceSpec) SetNamespace(string)             {}
func (s *sliceSpec) GetName() string                 { return s.name }
func (s *sliceSpec) SetName(string)                  {}
func (s *sliceSpec) GetResourceVersion() string      { return s.resourceVersion }
func (s *sliceSpec) SetResourceVersion(string)       {}
func (s *sliceSpec) DeepCopyObject() runtime.Object  { c := *s; return &c }
