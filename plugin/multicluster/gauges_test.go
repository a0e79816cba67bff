package multicluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"testing"

	"github.com/coredns/coredns/plugin/kubernetes/object"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// gaugeValue reads a gauge of the default registry by its full name.
func gaugeValue(t *testing.T, name string) float64 {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			if f.GetType() != dto.MetricType_GAUGE || len(f.GetMetric()) != 1 {
				t.Fatalf("%s: %v with %d series, want one gauge", name, f.GetType(), len(f.GetMetric()))
			}
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("%s not registered", name)
	return 0
}

// runningForTest registers m as running for the test's duration.
func runningForTest(t *testing.T, m *Multicluster) {
	t.Helper()
	if m.watch == nil {
		m.watch = &watcher{}
	}
	running.add(m, &instanceMark{})
	t.Cleanup(func() { running.remove(m.watch) })
}

func TestSyncedGauge(t *testing.T) {
	const name = "coredns_multicluster_synced"
	if got := gaugeValue(t, name); got != 0 {
		t.Fatalf("no plugin running: %s = %v, want 0", name, got)
	}
	a, _ := newTestPlugin(t, testImports, testLocal)
	runningForTest(t, a)
	if got := gaugeValue(t, name); got != 1 {
		t.Errorf("one synced plugin: %s = %v, want 1", name, got)
	}
	b, _ := newTestPlugin(t, nil, testLocal)
	b.synced.Store(false)
	runningForTest(t, b)
	if got := gaugeValue(t, name); got != 0 {
		t.Errorf("a second plugin not synced: %s = %v, want 0", name, got)
	}
	b.synced.Store(true)
	if got := gaugeValue(t, name); got != 1 {
		t.Errorf("both synced: %s = %v, want 1", name, got)
	}
}

func TestAPIUnreachableGauge(t *testing.T) {
	const name = "coredns_multicluster_api_unreachable"
	m, _ := newTestPlugin(t, nil, testLocal)
	runningForTest(t, m)
	w := m.watch
	refused := &url.Error{Op: "Get", URL: "https://10.96.0.1:443/apis", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: mcsGroup, Resource: importResource}, "", errors.New("no"))
	steps := []struct {
		resource string
		err      error
		want     float64
	}{
		{"serviceimports", nil, 0},
		{"serviceimports", refused, 1},
		{"endpointslices", refused, 1},
		{"serviceimports", nil, 1},                               // endpointslices still gets no answer
		{"endpointslices", fmt.Errorf("list: %w", forbidden), 0}, // an answer, if not a welcome one
		{"discovery", discoveryAnswer(fmt.Errorf("discovery: %w", refused)), 1},
		{"discovery", discoveryAnswer(errCRDMissing), 0}, // the API server said the CRD is missing
		{"serviceimports", refused, 1},
		{"serviceimports", fmt.Errorf("watch: %w", context.Canceled), 1}, // a stop says nothing
		{"serviceimports", apierrors.NewGone("too old"), 0},
	}
	for i, s := range steps {
		w.reach(s.resource, s.err)
		if got := gaugeValue(t, name); got != s.want {
			t.Errorf("step %d (%s: %v): %s = %v, want %v", i, s.resource, s.err, name, got, s.want)
		}
	}
}

func TestImportsWithoutAddressesGauge(t *testing.T) {
	const name = "coredns_multicluster_imports_without_addresses"
	imports := []importDef{
		{ns: "ns1", name: "web", typ: "ClusterSetIP", ips: []string{"10.42.0.1"}},
		{ns: "ns1", name: "noips", typ: "ClusterSetIP"},
		{ns: "ns1", name: "special", typ: "ClusterSetIP", ips: []string{"169.254.169.254"}},
		{ns: "ns1", name: "derived", typ: "ClusterSetIP", derived: "derived-x"},
		{ns: "ns1", name: "gone", typ: "ClusterSetIP", derived: "derived-gone"},
		{ns: "ns1", name: "db", typ: "Headless"},
		{ns: "ns1", name: "copy", typ: "ClusterSetIP", copy: true},
	}
	local := localWithIPs{fakeLocal{{namespace: "ns1", name: "derived-x"}: true}}
	m, _ := newTestPlugin(t, imports, local)
	runningForTest(t, m)
	// noips, special (its one address may not be served) and gone (no such
	// derived Service); derived answers with derived-x's ClusterIP, db is
	// headless, copy is not served.
	const want = 3
	if got := gaugeValue(t, name); got != want {
		t.Errorf("%s = %v, want %d", name, got, want)
	}
	spec, _, err := newImportSpec(importDef{ns: "ns1", name: "noips", typ: "ClusterSetIP", ips: []string{"10.42.0.9"}}.fields())
	if err != nil {
		t.Fatal(err)
	}
	m.sources.setImport(spec)
	if got := gaugeValue(t, name); got != float64(want-1) {
		t.Errorf("after noips got an address: %s = %v, want %d", name, got, want-1)
	}
}

// localWithIPs gives every local Service of fakeLocal a ClusterIP.
type localWithIPs struct{ fakeLocal }

func (l localWithIPs) service(namespace, name string) *object.Service {
	svc := l.fakeLocal.service(namespace, name)
	if svc != nil {
		svc.ClusterIPs = []string{"10.96.7.7"}
	}
	return svc
}
