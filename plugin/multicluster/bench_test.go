package multicluster

import (
	"context"
	"testing"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
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
// pays: a name with no import goes on with no allocation beyond CoreDNS's own
// hand-off to the next plugin (plugin.NextOrFailure wraps the writer).
func TestPassThroughAllocatesNothing(t *testing.T) {
	m := benchPlugin(t)
	ctx := context.Background()
	w := &nullWriter{}
	for _, name := range []string{"kubernetes.default.svc.cluster.local.", "10-0-0-1.default.pod.cluster.local.", "example.org.", "1.0.96.10.in-addr.arpa."} {
		r := new(dns.Msg)
		r.SetQuestion(name, dns.TypeA)
		handOff := testing.AllocsPerRun(200, func() { plugin.NextOrFailure("x", discard{}, ctx, w, r) })
		if allocs := testing.AllocsPerRun(200, func() { m.ServeDNS(ctx, w, r) }); allocs != handOff {
			t.Errorf("%s: %v allocations per query, want %v (the hand-off's own)", name, allocs, handOff)
		}
	}
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
	m := benchPlugin(b)
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
