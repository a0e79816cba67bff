package multicluster

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	core "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-mcs/coredns-mcs/plugin/multicluster/dnscheck"
)

// slice is an EndpointSlice of an import, for the tests below.
type slice struct {
	ns, svc, cluster, name string
	family                 discovery.AddressType
	ports                  []discovery.EndpointPort
	endpoints              []discovery.Endpoint
}

func (s slice) object() *discovery.EndpointSlice {
	labels := map[string]string{labelServiceName: s.svc}
	if s.cluster != "" {
		labels[labelSourceCluster] = s.cluster
	}
	family := s.family
	if family == "" {
		family = discovery.AddressTypeIPv4
	}
	return &discovery.EndpointSlice{
		ObjectMeta:  meta.ObjectMeta{Namespace: s.ns, Name: s.name, Labels: labels},
		AddressType: family,
		Endpoints:   s.endpoints,
		Ports:       s.ports,
	}
}

func setSlice(t testing.TB, m *Multicluster, s slice) []string {
	t.Helper()
	spec, problems, err := newSliceSpec(s.object(), m.longestZone())
	if err != nil {
		t.Fatal(err)
	}
	m.sources.setSlice(spec)
	return problems
}

func endpointPort(name string, proto core.Protocol, port int32) discovery.EndpointPort {
	return discovery.EndpointPort{Name: &name, Protocol: &proto, Port: &port}
}

// The mcs-api conformance suite's "hello": one port number for TCP and UDP.
// An SRV record holds a target and a port number, not a protocol: the bare
// name answers one SRV per target, weight 100 split over what remains.
func TestNoDuplicateSRVForPortsOfOneNumber(t *testing.T) {
	ports := []portFields{{name: "tcp", protocol: "TCP", port: 42}, {name: "udp", protocol: "UDP", port: 42}}
	m, _ := newTestPlugin(t, []importDef{
		{ns: "conf", name: "hello", typ: "ClusterSetIP", ips: []string{"10.42.9.9"}, ports: ports},
		{ns: "conf", name: "hello-headless", typ: "Headless", ports: ports},
	}, fakeLocal{})
	both := []discovery.EndpointPort{endpointPort("tcp", core.ProtocolTCP, 42), endpointPort("udp", core.ProtocolUDP, 42)}
	setSlice(t, m, slice{ns: "conf", svc: "hello-headless", cluster: "c1", name: "hello-c1", ports: both,
		endpoints: []discovery.Endpoint{ep("10.1.0.1", "", nil), ep("10.1.0.2", "", nil)}})
	const z = "clusterset.local."
	for _, tc := range []test.Case{
		{Qname: "hello.conf.svc." + z, Qtype: dns.TypeSRV,
			Answer: []dns.RR{test.SRV("hello.conf.svc.clusterset.local. 5 IN SRV 0 100 42 hello.conf.svc.clusterset.local.")},
			Extra:  []dns.RR{test.A("hello.conf.svc.clusterset.local. 5 IN A 10.42.9.9")}},
		// The named ports keep their own answers.
		{Qname: "_udp._udp.hello.conf.svc." + z, Qtype: dns.TypeSRV,
			Answer: []dns.RR{test.SRV("_udp._udp.hello.conf.svc.clusterset.local. 5 IN SRV 0 100 42 hello.conf.svc.clusterset.local.")},
			Extra:  []dns.RR{test.A("hello.conf.svc.clusterset.local. 5 IN A 10.42.9.9")}},
		{Qname: "hello-headless.conf.svc." + z, Qtype: dns.TypeSRV,
			Answer: []dns.RR{
				test.SRV("hello-headless.conf.svc.clusterset.local. 5 IN SRV 0 50 42 10-1-0-1.c1.hello-headless.conf.svc.clusterset.local."),
				test.SRV("hello-headless.conf.svc.clusterset.local. 5 IN SRV 0 50 42 10-1-0-2.c1.hello-headless.conf.svc.clusterset.local."),
			},
			Extra: []dns.RR{
				test.A("10-1-0-1.c1.hello-headless.conf.svc.clusterset.local. 5 IN A 10.1.0.1"),
				test.A("10-1-0-2.c1.hello-headless.conf.svc.clusterset.local. 5 IN A 10.1.0.2"),
			}},
	} {
		checkCase(t, m, tc)
	}
}

// One endpoint reported by two slices (a controller that moves endpoints
// between slices, or two clusters with one address): every answer names it
// once, and weights are those of the records that remain.
func TestNoDuplicateRecordsAcrossSlices(t *testing.T) {
	m, _ := newTestPlugin(t, []importDef{{ns: "ns1", name: "db", typ: "Headless"}}, fakeLocal{})
	pg := []discovery.EndpointPort{endpointPort("pg", core.ProtocolTCP, 5432)}
	setSlice(t, m, slice{ns: "ns1", svc: "db", cluster: "east", name: "db-a", ports: pg, endpoints: []discovery.Endpoint{ep("10.1.0.1", "db-0", nil), ep("10.1.0.2", "db-1", nil)}})
	setSlice(t, m, slice{ns: "ns1", svc: "db", cluster: "east", name: "db-b", ports: pg, endpoints: []discovery.Endpoint{ep("10.1.0.1", "db-0", nil)}})
	// A slice without a cluster repeats an address too.
	setSlice(t, m, slice{ns: "ns1", svc: "db", name: "db-anon", ports: pg, endpoints: []discovery.Endpoint{ep("10.1.0.2", "", nil)}})
	const z = "clusterset.local."
	for _, tc := range []test.Case{
		{Qname: "db.ns1.svc." + z, Qtype: dns.TypeA, Answer: []dns.RR{
			test.A("db.ns1.svc.clusterset.local. 5 IN A 10.1.0.1"),
			test.A("db.ns1.svc.clusterset.local. 5 IN A 10.1.0.2"),
		}},
		{Qname: "db-0.east.db.ns1.svc." + z, Qtype: dns.TypeA, Answer: []dns.RR{test.A("db-0.east.db.ns1.svc.clusterset.local. 5 IN A 10.1.0.1")}},
		{Qname: "db.ns1.svc." + z, Qtype: dns.TypeSRV,
			Answer: []dns.RR{
				test.SRV("db.ns1.svc.clusterset.local. 5 IN SRV 0 33 5432 db-0.east.db.ns1.svc.clusterset.local."),
				test.SRV("db.ns1.svc.clusterset.local. 5 IN SRV 0 33 5432 db-1.east.db.ns1.svc.clusterset.local."),
				test.SRV("db.ns1.svc.clusterset.local. 5 IN SRV 0 33 5432 db.ns1.svc.clusterset.local."),
			},
			Extra: []dns.RR{
				test.A("db-0.east.db.ns1.svc.clusterset.local. 5 IN A 10.1.0.1"),
				test.A("db-1.east.db.ns1.svc.clusterset.local. 5 IN A 10.1.0.2"),
				test.A("db.ns1.svc.clusterset.local. 5 IN A 10.1.0.1"),
				test.A("db.ns1.svc.clusterset.local. 5 IN A 10.1.0.2"),
			}},
	} {
		checkCase(t, m, tc)
	}
	// And the zone transfer.
	rrs := collect(t, m, z, 0)
	if err := dnscheck.DistinctRecords(rrs[1 : len(rrs)-1]); err != nil {
		t.Errorf("AXFR: %v", err)
	}
	// The second slice goes: nothing is repeated any more, and the answers
	// are built without de-duplication.
	m.sources.deleteSlice("ns1", "db-b")
	m.sources.deleteSlice("ns1", "db-anon")
	if v := m.index.lookup("ns1", "db"); v.eps.dups {
		t.Errorf("duplicates still flagged after the repeating slices went")
	}
	// PTR keeps the name while one slice still gives it, and drops it when
	// none does.
	if a, verdict := m.pointer(mustAddr("10.1.0.1"), "1.0.1.10.in-addr.arpa.", z); verdict != ptrAnswered || a.answer[0].(*dns.PTR).Ptr != "db-0.east.db.ns1.svc.clusterset.local." {
		t.Errorf("PTR 10.1.0.1 after one of its slices went: %v %v", a.answer, verdict)
	}
	m.sources.deleteSlice("ns1", "db-a")
	if a, verdict := m.pointer(mustAddr("10.1.0.1"), "1.0.1.10.in-addr.arpa.", z); verdict == ptrAnswered {
		t.Errorf("PTR 10.1.0.1 after every slice went: %v", a.answer)
	}
	if n := m.index.reverseLen(); n != 0 {
		t.Errorf("reverse map holds %d addresses after every slice went", n)
	}
}

// An import may not claim a local Service's ClusterIP or a local endpoint's
// address in PTR, nor any address the API server refuses for endpoints.
func TestImportsCannotTakeOverAddresses(t *testing.T) {
	local := newFakeCluster()
	local.add("kube-system", "kube-dns", core.ServiceTypeClusterIP, true, "10.96.0.10")
	local.add("team-a", "derived-x2", core.ServiceTypeClusterIP, true, "10.96.7.7")
	// The AWS controller's derived Services, named in its own annotation.
	local.add("team-a", "imported-east", core.ServiceTypeClusterIP, true, "10.96.8.1")
	local.add("team-a", "imported-west", core.ServiceTypeClusterIP, true, "10.96.8.2")
	local.endpoints = map[string][]localEndpoint{
		"10.244.0.5": {{key: serviceKey{namespace: "kube-system", name: "kube-dns"}}},
		"10.244.0.6": {{key: serviceKey{namespace: "team-a", name: "derived-x2"}}},
		"10.244.0.7": {{key: serviceKey{namespace: "kube-system", name: "kube-dns"}, host: "dns-0"}},
	}
	// The kubernetes plugin's cache holds the import's slice too: its own
	// answer would hold a name it cannot send.
	local.mixed = map[string]bool{"10.244.0.7": true}
	m, next := newTestPlugin(t, []importDef{
		{ns: "team-a", name: "x", typ: "ClusterSetIP", ips: []string{"10.96.0.10", "169.254.169.254", "127.0.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255", "fe80::1", "::1", "10.42.0.1"}},
		{ns: "team-a", name: "x2", typ: "ClusterSetIP", derived: "derived-x2"},
		{ns: "team-a", name: "h", typ: "Headless"},
		{ns: "team-a", name: "aws", typ: "ClusterSetIP", ips: []string{"10.96.8.1", "10.96.8.2"}, annotations: map[string]string{
			annotationAWSDerived: `[{"cluster":"east","derived-service":"imported-east"},{"cluster":"west","derived-service":"imported-west"}]`}},
	}, local)
	problems := setSlice(t, m, slice{ns: "team-a", svc: "h", cluster: "c1", name: "h-c1", endpoints: []discovery.Endpoint{
		ep("10.244.0.5", "", nil), ep("10.244.0.6", "", nil), ep("10.244.0.7", "", nil), ep("169.254.169.254", "", nil), ep("10.1.0.1", "", nil),
	}})
	if len(problems) != 1 || !strings.Contains(problems[0], "169.254.169.254 is a link-local address") {
		t.Errorf("problems of the slice: %q", problems)
	}
	if _, problems, _ := newImportSpec(importDef{ns: "team-a", name: "x", typ: "ClusterSetIP", ips: []string{"169.254.169.254", "::1"}}.fields()); len(problems) != 2 {
		t.Errorf("problems of the import: %q", problems)
	}
	const z = "clusterset.local."
	// Forward names: the special addresses are gone.
	checkCase(t, m, test.Case{Qname: "x.team-a.svc.cluster.local.", Qtype: dns.TypeA, Answer: []dns.RR{
		test.A("x.team-a.svc.cluster.local. 5 IN A 10.42.0.1"),
		test.A("x.team-a.svc.cluster.local. 5 IN A 10.96.0.10"),
	}})
	checkCase(t, m, test.Case{Qname: "x.team-a.svc.cluster.local.", Qtype: dns.TypeAAAA, Ns: []dns.RR{soaOf("cluster.local.")}})
	for _, tc := range []struct {
		addr string
		want string // "" passes on
	}{
		{"10.96.0.10", ""},      // kube-dns's ClusterIP
		{"169.254.169.254", ""}, // never served
		{"10.244.0.5", ""},      // kube-dns's endpoint
		{"10.42.0.1", "x.team-a.svc." + z},
		{"10.96.7.7", "x2.team-a.svc." + z}, // a derived Service is the import's
		{"10.244.0.6", "10-244-0-6.c1.h.team-a.svc." + z},
		{"10.1.0.1", "10-1-0-1.c1.h.team-a.svc." + z},
		{"10.96.8.2", "aws.team-a.svc." + z},
		{"10.244.0.7", "dns-0.kube-dns.kube-system.svc.cluster.local."}, // the local name
	} {
		name, _ := dns.ReverseAddr(tc.addr)
		calls := next.calls
		rec := dnstest.NewRecorder(&test.ResponseWriter{})
		m.ServeDNS(context.Background(), rec, test.Case{Qname: name, Qtype: dns.TypePTR}.Msg())
		passed := next.calls > calls
		switch {
		case tc.want == "" && !passed:
			t.Errorf("PTR %s answered %v, want it passed on", tc.addr, rec.Msg.Answer)
		case tc.want != "" && (passed || len(rec.Msg.Answer) != 1 || rec.Msg.Answer[0].(*dns.PTR).Ptr != tc.want):
			t.Errorf("PTR %s: passed %v, answer %v, want %s", tc.addr, passed, rec.Msg.Answer, tc.want)
		}
	}
}

// Names of 255 octets and more: the endpoint keeps its address and loses
// its host name, and every answer of the service still packs.
func TestNamesTooLongForDNS(t *testing.T) {
	long := func(c byte) string { return strings.Repeat(string(c), 63) }
	ns, svc, host, cluster := long('n'), long('s'), long('h'), long('c')
	m, _ := newTestPlugin(t, []importDef{{ns: ns, name: svc, typ: "Headless"}}, fakeLocal{})
	problems := setSlice(t, m, slice{ns: ns, svc: svc, cluster: cluster, name: "long", ports: []discovery.EndpointPort{endpointPort("pg", core.ProtocolTCP, 5432)},
		endpoints: []discovery.Endpoint{ep("10.1.0.1", host, nil), ep("10.1.0.2", "short", nil)}})
	if len(problems) != 1 || !strings.Contains(problems[0], "exceed 255 octets") {
		t.Errorf("problems: %q", problems)
	}
	const z = "clusterset.local."
	base := svc + "." + ns + ".svc." + z
	// Over TCP: the answer's long names take more than the 512 octets of a
	// UDP reply without EDNS0.
	checkCaseOver(t, m, test.Case{Qname: base, Qtype: dns.TypeSRV,
		Answer: []dns.RR{
			test.SRV(base + " 5 IN SRV 0 50 5432 short." + cluster + "." + base),
			test.SRV(base + " 5 IN SRV 0 50 5432 " + base),
		},
		Extra: []dns.RR{
			test.A("short." + cluster + "." + base + " 5 IN A 10.1.0.2"),
			test.A(base + " 5 IN A 10.1.0.1"),
			test.A(base + " 5 IN A 10.1.0.2"),
		}}, &test.ResponseWriter{TCP: true})
	a, verdict := m.pointer(mustAddr("10.1.0.1"), "1.0.1.10.in-addr.arpa.", z)
	if verdict != ptrAnswered || a.answer[0].(*dns.PTR).Ptr != base {
		t.Errorf("PTR of the endpoint without a name: %v", a.answer)
	}
	msg := new(dns.Msg)
	msg.Answer = collect(t, m, z, 0)
	if _, err := msg.Pack(); err != nil {
		t.Errorf("AXFR does not pack: %v", err)
	}
}

// A zone transfer that reaches the plugin (no transfer plugin in the
// server block) is refused, as the kubernetes plugin refuses it.
func TestTransferWithoutTransferPluginRefused(t *testing.T) {
	m, next := newTestPlugin(t, testImports, testLocal)
	for _, qtype := range []uint16{dns.TypeAXFR, dns.TypeIXFR} {
		checkCase(t, m, test.Case{Qname: "clusterset.local.", Qtype: qtype, Rcode: dns.RcodeRefused})
	}
	if next.calls != 0 {
		t.Errorf("a transfer reached the next plugin")
	}
}

// The serial moves for every change a hand-out of it has not seen: at
// once in a later second, at the next second when changes come within the
// serial's own second (they share that bump), and when a derived Service
// changes; a change that changes nothing leaves it.
func TestSerialMovesOnEveryChange(t *testing.T) {
	local := newFakeCluster()
	local.add("default", "derived-serve", core.ServiceTypeClusterIP, true, "10.96.5.5")
	m, _ := newTestPlugin(t, []importDef{{ns: "default", name: "serve", typ: "ClusterSetIP", derived: "derived-serve"}}, local)
	clock := &fakeSeconds{}
	clock.set(time.Now().Unix() + 10)
	m.index.serial.now = clock.now
	last := m.serial()
	step := func(what string, change func(), moves bool) {
		t.Helper()
		change()
		now := m.serial()
		if moved := serialBefore(last, now); moved != moves {
			t.Errorf("%s: serial %d -> %d, moved %v, want %v", what, last, now, moved, moves)
		}
		if int64(now) > clock.now() {
			t.Errorf("%s: serial %d ahead of the clock %d", what, now, clock.now())
		}
		last = now
	}
	setIP := func(ip string) func() {
		return func() {
			spec, _, _ := newImportSpec(importDef{ns: "default", name: "other", typ: "ClusterSetIP", ips: []string{ip}}.fields())
			m.sources.setImport(spec)
		}
	}
	step("spec.ips 10.42.0.1, in a later second", setIP("10.42.0.1"), true)
	for i := range 5 { // within that second: they wait for the next
		step("spec.ips, within the second", setIP([]string{"10.42.0.2", "10.42.0.1"}[i%2]), false)
	}
	step("the next second", func() { clock.add(1) }, true)
	step("nothing", func() { clock.add(1) }, false)
	step("the derived Service's ClusterIP", func() {
		clock.add(1)
		local.add("default", "derived-serve", core.ServiceTypeClusterIP, true, "10.96.5.6")
	}, true)
	step("read again", func() {}, false)
}

// The view of a headless import holds its slices: a slice's change replaces
// that slice and leaves every other where it was.
func TestSliceChangeReplacesOneSlice(t *testing.T) {
	m, _ := newTestPlugin(t, []importDef{{ns: "ns1", name: "db", typ: "Headless"}}, fakeLocal{})
	for i := range 10 {
		setSlice(t, m, slice{ns: "ns1", svc: "db", cluster: "east", name: "db-" + string(rune('a'+i)), endpoints: []discovery.Endpoint{ep("10.1.0."+string(rune('1'+i)), "", nil)}})
	}
	before := m.index.lookup("ns1", "db").eps.slices
	setSlice(t, m, slice{ns: "ns1", svc: "db", cluster: "east", name: "db-e", endpoints: []discovery.Endpoint{ep("10.1.1.1", "", nil)}})
	after := m.index.lookup("ns1", "db").eps.slices
	if len(after) != len(before) {
		t.Fatalf("%d slices, want %d", len(after), len(before))
	}
	for i := range after {
		if same := after[i] == before[i]; same != (after[i].name != "db-e") {
			t.Errorf("slice %s: kept %v", after[i].name, same)
		}
	}
	if _, verdict := m.pointer(mustAddr("10.1.0.5"), "", "clusterset.local."); verdict == ptrAnswered {
		t.Errorf("the replaced slice's old address still has a PTR")
	}
	if _, verdict := m.pointer(mustAddr("10.1.1.1"), "", "clusterset.local."); verdict != ptrAnswered {
		t.Errorf("the replaced slice's new address has no PTR")
	}
}

// Smaller points: "all ports" is a valid EndpointSlice port, not a problem;
// the names of a cluster id of several labels exist (NODATA).
func TestAllPortsAndEmptyNonTerminals(t *testing.T) {
	m, _ := newTestPlugin(t, []importDef{{ns: "ns1", name: "db", typ: "Headless", ports: []portFields{{name: "pg", port: 5432}}}}, fakeLocal{})
	problems := setSlice(t, m, slice{ns: "ns1", svc: "db", cluster: "east.west.prod", name: "db-e", ports: []discovery.EndpointPort{{}},
		endpoints: []discovery.Endpoint{ep("10.1.0.1", "db-0", nil)}})
	if len(problems) != 0 {
		t.Errorf("a slice for all ports: %q", problems)
	}
	const z = "clusterset.local."
	nodata := []dns.RR{soaOf(z)}
	for _, tc := range []test.Case{
		{Qname: "db-0.east.west.prod.db.ns1.svc." + z, Qtype: dns.TypeA, Answer: []dns.RR{test.A("db-0.east.west.prod.db.ns1.svc.clusterset.local. 5 IN A 10.1.0.1")}},
		{Qname: "east.west.prod.db.ns1.svc." + z, Qtype: dns.TypeA, Ns: nodata},
		{Qname: "west.prod.db.ns1.svc." + z, Qtype: dns.TypeA, Ns: nodata},
		{Qname: "west.prod.db.ns1.svc." + z, Qtype: dns.TypeSRV, Ns: nodata},
		// The single label in front of the service is reserved, and holds
		// no records; prod has names below it (RFC 8020): NODATA.
		{Qname: "prod.db.ns1.svc." + z, Qtype: dns.TypeA, Ns: nodata},
		{Qname: "west.db.ns1.svc." + z, Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: nodata},
		{Qname: "north.prod.db.ns1.svc." + z, Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: nodata},
		{Qname: "db-1.east.west.prod.db.ns1.svc." + z, Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: nodata},
		// The slice gives no port: the import's answers SRV.
		{Qname: "db.ns1.svc." + z, Qtype: dns.TypeSRV,
			Answer: []dns.RR{test.SRV("db.ns1.svc.clusterset.local. 5 IN SRV 0 100 5432 db-0.east.west.prod.db.ns1.svc.clusterset.local.")},
			Extra:  []dns.RR{test.A("db-0.east.west.prod.db.ns1.svc.clusterset.local. 5 IN A 10.1.0.1")}},
	} {
		checkCase(t, m, tc)
	}
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

// TestClusterIDNames: the name of a cluster id, of one label or several, is
// NODATA while host names of that cluster lie below it, and NXDOMAIN when
// none does: a cluster that is gone, a ClusterSetIP import, a slice whose
// endpoints have no names, a headless import without ready endpoints.
func TestClusterIDNames(t *testing.T) {
	m, _ := newTestPlugin(t, []importDef{
		{ns: "ns", name: "cache", typ: "Headless"},
		{ns: "ns", name: "vip", typ: "ClusterSetIP", ips: []string{"10.9.0.1"}},
	}, fakeLocal{})
	setSlice(t, m, slice{ns: "ns", svc: "cache", cluster: "west", name: "w", endpoints: []discovery.Endpoint{ep("10.1.0.1", "c-0", nil)}})
	setSlice(t, m, slice{ns: "ns", svc: "cache", cluster: "east.prod", name: "e", endpoints: []discovery.Endpoint{ep("10.1.0.2", "c-0", nil)}})
	setSlice(t, m, slice{ns: "ns", svc: "vip", cluster: "west", name: "v", endpoints: []discovery.Endpoint{ep("10.1.0.3", "v-0", nil)}})
	const z = "clusterset.local."
	nodata := []dns.RR{soaOf(z)}
	for _, tc := range []test.Case{
		{Qname: "c-0.west.cache.ns.svc." + z, Qtype: dns.TypeA, Answer: []dns.RR{test.A("c-0.west.cache.ns.svc.clusterset.local. 5 IN A 10.1.0.1")}},
		{Qname: "west.cache.ns.svc." + z, Qtype: dns.TypeA, Ns: nodata},
		{Qname: "WEST.cache.ns.svc." + z, Qtype: dns.TypeAAAA, Ns: []dns.RR{soaOf(z)}},
		{Qname: "east.prod.cache.ns.svc." + z, Qtype: dns.TypeA, Ns: nodata},
		{Qname: "prod.cache.ns.svc." + z, Qtype: dns.TypeSRV, Ns: nodata},
		{Qname: "north.cache.ns.svc." + z, Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: nodata},
		{Qname: "east.cache.ns.svc." + z, Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: nodata},
		// A ClusterSetIP import has no host names, whatever its slices hold.
		{Qname: "west.vip.ns.svc." + z, Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: nodata},
	} {
		checkCase(t, m, tc)
	}
	// The cluster's hosts go: its name goes with them.
	m.sources.deleteSlice("ns", "w")
	checkCase(t, m, test.Case{Qname: "west.cache.ns.svc." + z, Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: nodata})
	// Endpoints without names (no source cluster on the slice) make none.
	setSlice(t, m, slice{ns: "ns", svc: "cache", name: "anon", endpoints: []discovery.Endpoint{ep("10.1.0.4", "", nil)}})
	checkCase(t, m, test.Case{Qname: "east.prod.cache.ns.svc." + z, Qtype: dns.TypeA, Ns: nodata})
	m.sources.deleteSlice("ns", "e")
	checkCase(t, m, test.Case{Qname: "prod.cache.ns.svc." + z, Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: nodata})
}

// A hostname that reads as an address's name (10-1-0-1) is the name of an
// endpoint named by that address in another slice of the cluster: one
// name, whose SRV record is sent once, though neither its addresses nor its
// hostnames repeat.
func TestDuplicateNameOfHostnameAndAddress(t *testing.T) {
	m, _ := newTestPlugin(t, []importDef{{ns: "ns1", name: "db", typ: "Headless"}}, fakeLocal{})
	pg := []discovery.EndpointPort{endpointPort("pg", core.ProtocolTCP, 5432)}
	setSlice(t, m, slice{ns: "ns1", svc: "db", cluster: "east", name: "db-a", ports: pg, endpoints: []discovery.Endpoint{ep("10.1.0.1", "", nil)}})
	setSlice(t, m, slice{ns: "ns1", svc: "db", cluster: "east", name: "db-b", ports: pg, endpoints: []discovery.Endpoint{ep("10.1.0.9", "10-1-0-1", nil)}})
	if v := m.index.lookup("ns1", "db"); !v.eps.dups {
		t.Fatal("a name in two slices is not flagged")
	}
	const z = "clusterset.local."
	checkCase(t, m, test.Case{Qname: "db.ns1.svc." + z, Qtype: dns.TypeSRV,
		Answer: []dns.RR{test.SRV("db.ns1.svc.clusterset.local. 5 IN SRV 0 100 5432 10-1-0-1.east.db.ns1.svc.clusterset.local.")},
		Extra: []dns.RR{
			test.A("10-1-0-1.east.db.ns1.svc.clusterset.local. 5 IN A 10.1.0.1"),
			test.A("10-1-0-1.east.db.ns1.svc.clusterset.local. 5 IN A 10.1.0.9"),
		}})
	m.sources.deleteSlice("ns1", "db-b")
	if v := m.index.lookup("ns1", "db"); v.eps.dups {
		t.Errorf("duplicates still flagged after the hostname went")
	}
}

// TestLooksDashed: the hostnames an address's name could equal.
func TestLooksDashed(t *testing.T) {
	for host, want := range map[string]bool{
		"10-1-0-1": true, "fd00--1": true, dashedIP("2001:db8::a:1"): true,
		"db-0": false, "cafe": false, "10-1-0": false, "web-1-2-3": false,
	} {
		if got := looksDashed(host); got != want {
			t.Errorf("looksDashed(%q) = %v, want %v", host, got, want)
		}
	}
}

// A slice's versions move their PTR claims by what changed: an address
// the slice still gives under another name keeps its name, one it no longer
// gives loses it, and a slice that changes cluster names its addresses in
// the new one.
func TestPTRFollowsSliceVersions(t *testing.T) {
	m, _ := newTestPlugin(t, []importDef{{ns: "ns1", name: "db", typ: "Headless"}}, fakeLocal{})
	const z = "clusterset.local."
	ptrOf := func(addr string) string {
		t.Helper()
		a, verdict := m.pointer(mustAddr(addr), "x.in-addr.arpa.", z)
		if verdict != ptrAnswered {
			return ""
		}
		return a.answer[0].(*dns.PTR).Ptr
	}
	setSlice(t, m, slice{ns: "ns1", svc: "db", cluster: "east", name: "db-a", endpoints: []discovery.Endpoint{
		ep("10.1.0.1", "db-0", nil), ep("10.1.0.1", "db-1", nil), ep("10.1.0.2", "db-2", nil)}})
	if got := ptrOf("10.1.0.1"); got != "db-0.east.db.ns1.svc.clusterset.local." {
		t.Errorf("PTR 10.1.0.1: %q", got)
	}
	// db-0 goes; db-1 still has the address.
	setSlice(t, m, slice{ns: "ns1", svc: "db", cluster: "east", name: "db-a", endpoints: []discovery.Endpoint{
		ep("10.1.0.1", "db-1", nil), ep("10.1.0.2", "db-2", nil)}})
	if got := ptrOf("10.1.0.1"); got != "db-1.east.db.ns1.svc.clusterset.local." {
		t.Errorf("PTR 10.1.0.1 after db-0 went: %q", got)
	}
	// 10.1.0.2 goes, 10.1.0.3 comes.
	setSlice(t, m, slice{ns: "ns1", svc: "db", cluster: "east", name: "db-a", endpoints: []discovery.Endpoint{
		ep("10.1.0.1", "db-1", nil), ep("10.1.0.3", "db-2", nil)}})
	if got, got3 := ptrOf("10.1.0.2"), ptrOf("10.1.0.3"); got != "" || got3 != "db-2.east.db.ns1.svc.clusterset.local." {
		t.Errorf("PTR 10.1.0.2 after it went: %q; 10.1.0.3 after it came: %q", got, got3)
	}
	// The slice moves to another cluster.
	setSlice(t, m, slice{ns: "ns1", svc: "db", cluster: "west", name: "db-a", endpoints: []discovery.Endpoint{
		ep("10.1.0.1", "db-1", nil), ep("10.1.0.3", "db-2", nil)}})
	if got := ptrOf("10.1.0.3"); got != "db-2.west.db.ns1.svc.clusterset.local." {
		t.Errorf("PTR 10.1.0.3 after its slice moved to west: %q", got)
	}
	// The import goes and comes back: its slices' addresses are named
	// again.
	imp := m.sources.imports[serviceKey{"ns1", "db"}]
	m.sources.deleteImport(serviceKey{"ns1", "db"})
	if got := ptrOf("10.1.0.1"); got != "" {
		t.Errorf("PTR 10.1.0.1 without the import: %q", got)
	}
	m.sources.setImport(imp)
	if got := ptrOf("10.1.0.1"); got != "db-1.west.db.ns1.svc.clusterset.local." {
		t.Errorf("PTR 10.1.0.1 with the import back: %q", got)
	}
	m.sources.deleteSlice("ns1", "db-a")
	if n := m.index.reverseLen(); n != 0 {
		t.Errorf("reverse map holds %d addresses after the slice went", n)
	}
}
