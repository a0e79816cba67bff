package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/coredns-mcs/coredns-mcs/test/internal/apply"
	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"
	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// TestTrafficPolicy: the local cluster's id from a ClusterProperty created
// after start-up, spec.trafficDistribution edited on the import, failover of
// one import without the failover option, and a fallback scope, each seen
// through the binary against a real API server. The ClusterProperty is
// cluster-wide, so the test has an API server of its own.
func TestTrafficPolicy(t *testing.T) {
	c := startOwnCluster(t, controlplane.Options{InstallCRDs: true})
	ctx := context.Background()
	crd, err := apply.ReadFile(filepath.Join("..", "..", "manifests", "crds", "about.k8s.io_clusterproperties.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := apply.Apply(ctx, c.cp.Config, crd); err != nil {
		t.Fatal(err)
	}
	// Served before the servers start, so that they watch it from the
	// start (without it they look again only every 30 seconds at most).
	poll.Eventually(t, 30*time.Second, "the ClusterProperty API to be served", func() (bool, string) {
		_, err := c.kube.Discovery().ServerResourcesForGroupVersion("about.k8s.io/v1alpha1")
		return err == nil, fmt.Sprint(err)
	})
	metricsPort := harness.FreePort(t)
	s := resilientServer{server: startServer(t, resilienceCorefile(c.cp.Kubeconfig, metricsPort, false, "fallback_scope !internal/*"), true),
		metrics: "http://127.0.0.1:" + strconv.Itoa(metricsPort) + "/metrics"}
	without := startServer(t, resilienceCorefile(c.cp.Kubeconfig, harness.FreePort(t), true), true)

	ns := c.namespace(t, "policy")
	n := names{t: t, servers: []*server{s.server}, ns: ns}
	imports := c.mcs.MulticlusterV1beta1().ServiceImports(ns)
	slice := func(name, svc, cluster string, endpoints ...discovery.Endpoint) {
		t.Helper()
		_, err := c.kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discovery.EndpointSlice{
			ObjectMeta: meta.ObjectMeta{Name: name, Labels: map[string]string{
				mcsv1beta1.LabelServiceName: svc, mcsv1beta1.LabelSourceCluster: cluster}},
			AddressType: discovery.AddressTypeIPv4,
			Endpoints:   endpoints,
			Ports:       []discovery.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](80)}},
		}, meta.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	pod := func(ip, host string) discovery.Endpoint {
		return discovery.Endpoint{Addresses: []string{ip}, Hostname: ptr.To(host), Conditions: discovery.EndpointConditions{Ready: ptr.To(true)}}
	}
	// A headless import and a ClusterSetIP import answered from its slices
	// (each cluster's ClusterIP, as Lighthouse writes them), both preferring
	// close endpoints.
	for _, typ := range []mcsv1beta1.ServiceImportType{mcsv1beta1.Headless, mcsv1beta1.ClusterSetIP} {
		name := map[mcsv1beta1.ServiceImportType]string{mcsv1beta1.Headless: "db", mcsv1beta1.ClusterSetIP: "web"}[typ]
		si := newImport(ns, name)
		si.Spec.Type, si.Spec.TrafficDistribution = typ, ptr.To("PreferClose")
		c.createImport(t, si)
	}
	slice("db-east", "db", "east", pod("10.244.0.1", "db-0"))
	slice("db-west", "db", "west", pod("10.245.0.1", "db-0"))
	slice("web-east", "web", "east", discovery.Endpoint{Addresses: []string{"10.97.0.1"}})
	slice("web-west", "web", "west", discovery.Endpoint{Addresses: []string{"10.98.0.1"}})

	// The local cluster is unknown: every cluster's endpoints.
	n.a("db", "10.244.0.1", "10.245.0.1")
	n.a("web", "10.97.0.1", "10.98.0.1")

	// The ClusterProperty appears: local first, within the propagation
	// bound.
	properties := dynamic.NewForConfigOrDie(c.cp.Config).Resource(schema.GroupVersionResource{Group: "about.k8s.io", Version: "v1alpha1", Resource: "clusterproperties"})
	// The first object of a new type can take the API server seconds to
	// store; the clock starts once it exists.
	if _, err := properties.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "about.k8s.io/v1alpha1", "kind": "ClusterProperty",
		"metadata": map[string]any{"name": "cluster.clusterset.k8s.io"},
		"spec":     map[string]any{"value": "east"},
	}}, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	n.addresses(n.svc("db", "clusterset.local"), dns.TypeA, "10.244.0.1")
	t.Logf("the ClusterProperty made answers local-first within %s", time.Since(created).Round(time.Millisecond))
	n.a("db", "10.244.0.1")
	n.a("web", "10.97.0.1")
	// Other clusters' names answer as before.
	n.addresses("db-0.west.db."+ns+".svc.clusterset.local.", dns.TypeA, "10.245.0.1")
	if got := s.metric(t, "coredns_multicluster_policy_decisions_total", `rule="local_preferred",server="dns://:`+portOf(s.server)+`"`); got < 1 {
		t.Errorf("policy_decisions_total{rule=local_preferred} = %v, want at least 1", got)
	}

	// The import no longer prefers close endpoints: every cluster's again;
	// and back.
	setDistribution := func(value *string) {
		t.Helper()
		si, err := imports.Get(ctx, "db", meta.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		si.Spec.TrafficDistribution = value
		if _, err := imports.Update(ctx, si, meta.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	edited := time.Now()
	setDistribution(nil)
	n.addresses(n.svc("db", "clusterset.local"), dns.TypeA, "10.244.0.1", "10.245.0.1")
	t.Logf("removing trafficDistribution showed within %s", time.Since(edited).Round(time.Millisecond))
	n.a("db", "10.244.0.1", "10.245.0.1")
	setDistribution(ptr.To("PreferSameZone"))
	n.a("db", "10.244.0.1")

	// Failover of one import, without the failover option: the local
	// Service wins while it has a ready endpoint.
	api := c.service(t, ns, "api")
	apiImport := newImport(ns, "api", "10.42.5.1")
	apiImport.Spec.TrafficDistribution = ptr.To("PreferClose")
	c.createImport(t, apiImport)
	local, err := c.kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discovery.EndpointSlice{
		ObjectMeta:  meta.ObjectMeta{Name: "api-local", Labels: map[string]string{discovery.LabelServiceName: "api"}},
		AddressType: discovery.AddressTypeIPv4,
		Endpoints:   []discovery.Endpoint{{Addresses: []string{"10.244.9.9"}, Conditions: discovery.EndpointConditions{Ready: ptr.To(true)}}},
	}, meta.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	apiLocal := n.svc("api", "cluster.local")
	n.addresses(apiLocal, dns.TypeA, api.Spec.ClusterIP)
	local.Endpoints[0].Conditions.Ready = ptr.To(false)
	if _, err := c.kube.DiscoveryV1().EndpointSlices(ns).Update(ctx, local, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.addresses(apiLocal, dns.TypeA, "10.42.5.1")

	// The fallback scope keeps namespace internal local: its import
	// answers in the clusterset zone only, and its cluster.local names are
	// answered exactly as without the plugin.
	if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: meta.ObjectMeta{Name: "internal"}}, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.createImport(t, newImport("internal", "ledger", "10.42.6.1"))
	internal := names{t: t, servers: []*server{s.server}, ns: "internal"}
	internal.addresses(internal.svc("ledger", "clusterset.local"), dns.TypeA, "10.42.6.1")
	expectSameAnswers(t, s.server, without, []question{
		{internal.svc("ledger", "cluster.local"), dns.TypeA},
		{internal.svc("ledger", "cluster.local"), dns.TypeSRV},
		{"_http._tcp." + internal.svc("ledger", "cluster.local"), dns.TypeSRV},
	})
	if got := s.metric(t, "coredns_multicluster_policy_decisions_total", `rule="scope_refused",server="dns://:`+portOf(s.server)+`"`); got < 1 {
		t.Errorf("policy_decisions_total{rule=scope_refused} = %v, want at least 1", got)
	}
	if got := s.metric(t, "coredns_multicluster_policy_decisions_total", `rule="failover_service",server="dns://:`+portOf(s.server)+`"`); got < 1 {
		t.Errorf("policy_decisions_total{rule=failover_service} = %v, want at least 1", got)
	}

	// A hostile ClusterProperty (the trust model's row "ClusterProperty"):
	// a value that is no cluster id is dropped and logged, and the local
	// cluster is unknown; another cluster's id only chooses among the
	// import's own endpoints, and adds none.
	setValue := func(value string) {
		t.Helper()
		p, err := properties.Get(ctx, "cluster.clusterset.k8s.io", meta.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedField(p.Object, value, "spec", "value"); err != nil {
			t.Fatal(err)
		}
		if _, err := properties.Update(ctx, p, meta.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setValue("../Evil_Cluster")
	n.a("db", "10.244.0.1", "10.245.0.1")
	expectLoggedOnce(t, s.server, `spec.value "../Evil_Cluster" is not a cluster id`)
	setValue("west")
	n.a("db", "10.245.0.1")
	n.addresses("db-0.east.db."+ns+".svc.clusterset.local.", dns.TypeA, "10.244.0.1")
}

// portOf is the port a server listens on, as the server label of CoreDNS's
// metrics names it.
func portOf(s *server) string {
	return s.addr[strings.LastIndexByte(s.addr, ':')+1:]
}
