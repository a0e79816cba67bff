package multicluster

import (
	"context"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
)

// TestExplainAnswersAsServeDNS: for every case of the handler tables, the
// answer Explain reports is the one ServeDNS writes, and a query ServeDNS
// passes on is reported as passed on.
func TestExplainAnswersAsServeDNS(t *testing.T) {
	m, next := newTestPlugin(t, testImports, testLocal)
	cases := append([]test.Case{}, clustersetCases...)
	for _, fc := range fallbackCases {
		cases = append(cases, fc.Case)
	}
	for _, tc := range cases {
		r := tc.Msg()
		e := m.Explain(r)
		before := next.calls
		got := serveMsg(t, m, r)
		passed := next.calls > before
		if passed == e.Handled {
			t.Errorf("%s %s: ServeDNS passed it on: %v; Explain says handled: %v", tc.Qname, dns.TypeToString[tc.Qtype], passed, e.Handled)
			continue
		}
		if e.Handled && e.Answer.String() != got.String() {
			t.Errorf("%s %s: Explain's answer\n%s\nServeDNS's\n%s", tc.Qname, dns.TypeToString[tc.Qtype], e.Answer, got)
		}
		if len(e.Steps) == 0 {
			t.Errorf("%s %s: no steps", tc.Qname, dns.TypeToString[tc.Qtype])
			continue
		}
		// Every path through serve records the rule that decided.
		if last := e.Steps[len(e.Steps)-1]; !strings.HasPrefix(last, "decided by: ") || last == "decided by: " {
			t.Errorf("%s %s: the steps end without the rule that decided: %q", tc.Qname, dns.TypeToString[tc.Qtype], last)
		}
	}
}

func serveMsg(t *testing.T, m *Multicluster, r *dns.Msg) *dns.Msg {
	t.Helper()
	rec := dnstest.NewRecorder(&test.ResponseWriter{})
	if _, err := m.ServeDNS(context.Background(), rec, r); err != nil {
		t.Fatal(err)
	}
	return rec.Msg
}

func TestExplainSteps(t *testing.T) {
	m, _ := newTestPlugin(t, testImports, testLocal)
	tests := []struct {
		name  string
		qtype uint16
		want  []string
	}{
		{"web.ns1.svc.clusterset.local.", dns.TypeA, []string{"clusterset zone", "ServiceImport ns1/web, type ClusterSetIP", "address source: spec.ips (10.42.0.1)"}},
		{"both.ns2.svc.cluster.local.", dns.TypeA, []string{"fallback zone", "the local Service ns2/both exists", "local wins"}},
		{"web.ns1.svc.cluster.local.", dns.TypeA, []string{"no local Service ns1/web: the import answers", "spec.ips"}},
		{"noips.ns1.svc.clusterset.local.", dns.TypeA, []string{"no address at all"}},
		{"kubernetes.default.svc.cluster.local.", dns.TypeA, []string{"no ServiceImport default/kubernetes: passed on"}},
		{"example.com.", dns.TypeA, []string{"in no zone of the plugin"}},
		{"1.0.42.10.in-addr.arpa.", dns.TypePTR, []string{"10.42.0.1 is an address of ServiceImport ns1/web"}},
	}
	for _, tc := range tests {
		r := new(dns.Msg)
		r.SetQuestion(tc.name, tc.qtype)
		steps := strings.Join(m.Explain(r).Steps, "\n")
		for _, w := range tc.want {
			if !strings.Contains(steps, w) {
				t.Errorf("%s: steps lack %q:\n%s", tc.name, w, steps)
			}
		}
	}
	m.synced.Store(false)
	r := new(dns.Msg)
	r.SetQuestion("web.ns1.svc.clusterset.local.", dns.TypeA)
	if e := m.Explain(r); !strings.Contains(strings.Join(e.Steps, "\n"), "not synced") || e.Answer.Rcode != dns.RcodeServerFailure {
		t.Errorf("not synced: %v, rcode %d", e.Steps, e.Answer.Rcode)
	}
}

// TestExplainSaysWhy: a name the import does not hold, or a query the
// plugin refuses, has a step that says why, and the rcode it names is the
// one written.
func TestExplainSaysWhy(t *testing.T) {
	m, _ := newTestPlugin(t, testImports, testLocal)
	h := headlessPlugin(t)
	tests := []struct {
		m     *Multicluster
		name  string
		qtype uint16
		rcode int // of the answer; -1: passed on
		want  string
	}{
		{m, "_nope._tcp.web.ns1.svc.clusterset.local.", dns.TypeSRV, dns.RcodeNameError, "the import has no port _nope._tcp (its ports: _http._tcp (80), _https._tcp (443)): NXDOMAIN"},
		{m, "_http._udp.web.ns1.svc.clusterset.local.", dns.TypeSRV, dns.RcodeNameError, "no port _http._udp"},
		{m, "_http._tcp.web.ns1.svc.clusterset.local.", dns.TypeSRV, dns.RcodeSuccess, "the import's port _http._tcp matches"},
		{m, "_http._tcp.web.ns1.svc.clusterset.local.", dns.TypeA, dns.RcodeSuccess, "holds SRV records only: A is NODATA"},
		{m, "west.web.ns1.svc.clusterset.local.", dns.TypeA, dns.RcodeNameError, "west.web.ns1.svc is reserved by the MCS DNS specification"},
		{m, "pod-0.west.web.ns1.svc.clusterset.local.", dns.TypeA, dns.RcodeNameError, "exist only for headless imports, and this one is ClusterSetIP: NXDOMAIN"},
		{m, "clusterset.local.", dns.TypeAXFR, dns.RcodeRefused, "a zone transfer (AXFR) reached the plugin"},
		{m, "clusterset.local.", dns.TypeIXFR, dns.RcodeRefused, "REFUSED"},
		{m, "nope.ns1.svc.clusterset.local.", dns.TypeA, dns.RcodeNameError, "no ServiceImport ns1/nope: NXDOMAIN"},
		{m, "nope.svc.clusterset.local.", dns.TypeA, dns.RcodeNameError, "no ServiceImport in namespace nope: NXDOMAIN"},
		{m, "ns1.svc.clusterset.local.", dns.TypeA, dns.RcodeSuccess, "namespace ns1 has imports"},
		{m, "a.b.c.d.e.f.clusterset.local.", dns.TypeA, dns.RcodeNameError, "not a name of the MCS DNS schema"},
		{m, "web.ns1.svc.clusterset.local.", dns.TypeTXT, dns.RcodeSuccess, "TXT is NODATA"},
		// In the fallback zone a name the import lacks is passed on, and
		// the step says so.
		{m, "_nope._tcp.web.ns1.svc.cluster.local.", dns.TypeSRV, -1, "does not exist in the import either: passed on"},
		{m, "west.web.ns1.svc.cluster.local.", dns.TypeA, -1, "reserved by the MCS DNS specification"},
		{h, "db-0.east.db.ns1.svc.clusterset.local.", dns.TypeA, dns.RcodeSuccess, "db-0.east is a ready endpoint"},
		{h, "db-7.east.db.ns1.svc.clusterset.local.", dns.TypeA, dns.RcodeNameError, "no ready endpoint named db-7 in cluster east of the headless import: NXDOMAIN"},
		{h, "x.east.empty.ns1.svc.clusterset.local.", dns.TypeA, dns.RcodeNameError, "the headless import has no ready endpoint"},
	}
	for _, tc := range tests {
		r := new(dns.Msg)
		r.SetQuestion(tc.name, tc.qtype)
		e := tc.m.Explain(r)
		steps := strings.Join(e.Steps, "\n")
		if !strings.Contains(steps, tc.want) {
			t.Errorf("%s %s: steps lack %q:\n%s", tc.name, dns.TypeToString[tc.qtype], tc.want, steps)
		}
		switch {
		case tc.rcode < 0 && e.Handled:
			t.Errorf("%s %s: answered %s, want passed on", tc.name, dns.TypeToString[tc.qtype], dns.RcodeToString[e.Answer.Rcode])
		case tc.rcode >= 0 && (!e.Handled || e.Answer.Rcode != tc.rcode):
			t.Errorf("%s %s: handled %v, answer %v; want %s", tc.name, dns.TypeToString[tc.qtype], e.Handled, e.Answer, dns.RcodeToString[tc.rcode])
		}
		// An NXDOMAIN or REFUSED has a step that names it.
		if e.Handled && e.Answer.Rcode != dns.RcodeSuccess && !strings.Contains(steps, dns.RcodeToString[e.Answer.Rcode]) {
			t.Errorf("%s %s: answer %s, no step says why:\n%s", tc.name, dns.TypeToString[tc.qtype], dns.RcodeToString[e.Answer.Rcode], steps)
		}
		if strings.Contains(steps, "the import answers") && e.Handled && e.Answer.Rcode == dns.RcodeNameError {
			t.Errorf("%s: the steps say the import answers, and it is NXDOMAIN:\n%s", tc.name, steps)
		}
	}
}

// TestExplainDegraded: a degraded plugin is never "not synced": the steps
// say degraded, and why.
func TestExplainDegraded(t *testing.T) {
	m, _ := newTestPlugin(t, testImports, testLocal)
	m.synced.Store(false) // a degraded plugin never syncs
	m.degraded.Store(&degradation{message: "the ServiceImport CRD is not installed", infoCode: dns.ExtendedErrorCodeOther, text: "ServiceImport CRD not installed"})
	r := new(dns.Msg)
	r.SetQuestion("web.ns1.svc.clusterset.local.", dns.TypeA)
	e := m.Explain(r)
	steps := strings.Join(e.Steps, "\n")
	if !strings.Contains(steps, "the plugin is degraded: the ServiceImport CRD is not installed") || strings.Contains(steps, "not synced") {
		t.Errorf("degraded: %s", steps)
	}
	if !e.Handled || e.Answer.Rcode != dns.RcodeServerFailure {
		t.Errorf("degraded: want SERVFAIL, got %v", e.Answer)
	}
}
