package multicluster

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"runtime/pprof"
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
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	fakediscovery "k8s.io/client-go/discovery/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsfake "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned/fake"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	runtimek8s "k8s.io/apimachinery/pkg/runtime"
)

// soaSerial returns the serial of the clusterset zone's SOA.
func soaSerial(t *testing.T, m *Multicluster) uint32 {
	t.Helper()
	rec := dnstest.NewRecorder(&test.ResponseWriter{})
	r := new(dns.Msg)
	r.SetQuestion("clusterset.local.", dns.TypeSOA)
	if _, err := m.ServeDNS(context.Background(), rec, r); err != nil || rec.Msg == nil || len(rec.Msg.Answer) != 1 {
		t.Fatalf("SOA: %v %v", err, rec.Msg)
	}
	return rec.Msg.Answer[0].(*dns.SOA).Serial
}

// TestRelistSkipsUnchanged: a relist (the watch expired: 410 Gone) delivers
// every object again in the version the store holds. The informer hands
// none of them to the sources: no view is rebuilt and the SOA serial does
// not move. A malformed object relisted in the version already skipped is
// not converted again either.
func TestRelistSkipsUnchanged(t *testing.T) {
	m, _ := newTestPlugin(t, nil, fakeLocal{})
	clock := &fakeSeconds{}
	clock.set(time.Now().Unix())
	m.index.serial.now = clock.now
	http := mcsv1beta1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}
	items := []mcsv1beta1.ServiceImport{
		badImport("a", "7", "ClusterSetIP", []string{"10.9.0.1"}, http),
		badImport("b", "8", "ClusterSetIP", []string{"10.9.0.2"}, http),
		// Malformed, last in the list: once it is counted, a and b of the
		// same list have been processed (one queue, in list order).
		badImport("zz-marker", "9", "LoadBalancer", nil, http),
	}
	lw := newScriptedListWatch(func() runtimek8s.Object {
		return &mcsv1beta1.ServiceImportList{ListMeta: meta.ListMeta{ResourceVersion: "9"}, Items: items}
	})
	var sets, converted atomic.Int32
	h := importHandler(m.sources)
	counting := &informerHandler{set: func(o meta.Object) { sets.Add(1); h.set(o) }, delete: h.delete}
	convert := func(o meta.Object) (meta.Object, error) { converted.Add(1); return toImportSpec(o) }
	malformed := malformedTotal.WithLabelValues("serviceimport")
	before := testutil.ToFloat64(malformed)
	runScriptedInformer(t, kindServiceImport, lw, &importObject{}, convert, counting, &importStore{storeScope{s: m.sources}})
	w := lw.nextWatch(t)
	waitFor(t, 5*time.Second, "the first list processed", func() bool { return testutil.ToFloat64(malformed) == before+1 })
	if sets.Load() != 2 || converted.Load() != 3 {
		t.Fatalf("after the first list: %d sets, %d conversions; want 2 and 3", sets.Load(), converted.Load())
	}
	viewA, viewB := m.index.lookup("ns1", "a"), m.index.lookup("ns1", "b")
	serial := soaSerial(t, m)
	clock.add(1) // a change now would move the serial

	// The marker is changed in the relist so that its processing shows; it
	// stays malformed, and out of the index.
	items[2] = badImport("zz-marker", "10", "LoadBalancer", nil, http)
	w.Error(&meta.Status{Status: meta.StatusFailure, Code: 410, Reason: meta.StatusReasonExpired, Message: "too old resource version"})
	lw.nextWatch(t)
	waitFor(t, 5*time.Second, "the relist processed", func() bool { return testutil.ToFloat64(malformed) == before+2 })
	if got := sets.Load(); got != 2 {
		t.Errorf("the relist handed %d unchanged imports to the sources, want none", got-2)
	}
	if got := converted.Load(); got != 4 {
		t.Errorf("the relist converted %d objects, want only the changed marker", got-3)
	}
	if m.index.lookup("ns1", "a") != viewA || m.index.lookup("ns1", "b") != viewB {
		t.Error("the relist rebuilt views of unchanged imports")
	}
	if got := soaSerial(t, m); got != serial {
		t.Errorf("the relist moved the SOA serial from %d to %d", serial, got)
	}
}

// startTestWatcher starts a watcher of m on the clientsets.
func startTestWatcher(t *testing.T, m *Multicluster, kube *kubefake.Clientset, mcs *mcsfake.Clientset) (*watcher, chan struct{}) {
	t.Helper()
	w := &watcher{kube: kube, imports: typedImports{mcs}, sources: m.sources, retry: 10 * time.Millisecond,
		health: newHealth(func(d *degradation) { m.degraded.Store(d) })}
	synced := make(chan struct{})
	w.start(func() { m.synced.Store(true); close(synced) })
	m.watch = w
	t.Cleanup(w.stop)
	return w, synced
}

// TestDegradedGaugeAcrossReload: in a reload the new instance starts before
// the old one stops. The gauge follows the instance that runs: a reason of
// the old one goes with it when the new one does not have it, and stays
// when the new one has it too.
func TestDegradedGaugeAcrossReload(t *testing.T) {
	gauge := degradedGauge.WithLabelValues(reasonCRD)
	noCRD := func() (*kubefake.Clientset, *mcsfake.Clientset) {
		return kubefake.NewClientset(), mcsfake.NewSimpleClientset()
	}

	// Degraded, then reloaded once the CRD is installed: healed.
	oldM := New()
	kube, mcs := noCRD()
	old, _ := startTestWatcher(t, oldM, kube, mcs)
	waitFor(t, 5*time.Second, "the old instance degraded", func() bool { return oldM.degraded.Load() != nil })
	if got := testutil.ToFloat64(gauge); got != 1 {
		t.Fatalf("degraded{reason=crd} = %v while the CRD is missing, want 1", got)
	}
	newM := New()
	kube, mcs = fakeClients()
	_, synced := startTestWatcher(t, newM, kube, mcs)
	<-synced
	old.stop()
	if got := testutil.ToFloat64(gauge); got != 0 || newM.degraded.Load() != nil {
		t.Errorf("after a reload that healed, degraded{reason=crd} = %v (the instance running is degraded: %v), want 0", got, newM.degraded.Load() != nil)
	}

	// Degraded before and after the reload: still 1 once the old one stopped.
	m1 := New()
	kube, mcs = noCRD()
	w1, _ := startTestWatcher(t, m1, kube, mcs)
	waitFor(t, 5*time.Second, "degraded", func() bool { return m1.degraded.Load() != nil })
	m2 := New()
	kube, mcs = noCRD()
	w2, _ := startTestWatcher(t, m2, kube, mcs)
	waitFor(t, 5*time.Second, "the new instance degraded", func() bool { return m2.degraded.Load() != nil })
	w1.stop()
	if got := testutil.ToFloat64(gauge); got != 1 {
		t.Errorf("the new instance is degraded, the old one stopped: degraded{reason=crd} = %v, want 1", got)
	}
	w2.stop()
	if got := testutil.ToFloat64(gauge); got != 0 {
		t.Errorf("no instance runs: degraded{reason=crd} = %v, want 0", got)
	}
}

// informerGoroutines counts the goroutines running a client-go reflector
// or a controller's process loop. A page of a list the reflector was
// reading is fetched on a goroutine of its own, which the reflector leaves
// to finish once its context ends and whose result it drops: not counted.
func informerGoroutines() int {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
	n := 0
	for _, g := range strings.Split(buf.String(), "\n\n") {
		if strings.Contains(g, "tools/cache.(*Reflector).RunWithContext") || strings.Contains(g, "tools/cache.(*controller).processLoop") {
			n++
		}
	}
	return n
}

// TestStopWaitsForInformers: stop returns once every informer goroutine
// has, so nothing is added to a store, nor to the objects gauge, after it
// took the store's objects out of the gauge. Stopping while the informers
// are still filling their stores is where that shows.
func TestStopWaitsForInformers(t *testing.T) {
	gauge := objects.WithLabelValues("serviceimport")
	kube, mcs := fakeClients()
	for i := range 500 {
		if _, err := mcs.MulticlusterV1beta1().ServiceImports("ns1").Create(context.Background(), serviceImport("ns1", fmt.Sprintf("svc-%d", i), "10.0.0.1"), meta.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 5*time.Second, "the informers of earlier tests to end", func() bool { return informerGoroutines() == 0 })
	goroutines := runtime.NumGoroutine()
	before := testutil.ToFloat64(gauge)
	for i := range 30 {
		m := New()
		w := &watcher{kube: kube, imports: typedImports{mcs}, sources: m.sources, retry: 10 * time.Millisecond, ownServices: true,
			health: newHealth(func(d *degradation) { m.degraded.Store(d) })}
		w.start(func() {})
		// Stop at different points of the first list.
		time.Sleep(time.Duration(i%10) * time.Millisecond)
		w.stop()
		if n := informerGoroutines(); n != 0 {
			var buf bytes.Buffer
			_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
			t.Fatalf("stop %d returned with %d informer goroutines still running\n%s", i, n, buf.String())
		}
		if got := testutil.ToFloat64(gauge); got != before {
			t.Fatalf("stop %d: objects{kind=serviceimport} = %v, want %v", i, got, before)
		}
	}
	// A goroutine of client-go's that closes a controller's queue once its
	// context ends may still be on its way out.
	waitFor(t, 5*time.Second, "the goroutines to end", func() bool { return runtime.NumGoroutine() <= goroutines })
}

// servedVersions returns a fake API whose discovery serves ServiceImports in
// version, and what makes it serve them in another instead.
func servedVersions(version string) (*kubefake.Clientset, func(version string)) {
	kube := kubefake.NewClientset()
	disco := kube.Discovery().(*fakediscovery.FakeDiscovery)
	serve := func(version string) {
		kube.Lock()
		defer kube.Unlock()
		disco.Resources = []*meta.APIResourceList{{GroupVersion: mcsGroup + "/" + version,
			APIResources: []meta.APIResource{{Name: importResource, Namespaced: true, Kind: "ServiceImport"}}}}
	}
	serve(version)
	return kube, serve
}

// TestFollowsServedVersion: started while only v1alpha1 is served, the CRD
// then serves only v1beta1. The watch of v1alpha1 answers NotFound; the
// plugin asks discovery again, watches v1beta1, stops watching v1alpha1,
// withdraws what only v1alpha1 had, and is no longer degraded.
func TestFollowsServedVersion(t *testing.T) {
	logs := captureLog(t)
	kube, serve := servedVersions("v1alpha1")
	mcs := mcsfake.NewSimpleClientset()
	var alphaGone atomic.Bool
	var alphaRefused atomic.Int32
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: mcsGroup, Resource: importResource}, "")
	refuse := func(action k8stesting.Action) bool {
		if alphaGone.Load() && action.GetResource().Version == "v1alpha1" {
			alphaRefused.Add(1)
			return true
		}
		return false
	}
	mcs.PrependReactor("list", importResource, func(action k8stesting.Action) (bool, runtimek8s.Object, error) {
		return refuse(action), nil, notFound
	})
	// v1alpha1 watches are kept, so that the test can end them as the API
	// server does when it stops serving the version.
	var mu sync.Mutex
	var alphaWatches []watch.Interface
	mcs.PrependWatchReactor(importResource, func(action k8stesting.Action) (bool, watch.Interface, error) {
		if refuse(action) {
			return true, nil, notFound
		}
		if action.GetResource().Version != "v1alpha1" {
			return false, nil, nil
		}
		wi, err := mcs.Tracker().Watch(action.GetResource(), action.GetNamespace())
		mu.Lock()
		alphaWatches = append(alphaWatches, wi)
		mu.Unlock()
		return true, wi, err
	})
	ctx := context.Background()
	alpha := func(name, ip string) {
		si := &mcsv1alpha1.ServiceImport{ObjectMeta: meta.ObjectMeta{Namespace: "ns1", Name: name},
			Spec: mcsv1alpha1.ServiceImportSpec{Type: mcsv1alpha1.ClusterSetIP, IPs: []string{ip},
				Ports: []mcsv1alpha1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}}
		if _, err := mcs.MulticlusterV1alpha1().ServiceImports("ns1").Create(ctx, si, meta.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	alpha("kept", "10.7.0.1")
	alpha("gone", "10.7.0.2")

	m := New()
	gauge := objects.WithLabelValues("serviceimport")
	gaugeBefore := testutil.ToFloat64(gauge)
	w, synced := startTestWatcher(t, m, kube, mcs)
	<-synced
	if m.index.lookup("ns1", "kept") == nil || m.index.lookup("ns1", "gone") == nil {
		t.Fatal("v1alpha1 imports not served")
	}

	// The upgrade: the fake tracker keeps objects by resource and version,
	// so v1beta1 holds what the API server would convert: kept, changed,
	// and a new one; gone was deleted meanwhile.
	beta := serviceImport("ns1", "kept", "10.7.0.11")
	if _, err := mcs.MulticlusterV1beta1().ServiceImports("ns1").Create(ctx, beta, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := mcs.MulticlusterV1beta1().ServiceImports("ns1").Create(ctx, serviceImport("ns1", "new", "10.7.0.3"), meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	serve("v1beta1")
	alphaGone.Store(true)
	mu.Lock()
	for _, wi := range alphaWatches {
		wi.Stop()
	}
	mu.Unlock()

	waitFor(t, 10*time.Second, "the v1beta1 imports served", func() bool {
		kept, added := m.index.lookup("ns1", "kept"), m.index.lookup("ns1", "new")
		return kept != nil && added != nil && len(kept.ipv4) == 1 && kept.ipv4[0].String() == "10.7.0.11"
	})
	waitFor(t, 5*time.Second, "the import only v1alpha1 had withdrawn", func() bool { return m.index.lookup("ns1", "gone") == nil })
	waitFor(t, 5*time.Second, "the degraded state cleared", func() bool { return m.degraded.Load() == nil })
	// The switch ends with this line, once the v1alpha1 informers stopped.
	waitFor(t, 5*time.Second, "the switch logged as done", func() bool {
		return logs.count("ServiceImports from multicluster.x-k8s.io/v1beta1") == 1
	})
	if got := testutil.ToFloat64(gauge) - gaugeBefore; got != 2 {
		t.Errorf("objects{kind=serviceimport} +%v, want +2: the v1alpha1 store left the gauge", got)
	}
	// A v1alpha1 informer still running would be refused again and again,
	// its wait doubling from the watcher's retry. A probe refused on that
	// schedule from now on shows the time its next refusals would take,
	// however loaded the machine.
	refused := alphaRefused.Load()
	var probed atomic.Int32
	probing, stopProbe := context.WithCancel(context.Background())
	defer stopProbe()
	go retryRefused(probing, w.retry, func(error) {}, func() (struct{}, error) {
		probed.Add(1)
		return struct{}{}, notFound
	})
	waitFor(t, 5*time.Second, "five refusals of a probe retrying as an informer does", func() (bool, string) {
		n := probed.Load()
		return n >= 5, fmt.Sprintf("%d refusals", n)
	})
	if n := alphaRefused.Load() - refused; n != 0 {
		t.Errorf("v1alpha1 still listed or watched %d times after the switch", n)
	}
	if n := logs.count("ServiceImports multicluster.x-k8s.io/v1alpha1 are no longer served: watching multicluster.x-k8s.io/v1beta1"); n != 1 {
		t.Errorf("the switch logged %d times, want once:\n%s", n, logs)
	}
	w.stop()
	if got := testutil.ToFloat64(gauge); got != gaugeBefore {
		t.Errorf("after stop objects{kind=serviceimport} = %v, want %v", got, gaugeBefore)
	}
}

// TestStopDuringVersionSwitch: the ServiceImport stores of two versions are
// views of the same imports. A watcher stopped while the version it switches
// to has not synced yet (its lists fail) takes each import out of the
// objects gauge once, not once per version.
func TestStopDuringVersionSwitch(t *testing.T) {
	logs := captureLog(t)
	kube, serve := servedVersions("v1alpha1")
	mcs := mcsfake.NewSimpleClientset()
	var switched atomic.Bool
	var betaLists atomic.Int32
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: mcsGroup, Resource: importResource}, "")
	mcs.PrependReactor("list", importResource, func(action k8stesting.Action) (bool, runtimek8s.Object, error) {
		switch {
		case !switched.Load():
			return false, nil, nil
		case action.GetResource().Version == "v1alpha1":
			return true, nil, notFound
		default:
			betaLists.Add(1)
			return true, nil, apierrors.NewInternalError(fmt.Errorf("etcd unavailable"))
		}
	})
	var mu sync.Mutex
	var alphaWatches []watch.Interface
	mcs.PrependWatchReactor(importResource, func(action k8stesting.Action) (bool, watch.Interface, error) {
		if switched.Load() {
			return true, nil, notFound
		}
		wi, err := mcs.Tracker().Watch(action.GetResource(), action.GetNamespace())
		mu.Lock()
		alphaWatches = append(alphaWatches, wi)
		mu.Unlock()
		return true, wi, err
	})
	si := &mcsv1alpha1.ServiceImport{ObjectMeta: meta.ObjectMeta{Namespace: "ns1", Name: "kept"},
		Spec: mcsv1alpha1.ServiceImportSpec{Type: mcsv1alpha1.ClusterSetIP, IPs: []string{"10.7.0.1"},
			Ports: []mcsv1alpha1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}}
	if _, err := mcs.MulticlusterV1alpha1().ServiceImports("ns1").Create(context.Background(), si, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	m := New()
	gauge := objects.WithLabelValues("serviceimport")
	gaugeBefore := testutil.ToFloat64(gauge)
	w, synced := startTestWatcher(t, m, kube, mcs)
	<-synced
	if got := testutil.ToFloat64(gauge) - gaugeBefore; got != 1 {
		t.Fatalf("objects{kind=serviceimport} +%v after the first list, want +1", got)
	}

	serve("v1beta1")
	switched.Store(true)
	mu.Lock()
	for _, wi := range alphaWatches {
		wi.Stop()
	}
	mu.Unlock()
	waitFor(t, 10*time.Second, "the switch begun and v1beta1 listed", func() bool {
		return logs.count("watching multicluster.x-k8s.io/v1beta1") == 1 && betaLists.Load() > 0
	})
	if m.index.lookup("ns1", "kept") == nil {
		t.Error("the import was withdrawn before the version that follows listed")
	}
	w.stop()
	if got := testutil.ToFloat64(gauge); got != gaugeBefore {
		t.Errorf("after stop objects{kind=serviceimport} = %v, want %v", got, gaugeBefore)
	}
}
