// ServiceImports read from the API server and decoded by the plugin itself,
// field by field, so that an object Go cannot decode is skipped alone
// instead of failing every list and watch.

package multicluster

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	kjson "sigs.k8s.io/json"
)

// ServiceImports are decoded by the plugin itself, field by field, rather
// than by the mcs-api clientset. That clientset decodes each object whole,
// status included, and a list or a watch event whole, so one object the API
// server accepted but Go cannot decode failed every list, and no import
// could be served, and ended every watch. Such is a condition's
// lastTransitionTime of "2026-01-01t00:00:00z": the CRD's date-time check
// lower-cases the value before matching it (IsDateTime in k8s.io/kube-openapi
// pkg/validation/strfmt/time.go), while meta/v1.Time parses it as RFC 3339,
// which wants an upper-case T and Z (Time.UnmarshalJSON in k8s.io/apimachinery
// pkg/apis/meta/v1/time.go). Here only what DNS reads is decoded, so no other
// field can fail an object, and an object whose read fields do not decode is
// dropped alone.

// importAPI lists and watches the ServiceImports of one served version in
// one namespace (all when empty). The lists it returns are
// *importObjectList, the objects of its watch events *importObject.
type importAPI interface {
	listWatch(version, namespace string) *cache.ListWatch
}

// importObject is a ServiceImport as the plugin decodes it: its name,
// namespace, resourceVersion, labels and annotations, and the spec fields DNS
// reads, which v1alpha1 and v1beta1 share.
type importObject struct {
	meta.TypeMeta
	meta.ObjectMeta
	spec importObjectSpec
	// err says why the spec, labels or annotations did not decode; only
	// the name, namespace and resourceVersion did. Conversion fails with
	// it, so that the informer drops the object, and withdraws a former
	// version of it, as it does any object that fails conversion.
	err error
	// unusable is set when not even those decoded: such an object cannot
	// be named, and never reaches the informer (importReports).
	unusable *unusableImport
}

type importObjectSpec struct {
	typ                 string
	ips                 []string
	ports               []portFields
	trafficDistribution string
	// endpointSliceObjects is status.endpointSliceObjects (mcs-api v0.5.2
	// on): "Present", "Absent", or what else the status holds, as a string
	// when it is one (a JSON string's value, else its JSON text).
	endpointSliceObjects string
}

// importJSON is the JSON of a ServiceImport, reduced to what importObject
// keeps. The JSON decoder skips every other field without decoding it.
type importJSON struct {
	Metadata struct {
		objectNames
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Type  string   `json:"type"`
		IPs   []string `json:"ips"`
		Ports []struct {
			Name     string `json:"name"`
			Protocol string `json:"protocol"`
			Port     int32  `json:"port"`
		} `json:"ports"`
		TrafficDistribution *string `json:"trafficDistribution"`
	} `json:"spec"`
	// Status is read for endpointSliceObjects alone. It is raw, so that a
	// value of another JSON type (the status is a controller's, and an
	// older CRD may keep unknown fields) is reported, not a decoding error
	// that would drop the whole import.
	Status struct {
		EndpointSliceObjects jsonRaw `json:"endpointSliceObjects"`
	} `json:"status"`
}

// jsonRaw is a JSON value kept as its text.
type jsonRaw []byte

func (r *jsonRaw) UnmarshalJSON(b []byte) error {
	*r = append((*r)[:0], b...)
	return nil
}

// stringOf returns the value of a JSON string, the JSON text of any other
// value, and "" for none or null.
func (r jsonRaw) stringOf() string {
	if len(r) == 0 || string(r) == "null" {
		return ""
	}
	var s string
	if err := kjson.UnmarshalCaseSensitivePreserveInts(r, &s); err == nil {
		return s
	}
	return string(r)
}

// objectNames is the part of an object's metadata that the API server
// writes itself, and so always in the form it has.
type objectNames struct {
	Name            string `json:"name"`
	Namespace       string `json:"namespace"`
	ResourceVersion string `json:"resourceVersion"`
}

// UnmarshalJSON decodes what importJSON holds. It fails only when b is not
// JSON at all: an object that does not decode is returned with err or
// unusable set, so that it fails alone and not the list or the watch event
// that carries it.
//
// The decoder is Kubernetes' own (sigs.k8s.io/json), as in the clientsets:
// it matches field names case-sensitively, as the API server does.
func (o *importObject) UnmarshalJSON(b []byte) error {
	*o = importObject{}
	var in importJSON
	if err := kjson.UnmarshalCaseSensitivePreserveInts(b, &in); err != nil {
		var names struct {
			Metadata objectNames `json:"metadata"`
		}
		if nerr := kjson.UnmarshalCaseSensitivePreserveInts(b, &names); nerr != nil {
			o.unusable = newUnusable(b, nerr)
			return nil
		}
		o.setNames(names.Metadata)
		o.err = fmt.Errorf("does not decode: %w", err)
		return nil
	}
	o.setNames(in.Metadata.objectNames)
	o.Labels, o.Annotations = in.Metadata.Labels, in.Metadata.Annotations
	o.spec = importObjectSpec{typ: in.Spec.Type, ips: in.Spec.IPs, trafficDistribution: valueOf(in.Spec.TrafficDistribution),
		endpointSliceObjects: in.Status.EndpointSliceObjects.stringOf()}
	for _, p := range in.Spec.Ports {
		o.spec.ports = append(o.spec.ports, portFields{name: p.Name, protocol: p.Protocol, port: p.Port})
	}
	return nil
}

func (o *importObject) setNames(n objectNames) {
	o.Name, o.Namespace, o.ResourceVersion = n.Name, n.Namespace, n.ResourceVersion
}

// fields is what newImportSpec validates.
func (o *importObject) fields() importFields {
	return importFields{namespace: o.Namespace, name: o.Name, resourceVersion: o.ResourceVersion,
		typ: o.spec.typ, ips: o.spec.ips, ports: o.spec.ports, labels: o.Labels, annotations: o.Annotations,
		trafficDistribution: o.spec.trafficDistribution, endpointSliceObjects: o.spec.endpointSliceObjects}
}

func (o *importObject) DeepCopyObject() runtime.Object {
	c := &importObject{TypeMeta: o.TypeMeta, spec: o.spec, err: o.err, unusable: o.unusable} // err and unusable are never changed
	o.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	c.spec.ips = append([]string(nil), o.spec.ips...)
	c.spec.ports = append([]portFields(nil), o.spec.ports...)
	return c
}

// importObjectList is a list of ServiceImports, its items decoded one by one.
type importObjectList struct {
	meta.TypeMeta
	meta.ListMeta
	Items []importObject
	// unusable are the items left out of Items: not even their names
	// decoded.
	unusable []*unusableImport
}

// UnmarshalJSON decodes the list's metadata and each item apart. It fails
// only when b is not a JSON list at all.
func (l *importObjectList) UnmarshalJSON(b []byte) error {
	var in struct {
		Metadata meta.ListMeta  `json:"metadata"`
		Items    []importObject `json:"items"`
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(b, &in); err != nil {
		return err
	}
	*l = importObjectList{ListMeta: in.Metadata, Items: in.Items[:0]}
	for _, it := range in.Items {
		if it.unusable != nil {
			l.unusable = append(l.unusable, it.unusable)
			continue
		}
		l.Items = append(l.Items, it)
	}
	clear(in.Items[len(l.Items):])
	return nil
}

// unusableImport is an object left out of a list or a watch because not
// even its name decoded: why, an excerpt of its JSON for the log, and the
// digest of its JSON, by which it is logged once.
type unusableImport struct {
	err     error
	excerpt string
	digest  uint64
}

func newUnusable(b []byte, err error) *unusableImport {
	h := fnv.New64a()
	h.Write(b)
	excerpt := string(b[:min(len(b), 200)])
	if len(b) > len(excerpt) {
		excerpt += "..."
	}
	return &unusableImport{err: err, excerpt: excerpt, digest: h.Sum64()}
}

func (l *importObjectList) DeepCopyObject() runtime.Object {
	c := &importObjectList{TypeMeta: l.TypeMeta, unusable: l.unusable}
	l.ListMeta.DeepCopyInto(&c.ListMeta)
	c.Items = make([]importObject, len(l.Items))
	for i := range l.Items {
		c.Items[i] = *l.Items[i].DeepCopyObject().(*importObject)
	}
	return c
}

// importScheme knows the ServiceImports of both served versions as
// importObject, and the meta/v1 kinds of API answers (Status, WatchEvent),
// as a clientset's scheme does.
var importScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, version := range apiVersions {
		gv := schema.GroupVersion{Group: mcsGroup, Version: version}
		s.AddKnownTypeWithName(gv.WithKind("ServiceImport"), &importObject{})
		s.AddKnownTypeWithName(gv.WithKind("ServiceImportList"), &importObjectList{})
		meta.AddToGroupVersion(s, gv)
	}
	meta.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}()

// restImports reads ServiceImports from the API server through REST clients
// whose codec decodes them as importObject. client-go's request does the
// rest as for any clientset: errors of the API server, retries, watch
// streams.
type restImports struct {
	clients map[string]rest.Interface // by version
}

func newRESTImports(cfg *rest.Config) (*restImports, error) {
	r := &restImports{clients: map[string]rest.Interface{}}
	for _, version := range apiVersions {
		c := rest.CopyConfig(cfg)
		c.GroupVersion = &schema.GroupVersion{Group: mcsGroup, Version: version}
		c.APIPath = "/apis"
		c.ContentType = runtime.ContentTypeJSON
		c.NegotiatedSerializer = serializer.NewCodecFactory(importScheme).WithoutConversion()
		rc, err := rest.RESTClientFor(c)
		if err != nil {
			return nil, fmt.Errorf("ServiceImport %s client: %w", version, err)
		}
		r.clients[version] = rc
	}
	return r, nil
}

func (r *restImports) listWatch(version, ns string) *cache.ListWatch {
	c := r.clients[version]
	reports := &importReports{}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o meta.ListOptions) (runtime.Object, error) {
			res := c.Get().Namespace(ns).Resource(importResource).VersionedParams(&o, meta.ParameterCodec).Do(ctx)
			if err := res.Error(); err != nil {
				return nil, err
			}
			list := &importObjectList{}
			if err := res.Into(list); err != nil {
				return nil, &undecodableError{fmt.Errorf("list of %s: %w", importResource, err)}
			}
			reports.report(list.unusable...)
			return list, nil
		},
		WatchFuncWithContext: func(ctx context.Context, o meta.ListOptions) (watch.Interface, error) {
			o.Watch = true
			req := c.Get().Namespace(ns).Resource(importResource).VersionedParams(&o, meta.ParameterCodec)
			if o.TimeoutSeconds != nil {
				req = req.Timeout(time.Duration(*o.TimeoutSeconds) * time.Second)
			}
			w, err := req.Watch(ctx)
			if err != nil {
				return nil, err
			}
			return reports.filter(w), nil
		},
	}
}

// importReports logs and counts the objects left out as unusable, each
// once: a relist, or a watch that starts again from an older
// resourceVersion, delivers them again. It forgets them all past
// maxUnusableReports, so that it stays small.
type importReports struct {
	mu   sync.Mutex
	seen map[uint64]bool
}

const maxUnusableReports = 1024

func (r *importReports) report(us ...*unusableImport) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, u := range us {
		if r.seen[u.digest] {
			continue
		}
		if r.seen == nil || len(r.seen) >= maxUnusableReports {
			r.seen = map[uint64]bool{}
		}
		r.seen[u.digest] = true
		log.Warningf("Skipping a %s whose metadata does not decode (%v): %s", kindServiceImport, u.err, u.excerpt)
		malformedTotal.WithLabelValues(strings.ToLower(kindServiceImport)).Inc()
	}
}

// filter passes on the events of w but those of unusable objects, which it
// reports.
func (r *importReports) filter(w watch.Interface) watch.Interface {
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		if o, ok := e.Object.(*importObject); ok && o.unusable != nil {
			r.report(o.unusable)
			return e, false
		}
		return e, true
	})
}

// undecodableError is an answer of the API server that could not be
// decoded as a whole (not one object of it): the API server answered, so
// it is not unreachable.
type undecodableError struct{ err error }

func (e *undecodableError) Error() string {
	return "the API server's answer could not be decoded: " + e.err.Error()
}

func (e *undecodableError) Unwrap() error { return e.err }

// isUndecodable reports whether err is an answer that could not be decoded.
func isUndecodable(err error) bool {
	var u *undecodableError
	return errors.As(err, &u)
}
