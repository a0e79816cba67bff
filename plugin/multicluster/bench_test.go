package multicluster

import (
	"context"
	"fmt"
	"testing"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/metrics"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	ot "github.com/opentracing/opentracing-go"
	"github.com/opentracing/opentracing-go/mocktracer"
	core "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// discard is a next plugin that does nothing, so that benchmarks measure
// multicluster alone.
type discard struct{}

func (discard) Name() string { return "discard" }
func (discard) ServeDNS(context.Context, dns.ResponseWriter, *dns.Msg) (int, error) {
	return dns.RcodeSuccess, nil
}

// nullWriter drops what is written.
type nullWriter struct{ test.ResponseWriter }

func (*nullWriter) WriteMsg(*dns.Msg) error { return nil }

func benchPlugin(b testing.TB) *Multicluster {
	m, _ := newTestPlugin(b, testImports, testLocal)
	m.Next = discard{}
	return m
}

// TestPassThroughAllocatesNothing guards the toll every cluster-local query
// pays: a name with no import goes on with no allocation at all.
func TestPassThroughAllocatesNothing(t *testing.T) {
	m := benchPlugin(t)
	ctx := context.Background()
	w := &nullWriter{}
	for _, name := range []string{"kubernetes.default.svc.cluster.local.", "10-0-0-1.default.pod.cluster.local.", "example.org.", "1.0.96.10.in-addr.arpa."} {
		r := new(dns.Msg)
		r.SetQuestion(name, dns.TypeA)
		if allocs := testing.AllocsPerRun(200, func() { m.ServeDNS(ctx, w, r) }); allocs != 0 {
			t.Errorf("%s: %v allocations per query, want 0", name, allocs)
		}
	}
}

// answering is a next plugin that answers, so that a recorder sees a write.
type answering struct{}

func (answering) Name() string { return "kubernetes" }
func (answering) ServeDNS(_ context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	m := new(dns.Msg)
	m.SetReply(r)
	return dns.RcodeSuccess, w.WriteMsg(m)
}

// TestPassKeepsPluginAttribution: the metrics plugin labels each response
// with the plugin that wrote it, through writer wrappers that CoreDNS's
// hand-off adds. Passing a query on without a wrapper of our own must not
// change that label, whether multicluster comes right after the metrics
// plugin or later in the chain.
func TestPassKeepsPluginAttribution(t *testing.T) {
	m := benchPlugin(t)
	m.Next = answering{}
	r := new(dns.Msg)
	r.SetQuestion("kubernetes.default.svc.cluster.local.", dns.TypeA)
	for _, chain := range []plugin.Handler{m, relay{name: "errors", next: m}} {
		want := metrics.NewRecorder(&test.ResponseWriter{})
		plugin.NextOrFailure("prometheus", relay{name: chain.Name(), next: answering{}}, context.Background(), want, r)
		got := metrics.NewRecorder(&test.ResponseWriter{})
		plugin.NextOrFailure("prometheus", chain, context.Background(), got, r)
		if got.Plugin != want.Plugin || got.Plugin == "" {
			t.Errorf("chain from %s: response credited to %q, want %q as with CoreDNS's hand-off", chain.Name(), got.Plugin, want.Plugin)
		}
	}
}

// relay passes queries on the way CoreDNS plugins do.
type relay struct {
	name string
	next plugin.Handler
}

func (r relay) Name() string { return r.name }
func (r relay) ServeDNS(ctx context.Context, w dns.ResponseWriter, m *dns.Msg) (int, error) {
	return plugin.NextOrFailure(r.name, r.next, ctx, w, m)
}

// TestPassTraced: a traced query still gets the next plugin's child span.
func TestPassTraced(t *testing.T) {
	m := benchPlugin(t)
	var seen ot.Span
	m.Next = spanProbe{seen: &seen}
	tracer := mocktracer.New()
	parent := tracer.StartSpan("query")
	r := new(dns.Msg)
	r.SetQuestion("kubernetes.default.svc.cluster.local.", dns.TypeA)
	m.ServeDNS(ot.ContextWithSpan(context.Background(), parent), &nullWriter{}, r)
	child, ok := seen.(*mocktracer.MockSpan)
	if !ok || child.ParentID != parent.(*mocktracer.MockSpan).SpanContext.SpanID {
		t.Errorf("next plugin ran in span %v, want a child of the query's span", seen)
	}
}

type spanProbe struct{ seen *ot.Span }

func (spanProbe) Name() string { return "probe" }
func (p spanProbe) ServeDNS(ctx context.Context, _ dns.ResponseWriter, _ *dns.Msg) (int, error) {
	*p.seen = ot.SpanFromContext(ctx)
	return dns.RcodeSuccess, nil
}

// BenchmarkHandOff is the cost of a plugin that only passes a query on: the
// floor for BenchmarkPassThroughLocalService.
func BenchmarkHandOff(b *testing.B) {
	ctx := context.Background()
	w := &nullWriter{}
	r := new(dns.Msg)
	r.SetQuestion("kubernetes.default.svc.cluster.local.", dns.TypeA)
	b.ReportAllocs()
	for b.Loop() {
		plugin.NextOrFailure("x", discard{}, ctx, w, r)
	}
}

func benchmarkQuery(b *testing.B, name string, qtype uint16) {
	benchmarkServe(b, benchPlugin(b), name, qtype)
}

// benchmarkServe measures m answering, or passing on, one query.
func benchmarkServe(b *testing.B, m *Multicluster, name string, qtype uint16) {
	ctx := context.Background()
	w := &nullWriter{}
	r := new(dns.Msg)
	r.SetQuestion(name, qtype)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		m.ServeDNS(ctx, w, r)
	}
}

func BenchmarkPassThroughLocalService(b *testing.B) {
	benchmarkQuery(b, "kubernetes.default.svc.cluster.local.", dns.TypeA)
}
func BenchmarkClustersetA(b *testing.B) {
	benchmarkQuery(b, "web.ns1.svc.clusterset.local.", dns.TypeA)
}
func BenchmarkFallbackA(b *testing.B) { benchmarkQuery(b, "web.ns1.svc.cluster.local.", dns.TypeA) }
func BenchmarkClustersetSRV(b *testing.B) {
	benchmarkQuery(b, "web.ns1.svc.clusterset.local.", dns.TypeSRV)
}
func BenchmarkClustersetNXDOMAIN(b *testing.B) {
	benchmarkQuery(b, "nope.ns1.svc.clusterset.local.", dns.TypeA)
}

func BenchmarkPTR(b *testing.B) { benchmarkQuery(b, "1.0.42.10.in-addr.arpa.", dns.TypePTR) }

// addHeadlessDB adds the headless import ns1/db (one port, pg) to m.
func addHeadlessDB(b *testing.B, m *Multicluster) {
	spec, _, err := newImportSpec(importFields{namespace: "ns1", name: "db", typ: "Headless", ports: []portFields{{name: "pg", port: 5432}}})
	if err != nil {
		b.Fatal(err)
	}
	m.sources.setImport(spec)
}

// addDBSlice adds to m the IPv4 EndpointSlice db-CLUSTER of ns1/db from
// cluster, with eps.
func addDBSlice(b *testing.B, m *Multicluster, cluster string, eps []discovery.Endpoint) {
	slice, _, err := newSliceSpec(&discovery.EndpointSlice{
		ObjectMeta:  meta.ObjectMeta{Namespace: "ns1", Name: "db-" + cluster, Labels: map[string]string{labelServiceName: "db", labelSourceCluster: cluster}},
		AddressType: discovery.AddressTypeIPv4,
		Endpoints:   eps,
	}, len(defaultZone))
	if err != nil {
		b.Fatal(err)
	}
	m.sources.setSlice(slice)
}

// BenchmarkHeadless100A answers the A query of a headless import with 100
// ready endpoints in two clusters.
func BenchmarkHeadless100A(b *testing.B) {
	m := benchPlugin(b)
	addHeadlessDB(b, m)
	for c, cluster := range []string{"east", "west"} {
		var eps []discovery.Endpoint
		for i := range 50 {
			eps = append(eps, ep(fmt.Sprintf("10.%d.0.%d", c+1, i+1), fmt.Sprintf("db-%d", i), nil))
		}
		addDBSlice(b, m, cluster, eps)
	}
	ctx := context.Background()
	w := &nullWriter{}
	r := new(dns.Msg)
	r.SetQuestion("db.ns1.svc.clusterset.local.", dns.TypeA)
	rec := dnstest.NewRecorder(&test.ResponseWriter{})
	m.ServeDNS(ctx, rec, r)
	if n := len(rec.Msg.Answer); n != 100 {
		b.Fatalf("%d answers, want 100", n)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		m.ServeDNS(ctx, w, r)
	}
}

// BenchmarkClustersetASources answers a ClusterSetIP import from each of
// the sources that rank below spec.ips: the derived Service of its
// annotation, Karmada's derived-PREFIX Service, and the ready addresses of
// its slices (Lighthouse, one per cluster).
func BenchmarkClustersetASources(b *testing.B) {
	local := newFakeCluster()
	local.add("shop", "derived-abcdefghij", core.ServiceTypeClusterIP, true, "10.96.1.1")
	local.add("shop", "derived-prefixed", core.ServiceTypeClusterIP, true, "10.96.1.2")
	m, _ := newTestPlugin(b, []importDef{
		{ns: "shop", name: "annotated", typ: "ClusterSetIP", derived: "derived-abcdefghij", ports: []portFields{{name: "http", port: 80}}},
		{ns: "shop", name: "prefixed", typ: "ClusterSetIP", ports: []portFields{{name: "http", port: 80}}},
		{ns: "shop", name: "sliced", typ: "ClusterSetIP", ports: []portFields{{name: "http", port: 80}}},
	}, nil)
	m.local, m.derivedPrefix, m.Next = local, "derived-", discard{}
	for c, cluster := range []string{"east", "west"} {
		slice, _, err := newSliceSpec(&discovery.EndpointSlice{
			ObjectMeta:  meta.ObjectMeta{Namespace: "shop", Name: "sliced-" + cluster, Labels: map[string]string{labelServiceName: "sliced", labelSourceCluster: cluster}},
			AddressType: discovery.AddressTypeIPv4,
			Endpoints:   []discovery.Endpoint{ep(fmt.Sprintf("10.9%d.0.1", c+7), "", nil)},
		}, len(defaultZone))
		if err != nil {
			b.Fatal(err)
		}
		m.sources.setSlice(slice)
	}
	for _, name := range []string{"annotated", "prefixed", "sliced"} {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			w := &nullWriter{}
			r := new(dns.Msg)
			r.SetQuestion(name+".shop.svc.clusterset.local.", dns.TypeA)
			b.ReportAllocs()
			for b.Loop() {
				m.ServeDNS(ctx, w, r)
			}
		})
	}
}

// BenchmarkPTRHeadless answers the PTR query of the last endpoint of a
// headless import's slice: the name is read from the slice that claims the
// address, whose endpoints are scanned (the API allows at most 1,000 per
// slice), rather than kept prepared for every address.
func BenchmarkPTRHeadless(b *testing.B) {
	for _, n := range []int{40, 1000} {
		b.Run(fmt.Sprintf("endpoints=%d", n), func(b *testing.B) {
			m := benchPlugin(b)
			addHeadlessDB(b, m)
			var eps []discovery.Endpoint
			for i := range n {
				eps = append(eps, ep(fmt.Sprintf("10.7.%d.%d", i/250, i%250+1), fmt.Sprintf("db-%d", i), nil))
			}
			addDBSlice(b, m, "east", eps)
			last := n - 1
			ctx := context.Background()
			r := new(dns.Msg)
			r.SetQuestion(fmt.Sprintf("%d.%d.7.10.in-addr.arpa.", last%250+1, last/250), dns.TypePTR)
			rec := dnstest.NewRecorder(&test.ResponseWriter{})
			m.ServeDNS(ctx, rec, r)
			want := fmt.Sprintf("db-%d.east.db.ns1.svc.clusterset.local.", last)
			if rec.Msg == nil || len(rec.Msg.Answer) != 1 || rec.Msg.Answer[0].(*dns.PTR).Ptr != want {
				b.Fatalf("answer %v, want %s", rec.Msg, want)
			}
			w := &nullWriter{}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				m.ServeDNS(ctx, w, r)
			}
		})
	}
}
