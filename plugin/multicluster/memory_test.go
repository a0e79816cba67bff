package multicluster

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// liveHeap is the live heap after two collections.
func liveHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// importList is n ClusterSetIP imports shaped like those of make bench:
// one address, one port, a resourceVersion.
func importList(n int) *mcsv1beta1.ServiceImportList {
	list := &mcsv1beta1.ServiceImportList{ListMeta: meta.ListMeta{ResourceVersion: "1"}}
	list.Items = make([]mcsv1beta1.ServiceImport, n)
	for i := range list.Items {
		si := serviceImport("big-imports", fmt.Sprintf("imp-%d", i), fmt.Sprintf("10.%d.%d.%d", 128+(i>>16)&127, (i>>8)&255, i&255))
		si.ResourceVersion = fmt.Sprint(100 + i)
		list.Items[i] = *si
	}
	return list
}

// retainedPerImport runs the plugin's ServiceImport informer (store,
// sources, index) over a list of n imports and returns the bytes of heap it
// keeps per import once synced, with the list itself released.
func retainedPerImport(tb testing.TB, n int) float64 {
	before := liveHeap()
	list := importList(n)
	x := newIndex()
	s := newSources(x)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, meta.ListOptions) (kruntime.Object, error) {
			l := list
			list = nil // the reflector's copy is all that remains
			if l == nil {
				return &mcsv1beta1.ServiceImportList{ListMeta: meta.ListMeta{ResourceVersion: "1"}}, nil
			}
			return l, nil
		},
		WatchFuncWithContext: func(context.Context, meta.ListOptions) (watch.Interface, error) {
			return watch.NewFake(), nil
		},
	}
	_, ctrl := newInformer(kindServiceImport, lw, &mcsv1beta1.ServiceImport{}, toImportSpec, func(error) {}, time.Second, importHandler(s), nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go ctrl.RunWithContext(ctx)
	deadline := time.Now().Add(30 * time.Second)
	for x.len() < n {
		if time.Now().After(deadline) {
			tb.Fatalf("%d of %d imports indexed after 30 s", x.len(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	after := liveHeap()
	runtime.KeepAlive(ctrl)
	runtime.KeepAlive(s)
	return float64(int64(after)-int64(before)) / float64(n)
}

// BenchmarkRetainedPerImport reports what the plugin keeps in memory per
// ClusterSetIP import (store, sources, index, informer queue), in
// bytes/import. make bench measures the same on the real server
// against the kubernetes plugin's cost per Service.
func BenchmarkRetainedPerImport(b *testing.B) {
	const n = 20000
	var per float64
	for b.Loop() {
		per = retainedPerImport(b, n)
	}
	b.ReportMetric(per, "bytes/import")
}

// TestRetainedPerImportBudget keeps the cache lean: make bench found the
// kubernetes plugin keeping about 880 to 930 bytes per Service, and the
// plugin must not keep more per import. The budget is above the 820 bytes
// measured when it was set, with room for the collector's noise only.
func TestRetainedPerImportBudget(t *testing.T) {
	const budget = 900
	per := retainedPerImport(t, 10000)
	t.Logf("%.0f bytes per import", per)
	if per > budget {
		t.Errorf("the plugin keeps %.0f bytes per ClusterSetIP import, over the budget of %d", per, budget)
	}
}
