package multicluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clientdiscovery "k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsfake "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned/fake"
)

// startFakeWatcher runs the plugin's informers against fake clientsets and
// waits for them to sync.
func startFakeWatcher(t *testing.T, namespaces ...string) (*Multicluster, *kubefake.Clientset, *mcsfake.Clientset) {
	t.Helper()
	kube := kubefake.NewClientset()
	kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*meta.APIResourceList{{
		GroupVersion: mcsGroup + "/v1beta1",
		APIResources: []meta.APIResource{{Name: importResource, Namespaced: true, Kind: "ServiceImport"}},
	}}
	mcs := mcsfake.NewSimpleClientset()
	m := New()
	m.Fallback = []string{"cluster.local."}
	for _, ns := range namespaces {
		m.namespaces[ns] = struct{}{}
	}
	w := &watcher{kube: kube, imports: typedImports{mcs}, namespaces: namespaces, sources: m.sources, ownServices: true, retry: 10 * time.Millisecond,
		health: newHealth(func(d *degradation) { m.degraded.Store(d) })}
	synced := make(chan struct{})
	w.start(func() { m.synced.Store(true); close(synced) })
	m.local = informerServices{store: w.services, synced: w.servicesOK}
	m.watch = w
	t.Cleanup(w.stop)
	select {
	case <-synced:
	case <-time.After(10 * time.Second):
		t.Fatal("informers did not sync")
	}
	return m, kube, mcs
}

// TestInformersListThenWatch: the informers list, then watch; they never ask
// the API server to stream the initial objects (see listThenWatch), and they
// list in pages at the newest data (thinPages).
func TestInformersListThenWatch(t *testing.T) {
	lists := make(chan meta.ListOptions, 10)
	streamed := make(chan meta.ListOptions, 10)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(_ context.Context, o meta.ListOptions) (runtime.Object, error) {
			lists <- o
			return &importObjectList{ListMeta: meta.ListMeta{ResourceVersion: "1"}}, nil
		},
		WatchFuncWithContext: func(_ context.Context, o meta.ListOptions) (watch.Interface, error) {
			if o.SendInitialEvents != nil && *o.SendInitialEvents {
				streamed <- o
			}
			return watch.NewFake(), nil
		},
	}
	ctrl := newInformer(kindServiceImport, lw, &importObject{}, toImportSpec, func(error) {}, time.Second, nil, newStore(nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go ctrl.RunWithContext(ctx)
	select {
	case o := <-lists:
		if o.Limit != listPageSize || o.ResourceVersion != "" {
			t.Errorf("the informer listed with %+v; want pages of %d at the newest data", o, listPageSize)
		}
	case o := <-streamed:
		t.Fatalf("the informer asked for a stream of initial events (%+v)", o)
	case <-time.After(10 * time.Second):
		t.Fatal("the informer neither listed nor streamed in 10 s")
	}
	waitFor(t, 5*time.Second, "the informer to sync", ctrl.HasSynced)
}

func serviceImport(ns, name string, ips ...string) *mcsv1beta1.ServiceImport {
	return &mcsv1beta1.ServiceImport{
		ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name},
		Spec: mcsv1beta1.ServiceImportSpec{
			Type:  mcsv1beta1.ClusterSetIP,
			IPs:   ips,
			Ports: []mcsv1beta1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}},
		},
	}
}

func ipsOf(v *view) []string {
	var out []string
	for _, ip := range append(append([]net.IP{}, v.ipv4...), v.ipv6...) {
		out = append(out, ip.String())
	}
	return out
}

func TestWatchImportLifecycle(t *testing.T) {
	m, _, mcs := startFakeWatcher(t)
	ctx := context.Background()
	imports := mcs.MulticlusterV1beta1().ServiceImports("ns1")

	if _, err := imports.Create(ctx, serviceImport("ns1", "web", "10.42.0.1"), meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the import to appear", func() bool {
		v := m.index.lookup("ns1", "web")
		return v != nil && len(v.ipv4) == 1 && v.ipv4[0].String() == "10.42.0.1"
	})
	if !m.index.hasNamespace("ns1") {
		t.Errorf("namespace ns1 not known")
	}

	// IPs change, dual-stack.
	if _, err := imports.Update(ctx, serviceImport("ns1", "web", "10.42.0.9", "fd00::9"), meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the new IPs", func() bool {
		v := m.index.lookup("ns1", "web")
		got := ipsOf(v)
		return len(got) == 2 && got[0] == "10.42.0.9" && got[1] == "fd00::9"
	})

	if err := imports.Delete(ctx, "web", meta.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the import to go", func() bool { return m.index.lookup("ns1", "web") == nil })
	if m.index.hasNamespace("ns1") {
		t.Errorf("namespace ns1 still known after its only import went")
	}
}

func TestWatchSkipsMalformedParts(t *testing.T) {
	m, _, mcs := startFakeWatcher(t)
	ctx := context.Background()
	si := serviceImport("ns1", "odd", "not-an-ip", "10.1.1.1", "10.1.1.2", "fd00::1")
	si.Spec.Ports = append(si.Spec.Ports, mcsv1beta1.ServicePort{Name: "bad", Port: 70000})
	if _, err := mcs.MulticlusterV1beta1().ServiceImports("ns1").Create(ctx, si, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// An import of an unknown type is skipped whole.
	bad := serviceImport("ns1", "weird")
	bad.Spec.Type = "LoadBalancer"
	if _, err := mcs.MulticlusterV1beta1().ServiceImports("ns1").Create(ctx, bad, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the import", func() bool { return m.index.lookup("ns1", "odd") != nil })
	v := m.index.lookup("ns1", "odd")
	if got := ipsOf(v); !slices.Equal(got, []string{"10.1.1.1", "10.1.1.2", "fd00::1"}) {
		t.Errorf("IPs %v, want [10.1.1.1 10.1.1.2 fd00::1]", got)
	}
	if len(v.ports) != 1 || v.ports[0].port != 80 {
		t.Errorf("ports %+v, want only 80", v.ports)
	}
	if m.index.lookup("ns1", "weird") != nil {
		t.Errorf("import of unknown type was indexed")
	}
}

func TestWatchNamespaces(t *testing.T) {
	m, _, mcs := startFakeWatcher(t, "shop")
	ctx := context.Background()
	// The import in other is created first. Were all namespaces watched,
	// its event would come before shop's on the same watch: once the import
	// in shop is indexed, the one in other would have been.
	for _, ns := range []string{"other", "shop"} {
		if _, err := mcs.MulticlusterV1beta1().ServiceImports(ns).Create(ctx, serviceImport(ns, "web", "10.42.0.1"), meta.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 5*time.Second, "the import in shop", func() bool { return m.index.lookup("shop", "web") != nil })
	if m.index.lookup("other", "web") != nil {
		t.Errorf("import outside the namespaces option was indexed")
	}
}

func TestWatchLocalServices(t *testing.T) {
	m, kube, _ := startFakeWatcher(t)
	ctx := context.Background()
	svc := &corev1.Service{ObjectMeta: meta.ObjectMeta{Namespace: "ns1", Name: "web"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"}}}
	if _, err := kube.CoreV1().Services("ns1").Create(ctx, svc, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the local Service", func() bool { return m.local.service("ns1", "web") != nil })
	if v4, _ := clusterIPs(m.local.service("ns1", "web")); len(v4) != 1 || v4[0].String() != "10.96.0.10" {
		t.Errorf("local Service ClusterIPs %v, want [10.96.0.10]", v4)
	}
	if err := kube.CoreV1().Services("ns1").Delete(ctx, "web", meta.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the local Service to go", func() bool { return m.local.service("ns1", "web") == nil })
}

func TestWatchHeadlessSlices(t *testing.T) {
	m, kube, mcs := startFakeWatcher(t)
	ctx := context.Background()
	si := serviceImport("ns1", "db")
	si.Spec.Type = mcsv1beta1.Headless
	if _, err := mcs.MulticlusterV1beta1().ServiceImports("ns1").Create(ctx, si, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ready, notReady := true, false
	host := "db-0"
	slice := &discovery.EndpointSlice{
		ObjectMeta:  meta.ObjectMeta{Namespace: "ns1", Name: "db-east", Labels: map[string]string{labelServiceName: "db", labelSourceCluster: "east"}},
		AddressType: discovery.AddressTypeIPv4,
		Endpoints: []discovery.Endpoint{
			{Addresses: []string{"10.1.0.1"}, Hostname: &host, Conditions: discovery.EndpointConditions{Ready: &ready}},
			{Addresses: []string{"10.1.0.2"}},
			{Addresses: []string{"10.1.0.3"}, Conditions: discovery.EndpointConditions{Ready: &notReady}},
		},
	}
	if _, err := kube.DiscoveryV1().EndpointSlices("ns1").Create(ctx, slice, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "two ready endpoints", func() bool {
		v := m.index.lookup("ns1", "db")
		return v != nil && len(endpointsOf(v)) == 2
	})
	v := m.index.lookup("ns1", "db")
	if e := endpointsOf(v)[0]; e.host != "10-1-0-2" || e.cluster != "east" {
		t.Errorf("endpoint without hostname: %+v", e)
	}
	if e := endpointsOf(v)[1]; e.host != "db-0" {
		t.Errorf("endpoint with hostname: %+v", e)
	}
	if err := kube.DiscoveryV1().EndpointSlices("ns1").Delete(ctx, "db-east", meta.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "no endpoints", func() bool { v := m.index.lookup("ns1", "db"); return v != nil && len(endpointsOf(v)) == 0 })
}

func TestWatchDegradedUntilCRD(t *testing.T) {
	kube := kubefake.NewClientset() // its discovery serves no multicluster.x-k8s.io
	m := New()
	w := &watcher{kube: kube, imports: typedImports{mcsfake.NewSimpleClientset()}, sources: m.sources, retry: 10 * time.Millisecond,
		health: newHealth(func(d *degradation) { m.degraded.Store(d) })}
	synced := make(chan struct{})
	w.start(func() { m.synced.Store(true); close(synced) })
	t.Cleanup(w.stop)
	waitFor(t, 5*time.Second, "the degraded state", func() bool { return m.degraded.Load() != nil })
	if !m.Ready() {
		t.Errorf("degraded plugin not ready")
	}
}

func TestObjectsGauge(t *testing.T) {
	gauge := objects.WithLabelValues("serviceimport")
	before := testutil.ToFloat64(gauge)
	m, _, mcs := startFakeWatcher(t)
	for _, name := range []string{"a", "b"} {
		if _, err := mcs.MulticlusterV1beta1().ServiceImports("ns1").Create(context.Background(), serviceImport("ns1", name, "10.0.0.1"), meta.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 5*time.Second, "two imports counted", func() bool { return testutil.ToFloat64(gauge) == before+2 })
	// An update is no new object.
	if _, err := mcs.MulticlusterV1beta1().ServiceImports("ns1").Update(context.Background(), serviceImport("ns1", "a", "10.0.0.2"), meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the update", func() bool { v := m.index.lookup("ns1", "a"); return v != nil && v.ipv4[0].String() == "10.0.0.2" })
	if got := testutil.ToFloat64(gauge); got != before+2 {
		t.Errorf("after an update the gauge says %v, want %v", got, before+2)
	}
	m.watch.stop()
	if got := testutil.ToFloat64(gauge); got != before {
		t.Errorf("after stop the gauge says %v, want %v", got, before)
	}
}

// TestWatchPerClusterCopies: ServiceImports labelled
// multicluster.kubernetes.io/service-name are counted under a kind of their
// own, logged once however often they change, and never served.
func TestWatchPerClusterCopies(t *testing.T) {
	logs := captureLog(t)
	m, _, mcs := startFakeWatcher(t)
	ctx := context.Background()
	copies, imports := objects.WithLabelValues(kindServiceImportCopy), objects.WithLabelValues("serviceimport")
	copiesBefore, importsBefore := testutil.ToFloat64(copies), testutil.ToFloat64(imports)

	si := serviceImport("submariner-operator", "web-shop-east", "10.42.0.1")
	si.Labels = map[string]string{labelServiceName: "web", labelSourceCluster: "east"}
	created, err := mcs.MulticlusterV1beta1().ServiceImports(si.Namespace).Create(ctx, si, meta.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the copy counted", func() bool { return testutil.ToFloat64(copies)-copiesBefore == 1 })
	created.Spec.IPs = []string{"10.42.0.2"}
	created.ResourceVersion = "2"
	if _, err := mcs.MulticlusterV1beta1().ServiceImports(si.Namespace).Update(ctx, created, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A real import after the copy: once it is served, the copy's update
	// has been processed too (one informer, events in order).
	if _, err := mcs.MulticlusterV1beta1().ServiceImports("shop").Create(ctx, serviceImport("shop", "web", "10.42.0.3"), meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the real import", func() bool { return m.index.lookup("shop", "web") != nil })
	if got := testutil.ToFloat64(imports) - importsBefore; got != 1 {
		t.Errorf("serviceimport objects +%v, want +1 (the copy is counted apart)", got)
	}
	if m.index.lookup("submariner-operator", "web-shop-east") != nil || m.index.hasNamespace("submariner-operator") {
		t.Errorf("a per-cluster copy is served")
	}
	if n := logs.count("ServiceImport submariner-operator/web-shop-east is labelled"); n != 1 {
		t.Errorf("the copy logged %d times, want once", n)
	}
	if err := mcs.MulticlusterV1beta1().ServiceImports(si.Namespace).Delete(ctx, si.Name, meta.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the copy uncounted", func() bool { return testutil.ToFloat64(copies) == copiesBefore })
}

// TestWatchDerivedService: without a kubernetes plugin the plugin's own
// Service informer finds the Service an import's annotation names, by name
// for A and by ClusterIP for PTR, and follows it.
func TestWatchDerivedService(t *testing.T) {
	m, kube, mcs := startFakeWatcher(t)
	m.Zones = []string{"clusterset.local.", "in-addr.arpa."}
	ctx := context.Background()
	si := serviceImport("shop", "cart")
	si.Annotations = map[string]string{annotationDerivedService: "derived-k2j3h4g5f6"}
	if _, err := mcs.MulticlusterV1beta1().ServiceImports("shop").Create(ctx, si, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	derived := &corev1.Service{ObjectMeta: meta.ObjectMeta{Namespace: "shop", Name: "derived-k2j3h4g5f6"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.4.4", ClusterIPs: []string{"10.96.4.4"}}}
	if _, err := kube.CoreV1().Services("shop").Create(ctx, derived, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a := test.Case{Qname: "cart.shop.svc.clusterset.local.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("cart.shop.svc.clusterset.local. 5 IN A 10.96.4.4")}}
	waitFor(t, 5*time.Second, "the derived Service to answer", func() bool { return answers(m, a) == nil })
	checkCase(t, m, test.Case{Qname: "4.4.96.10.in-addr.arpa.", Qtype: dns.TypePTR, Answer: []dns.RR{test.PTR("4.4.96.10.in-addr.arpa. 5 IN PTR cart.shop.svc.clusterset.local.")}})
	if err := kube.CoreV1().Services("shop").Delete(ctx, derived.Name, meta.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	nodata := test.Case{Qname: "cart.shop.svc.clusterset.local.", Qtype: dns.TypeA, Ns: []dns.RR{pendingSOAOf("clusterset.local.")}}
	waitFor(t, 5*time.Second, "NODATA once the derived Service is gone", func() bool { return answers(m, nodata) == nil })
}

// answers returns what test.SortAndCheck says of m's reply to tc.
func answers(m *Multicluster, tc test.Case) error {
	rec := dnstest.NewRecorder(&test.ResponseWriter{})
	if _, err := m.ServeDNS(context.Background(), rec, tc.Msg()); err != nil {
		return err
	}
	if rec.Msg == nil {
		return errors.New("no reply")
	}
	for _, rr := range rec.Msg.Ns {
		if s, ok := rr.(*dns.SOA); ok {
			s.Serial = 0
		}
	}
	return test.SortAndCheck(rec.Msg, tc)
}

// TestWatchClusterID: the local cluster id follows the ClusterProperty
// cluster.clusterset.k8s.io as it appears, changes and goes, and the views
// of imports that prefer close endpoints follow it.
func TestWatchClusterID(t *testing.T) {
	kube := kubefake.NewClientset()
	gvr := schema.GroupVersionResource{Group: aboutGroup, Version: "v1alpha1", Resource: clusterPropertyResource}
	kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*meta.APIResourceList{
		{GroupVersion: mcsGroup + "/v1beta1", APIResources: []meta.APIResource{{Name: importResource, Namespaced: true, Kind: "ServiceImport"}}},
		{GroupVersion: aboutGroup + "/v1alpha1", APIResources: []meta.APIResource{{Name: clusterPropertyResource, Kind: "ClusterProperty"}}},
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "ClusterPropertyList"})
	mcs := mcsfake.NewSimpleClientset()
	m, _ := newTestPlugin(t, nil, fakeLocal{})
	w := &watcher{kube: kube, imports: typedImports{mcs}, dynamic: dyn, sources: m.sources, retry: 10 * time.Millisecond,
		health: newHealth(func(d *degradation) { m.degraded.Store(d) })}
	w.start(func() {})
	t.Cleanup(w.stop)

	property := func(name, value string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": aboutGroup + "/v1alpha1", "kind": "ClusterProperty",
			"metadata": map[string]any{"name": name},
			"spec":     map[string]any{"value": value},
		}}
	}
	ctx := context.Background()
	props := dyn.Resource(gvr)
	// The cluster set's property is not the cluster's id.
	if _, err := props.Create(ctx, property("clusterset.k8s.io", "fleet"), meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := props.Create(ctx, property(clusterIDProperty, "East"), meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the id to be read", func() bool { return m.sources.localCluster() == "east" })
	if _, err := props.Update(ctx, property(clusterIDProperty, "not_an_id"), meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "a malformed id to count as none", func() bool { return m.sources.localCluster() == "" })
	if _, err := props.Update(ctx, property(clusterIDProperty, "west.prod"), meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the id to change", func() bool { return m.sources.localCluster() == "west.prod" })
	if err := props.Delete(ctx, clusterIDProperty, meta.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the id to go", func() bool { return m.sources.localCluster() == "" })
	if m.degraded.Load() != nil {
		t.Errorf("degraded: %s", m.degraded.Load().message)
	}
}

// TestWatchClusterIDNotInstalled: without the ClusterProperty API nothing
// degrades, and the id stays unknown.
func TestWatchClusterIDNotInstalled(t *testing.T) {
	fake, mcs := fakeClients()
	kube := &countedLooks{Interface: fake, group: aboutGroup}
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	m, _ := newTestPlugin(t, nil, fakeLocal{})
	m.synced.Store(false)
	w := &watcher{kube: kube, imports: typedImports{mcs}, dynamic: dyn, sources: m.sources, retry: 10 * time.Millisecond,
		health: newHealth(func(d *degradation) { m.degraded.Store(d) })}
	synced := make(chan struct{})
	w.start(func() { m.synced.Store(true); close(synced) })
	t.Cleanup(w.stop)
	select {
	case <-synced:
	case <-time.After(10 * time.Second):
		t.Fatal("informers did not sync")
	}
	// Each look asks discovery for v1beta1 and v1alpha1.
	waitFor(t, 5*time.Second, "four looks for the ClusterProperty API", func() (bool, string) {
		n := kube.looks.Load()
		return n >= 8, fmt.Sprintf("%d versions looked up", n)
	})
	if m.degraded.Load() != nil || m.sources.localCluster() != "" || !m.Ready() {
		t.Errorf("degraded %v, local cluster %q, ready %v", m.degraded.Load(), m.sources.localCluster(), m.Ready())
	}
}

// countedLooks is a clientset whose discovery counts the look-ups of the
// versions of group.
type countedLooks struct {
	kubernetes.Interface
	group string
	looks atomic.Int32
}

func (k *countedLooks) Discovery() clientdiscovery.DiscoveryInterfaces {
	return countingDiscovery{k.Interface.Discovery(), k}
}

type countingDiscovery struct {
	clientdiscovery.DiscoveryInterfaces
	k *countedLooks
}

func (d countingDiscovery) count(groupVersion string) {
	if strings.HasPrefix(groupVersion, d.k.group+"/") {
		d.k.looks.Add(1)
	}
}

func (d countingDiscovery) ServerResourcesForGroupVersion(groupVersion string) (*meta.APIResourceList, error) {
	d.count(groupVersion)
	return d.DiscoveryInterfaces.ServerResourcesForGroupVersion(groupVersion)
}

func (d countingDiscovery) ServerResourcesForGroupVersionWithContext(ctx context.Context, groupVersion string) (*meta.APIResourceList, error) {
	d.count(groupVersion)
	return d.DiscoveryInterfaces.ServerResourcesForGroupVersionWithContext(ctx, groupVersion)
}
