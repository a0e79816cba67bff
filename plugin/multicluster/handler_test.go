package multicluster

import (
	"context"
	"testing"

	"github.com/coredns/coredns/plugin/kubernetes/object"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	core "k8s.io/api/core/v1"

	"github.com/coredns-mcs/coredns-mcs/plugin/multicluster/dnscheck"
)

// fakeLocal is a set of local ClusterIP Services, each with a ready endpoint.
type fakeLocal map[serviceKey]bool

func (f fakeLocal) service(namespace, name string) *object.Service {
	if !f[serviceKey{namespace: namespace, name: name}] {
		return nil
	}
	return &object.Service{Namespace: namespace, Name: name, Type: core.ServiceTypeClusterIP}
}
func (f fakeLocal) readyEndpoints(namespace, name string) bool {
	return f[serviceKey{namespace: namespace, name: name}]
}
func (f fakeLocal) byClusterIP(string) []*object.Service        { return nil }
func (f fakeLocal) byEndpointIP(string) ([]localEndpoint, bool) { return nil, false }
func (f fakeLocal) exposed(string) bool                         { return true }
func (f fakeLocal) reverseExposed(string) bool                  { return true }
func (f fakeLocal) zone() string                                { return "cluster.local." }
func (f fakeLocal) modified() int64                             { return 0 }
func (f fakeLocal) hasSynced() bool                             { return true }

// nextHandler stands for the plugin after multicluster: it answers every
// query with REFUSED and an empty message, so a test sees that it ran.
type nextHandler struct{ calls int }

func (n *nextHandler) Name() string { return "next" }
func (n *nextHandler) ServeDNS(_ context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	n.calls++
	m := new(dns.Msg)
	m.SetRcode(r, dns.RcodeRefused)
	w.WriteMsg(m)
	return dns.RcodeRefused, nil
}

type importDef struct {
	ns, name string
	typ      string
	ips      []string
	ports    []portFields
	derived  string // the derived-service annotation
	copy     bool   // labelled as a controller's per-cluster copy
	// annotations are more annotations.
	annotations map[string]string
	// slices is status.endpointSliceObjects.
	slices string
}

func (d importDef) fields() importFields {
	f := importFields{namespace: d.ns, name: d.name, typ: d.typ, ips: d.ips, ports: d.ports, endpointSliceObjects: d.slices}
	f.annotations = map[string]string{}
	for k, v := range d.annotations {
		f.annotations[k] = v
	}
	if d.derived != "" {
		f.annotations[annotationDerivedService] = d.derived
	}
	if d.copy {
		f.labels = map[string]string{labelServiceName: d.name}
	}
	return f
}

// newTestPlugin returns a synced plugin serving clusterset.local and the
// reverse zones, with cluster.local as a fallback zone.
func newTestPlugin(t testing.TB, imports []importDef, local localServices) (*Multicluster, *nextHandler) {
	t.Helper()
	m := New()
	m.Zones = []string{"clusterset.local.", "in-addr.arpa.", "ip6.arpa."}
	m.Fallback = []string{"cluster.local."}
	m.local = local
	m.endpointsKnown = true
	next := &nextHandler{}
	m.Next = next
	for _, d := range imports {
		spec, _, err := newImportSpec(d.fields())
		if err != nil {
			t.Fatalf("import %s/%s: %v", d.ns, d.name, err)
		}
		m.sources.setImport(spec)
	}
	m.synced.Store(true)
	return m, next
}

var testImports = []importDef{
	{ns: "ns1", name: "web", typ: "ClusterSetIP", ips: []string{"10.42.0.1"}, ports: []portFields{{name: "http", protocol: "TCP", port: 80}, {name: "https", protocol: "TCP", port: 443}}},
	{ns: "ns1", name: "dual", typ: "ClusterSetIP", ips: []string{"10.42.0.2", "fd00::2"}, ports: []portFields{{name: "dns", protocol: "UDP", port: 53}}},
	{ns: "ns1", name: "six", typ: "ClusterSetIP", ips: []string{"fd00::6"}, ports: []portFields{{port: 8080}}},
	{ns: "ns1", name: "noips", typ: "ClusterSetIP", ports: []portFields{{name: "http", port: 80}}},
	{ns: "ns2", name: "api", typ: "ClusterSetIP", ips: []string{"10.42.1.1"}, ports: []portFields{{name: "grpc", protocol: "TCP", port: 9090}}},
	// Also a local Service: local wins in cluster.local.
	{ns: "ns2", name: "both", typ: "ClusterSetIP", ips: []string{"10.42.1.2"}, ports: []portFields{{name: "http", port: 80}}},
}

var testLocal = fakeLocal{
	{namespace: "ns2", name: "both"}:  true,
	{namespace: "ns2", name: "local"}: true,
}

func soaOf(zone string) dns.RR {
	return test.SOA(zone + " 5 IN SOA ns.dns." + zone + " hostmaster." + zone + " 0 7200 1800 86400 5")
}

// pendingSOAOf is the SOA of a negative answer about an import without an
// address yet: TTL and minimum pendingTTL.
func pendingSOAOf(zone string) dns.RR {
	return test.SOA(zone + " 1 IN SOA ns.dns." + zone + " hostmaster." + zone + " 0 7200 1800 86400 1")
}

var clustersetCases = []test.Case{
	// Apex and the fixed names.
	{Qname: "clusterset.local.", Qtype: dns.TypeSOA, Rcode: dns.RcodeSuccess, Answer: []dns.RR{soaOf("clusterset.local.")}},
	{Qname: "clusterset.local.", Qtype: dns.TypeNS, Rcode: dns.RcodeSuccess, Answer: []dns.RR{test.NS("clusterset.local. 5 IN NS ns.dns.clusterset.local.")}},
	{Qname: "clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Ns: []dns.RR{soaOf("clusterset.local.")}},
	{Qname: "dns-version.clusterset.local.", Qtype: dns.TypeTXT, Rcode: dns.RcodeSuccess, Answer: []dns.RR{test.TXT(`dns-version.clusterset.local. 28800 IN TXT "1.0.0"`)}},
	{Qname: "dns-version.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Ns: []dns.RR{soaOf("clusterset.local.")}},
	{Qname: "ns.dns.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Ns: []dns.RR{soaOf("clusterset.local.")}},
	{Qname: "svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Ns: []dns.RR{soaOf("clusterset.local.")}},
	{Qname: "ns1.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Ns: []dns.RR{soaOf("clusterset.local.")}},
	{Qname: "nope.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soaOf("clusterset.local.")}},
	// ClusterSetIP A / AAAA by family.
	{Qname: "web.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []dns.RR{test.A("web.ns1.svc.clusterset.local. 5 IN A 10.42.0.1")}},
	{Qname: "WEB.Ns1.svc.ClusterSet.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []dns.RR{test.A("WEB.Ns1.svc.ClusterSet.local. 5 IN A 10.42.0.1")}},
	{Qname: "web.ns1.svc.clusterset.local.", Qtype: dns.TypeAAAA, Rcode: dns.RcodeSuccess, Ns: []dns.RR{soaOf("clusterset.local.")}},
	{Qname: "dual.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []dns.RR{test.A("dual.ns1.svc.clusterset.local. 5 IN A 10.42.0.2")}},
	{Qname: "dual.ns1.svc.clusterset.local.", Qtype: dns.TypeAAAA, Rcode: dns.RcodeSuccess, Answer: []dns.RR{test.AAAA("dual.ns1.svc.clusterset.local. 5 IN AAAA fd00::2")}},
	{Qname: "six.ns1.svc.clusterset.local.", Qtype: dns.TypeAAAA, Rcode: dns.RcodeSuccess, Answer: []dns.RR{test.AAAA("six.ns1.svc.clusterset.local. 5 IN AAAA fd00::6")}},
	{Qname: "six.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Ns: []dns.RR{soaOf("clusterset.local.")}},
	// Empty spec.ips, no derived_prefix: NODATA.
	{Qname: "noips.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Ns: []dns.RR{pendingSOAOf("clusterset.local.")}},
	{Qname: "nope.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soaOf("clusterset.local.")}},
	// Another type on an existing name: NODATA.
	{Qname: "web.ns1.svc.clusterset.local.", Qtype: dns.TypeTXT, Rcode: dns.RcodeSuccess, Ns: []dns.RR{soaOf("clusterset.local.")}},
	{Qname: "web.ns1.svc.clusterset.local.", Qtype: dns.TypeMX, Rcode: dns.RcodeSuccess, Ns: []dns.RR{soaOf("clusterset.local.")}},
	// SRV on the bare name: one per port, target the service, addresses in Additional.
	{Qname: "web.ns1.svc.clusterset.local.", Qtype: dns.TypeSRV, Rcode: dns.RcodeSuccess,
		Answer: []dns.RR{
			test.SRV("web.ns1.svc.clusterset.local. 5 IN SRV 0 50 443 web.ns1.svc.clusterset.local."),
			test.SRV("web.ns1.svc.clusterset.local. 5 IN SRV 0 50 80 web.ns1.svc.clusterset.local."),
		},
		Extra: []dns.RR{test.A("web.ns1.svc.clusterset.local. 5 IN A 10.42.0.1")},
	},
	{Qname: "dual.ns1.svc.clusterset.local.", Qtype: dns.TypeSRV, Rcode: dns.RcodeSuccess,
		Answer: []dns.RR{test.SRV("dual.ns1.svc.clusterset.local. 5 IN SRV 0 100 53 dual.ns1.svc.clusterset.local.")},
		Extra:  []dns.RR{test.A("dual.ns1.svc.clusterset.local. 5 IN A 10.42.0.2"), test.AAAA("dual.ns1.svc.clusterset.local. 5 IN AAAA fd00::2")},
	},
	// SRV on _port._proto.
	{Qname: "_https._tcp.web.ns1.svc.clusterset.local.", Qtype: dns.TypeSRV, Rcode: dns.RcodeSuccess,
		Answer: []dns.RR{test.SRV("_https._tcp.web.ns1.svc.clusterset.local. 5 IN SRV 0 100 443 web.ns1.svc.clusterset.local.")},
		Extra:  []dns.RR{test.A("web.ns1.svc.clusterset.local. 5 IN A 10.42.0.1")},
	},
	{Qname: "_dns._udp.dual.ns1.svc.clusterset.local.", Qtype: dns.TypeSRV, Rcode: dns.RcodeSuccess,
		Answer: []dns.RR{test.SRV("_dns._udp.dual.ns1.svc.clusterset.local. 5 IN SRV 0 100 53 dual.ns1.svc.clusterset.local.")},
		Extra:  []dns.RR{test.A("dual.ns1.svc.clusterset.local. 5 IN A 10.42.0.2"), test.AAAA("dual.ns1.svc.clusterset.local. 5 IN AAAA fd00::2")},
	},
	{Qname: "_https._udp.web.ns1.svc.clusterset.local.", Qtype: dns.TypeSRV, Rcode: dns.RcodeNameError, Ns: []dns.RR{soaOf("clusterset.local.")}},
	{Qname: "_ftp._tcp.web.ns1.svc.clusterset.local.", Qtype: dns.TypeSRV, Rcode: dns.RcodeNameError, Ns: []dns.RR{soaOf("clusterset.local.")}},
	{Qname: "_https._tcp.web.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Ns: []dns.RR{soaOf("clusterset.local.")}},
	// Reserved cluster.svc names and other shapes.
	{Qname: "east.web.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soaOf("clusterset.local.")}},
	{Qname: "host.east.web.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soaOf("clusterset.local.")}},
	{Qname: "10-0-0-1.ns1.pod.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soaOf("clusterset.local.")}},
	{Qname: "*.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soaOf("clusterset.local.")}},
	{Qname: "web.ns1.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soaOf("clusterset.local.")}},
}

func TestServeClusterset(t *testing.T) {
	m, next := newTestPlugin(t, testImports, testLocal)
	for _, tc := range clustersetCases {
		t.Run(dns.TypeToString[tc.Qtype]+" "+tc.Qname, func(t *testing.T) {
			checkCase(t, m, tc)
		})
	}
	if next.calls != 0 {
		t.Errorf("clusterset queries reached the next plugin %d times", next.calls)
	}
}

// checkCase runs tc through m, with SOA serials zeroed before comparing.
func checkCase(t *testing.T, m *Multicluster, tc test.Case) {
	t.Helper()
	checkCaseOver(t, m, tc, &test.ResponseWriter{})
}

// checkCaseOver is checkCase asked through w: over TCP, with
// &test.ResponseWriter{TCP: true}, for an answer larger than a UDP reply
// without EDNS0 carries.
func checkCaseOver(t *testing.T, m *Multicluster, tc test.Case, w *test.ResponseWriter) {
	t.Helper()
	rec := dnstest.NewRecorder(w)
	if _, err := m.ServeDNS(context.Background(), rec, tc.Msg()); err != nil {
		t.Fatalf("ServeDNS: %v", err)
	}
	resp := rec.Msg
	if resp == nil {
		t.Fatalf("no response written")
	}
	if err := dnscheck.Distinct(resp); err != nil {
		t.Errorf("%s %s: %v", tc.Qname, dns.TypeToString[tc.Qtype], err)
	}
	if _, err := tc.Msg().Pack(); err != nil {
		// A name no client can send; the answer repeats it.
	} else if _, err := resp.Pack(); err != nil {
		t.Errorf("%s %s: the answer cannot be sent: %v", tc.Qname, dns.TypeToString[tc.Qtype], err)
	}
	if !resp.Authoritative && resp.Rcode != dns.RcodeRefused {
		t.Errorf("answer is not authoritative")
	}
	for _, rr := range append(resp.Answer, resp.Ns...) {
		if s, ok := rr.(*dns.SOA); ok {
			s.Serial = 0
		}
	}
	if err := test.SortAndCheck(resp, tc); err != nil {
		t.Error(err)
	}
}

// rcodeOf returns what ServeDNS returns for a query.
// rcodeOf is the rcode of m's reply to name, whether m wrote it or left the
// server to write it.
func rcodeOf(m *Multicluster, name string, qtype uint16) int {
	rec := dnstest.NewRecorder(&test.ResponseWriter{})
	rcode, _ := m.ServeDNS(context.Background(), rec, test.Case{Qname: name, Qtype: qtype}.Msg())
	if rec.Msg != nil {
		return rec.Msg.Rcode
	}
	return rcode
}

// fallbackCase is a query in cluster.local and whether it must reach the
// next plugin untouched.
type fallbackCase struct {
	test.Case
	passed bool
}

var fallbackCases = []fallbackCase{
	// No local Service, an import: answered from the import, under cluster.local.
	{Case: test.Case{Qname: "web.ns1.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []dns.RR{test.A("web.ns1.svc.cluster.local. 5 IN A 10.42.0.1")}}},
	{Case: test.Case{Qname: "Web.NS1.svc.Cluster.Local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []dns.RR{test.A("Web.NS1.svc.Cluster.Local. 5 IN A 10.42.0.1")}}},
	{Case: test.Case{Qname: "dual.ns1.svc.cluster.local.", Qtype: dns.TypeAAAA, Rcode: dns.RcodeSuccess, Answer: []dns.RR{test.AAAA("dual.ns1.svc.cluster.local. 5 IN AAAA fd00::2")}}},
	{Case: test.Case{Qname: "web.ns1.svc.cluster.local.", Qtype: dns.TypeAAAA, Rcode: dns.RcodeSuccess, Ns: []dns.RR{soaOf("cluster.local.")}}},
	{Case: test.Case{Qname: "_http._tcp.web.ns1.svc.cluster.local.", Qtype: dns.TypeSRV, Rcode: dns.RcodeSuccess,
		Answer: []dns.RR{test.SRV("_http._tcp.web.ns1.svc.cluster.local. 5 IN SRV 0 100 80 web.ns1.svc.cluster.local.")},
		Extra:  []dns.RR{test.A("web.ns1.svc.cluster.local. 5 IN A 10.42.0.1")},
	}},
	{Case: test.Case{Qname: "api.ns2.svc.cluster.local.", Qtype: dns.TypeSRV, Rcode: dns.RcodeSuccess,
		Answer: []dns.RR{test.SRV("api.ns2.svc.cluster.local. 5 IN SRV 0 100 9090 api.ns2.svc.cluster.local.")},
		Extra:  []dns.RR{test.A("api.ns2.svc.cluster.local. 5 IN A 10.42.1.1")},
	}},
	// Names under an import that do not exist: the next plugin says so.
	{Case: test.Case{Qname: "_ftp._tcp.web.ns1.svc.cluster.local.", Qtype: dns.TypeSRV, Rcode: dns.RcodeRefused}, passed: true},
	{Case: test.Case{Qname: "east.web.ns1.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeRefused}, passed: true},
	// A local Service exists: passed on untouched, whatever the import says.
	{Case: test.Case{Qname: "both.ns2.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeRefused}, passed: true},
	{Case: test.Case{Qname: "_http._tcp.both.ns2.svc.cluster.local.", Qtype: dns.TypeSRV, Rcode: dns.RcodeRefused}, passed: true},
	{Case: test.Case{Qname: "local.ns2.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeRefused}, passed: true},
	// Neither: passed on.
	{Case: test.Case{Qname: "nope.ns1.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeRefused}, passed: true},
	// Names that are not a service's: always passed on.
	{Case: test.Case{Qname: "cluster.local.", Qtype: dns.TypeSOA, Rcode: dns.RcodeRefused}, passed: true},
	{Case: test.Case{Qname: "cluster.local.", Qtype: dns.TypeNS, Rcode: dns.RcodeRefused}, passed: true},
	{Case: test.Case{Qname: "dns-version.cluster.local.", Qtype: dns.TypeTXT, Rcode: dns.RcodeRefused}, passed: true},
	{Case: test.Case{Qname: "ns.dns.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeRefused}, passed: true},
	{Case: test.Case{Qname: "ns1.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeRefused}, passed: true},
	{Case: test.Case{Qname: "10-0-0-1.ns1.pod.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeRefused}, passed: true},
	// Outside every zone.
	{Case: test.Case{Qname: "example.org.", Qtype: dns.TypeA, Rcode: dns.RcodeRefused}, passed: true},
	{Case: test.Case{Qname: "web.ns1.svc.cluster.example.", Qtype: dns.TypeA, Rcode: dns.RcodeRefused}, passed: true},
}

func TestServeFallback(t *testing.T) {
	m, next := newTestPlugin(t, testImports, testLocal)
	for _, tc := range fallbackCases {
		t.Run(dns.TypeToString[tc.Qtype]+" "+tc.Qname, func(t *testing.T) {
			before := next.calls
			checkCase(t, m, tc.Case)
			if passed := next.calls > before; passed != tc.passed {
				t.Errorf("passed to the next plugin: %v, want %v", passed, tc.passed)
			}
		})
	}
}

func TestFallbackPassesUntilSynced(t *testing.T) {
	m, next := newTestPlugin(t, testImports, testLocal)
	m.synced.Store(false)
	checkCase(t, m, test.Case{Qname: "web.ns1.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeRefused})
	if next.calls != 1 {
		t.Errorf("fallback name before sync: next plugin ran %d times, want 1", next.calls)
	}
	// The clusterset zone says it cannot answer yet.
	if rcode := rcodeOf(m, "web.ns1.svc.clusterset.local.", dns.TypeA); rcode != dns.RcodeServerFailure {
		t.Errorf("clusterset name before sync: rcode %s, want SERVFAIL", dns.RcodeToString[rcode])
	}
}

func TestDegradedServfailsClustersetAndPassesFallback(t *testing.T) {
	m, next := newTestPlugin(t, testImports, testLocal)
	m.degraded.Store(&degradation{message: "the ServiceImport CRD is not installed", infoCode: dns.ExtendedErrorCodeOther, text: "ServiceImport CRD not installed"})
	if !m.Ready() {
		t.Errorf("degraded plugin must report ready")
	}
	if rcode := rcodeOf(m, "web.ns1.svc.clusterset.local.", dns.TypeA); rcode != dns.RcodeServerFailure {
		t.Errorf("clusterset name while degraded: rcode %s, want SERVFAIL", dns.RcodeToString[rcode])
	}
	checkCase(t, m, test.Case{Qname: "web.ns1.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeRefused})
	if next.calls != 1 {
		t.Errorf("fallback name while degraded: next plugin ran %d times, want 1", next.calls)
	}
}

func TestFallthrough(t *testing.T) {
	m, next := newTestPlugin(t, testImports, testLocal)
	m.Fall.SetZonesFromArgs(nil)
	checkCase(t, m, test.Case{Qname: "nope.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeRefused})
	if next.calls != 1 {
		t.Errorf("NXDOMAIN with fallthrough: next plugin ran %d times, want 1", next.calls)
	}
	// An existing name is still answered.
	checkCase(t, m, test.Case{Qname: "web.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []dns.RR{test.A("web.ns1.svc.clusterset.local. 5 IN A 10.42.0.1")}})
	// fallthrough limited to another zone keeps NXDOMAIN here.
	m.Fall.SetZonesFromArgs([]string{"example.org"})
	checkCase(t, m, test.Case{Qname: "nope.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soaOf("clusterset.local.")}})
}

func TestTTL(t *testing.T) {
	m, _ := newTestPlugin(t, testImports, testLocal)
	m.ttl = 30
	checkCase(t, m, test.Case{Qname: "web.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []dns.RR{test.A("web.ns1.svc.clusterset.local. 30 IN A 10.42.0.1")}})
	checkCase(t, m, test.Case{Qname: "nope.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError,
		Ns: []dns.RR{test.SOA("clusterset.local. 30 IN SOA ns.dns.clusterset.local. hostmaster.clusterset.local. 0 7200 1800 86400 30")}})
}

func TestNonASCIINamePassesOn(t *testing.T) {
	m, next := newTestPlugin(t, testImports, testLocal)
	// U+0130 lowers to two runes of another length.
	checkCase(t, m, test.Case{Qname: "\u0130web.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeRefused})
	if next.calls != 1 {
		t.Errorf("next plugin ran %d times, want 1", next.calls)
	}
}

// Other classes: a clusterset name is the plugin's, and refused in any
// class but IN (before, a CH query went on to forward); a fallback or
// reverse name goes on, as the kubernetes plugin would take it.
func TestOtherClasses(t *testing.T) {
	m, next := newTestPlugin(t, testImports, testLocal)
	for _, tc := range []struct {
		name   string
		class  uint16
		passed bool
	}{
		{"web.ns1.svc.clusterset.local.", dns.ClassCHAOS, false},
		{"clusterset.local.", dns.ClassHESIOD, false},
		{"nothing.ns1.svc.clusterset.local.", dns.ClassANY, false},
		{"remote.ns1.svc.cluster.local.", dns.ClassCHAOS, true},
		{"1.0.0.10.in-addr.arpa.", dns.ClassCHAOS, true},
	} {
		r := new(dns.Msg)
		r.SetQuestion(tc.name, dns.TypeA)
		r.Question[0].Qclass = tc.class
		rec := dnstest.NewRecorder(&test.ResponseWriter{})
		calls := next.calls
		m.ServeDNS(context.Background(), rec, r)
		if passed := next.calls > calls; passed != tc.passed {
			t.Errorf("%s class %s: passed on %v, want %v", tc.name, dns.ClassToString[tc.class], passed, tc.passed)
		}
		if !tc.passed && (rec.Msg == nil || rec.Msg.Rcode != dns.RcodeRefused) {
			t.Errorf("%s class %s: %v, want REFUSED", tc.name, dns.ClassToString[tc.class], rec.Msg)
		}
	}
}
