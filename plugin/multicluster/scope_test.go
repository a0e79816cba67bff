package multicluster

import (
	"fmt"
	"testing"

	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
	core "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"*", "anything", true},
		{"shop", "shop", true},
		{"shop", "shops", false},
		{"shop-*", "shop-eu", true},
		{"shop-*", "shop-", true},
		{"shop-*", "shop", false},
		{"*-internal", "cart-internal", true},
		{"*-internal", "cart-internal-2", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "a-b-c", true},
		{"a*b*c", "a-c-b", false},
		{"a*b*c", "abcabc", true},
		{"*ab*", "xaby", true},
		{"a**", "a", true},
	} {
		if got := globMatch(tc.pattern, tc.s); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}

func TestFallbackScope(t *testing.T) {
	scope := func(args ...string) *fallbackScope {
		s, err := newFallbackScope(args)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		scope    *fallbackScope
		ns, name string
		want     bool
	}{
		{nil, "any", "thing", true},
		// Exclusions alone: everything else falls back.
		{scope("!kube-system/*"), "kube-system", "dns", false},
		{scope("!kube-system/*"), "shop", "dns", true},
		// Inclusions: only those.
		{scope("shop/*", "*/payments"), "shop", "cart", true},
		{scope("shop/*", "*/payments"), "billing", "payments", true},
		{scope("shop/*", "*/payments"), "billing", "ledger", false},
		// An exclusion wins over an inclusion, in any order.
		{scope("!shop/internal-*", "shop/*"), "shop", "internal-audit", false},
		{scope("shop/*", "!shop/internal-*"), "shop", "cart", true},
	} {
		if got := tc.scope.allows(tc.ns, tc.name); got != tc.want {
			t.Errorf("%+v allows %s/%s = %v, want %v", tc.scope, tc.ns, tc.name, got, tc.want)
		}
	}
}

// A headless import "db" in three clusters, the local one "east", and a
// ClusterSetIP import "web" answered from one slice per cluster (each that
// cluster's ClusterIP, as Lighthouse writes them).
func newPolicyPlugin(t *testing.T, distribution string) *Multicluster {
	t.Helper()
	m, _ := newTestPlugin(t, nil, fakeLocal{})
	for _, d := range []importDef{
		{ns: "ns1", name: "db", typ: "Headless"},
		{ns: "ns1", name: "web", typ: "ClusterSetIP", ports: []portFields{{name: "http", port: 80}}},
		{ns: "ns1", name: "vip", typ: "ClusterSetIP", ips: []string{"10.42.0.1"}, ports: []portFields{{name: "http", port: 80}}},
	} {
		f := d.fields()
		f.trafficDistribution = distribution
		spec, _, err := newImportSpec(f)
		if err != nil {
			t.Fatal(err)
		}
		m.sources.setImport(spec)
	}
	no := false
	addSlice(t, m, "ns1", "db", "east", "db-east", discovery.AddressTypeIPv4, ep("10.1.0.1", "db-0", nil), ep("10.1.0.2", "db-1", &no))
	addSlice(t, m, "ns1", "db", "west", "db-west", discovery.AddressTypeIPv4, ep("10.2.0.1", "db-0", nil))
	addSlice(t, m, "ns1", "db", "north", "db-north", discovery.AddressTypeIPv4, ep("10.3.0.1", "db-0", nil))
	addSlice(t, m, "ns1", "web", "east", "web-east", discovery.AddressTypeIPv4, ep("10.97.0.1", "", nil))
	addSlice(t, m, "ns1", "web", "west", "web-west", discovery.AddressTypeIPv4, ep("10.98.0.1", "", nil))
	addSlice(t, m, "ns1", "vip", "east", "vip-east", discovery.AddressTypeIPv4, ep("10.97.0.2", "", nil))
	return m
}

func aCase(name string, ips ...string) test.Case {
	tc := test.Case{Qname: name, Qtype: dns.TypeA}
	for _, ip := range ips {
		tc.Answer = append(tc.Answer, test.A(name+" 5 IN A "+ip))
	}
	return tc
}

func TestTrafficDistribution(t *testing.T) {
	all := []test.Case{
		aCase("db.ns1.svc.clusterset.local.", "10.1.0.1", "10.2.0.1", "10.3.0.1"),
		aCase("web.ns1.svc.clusterset.local.", "10.97.0.1", "10.98.0.1"),
		aCase("web.ns1.svc.cluster.local.", "10.97.0.1", "10.98.0.1"),
	}
	local := []test.Case{
		aCase("db.ns1.svc.clusterset.local.", "10.1.0.1"),
		aCase("db.ns1.svc.cluster.local.", "10.1.0.1"),
		aCase("web.ns1.svc.clusterset.local.", "10.97.0.1"),
		{Qname: "_pg._tcp.db.ns1.svc.clusterset.local.", Qtype: dns.TypeSRV,
			Answer: []dns.RR{test.SRV("_pg._tcp.db.ns1.svc.clusterset.local. 5 IN SRV 0 100 5432 db-0.east.db.ns1.svc.clusterset.local.")},
			Extra:  []dns.RR{test.A("db-0.east.db.ns1.svc.clusterset.local. 5 IN A 10.1.0.1")}},
	}
	// Whatever the preference: another cluster's names still answer, and
	// spec.ips are a VIP, not endpoints to choose among.
	always := []test.Case{
		aCase("db-0.west.db.ns1.svc.clusterset.local.", "10.2.0.1"),
		aCase("vip.ns1.svc.clusterset.local.", "10.42.0.1"),
	}
	run := func(t *testing.T, m *Multicluster, cases ...[]test.Case) {
		t.Helper()
		for _, set := range cases {
			for _, tc := range set {
				checkCase(t, m, tc)
			}
		}
	}
	for _, d := range []string{"PreferClose", "PreferSameZone", "PreferSameNode"} {
		t.Run(d, func(t *testing.T) {
			m := newPolicyPlugin(t, d)
			// The local cluster unknown: every cluster's.
			run(t, m, all, always)
			before := testutil.ToFloat64(policyTotal.WithLabelValues("", "local_preferred"))
			m.sources.setLocalCluster("east")
			run(t, m, local, always)
			if got := testutil.ToFloat64(policyTotal.WithLabelValues("", "local_preferred")) - before; got != float64(len(local)) {
				t.Errorf("local_preferred counted %v, want %d", got, len(local))
			}
			// A local cluster with nothing ready: every cluster's.
			m.sources.setLocalCluster("south")
			run(t, m, all, always)
		})
	}
	t.Run("unset", func(t *testing.T) {
		m := newPolicyPlugin(t, "")
		m.sources.setLocalCluster("east")
		run(t, m, all, always)
	})
	t.Run("unknown value", func(t *testing.T) {
		m := newPolicyPlugin(t, "PreferSameGalaxy")
		m.sources.setLocalCluster("east")
		run(t, m, all, always)
	})
	t.Run("the local endpoint turns not ready", func(t *testing.T) {
		m := newPolicyPlugin(t, "PreferClose")
		m.sources.setLocalCluster("east")
		no := false
		addSlice(t, m, "ns1", "db", "east", "db-east", discovery.AddressTypeIPv4, ep("10.1.0.1", "db-0", &no))
		addSlice(t, m, "ns1", "web", "east", "web-east", discovery.AddressTypeIPv4, ep("10.97.0.1", "", &no))
		run(t, m, []test.Case{
			aCase("db.ns1.svc.clusterset.local.", "10.2.0.1", "10.3.0.1"),
			aCase("web.ns1.svc.clusterset.local.", "10.98.0.1"),
		})
	})
}

// TestFailoverPerService: an import that prefers close endpoints fails over
// by itself, without the failover option, while the local Service has no
// ready endpoint, and only when readiness is known.
func TestFailoverPerService(t *testing.T) {
	local := newFakeCluster()
	m, next := newTestPlugin(t, nil, nil)
	m.local = local
	for _, d := range []struct {
		name, distribution string
	}{{"close", "PreferClose"}, {"plain", ""}} {
		f := importDef{ns: "shop", name: d.name, typ: "ClusterSetIP", ips: []string{"10.42.8.1"}, ports: []portFields{{name: "http", port: 80}}}.fields()
		f.trafficDistribution = d.distribution
		spec, _, err := newImportSpec(f)
		if err != nil {
			t.Fatal(err)
		}
		m.sources.setImport(spec)
		local.add("shop", d.name, core.ServiceTypeClusterIP, false, "10.96.8.1")
	}
	before := testutil.ToFloat64(policyTotal.WithLabelValues("", "failover_service"))
	passed := func(name string) {
		t.Helper()
		calls := next.calls
		checkCase(t, m, test.Case{Qname: name, Qtype: dns.TypeA, Rcode: dns.RcodeRefused})
		if next.calls == calls {
			t.Errorf("%s answered, want it passed on", name)
		}
	}
	// Down, and prefers close: the import answers.
	checkCase(t, m, aCase("close.shop.svc.cluster.local.", "10.42.8.1"))
	// Down, no preference and no failover option: local wins.
	passed("plain.shop.svc.cluster.local.")
	if got := testutil.ToFloat64(policyTotal.WithLabelValues("", "failover_service")) - before; got != 1 {
		t.Errorf("failover_service counted %v, want 1", got)
	}
	// Up again: local wins.
	local.ready[serviceKey{namespace: "shop", name: "close"}] = true
	passed("close.shop.svc.cluster.local.")
	// Readiness unknown (no kubernetes plugin, or noendpoints): never.
	local.ready[serviceKey{namespace: "shop", name: "close"}] = false
	m.endpointsKnown = false
	passed("close.shop.svc.cluster.local.")
}

// TestFallbackScopeHandler: an import out of scope does not answer in
// fallback zones, failover included, and still answers in the clusterset
// zone.
func TestFallbackScopeHandler(t *testing.T) {
	scope, err := newFallbackScope([]string{"!internal/*"})
	if err != nil {
		t.Fatal(err)
	}
	local := newFakeCluster()
	m, next := newTestPlugin(t, nil, nil)
	m.local, m.failover = local, true
	m.sources.setScope(scope)
	for _, ns := range []string{"internal", "shop"} {
		spec, _, err := newImportSpec(importDef{ns: ns, name: "web", typ: "ClusterSetIP", ips: []string{"10.42.9.1"}}.fields())
		if err != nil {
			t.Fatal(err)
		}
		m.sources.setImport(spec)
		local.add(ns, "down", core.ServiceTypeClusterIP, false)
		spec, _, err = newImportSpec(importDef{ns: ns, name: "down", typ: "ClusterSetIP", ips: []string{"10.42.9.2"}}.fields())
		if err != nil {
			t.Fatal(err)
		}
		m.sources.setImport(spec)
	}
	expectPassedOnCounted(t, m, next, "scope_refused", "web.internal.svc.cluster.local.", "down.internal.svc.cluster.local.")
	checkCase(t, m, aCase("web.internal.svc.clusterset.local.", "10.42.9.1"))
	checkCase(t, m, aCase("web.shop.svc.cluster.local.", "10.42.9.1"))
	checkCase(t, m, aCase("down.shop.svc.cluster.local.", "10.42.9.2"))
}

// expectPassedOnCounted checks that the fallback names go to the next
// plugin, each counted once under the policy rule.
func expectPassedOnCounted(t *testing.T, m *Multicluster, next *nextHandler, rule string, names ...string) {
	t.Helper()
	before := testutil.ToFloat64(policyTotal.WithLabelValues("", rule))
	for _, name := range names {
		calls := next.calls
		checkCase(t, m, test.Case{Qname: name, Qtype: dns.TypeA, Rcode: dns.RcodeRefused})
		if next.calls == calls {
			t.Errorf("%s answered from its import, want it passed on", name)
		}
	}
	if got := testutil.ToFloat64(policyTotal.WithLabelValues("", rule)) - before; got != float64(len(names)) {
		t.Errorf("%s counted %v, want %d", rule, got, len(names))
	}
}

// BenchmarkScoped measures the toll of a fallback scope of 20 patterns: the
// pass-through of a local name, and an import's fallback answer, which reads
// the scope's verdict from the view rather than matching the patterns.
func BenchmarkScoped(b *testing.B) {
	patterns := []string{"ns1/*"}
	for i := range 19 {
		if i%2 == 0 {
			patterns = append(patterns, fmt.Sprintf("ns%d/web-*", i+2))
		} else {
			patterns = append(patterns, fmt.Sprintf("!team-%d/*-internal-*", i))
		}
	}
	scope, err := newFallbackScope(patterns)
	if err != nil {
		b.Fatal(err)
	}
	for _, scoped := range []bool{false, true} {
		m := benchPlugin(b)
		if scoped {
			m.sources.setScope(scope)
			for _, d := range testImports {
				spec, _, err := newImportSpec(d.fields())
				if err != nil {
					b.Fatal(err)
				}
				m.sources.setImport(spec)
			}
		}
		for _, q := range []string{"kubernetes.default.svc.cluster.local.", "web.ns1.svc.cluster.local."} {
			b.Run(fmt.Sprintf("scoped=%v/%s", scoped, q), func(b *testing.B) { benchmarkServe(b, m, q, dns.TypeA) })
		}
	}
}

// TestScopeVerdictOnTheSpec: an import the scope keeps out, converted as
// the informer converts it, gets the verdict when the sources file it, and
// is served from the spec they filed, with no copy of its own.
func TestScopeVerdictOnTheSpec(t *testing.T) {
	scope, err := newFallbackScope([]string{"shop/*"})
	if err != nil {
		t.Fatal(err)
	}
	m, next := newTestPlugin(t, nil, fakeLocal{})
	m.sources.setScope(scope)
	for _, ns := range []string{"shop", "internal"} {
		out, err := toImportSpec(asImport(serviceImport(ns, "web", "10.42.3.1")))
		if err != nil {
			t.Fatal(err)
		}
		m.sources.setImport(out.(*importSpec))
		filed := m.sources.imports[serviceKey{namespace: ns, name: "web"}]
		v := m.index.lookup(ns, "web")
		if want := map[bool]scopeVerdict{false: inScope, true: scopeRefused}[ns == "internal"]; v != &filed.view || v.scope != want {
			t.Errorf("%s: view %p (the filed spec's %p), verdict %d, want %d", ns, v, &filed.view, v.scope, want)
		}
	}
	calls := next.calls
	checkCase(t, m, test.Case{Qname: "web.internal.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeRefused})
	checkCase(t, m, aCase("web.shop.svc.cluster.local.", "10.42.3.1"))
	if next.calls != calls+1 {
		t.Errorf("next plugin ran %d times, want once (the out-of-scope name)", next.calls-calls)
	}
}
