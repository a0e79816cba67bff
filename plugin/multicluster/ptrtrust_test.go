package multicluster

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
	api "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

// freshLocalConflictLog gives the test a log of local conflicts of its own,
// whose clock it moves.
func freshLocalConflictLog(t *testing.T) *time.Time {
	t.Helper()
	now := time.Unix(1000, 0)
	saved := localConflictLogger
	localConflictLogger = &localConflictLog{logWindow: logWindow{window: time.Minute, limit: 20, now: func() time.Time { return now }}}
	t.Cleanup(func() { localConflictLogger = saved })
	return &now
}

// expectLocalConflicts asks the reverse name of each of ips, and checks
// that each goes to the next plugin and counts as ptr_local_conflict.
func expectLocalConflicts(t *testing.T, m *Multicluster, next *nextHandler, ips ...string) {
	t.Helper()
	before := testutil.ToFloat64(policyTotal.WithLabelValues("", "ptr_local_conflict"))
	for _, ip := range ips {
		if r, passed := askPTR(t, m, next, ip); !passed {
			t.Errorf("PTR %s answered %v, want it passed on to the cluster's own answer", ip, r.Answer)
		}
	}
	if got := testutil.ToFloat64(policyTotal.WithLabelValues("", "ptr_local_conflict")) - before; got != float64(len(ips)) {
		t.Errorf("ptr_local_conflict counted %v, want %d", got, len(ips))
	}
}

// TestLocalServiceTakesNoAddressSilently: a Service whose chosen ClusterIP
// is another namespace's ClusterSetIP holds the address in the cluster, and
// its PTR is the cluster's own, as without the plugin; but it is a
// conflict, counted and logged once per address and window, however often
// it is asked.
func TestLocalServiceTakesNoAddressSilently(t *testing.T) {
	freshLocalConflictLog(t)
	logged := captureLog(t)
	local := newFakeCluster()
	local.add("aaa", "grab", api.ServiceTypeClusterIP, true, "10.42.0.10")
	local.add("demo", "own", api.ServiceTypeClusterIP, true, "10.42.0.11")
	m, next := newTestPlugin(t, []importDef{
		{ns: "demo", name: "checkout", typ: "ClusterSetIP", ips: []string{"10.42.0.10"}},
		// A Service's own import listing its ClusterIP: no conflict.
		{ns: "demo", name: "own", typ: "ClusterSetIP", ips: []string{"10.42.0.11"}},
	}, nil)
	m.local = local
	expectLocalConflicts(t, m, next, "10.42.0.10", "10.42.0.10", "10.42.0.10")
	const line = "address 10.42.0.10, the ClusterIP of the local Service aaa/grab, is claimed by imports of namespaces demo too"
	if n := logged.count(line); n != 1 {
		t.Errorf("logged the conflict %d times, want once:\n%s", n, logged)
	}
	before := testutil.ToFloat64(policyTotal.WithLabelValues("", "ptr_local_conflict"))
	if _, passed := askPTR(t, m, next, "10.42.0.11"); !passed {
		t.Errorf("PTR of a local Service's ClusterIP that its own import lists was answered")
	}
	if got := testutil.ToFloat64(policyTotal.WithLabelValues("", "ptr_local_conflict")) - before; got != 0 {
		t.Errorf("a Service and an import of one namespace counted as a conflict")
	}
	// The forward name stays the import's own.
	checkCase(t, m, aCase("checkout.demo.svc.clusterset.local.", "10.42.0.10"))
}

// TestDerivedServiceContested: an import's derived Service holds an
// address; its import's name answers for it only while no import of
// another namespace claims it. A Service may take any free address of the
// Service range, another namespace's ClusterSetIP included, and name
// itself as its own import's derived Service: its import's name must not
// take the address over, any more than another namespace's import may
// take a derived Service's.
func TestDerivedServiceContested(t *testing.T) {
	freshLocalConflictLog(t)
	logged := captureLog(t)
	local := newFakeCluster()
	local.add("demo", "derived-web", api.ServiceTypeClusterIP, true, "10.96.5.5")
	local.add("aaa", "grab", api.ServiceTypeClusterIP, true, "10.42.0.10")
	local.add("kube-system", "kube-dns", api.ServiceTypeClusterIP, true, "10.96.0.10")
	m, next := newTestPlugin(t, []importDef{
		{ns: "demo", name: "web", typ: "ClusterSetIP", derived: "derived-web"},
		{ns: "demo", name: "checkout", typ: "ClusterSetIP", ips: []string{"10.42.0.10"}},
		// The attacker's Service holds checkout's address, and its import
		// names that Service as its derived Service.
		{ns: "aaa", name: "evil", typ: "ClusterSetIP", derived: "grab"},
	}, nil)
	m.local = local
	checkCase(t, m, ptrCase("5.5.96.10.in-addr.arpa.", "web.demo.svc.clusterset.local."))
	checkCase(t, m, aCase("evil.aaa.svc.clusterset.local.", "10.42.0.10"))
	expectLocalConflicts(t, m, next, "10.42.0.10")
	if !strings.Contains(logged.String(), "address 10.42.0.10, the ClusterIP of the local Service aaa/grab (the derived Service of [aaa/evil]), is claimed by imports of namespaces demo too") {
		t.Errorf("the conflict was not logged:\n%s", logged)
	}
	// The other way round: another namespace claims the derived Service's
	// address, and the kube-dns ClusterIP.
	setImport(t, m, importDef{ns: "aaa", name: "claim", typ: "ClusterSetIP", ips: []string{"10.96.5.5", "10.96.0.10"}})
	expectLocalConflicts(t, m, next, "10.96.5.5", "10.96.0.10")
	// It goes: web's name answers again.
	m.sources.deleteImport(serviceKey{namespace: "aaa", name: "claim"})
	checkCase(t, m, ptrCase("5.5.96.10.in-addr.arpa.", "web.demo.svc.clusterset.local."))
	e := m.Explain(new(dns.Msg).SetQuestion("10.0.42.10.in-addr.arpa.", dns.TypePTR))
	if steps := strings.Join(e.Steps, "\n"); !strings.Contains(steps, "imports of namespaces demo claim 10.42.0.10, which the local cluster holds in another namespace: a conflict") {
		t.Errorf("explain does not say why:\n%s", steps)
	}
}

// TestLocalEndpointTakesNoAddressSilently: an EndpointSlice labelled
// kubernetes.io/service-name, with no Service, may list any address: the
// kubernetes plugin names it in PTR answers (serviceRecordForIP asks for
// no Service). An address that an import of another namespace claims is
// then a conflict, passed on, counted and logged; an import of the
// endpoint's own namespace is none.
func TestLocalEndpointTakesNoAddressSilently(t *testing.T) {
	freshLocalConflictLog(t)
	logged := captureLog(t)
	local := newFakeCluster()
	local.endpoints = map[string][]localEndpoint{
		"10.42.0.10": {{key: serviceKey{namespace: "aaa", name: "x"}, host: "checkout"}},
		"10.1.0.1":   {{key: serviceKey{namespace: "aaa", name: "x"}}},
		"10.1.0.2":   {{key: serviceKey{namespace: "demo", name: "db"}}},
	}
	m, next := newTestPlugin(t, []importDef{
		{ns: "demo", name: "checkout", typ: "ClusterSetIP", ips: []string{"10.42.0.10"}},
		{ns: "demo", name: "db", typ: "Headless"},
	}, nil)
	m.local = local
	addSlice(t, m, "demo", "db", "east", "db-east", discovery.AddressTypeIPv4, ep("10.1.0.1", "db-0", nil), ep("10.1.0.2", "db-1", nil))
	expectLocalConflicts(t, m, next, "10.42.0.10", "10.1.0.1")
	for _, want := range []string{
		"address 10.42.0.10, the address of a local endpoint of aaa/x, is claimed by imports of namespaces demo too",
		"address 10.1.0.1, the address of a local endpoint of aaa/x, is claimed by imports of namespaces demo too",
	} {
		if logged.count(want) != 1 {
			t.Errorf("want one line %q:\n%s", want, logged)
		}
	}
	// demo/db's own local endpoint: local wins, silently.
	before := testutil.ToFloat64(policyTotal.WithLabelValues("", "ptr_local_conflict"))
	if _, passed := askPTR(t, m, next, "10.1.0.2"); !passed {
		t.Errorf("PTR of a local endpoint of the import's own namespace was answered")
	}
	if got := testutil.ToFloat64(policyTotal.WithLabelValues("", "ptr_local_conflict")) - before; got != 0 {
		t.Errorf("an endpoint and an import of one namespace counted as a conflict")
	}
}

// TestLocalConflictLogBounded: queries of one address log one line a
// window; at most the limit of addresses are logged in one, and the next
// window says how many queries went unsaid.
func TestLocalConflictLogBounded(t *testing.T) {
	now := freshLocalConflictLog(t)
	logged := captureLog(t)
	l := localConflictLogger
	l.limit = 3
	describe := func(a netip.Addr) string { return "conflict at " + a.String() }
	for range 50 {
		l.log(mustAddr("10.42.0.1"), describe)
	}
	for i := range 10 {
		l.log(netip.AddrFrom4([4]byte{10, 42, 1, byte(i)}), describe)
	}
	if n := logged.count("conflict at "); n != 3 {
		t.Errorf("%d lines in one window, want 3:\n%s", n, logged)
	}
	if n := testing.AllocsPerRun(100, func() { l.log(mustAddr("10.42.0.1"), describe) }); n != 0 {
		t.Errorf("an address logged already: %v allocations", n)
	}
	*now = now.Add(time.Minute)
	l.log(mustAddr("10.42.0.1"), describe)
	if logged.count("more PTR queries for local addresses claimed by imports of other namespaces were not logged in the last 1m0s") != 1 || logged.count("conflict at 10.42.0.1") != 2 {
		t.Errorf("the next window:\n%s", logged)
	}
}

// TestPTROutOfRangeCountsClaims: ptr_out_of_range counts the PTR queries
// for addresses outside reverse_ranges that an import claims, or a derived
// Service of an import holds; no other address, though imports with
// derived Services exist.
func TestPTROutOfRangeCountsClaims(t *testing.T) {
	local := newFakeCluster()
	local.add("demo", "derived-web", api.ServiceTypeClusterIP, true, "10.96.5.5")
	local.add("demo", "plain", api.ServiceTypeClusterIP, true, "10.96.7.7")
	m, next := newTestPlugin(t, []importDef{
		{ns: "demo", name: "web", typ: "ClusterSetIP", derived: "derived-web"},
		{ns: "demo", name: "edge", typ: "ClusterSetIP", ips: []string{"8.8.8.8"}},
	}, nil)
	m.local = local
	m.reverseRanges = mustPrefixes("10.42.0.0/16")
	before := testutil.ToFloat64(policyTotal.WithLabelValues("", "ptr_out_of_range"))
	for _, ip := range []string{"8.8.4.4", "10.96.7.7", "8.8.8.8", "10.96.5.5", "2001:db8::1"} {
		if r, passed := askPTR(t, m, next, ip); !passed {
			t.Errorf("PTR %s answered %v, want it passed on", ip, r.Answer)
		}
	}
	if got := testutil.ToFloat64(policyTotal.WithLabelValues("", "ptr_out_of_range")) - before; got != 2 {
		t.Errorf("ptr_out_of_range counted %v, want 2: 8.8.8.8 and 10.96.5.5", got)
	}
}
