package multicluster

import (
	"bytes"
	"context"
	golog "log"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	fakediscovery "k8s.io/client-go/discovery/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsfake "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned/fake"
)

// logBuffer collects what the plugin logs; informer goroutines write to it.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), substr)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// captureLog sends the standard logger, which CoreDNS's plugin logs write
// to, into a buffer for the rest of the test.
// The package's bounded logs get their whole budget of lines back, so that
// what earlier tests of the process logged (in any order with -shuffle, or
// again with -count) does not spend the lines this test counts.
func captureLog(t *testing.T) *logBuffer {
	t.Helper()
	buf := &logBuffer{}
	out, flags := golog.Writer(), golog.Flags()
	golog.SetOutput(buf)
	t.Cleanup(func() { golog.SetOutput(out); golog.SetFlags(flags) })
	restoreLogBudgets()
	return buf
}

// restoreLogBudgets starts a new window in each of the package's bounded
// logs, under its lock: goroutines of the test may be logging already.
func restoreLogBudgets() {
	c, o, l := conflictLogger, objectLog, localConflictLogger
	c.mu.Lock()
	c.restart()
	c.mu.Unlock()
	o.mu.Lock()
	o.restart()
	o.mu.Unlock()
	l.mu.Lock()
	l.restart()
	clear(l.logged)
	l.mu.Unlock()
}

// restart starts a new window with its whole budget of lines.
func (w *logWindow) restart() { w.start, w.lines, w.suppressed = w.now(), 0, 0 }

// fakeClients returns fake clientsets whose discovery serves ServiceImport
// at v1beta1.
func fakeClients() (*kubefake.Clientset, *mcsfake.Clientset) {
	kube := kubefake.NewClientset()
	kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*meta.APIResourceList{{
		GroupVersion: mcsGroup + "/v1beta1",
		APIResources: []meta.APIResource{{Name: importResource, Namespaced: true, Kind: "ServiceImport"}},
	}}
	return kube, mcsfake.NewSimpleClientset()
}

// runWatcher starts the plugin's informers on the clientsets without waiting
// for them to sync; synced is closed when they have.
func runWatcher(t *testing.T, m *Multicluster, kube *kubefake.Clientset, mcs *mcsfake.Clientset) (synced chan struct{}) {
	t.Helper()
	w := &watcher{kube: kube, imports: typedImports{mcs}, sources: m.sources, retry: 10 * time.Millisecond,
		health: newHealth(func(d *degradation) { m.degraded.Store(d) })}
	synced = make(chan struct{})
	w.start(func() { m.synced.Store(true); close(synced) })
	m.watch = w
	t.Cleanup(w.stop)
	return synced
}

// refuseImports makes every list of ServiceImports fail with err while
// refusing is set, counting the refusals.
func refuseImports(mcs *mcsfake.Clientset, refusing *atomic.Bool, refusals *atomic.Int32, err error) {
	mcs.PrependReactor("list", importResource, func(k8stesting.Action) (bool, runtime.Object, error) {
		if !refusing.Load() {
			return false, nil, nil
		}
		refusals.Add(1)
		return true, nil, err
	})
}

// TestWatchHealsAfterRBACGranted: while RBAC refuses ServiceImports the plugin
// is degraded (and ready), says so once, and heals soon after the rule is
// granted, however long it was refused. The reflector on its own would wait
// up to a minute between attempts by then.
func TestWatchHealsAfterRBACGranted(t *testing.T) {
	logs := captureLog(t)
	gauge := degradedGauge.WithLabelValues(reasonImportRBAC)
	kube, mcs := fakeClients()
	var refusing atomic.Bool
	var refusals atomic.Int32
	refusing.Store(true)
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: mcsGroup, Resource: importResource}, "", nil)
	refuseImports(mcs, &refusing, &refusals, forbidden)

	m := New()
	synced := runWatcher(t, m, kube, mcs)

	// Six refusals would take the reflector's own backoff at least 25 s.
	waitFor(t, 5*time.Second, "six refused lists", func() bool { return refusals.Load() >= 6 })
	if m.degraded.Load() == nil {
		t.Fatal("not degraded while ServiceImports are forbidden")
	}
	if !m.Ready() {
		t.Error("degraded plugin not ready")
	}
	if got := testutil.ToFloat64(gauge); got != 1 {
		t.Errorf("degraded{reason=%q} = %v, want 1", reasonImportRBAC, got)
	}
	if n := logs.count("not allowed to list and watch serviceimports: grant the ClusterRole in manifests/rbac"); n != 1 {
		t.Errorf("the missing permission was logged %d times, want once:\n%s", n, logs)
	}

	refusing.Store(false)
	select {
	case <-synced:
	case <-time.After(2 * time.Second):
		t.Fatalf("not synced within 2s of the permission being granted (%d refusals)", refusals.Load())
	}
	waitFor(t, time.Second, "the degraded state to clear", func() bool { return m.degraded.Load() == nil })
	if got := testutil.ToFloat64(gauge); got != 0 {
		t.Errorf("degraded{reason=%q} = %v after healing, want 0", reasonImportRBAC, got)
	}
	if !strings.Contains(logs.String(), "Recovered: "+reasonImportRBAC) {
		t.Errorf("recovery not logged:\n%s", logs)
	}
}

// TestWatchRefusedWatch: RBAC allows listing ServiceImports but not watching
// them. That is one degraded state, logged once, not one that clears with
// every allowed list and returns with the next refused watch; granting watch
// heals it.
func TestWatchRefusedWatch(t *testing.T) {
	logs := captureLog(t)
	kube, mcs := fakeClients()
	var refusing atomic.Bool
	var refusals atomic.Int32
	refusing.Store(true)
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: mcsGroup, Resource: importResource}, "", nil)
	mcs.PrependWatchReactor(importResource, func(k8stesting.Action) (bool, watch.Interface, error) {
		if !refusing.Load() {
			return false, nil, nil
		}
		refusals.Add(1)
		return true, nil, forbidden
	})

	m := New()
	runWatcher(t, m, kube, mcs)
	waitFor(t, 5*time.Second, "six refused watches", func() bool { return refusals.Load() >= 6 })
	if m.degraded.Load() == nil {
		t.Fatal("not degraded while watching ServiceImports is forbidden")
	}
	if n, r := logs.count("Degraded"), logs.count("Recovered"); n != 1 || r != 0 {
		t.Errorf("logged Degraded %d and Recovered %d times, want 1 and 0:\n%s", n, r, logs)
	}

	refusing.Store(false)
	waitFor(t, 2*time.Second, "the degraded state to clear", func() bool { return m.degraded.Load() == nil })
	if _, err := mcs.MulticlusterV1beta1().ServiceImports("ns1").Create(context.Background(), serviceImport("ns1", "web", "10.42.0.1"), meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the import, through the watch", func() bool { return m.index.lookup("ns1", "web") != nil })
}

// TestWatchHealsAfterCRDReturns: the CRD goes between discovery and the first
// list (as when it is deleted while the plugin runs); once it is back, the
// plugin is no longer degraded.
func TestWatchHealsAfterCRDReturns(t *testing.T) {
	logs := captureLog(t)
	kube, mcs := fakeClients()
	var refusing atomic.Bool
	var refusals atomic.Int32
	refusing.Store(true)
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: mcsGroup, Resource: importResource}, "")
	refuseImports(mcs, &refusing, &refusals, notFound)

	m := New()
	synced := runWatcher(t, m, kube, mcs)
	waitFor(t, 5*time.Second, "three lists answered NotFound", func() bool { return refusals.Load() >= 3 })
	if r := m.degraded.Load(); r == nil || !strings.Contains(r.message, "manifests/crds") {
		t.Fatalf("degraded = %v, want the missing CRD and manifests/crds", r)
	}
	if got := testutil.ToFloat64(degradedGauge.WithLabelValues(reasonCRD)); got != 1 {
		t.Errorf("degraded{reason=%q} = %v, want 1", reasonCRD, got)
	}

	refusing.Store(false)
	select {
	case <-synced:
	case <-time.After(2 * time.Second):
		t.Fatal("not synced within 2s of the CRD returning")
	}
	waitFor(t, time.Second, "the degraded state to clear", func() bool { return m.degraded.Load() == nil })
	if got := testutil.ToFloat64(degradedGauge.WithLabelValues(reasonCRD)); got != 0 {
		t.Errorf("degraded{reason=%q} = %v after healing, want 0", reasonCRD, got)
	}
	if n := logs.count("is not installed, or serves neither v1beta1 nor v1alpha1: apply manifests/crds"); n != 1 {
		t.Errorf("the missing CRD was logged %d times, want once:\n%s", n, logs)
	}
}

// scriptedListWatch is a ServiceImport or EndpointSlice source the test
// drives: List returns list(), and every Watch a new fake watcher, handed
// over on watches.
type scriptedListWatch struct {
	list    func() runtime.Object
	lists   atomic.Int32
	watches chan *watch.FakeWatcher
}

func newScriptedListWatch(list func() runtime.Object) *scriptedListWatch {
	return &scriptedListWatch{list: list, watches: make(chan *watch.FakeWatcher, 10)}
}

func (s *scriptedListWatch) listWatch() *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(context.Context, meta.ListOptions) (runtime.Object, error) {
			s.lists.Add(1)
			return s.list(), nil
		},
		WatchFuncWithContext: func(context.Context, meta.ListOptions) (watch.Interface, error) {
			w := watch.NewFakeWithChanSize(10, false)
			s.watches <- w
			return w, nil
		},
	}
}

func (s *scriptedListWatch) nextWatch(t *testing.T) *watch.FakeWatcher {
	t.Helper()
	select {
	case w := <-s.watches:
		return w
	case <-time.After(10 * time.Second):
		t.Fatal("no watch started")
		return nil
	}
}

// runScriptedInformer runs the plugin's informer of kind over lw, with the
// store the watcher gives it.
func runScriptedInformer(t *testing.T, kind string, lw *scriptedListWatch, objType runtime.Object, convert func(meta.Object) (meta.Object, error), h *informerHandler, store informerStore) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	lwc := lw.listWatch()
	if _, ok := objType.(*importObject); ok {
		lwc = asImportListWatch(lwc) // the script's ServiceImports are typed
	}
	ctrl := newInformer(kind, lwc, objType, convert, func(error) {}, 10*time.Millisecond, h, store)
	done := make(chan struct{})
	go func() { ctrl.RunWithContext(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, 10*time.Second, kind+" informer synced", ctrl.HasSynced)
}

func badImport(name, rv, typ string, ips []string, ports ...mcsv1beta1.ServicePort) mcsv1beta1.ServiceImport {
	return mcsv1beta1.ServiceImport{
		ObjectMeta: meta.ObjectMeta{Namespace: "ns1", Name: name, ResourceVersion: rv},
		Spec:       mcsv1beta1.ServiceImportSpec{Type: mcsv1beta1.ServiceImportType(typ), IPs: ips, Ports: ports},
	}
}

// TestMalformedObjects feeds objects the real API server's schema would
// mostly refuse (no type, an unknown type, no name, a mixed-family
// EndpointSlice) or accept (a bad IP string, ports out of range) through the
// informers: the bad part is skipped and logged once per object version, even
// across a relist, and the rest served. Several addresses of one family and a
// slice without a source cluster are not malformed: they are served.
func TestMalformedObjects(t *testing.T) {
	logs := captureLog(t)
	malformedImports := malformedTotal.WithLabelValues("serviceimport")
	malformedSlices := malformedTotal.WithLabelValues("endpointslice")
	importsBefore, slicesBefore := testutil.ToFloat64(malformedImports), testutil.ToFloat64(malformedSlices)

	http := mcsv1beta1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}
	imports := []mcsv1beta1.ServiceImport{
		badImport("odd", "1", "ClusterSetIP", []string{"not-an-ip", "10.1.1.1", "10.1.1.2", "fd00::1", "fd00::2"},
			http, mcsv1beta1.ServicePort{Name: "big", Port: 70000}, mcsv1beta1.ServicePort{Name: "zero", Port: 0},
			mcsv1beta1.ServicePort{Name: "Not_A_Label", Port: 81}, mcsv1beta1.ServicePort{Name: "icmp", Protocol: "ICMP", Port: 82}),
		badImport("notype", "1", "", []string{"10.2.2.2"}, http),
		badImport("weird", "1", "LoadBalancer", []string{"10.2.2.3"}, http),
		badImport("", "1", "ClusterSetIP", []string{"10.2.2.4"}, http),
		badImport("db", "1", "Headless", nil, http),
		badImport("web", "1", "ClusterSetIP", []string{"10.2.2.5"}, http),
	}
	ready := true
	port0, port53 := int32(0), int32(53)
	slices := []discovery.EndpointSlice{
		{ // mixed families and a bad address: the IPv4 address stays
			ObjectMeta:  meta.ObjectMeta{Namespace: "ns1", Name: "db-east", ResourceVersion: "1", Labels: map[string]string{labelServiceName: "db", labelSourceCluster: "east"}},
			AddressType: discovery.AddressTypeIPv4,
			Endpoints:   []discovery.Endpoint{{Addresses: []string{"fd00::9", "nope", "10.3.3.3"}, Conditions: discovery.EndpointConditions{Ready: &ready}}},
			Ports:       []discovery.EndpointPort{{Port: &port0}, {Port: &port53}},
		},
		{ // no cluster: served, but without host.cluster names
			ObjectMeta:  meta.ObjectMeta{Namespace: "ns1", Name: "db-nocluster", ResourceVersion: "1", Labels: map[string]string{labelServiceName: "db"}},
			AddressType: discovery.AddressTypeIPv4,
			Endpoints:   []discovery.Endpoint{{Addresses: []string{"10.3.3.4"}}},
		},
		{ // an empty service name
			ObjectMeta:  meta.ObjectMeta{Namespace: "ns1", Name: "db-noname", ResourceVersion: "1", Labels: map[string]string{labelServiceName: "", labelSourceCluster: "west"}},
			AddressType: discovery.AddressTypeIPv4,
			Endpoints:   []discovery.Endpoint{{Addresses: []string{"10.3.3.5"}}},
		},
	}

	m, _ := newTestPlugin(t, nil, fakeLocal{})
	var mu sync.Mutex // guards imports, which the test changes between lists
	importLW := newScriptedListWatch(func() runtime.Object {
		mu.Lock()
		defer mu.Unlock()
		return &mcsv1beta1.ServiceImportList{ListMeta: meta.ListMeta{ResourceVersion: "1"}, Items: append([]mcsv1beta1.ServiceImport(nil), imports...)}
	})
	sliceLW := newScriptedListWatch(func() runtime.Object {
		return &discovery.EndpointSliceList{ListMeta: meta.ListMeta{ResourceVersion: "1"}, Items: slices}
	})
	runScriptedInformer(t, kindEndpointSlice, sliceLW, &discovery.EndpointSlice{}, (&watcher{longestZone: len(defaultZone)}).toSliceSpec, sliceHandler(m.sources), &sliceStore{storeScope{s: m.sources}})
	runScriptedInformer(t, kindServiceImport, importLW, &importObject{}, toImportSpec, importHandler(m.sources), &importStore{storeScope{s: m.sources}})
	watcher := importLW.nextWatch(t)

	cases := []test.Case{
		{Qname: "odd.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("odd.ns1.svc.clusterset.local. 5 IN A 10.1.1.1"), test.A("odd.ns1.svc.clusterset.local. 5 IN A 10.1.1.2")}},
		{Qname: "odd.ns1.svc.clusterset.local.", Qtype: dns.TypeAAAA, Answer: []dns.RR{test.AAAA("odd.ns1.svc.clusterset.local. 5 IN AAAA fd00::1"), test.AAAA("odd.ns1.svc.clusterset.local. 5 IN AAAA fd00::2")}},
		{Qname: "odd.ns1.svc.clusterset.local.", Qtype: dns.TypeSRV,
			Answer: []dns.RR{test.SRV("odd.ns1.svc.clusterset.local. 5 IN SRV 0 100 80 odd.ns1.svc.clusterset.local.")},
			Extra: []dns.RR{test.A("odd.ns1.svc.clusterset.local. 5 IN A 10.1.1.1"), test.A("odd.ns1.svc.clusterset.local. 5 IN A 10.1.1.2"),
				test.AAAA("odd.ns1.svc.clusterset.local. 5 IN AAAA fd00::1"), test.AAAA("odd.ns1.svc.clusterset.local. 5 IN AAAA fd00::2")}},
		{Qname: "notype.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("notype.ns1.svc.clusterset.local. 5 IN A 10.2.2.2")}},
		{Qname: "weird.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soaOf("clusterset.local.")}},
		{Qname: "db.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("db.ns1.svc.clusterset.local. 5 IN A 10.3.3.3"), test.A("db.ns1.svc.clusterset.local. 5 IN A 10.3.3.4")}},
		{Qname: "10-3-3-3.east.db.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("10-3-3-3.east.db.ns1.svc.clusterset.local. 5 IN A 10.3.3.3")}},
		{Qname: "_http._tcp.db.ns1.svc.clusterset.local.", Qtype: dns.TypeSRV, Rcode: dns.RcodeNameError, Ns: []dns.RR{soaOf("clusterset.local.")}},
		{Qname: "web.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("web.ns1.svc.clusterset.local. 5 IN A 10.2.2.5")}},
	}
	check := func() {
		t.Helper()
		for _, tc := range cases {
			rec := dnstest.NewRecorder(&test.ResponseWriter{})
			if _, err := m.ServeDNS(context.Background(), rec, tc.Msg()); err != nil {
				t.Fatalf("%s %s: %v", tc.Qname, dns.TypeToString[tc.Qtype], err)
			}
			if rec.Msg == nil {
				t.Fatalf("%s %s: no reply", tc.Qname, dns.TypeToString[tc.Qtype])
			}
			if err := test.SortAndCheck(rec.Msg, tc); err != nil {
				t.Errorf("%s %s: %v", tc.Qname, dns.TypeToString[tc.Qtype], err)
			}
		}
	}
	waitFor(t, 5*time.Second, "the imports", func() bool { return m.index.lookup("ns1", "web") != nil })
	check()

	logged := []string{
		"ServiceImport ns1/odd (resourceVersion 1)",
		"ServiceImport ns1/notype (resourceVersion 1)",
		"ServiceImport ns1/weird (resourceVersion 1)",
		"ServiceImport ns1/ (resourceVersion 1)",
		"EndpointSlice ns1/db-east (resourceVersion 1)",
		"EndpointSlice ns1/db-noname (resourceVersion 1)",
	}
	checkLoggedOnce := func() {
		t.Helper()
		for _, l := range logged {
			if n := logs.count(l); n != 1 {
				t.Errorf("%q logged %d times, want once", l, n)
			}
		}
		if got := testutil.ToFloat64(malformedImports) - importsBefore; got != 4 {
			t.Errorf("malformed ServiceImport versions counted %v, want 4", got)
		}
		if got := testutil.ToFloat64(malformedSlices) - slicesBefore; got != 2 {
			t.Errorf("malformed EndpointSlice versions counted %v, want 2", got)
		}
		if n := logs.count("db-nocluster"); n != 0 {
			t.Errorf("a slice without a source cluster logged %d times, want never", n)
		}
	}
	checkLoggedOnce()
	for _, part := range []string{`"not-an-ip" is not an IP address`,
		`port "big": number 70000 out of range`, `port "zero": number 0 out of range`, `port name "Not_A_Label"`, `unknown protocol "ICMP"`,
		"spec.type is empty", `unknown spec.type "LoadBalancer"`, `name "" is not a DNS label`,
		"endpoint address fd00::9 does not match addressType IPv4", `endpoint address "nope"`, `port "": number 0 out of range`,
		"label " + labelServiceName + `="" is not a service name`} {
		if !strings.Contains(logs.String(), part) {
			t.Errorf("the log does not say %q", part)
		}
	}

	// The watch expires: the informer lists again, and gets every object
	// once more in the same version. Nothing new is logged.
	watcher.Error(&meta.Status{Status: meta.StatusFailure, Code: 410, Reason: meta.StatusReasonExpired, Message: "too old resource version"})
	watcher = importLW.nextWatch(t)
	if importLW.lists.Load() < 2 {
		t.Fatalf("no relist after the watch expired")
	}
	// Events are processed in order: once web changes, the relist is done.
	next := badImport("web", "2", "ClusterSetIP", []string{"10.2.2.6"}, http)
	watcher.Modify(&next)
	waitFor(t, 5*time.Second, "web to change", func() bool {
		v := m.index.lookup("ns1", "web")
		return v != nil && len(v.ipv4) == 1 && v.ipv4[0].String() == "10.2.2.6"
	})
	checkLoggedOnce()

	// A new version of a malformed object is logged again, once.
	odd := badImport("odd", "2", "ClusterSetIP", []string{"bad-again", "10.1.1.1"}, http)
	watcher.Modify(&odd)
	waitFor(t, 5*time.Second, "the new version of odd logged", func() bool { return logs.count("ServiceImport ns1/odd (resourceVersion 2)") == 1 })
	if got := testutil.ToFloat64(malformedImports) - importsBefore; got != 5 {
		t.Errorf("malformed ServiceImport versions counted %v, want 5", got)
	}
}
