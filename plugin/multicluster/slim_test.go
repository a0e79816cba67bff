package multicluster

import (
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// slim drops what no conversion reads, and the conversions give the same
// spec from the slimmed object as from the whole one.
func TestSlimKeepsWhatConversionReads(t *testing.T) {
	managed := []meta.ManagedFieldsEntry{{Manager: "controller", FieldsType: "FieldsV1", FieldsV1: &meta.FieldsV1{Raw: []byte(`{}`)}}}
	si := serviceImport("ns1", "web", "10.42.0.1")
	si.ResourceVersion = "7"
	si.ManagedFields = managed
	si.Annotations = map[string]string{annotationDerivedService: "derived-web", "kubectl.kubernetes.io/last-applied-configuration": "{...}"}
	si.Labels = map[string]string{"app": "web"}
	si.Status.Clusters = []mcsv1beta1.ClusterStatus{{Cluster: "east"}}
	whole, err := toImportSpec(asImport(si))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := slim(asImport(si))
	s := out.(*importObject)
	if s.ManagedFields != nil || s.Labels != nil || len(s.Annotations) != 1 {
		t.Errorf("slimmed import keeps managedFields %v, labels %v, annotations %v", s.ManagedFields, s.Labels, s.Annotations)
	}
	thin, err := toImportSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	if w, th := whole.(*importSpec), thin.(*importSpec); w.derived != th.derived || w.resourceVersion != th.resourceVersion || len(w.ports) != len(th.ports) || !w.ipv4[0].Equal(th.ipv4[0]) {
		t.Errorf("spec of the slimmed import %+v, of the whole one %+v", th, w)
	}

	es := sliceList("ns1", "db", 1, 2).Items[0]
	es.Annotations = map[string]string{"endpoints.kubernetes.io/last-change-trigger-time": "now"}
	es.OwnerReferences = []meta.OwnerReference{{Name: "owner"}}
	wholeSlice, _, err := newSliceSpec(es.DeepCopy(), 20)
	if err != nil {
		t.Fatal(err)
	}
	out, _ = slim(&es)
	e := out.(*discovery.EndpointSlice)
	if e.ManagedFields != nil || e.Annotations != nil || e.OwnerReferences != nil || len(e.Labels) != 2 {
		t.Errorf("slimmed slice keeps managedFields, annotations %v, owners %v or labels %v", e.Annotations, e.OwnerReferences, e.Labels)
	}
	for _, ep := range e.Endpoints {
		if ep.NodeName != nil || ep.Zone != nil || ep.TargetRef != nil || ep.Conditions.Serving != nil || ep.Conditions.Ready == nil {
			t.Errorf("slimmed endpoint %+v", ep)
		}
	}
	thinSlice, _, err := newSliceSpec(e, 20)
	if err != nil {
		t.Fatal(err)
	}
	if len(thinSlice.endpoints) != len(wholeSlice.endpoints) || thinSlice.cluster != wholeSlice.cluster || len(thinSlice.ports) != 1 {
		t.Errorf("spec of the slimmed slice %+v, of the whole one %+v", thinSlice, wholeSlice)
	}

	// A tombstone passes as it is.
	tomb := cache.DeletedFinalStateUnknown{Key: "ns1/web", Obj: si}
	if out, _ := slim(tomb); out != tomb {
		t.Errorf("slim(tombstone) = %v", out)
	}
	svc := &corev1.Service{ObjectMeta: meta.ObjectMeta{Name: "s", ManagedFields: managed, Annotations: map[string]string{"a": "b"}}}
	if out, _ := slim(svc); out.(*corev1.Service).ManagedFields != nil || out.(*corev1.Service).Annotations != nil {
		t.Errorf("slimmed Service %+v", out)
	}
}

// Imports and slices of one namespace, cluster and port list share those
// strings and that list.
func TestSpecsShareRepeatedStrings(t *testing.T) {
	list := sliceList("ns1", "db", 2, 1)
	a, _, _ := newSliceSpec(&list.Items[0], 20)
	b, _, _ := newSliceSpec(&list.Items[1], 20)
	if &a.ports[0] != &b.ports[0] {
		t.Error("two slices with one port list hold two copies of it")
	}
	if strData(a.key.namespace) != strData(b.key.namespace) || strData(a.ports[0].protocol) != strData(b.ports[0].protocol) {
		t.Error("two slices hold two copies of their namespace or protocol")
	}
}

func strData(s string) *byte { return unsafe.StringData(s) }
