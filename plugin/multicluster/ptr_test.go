package multicluster

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
	core "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

func setImport(t *testing.T, m *Multicluster, d importDef) {
	t.Helper()
	spec, _, err := newImportSpec(d.fields())
	if err != nil {
		t.Fatal(err)
	}
	m.sources.setImport(spec)
}

func ptrCase(name, target string) test.Case {
	if target == "" {
		return test.Case{Qname: name, Qtype: dns.TypePTR, Rcode: dns.RcodeRefused}
	}
	return test.Case{Qname: name, Qtype: dns.TypePTR, Answer: []dns.RR{test.PTR(name + " 5 IN PTR " + target)}}
}

// TestReverseConflict: an import of one namespace cannot take over the
// reverse name of another namespace's address. Claims from several
// namespaces pass the address on, are counted and logged once per change;
// when one namespace is left, it answers again.
func TestReverseConflict(t *testing.T) {
	m, next := newTestPlugin(t, []importDef{{ns: "demo", name: "checkout", typ: "ClusterSetIP", ips: []string{"10.42.0.10"}}}, fakeLocal{})
	const owner = "10.0.42.10.in-addr.arpa."
	checkCase(t, m, ptrCase(owner, "checkout.demo.svc.clusterset.local."))

	logged := captureLog(t)
	const conflict, resolved = "is claimed by imports of namespaces", "no longer claimed by imports of several namespaces"
	setImport(t, m, importDef{ns: "aaa", name: "evil", typ: "ClusterSetIP", ips: []string{"10.42.0.10", "8.8.8.8"}})
	if logged.count(conflict) != 1 || logged.count("address 10.42.0.10 is claimed by imports of namespaces aaa, demo") != 1 {
		t.Errorf("logged %q, want one line of the conflict", logged)
	}
	if n := m.index.conflicts.Load(); n != 1 {
		t.Errorf("conflicts %d, want 1", n)
	}
	calls := next.calls
	before := testutil.ToFloat64(policyTotal.WithLabelValues("", "ptr_conflict"))
	checkCase(t, m, ptrCase(owner, ""))
	checkCase(t, m, ptrCase("8.8.8.8.in-addr.arpa.", ""))
	if next.calls != calls+2 {
		t.Errorf("the next plugin ran %d times, want 2: the plugin answered a contested or public address", next.calls-calls)
	}
	if got := testutil.ToFloat64(policyTotal.WithLabelValues("", "ptr_conflict")) - before; got != 1 {
		t.Errorf("ptr_conflict counted %v, want 1", got)
	}
	// The forward names are each namespace's own; only the reverse name is
	// contested.
	checkCase(t, m, aCase("checkout.demo.svc.clusterset.local.", "10.42.0.10"))

	// An update that changes no claim: nothing logged.
	setImport(t, m, importDef{ns: "aaa", name: "evil", typ: "ClusterSetIP", ips: []string{"10.42.0.10", "8.8.8.8"}, ports: []portFields{{name: "http", port: 80}}})
	if n := logged.count(conflict); n != 1 {
		t.Errorf("an update that changes no claim logged again: %q", logged)
	}
	// A third namespace joins: the set changed, logged once more.
	setImport(t, m, importDef{ns: "zzz", name: "other", typ: "ClusterSetIP", ips: []string{"10.42.0.10"}})
	if logged.count(conflict) != 2 || logged.count("namespaces aaa, demo, zzz") != 1 {
		t.Errorf("logged %q, want the new set of namespaces", logged)
	}
	if n := m.index.conflicts.Load(); n != 1 {
		t.Errorf("conflicts %d, want 1: one address", n)
	}
	m.sources.deleteImport(serviceKey{namespace: "zzz", name: "other"})
	m.sources.deleteImport(serviceKey{namespace: "aaa", name: "evil"})
	if logged.count(conflict) != 3 || logged.count(resolved) != 1 {
		t.Errorf("logged %q, want the set of two namespaces, then the end of the conflict", logged)
	}
	if n := m.index.conflicts.Load(); n != 0 {
		t.Errorf("conflicts %d, want 0", n)
	}
	checkCase(t, m, ptrCase(owner, "checkout.demo.svc.clusterset.local."))
}

// TestReverseConflictHeadless: the endpoints of a headless import claim
// their addresses like spec.ips does; one namespace's names among
// themselves are no conflict.
func TestReverseConflictHeadless(t *testing.T) {
	m, _ := newTestPlugin(t, []importDef{
		{ns: "shop", name: "db", typ: "Headless"},
		{ns: "shop", name: "vip", typ: "ClusterSetIP", ips: []string{"10.1.0.1"}},
		{ns: "tenant", name: "copy", typ: "Headless"},
	}, fakeLocal{})
	addSlice(t, m, "shop", "db", "east", "db-east", discovery.AddressTypeIPv4, ep("10.1.0.1", "db-0", nil), ep("10.1.0.2", "db-1", nil))
	checkCase(t, m, ptrCase("1.0.1.10.in-addr.arpa.", "vip.shop.svc.clusterset.local."))
	checkCase(t, m, ptrCase("2.0.1.10.in-addr.arpa.", "db-1.east.db.shop.svc.clusterset.local."))
	addSlice(t, m, "tenant", "copy", "east", "copy-east", discovery.AddressTypeIPv4, ep("10.1.0.2", "db-1", nil))
	checkCase(t, m, ptrCase("2.0.1.10.in-addr.arpa.", ""))
	checkCase(t, m, ptrCase("1.0.1.10.in-addr.arpa.", "vip.shop.svc.clusterset.local."))
	if n := m.index.conflicts.Load(); n != 1 {
		t.Errorf("conflicts %d, want 1", n)
	}
	m.sources.deleteSlice("tenant", "copy-east")
	checkCase(t, m, ptrCase("2.0.1.10.in-addr.arpa.", "db-1.east.db.shop.svc.clusterset.local."))
	if n := m.index.conflicts.Load(); n != 0 {
		t.Errorf("conflicts %d, want 0", n)
	}
}

// TestReverseRanges: addresses outside the ranges get no reverse name from
// an import; by default no public address does, and the operator's ranges
// replace the default.
func TestReverseRanges(t *testing.T) {
	m, _ := newTestPlugin(t, []importDef{{ns: "web", name: "edge", typ: "ClusterSetIP", ips: []string{
		"8.8.8.8", "2001:4860:4860::8888", "10.42.0.1", "100.64.0.1", "192.0.2.1", "fd00::1", "172.32.0.1",
	}}}, fakeLocal{})
	const name = "edge.web.svc.clusterset.local."
	before := testutil.ToFloat64(policyTotal.WithLabelValues("", "ptr_out_of_range"))
	for ip, want := range map[string]string{
		"8.8.8.8":              "",
		"172.32.0.1":           "", // past 172.16.0.0/12
		"2001:4860:4860::8888": "",
		"10.42.0.1":            name,
		"100.64.0.1":           name,
		"192.0.2.1":            name,
		"fd00::1":              name,
	} {
		owner, err := dns.ReverseAddr(ip)
		if err != nil {
			t.Fatal(err)
		}
		checkCase(t, m, ptrCase(owner, want))
	}
	if got := testutil.ToFloat64(policyTotal.WithLabelValues("", "ptr_out_of_range")) - before; got != 3 {
		t.Errorf("ptr_out_of_range counted %v, want 3", got)
	}
	// The operator names the ranges: those alone.
	m.reverseRanges = mustPrefixes("8.8.8.0/24")
	checkCase(t, m, ptrCase("8.8.8.8.in-addr.arpa.", name))
	checkCase(t, m, ptrCase("1.0.42.10.in-addr.arpa.", ""))
}

// TestSystemNamespacesInFallback: with the default scope, an import in a
// system namespace never answers in a fallback zone, failover included, and
// answers in the clusterset zone as always.
func TestSystemNamespacesInFallback(t *testing.T) {
	local := newFakeCluster()
	m, next := newTestPlugin(t, nil, nil)
	m.local, m.failover = local, true
	m.scope = (*fallbackScope)(nil).withSystem(append(slices.Clone(defaultSystemNamespaces), "dns-system"), []scopePattern{{namespace: "kube-system", name: "metrics-server"}})
	m.sources.setScope(m.scope)
	for _, d := range []importDef{
		{ns: "kube-system", name: "kube-dns", typ: "ClusterSetIP", ips: []string{"10.42.9.1"}},
		{ns: "kube-system", name: "down", typ: "ClusterSetIP", ips: []string{"10.42.9.2"}},
		{ns: "dns-system", name: "probe", typ: "ClusterSetIP", ips: []string{"10.42.9.3"}},
		{ns: "kube-system", name: "metrics-server", typ: "ClusterSetIP", ips: []string{"10.42.9.4"}},
		{ns: "openshift-monitoring", name: "thanos-querier", typ: "ClusterSetIP", ips: []string{"10.42.9.6"}},
		{ns: "kube-flannel", name: "probe", typ: "ClusterSetIP", ips: []string{"10.42.9.7"}},
		{ns: "shop", name: "cart", typ: "ClusterSetIP", ips: []string{"10.42.9.5"}},
	} {
		setImport(t, m, d)
	}
	local.add("kube-system", "down", core.ServiceTypeClusterIP, false)
	expectPassedOnCounted(t, m, next, "system_refused", "kube-dns.kube-system.svc.cluster.local.", "down.kube-system.svc.cluster.local.", "probe.dns-system.svc.cluster.local.",
		"thanos-querier.openshift-monitoring.svc.cluster.local.", "probe.kube-flannel.svc.cluster.local.")
	checkCase(t, m, aCase("kube-dns.kube-system.svc.clusterset.local.", "10.42.9.1"))
	checkCase(t, m, aCase("metrics-server.kube-system.svc.cluster.local.", "10.42.9.4"))
	checkCase(t, m, aCase("cart.shop.svc.cluster.local.", "10.42.9.5"))

	m.ownNamespace = "dns-system"
	e := m.Explain(new(dns.Msg).SetQuestion("kube-dns.kube-system.svc.cluster.local.", dns.TypeA))
	if steps := strings.Join(e.Steps, "\n"); e.Handled || !strings.Contains(steps, "kube-system is a system namespace (kube-*, openshift, openshift-*, dns-system)") {
		t.Errorf("explain (handled %v) does not say why:\n%s", e.Handled, steps)
	}
}

// TestConflictLogBounded: a flapping import logs at most the limit of lines
// in a window, and the next window says how many went unsaid.
func TestConflictLogBounded(t *testing.T) {
	logged := captureLog(t)
	now := time.Unix(1000, 0)
	l := &conflictLog{logWindow: logWindow{window: time.Minute, limit: 3, now: func() time.Time { return now }}}
	key := serviceKey{namespace: "aaa", name: "evil"}
	flap := []conflictChange{{addr: mustAddr("10.42.0.10"), namespaces: []string{"aaa", "demo"}}}
	for range 10 {
		l.log(key, flap)
	}
	if n := logged.count("is claimed by imports of namespaces aaa, demo"); n != 3 {
		t.Errorf("%d lines in one window, want 3:\n%s", n, logged)
	}
	now = now.Add(time.Minute)
	l.log(key, flap)
	if logged.count("7 more changes of addresses claimed by imports of several namespaces were not logged in the last 1m0s") != 1 || logged.count("is claimed by") != 4 {
		t.Errorf("the next window:\n%s", logged)
	}
}

// TestExplainTrust: kubectl mcs explain says why an address an import
// claims is passed on, and why a cluster id's name is NODATA.
func TestExplainTrust(t *testing.T) {
	m, _ := newTestPlugin(t, []importDef{
		{ns: "demo", name: "checkout", typ: "ClusterSetIP", ips: []string{"10.42.0.10"}},
		{ns: "aaa", name: "evil", typ: "ClusterSetIP", ips: []string{"10.42.0.10", "8.8.8.8"}},
		{ns: "demo", name: "db", typ: "Headless"},
	}, fakeLocal{})
	addSlice(t, m, "demo", "db", "west", "db-west", discovery.AddressTypeIPv4, ep("10.1.0.1", "db-0", nil))
	for name, want := range map[string]string{
		"10.0.42.10.in-addr.arpa.":           "imports of several namespaces (aaa, demo) claim 10.42.0.10, and no derived Service decides: a conflict, passed on",
		"8.8.8.8.in-addr.arpa.":              "8.8.8.8 is outside the reverse ranges (the default: private, shared, documentation and reserved ranges, no public address): no import may name it, passed on",
		"west.db.demo.svc.clusterset.local.": "host names of cluster west lie below it: NODATA (RFC 8020)",
		"east.db.demo.svc.clusterset.local.": "no host name of a cluster east lies below it: NXDOMAIN",
	} {
		qtype := dns.TypeA
		if strings.HasSuffix(name, ".arpa.") {
			qtype = dns.TypePTR
		}
		e := m.Explain(new(dns.Msg).SetQuestion(name, qtype))
		if steps := strings.Join(e.Steps, "\n"); !strings.Contains(steps, want) {
			t.Errorf("explain %s:\n%s\nwant it to say %q", name, steps, want)
		}
	}
}
