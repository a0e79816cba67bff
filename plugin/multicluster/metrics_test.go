package multicluster

import (
	"testing"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestRequestMetrics(t *testing.T) {
	m, _ := newTestPlugin(t, testImports, testLocal)
	// Tests run without a server in the context: the server label is empty.
	counter := func(kind zoneKind, o outcome) float64 {
		return testutil.ToFloat64(requestsTotal.WithLabelValues("", kind.String(), o.String()))
	}
	tests := []struct {
		name    string
		qtype   uint16
		kind    zoneKind
		outcome outcome
	}{
		{"web.ns1.svc.clusterset.local.", dns.TypeA, zoneClusterset, outcomeAnswer},
		{"web.ns1.svc.clusterset.local.", dns.TypeAAAA, zoneClusterset, outcomeNodata},
		{"nope.ns1.svc.clusterset.local.", dns.TypeA, zoneClusterset, outcomeNXDomain},
		{"web.ns1.svc.cluster.local.", dns.TypeA, zoneFallback, outcomeAnswer},
		{"both.ns2.svc.cluster.local.", dns.TypeA, zoneFallback, outcomeLocal},
		{"_ftp._tcp.web.ns1.svc.cluster.local.", dns.TypeSRV, zoneFallback, outcomePassed},
		{"1.0.42.10.in-addr.arpa.", dns.TypePTR, zoneReverse, outcomeAnswer},
	}
	for _, tc := range tests {
		before := counter(tc.kind, tc.outcome)
		rcodeOf(m, tc.name, tc.qtype)
		if got := counter(tc.kind, tc.outcome); got != before+1 {
			t.Errorf("%s %s: requests_total{zone_kind=%q,outcome=%q} went %v -> %v, want +1", tc.name, dns.TypeToString[tc.qtype], tc.kind, tc.outcome, before, got)
		}
	}

	answers := testutil.ToFloat64(fallbackAnswersTotal.WithLabelValues(""))
	rcodeOf(m, "web.ns1.svc.cluster.local.", dns.TypeA)
	rcodeOf(m, "kubernetes.default.svc.cluster.local.", dns.TypeA) // no import: not counted
	if got := testutil.ToFloat64(fallbackAnswersTotal.WithLabelValues("")); got != answers+1 {
		t.Errorf("fallback_answers_total went %v -> %v, want +1", answers, got)
	}
}
