package multicluster

import (
	"bytes"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
)

// BenchmarkSliceConvert is the conversion of one EndpointSlice event into
// the plugin's slice spec, which the informer does for every event before
// the handler runs: a slice of 40 IPv4 endpoints without hostnames from a
// source cluster (as mcsbench's churn phase rolls them), and one of 100
// with hostnames (a StatefulSet's).
func BenchmarkSliceConvert(b *testing.B) {
	for _, tc := range []struct {
		name      string
		n         int
		hostnames bool
	}{{"endpoints=40", 40, false}, {"endpoints=100,hostnames", 100, true}} {
		b.Run(tc.name, func(b *testing.B) {
			yes := true
			es := &discovery.EndpointSlice{
				ObjectMeta: meta.ObjectMeta{Namespace: "bench-scale-headless", Name: "hl-7-cluster-042-1234", ResourceVersion: "12345",
					Labels: map[string]string{labelServiceName: "hl-7", labelSourceCluster: "cluster-042"}},
				AddressType: discovery.AddressTypeIPv4,
			}
			for j := range tc.n {
				e := discovery.Endpoint{Addresses: []string{fmt.Sprintf("10.%d.%d.%d", 7, j/200, j%200+1)}, Conditions: discovery.EndpointConditions{Ready: &yes}}
				if tc.hostnames {
					h := fmt.Sprintf("db-%d", j)
					e.Hostname = &h
				}
				es.Endpoints = append(es.Endpoints, e)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := newSliceSpec(es, len(defaultZone)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSliceDecode decodes one EndpointSlice as the API server sends it
// in a watch event (40 endpoints of pods, each with its pod reference, node,
// zone and conditions; managedFields), from JSON and from protobuf: what
// every EndpointSlice event costs before the informer sees it (client-go's
// typed clients ask for protobuf, see clientConfig).
func BenchmarkSliceDecode(b *testing.B) {
	yes, no := true, false
	node, zone := "node-17", "zone-b"
	es := &discovery.EndpointSlice{
		TypeMeta: meta.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		ObjectMeta: meta.ObjectMeta{Namespace: "bench-scale-headless", Name: "hl-7-cluster-042-1234", ResourceVersion: "12345", UID: "8a4f0c52-3f5e-4a8e-9a8b-2a8f3c1d7e90",
			Labels:          map[string]string{labelServiceName: "hl-7", labelSourceCluster: "cluster-042", "endpointslice.kubernetes.io/managed-by": "mcs-controller"},
			OwnerReferences: []meta.OwnerReference{{APIVersion: "multicluster.x-k8s.io/v1beta1", Kind: "ServiceImport", Name: "hl-7", UID: "5c1e7d7a-9b3f-4f41-8f0d-0e7d2b6c1a11"}},
			ManagedFields:   []meta.ManagedFieldsEntry{{Manager: "mcs-controller", Operation: meta.ManagedFieldsOperationUpdate, APIVersion: "discovery.k8s.io/v1", FieldsType: "FieldsV1", FieldsV1: &meta.FieldsV1{Raw: []byte(`{"f:addressType":{},"f:endpoints":{},"f:metadata":{"f:labels":{".":{},"f:multicluster.kubernetes.io/service-name":{},"f:multicluster.kubernetes.io/source-cluster":{}}},"f:ports":{}}`)}}},
		},
		AddressType: discovery.AddressTypeIPv4,
		Ports:       []discovery.EndpointPort{{Name: ptrTo("http"), Port: ptrTo(int32(8080)), Protocol: ptrTo(corev1.ProtocolTCP)}},
	}
	for j := range 40 {
		es.Endpoints = append(es.Endpoints, discovery.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.7.%d.%d", j/200, j%200+1)},
			Conditions: discovery.EndpointConditions{Ready: &yes, Serving: &yes, Terminating: &no},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "bench-scale-headless", Name: fmt.Sprintf("hl-7-5d8f7c9b4-%05d", j), UID: types.UID(fmt.Sprintf("0f0e0d0c-0b0a-4908-8706-%012d", j))},
			NodeName:   &node,
			Zone:       &zone,
		})
	}
	for _, tc := range []struct {
		name string
		s    runtime.Serializer
	}{
		{"json", kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, kjson.SerializerOptions{})},
		{"protobuf", protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var buf bytes.Buffer
			if err := tc.s.Encode(es, &buf); err != nil {
				b.Fatal(err)
			}
			data := buf.Bytes()
			gvk := discovery.SchemeGroupVersion.WithKind("EndpointSlice")
			out, _, err := tc.s.Decode(data, &gvk, &discovery.EndpointSlice{})
			if err != nil || len(out.(*discovery.EndpointSlice).Endpoints) != 40 {
				b.Fatalf("decoded %v, %v", out, err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := tc.s.Decode(data, &gvk, &discovery.EndpointSlice{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(data)), "encoded-B")
		})
	}
}

func ptrTo[T any](v T) *T { return &v }
