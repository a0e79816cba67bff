package e2e

import (
	"context"
	"testing"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
)

// corefileKarmada is the Corefile of the Karmada guide (docs/karmada.md):
// derived_prefix for Karmada's shadow Services, failover for local Services
// that lose their endpoints.
const corefileKarmada = `.:{{.Port}} {
    ready 127.0.0.1:{{.ReadyPort}}
    multicluster clusterset.local in-addr.arpa ip6.arpa {
        kubeconfig {{.Kubeconfig}}
        fallback cluster.local
        derived_prefix derived-
        failover
    }
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig {{.Kubeconfig}}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
}
`

// TestKarmadaDerivedService replays what Karmada v1.x leaves in a member
// cluster that consumes a service exported from another member: in namespace
// default, a v1alpha1 ServiceImport "serve" of type ClusterSetIP with no IPs,
// and the Service "derived-serve" with a ClusterIP. The plain names answer
// that ClusterIP, with no search-path edits, and follow it when it changes.
func TestKarmadaDerivedService(t *testing.T) {
	s := startServer(t, corefileKarmada, true)
	ctx := context.Background()
	const ns = "default"

	si := &mcsv1alpha1.ServiceImport{
		ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: "serve"},
		Spec: mcsv1alpha1.ServiceImportSpec{
			Type:  mcsv1alpha1.ClusterSetIP,
			Ports: []mcsv1alpha1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}},
		},
	}
	if _, err := mcs.MulticlusterV1alpha1().ServiceImports(ns).Create(ctx, si, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = mcs.MulticlusterV1alpha1().ServiceImports(ns).Delete(context.Background(), "serve", meta.DeleteOptions{})
	})
	derived := createService(t, ns, "derived-serve")
	t.Cleanup(func() {
		_ = kube.CoreV1().Services(ns).Delete(context.Background(), "derived-serve", meta.DeleteOptions{})
	})

	local, clusterset := "serve.default.svc.cluster.local.", "serve.default.svc.clusterset.local."
	expectAddresses(t, s, local, dns.TypeA, propagation, derived.Spec.ClusterIP)
	expectAddresses(t, s, clusterset, dns.TypeA, propagation, derived.Spec.ClusterIP)

	// A ClusterIP cannot change in place: Karmada recreates the shadow
	// Service, which gets another address.
	if err := kube.CoreV1().Services(ns).Delete(ctx, "derived-serve", meta.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expectRcode(t, s, clusterset, dns.TypeA, propagation, dns.RcodeSuccess) // NODATA while it is gone
	const moved = "10.96.77.77"
	createService(t, ns, "derived-serve", moved)
	expectAddresses(t, s, local, dns.TypeA, propagation, moved)
	expectAddresses(t, s, clusterset, dns.TypeA, propagation, moved)
}

// TestFailover: a local Service with a ready endpoint answers locally; when
// its only endpoint turns not ready the import answers, and when it is ready
// again, local wins again.
func TestFailover(t *testing.T) {
	s := startServer(t, corefileKarmada, true)
	ns := namespace(t, "failover")
	ctx := context.Background()

	createImport(t, newImport(ns, "web", "10.42.6.1"))
	svc := createService(t, ns, "web")
	slice := &discovery.EndpointSlice{
		ObjectMeta:  meta.ObjectMeta{Namespace: ns, Name: "web-local", Labels: map[string]string{discovery.LabelServiceName: "web"}},
		AddressType: discovery.AddressTypeIPv4,
		Endpoints:   []discovery.Endpoint{{Addresses: []string{"10.244.0.5"}, Conditions: discovery.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discovery.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](80)}},
	}
	slice, err := kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, meta.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	name := "web." + ns + ".svc.cluster.local."
	expectAddresses(t, s, name, dns.TypeA, propagation, svc.Spec.ClusterIP)

	setReady := func(ready bool) {
		t.Helper()
		updateSlice(t, ns, slice.Name, func(es *discovery.EndpointSlice) { es.Endpoints[0].Conditions.Ready = ptr.To(ready) })
	}
	setReady(false)
	expectAddresses(t, s, name, dns.TypeA, propagation, "10.42.6.1")
	setReady(true)
	expectAddresses(t, s, name, dns.TypeA, propagation, svc.Spec.ClusterIP)

	// The slice goes away altogether: the Service selects nothing ready.
	if err := kube.DiscoveryV1().EndpointSlices(ns).Delete(ctx, slice.Name, meta.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expectAddresses(t, s, name, dns.TypeA, propagation, "10.42.6.1")
}
