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
