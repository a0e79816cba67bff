package multicluster

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
	discovery "k8s.io/api/discovery/v1"

	"github.com/coredns-mcs/coredns-mcs/plugin/multicluster/dnscheck"
)

// bigHeadlessPlugin serves a dual-stack headless import of 10,000 endpoints
// per family from 10 clusters, each endpoint a host name (a StatefulSet's)
// with one address of each family.
func bigHeadlessPlugin(t *testing.T) *Multicluster {
	t.Helper()
	m, _ := newTestPlugin(t, []importDef{{ns: "big", name: "db", typ: "Headless"}}, fakeLocal{})
	for c := range 10 {
		cluster := fmt.Sprintf("c%d", c)
		var v4, v6 []discovery.Endpoint
		for i := range 1000 {
			host := fmt.Sprintf("db-%d", i)
			v4 = append(v4, ep(fmt.Sprintf("10.%d.%d.%d", c, i>>8, i&255), host, nil))
			v6 = append(v6, ep(fmt.Sprintf("fd00::%d:%d", c+1, i), host, nil))
		}
		addSlice(t, m, "big", "db", cluster, "db-"+cluster+"-v4", discovery.AddressTypeIPv4, v4...)
		addSlice(t, m, "big", "db", cluster, "db-"+cluster+"-v6", discovery.AddressTypeIPv6, v6...)
	}
	return m
}

// serve asks m over TCP, where the answer is what a TCP message carries.
func serve(t *testing.T, m *Multicluster, name string, qtype uint16) *dns.Msg {
	t.Helper()
	rec := dnstest.NewRecorder(&test.ResponseWriter{TCP: true})
	r := new(dns.Msg)
	r.SetQuestion(name, qtype)
	r.SetEdns0(4096, false)
	if _, err := m.ServeDNS(context.Background(), rec, r); err != nil || rec.Msg == nil {
		t.Fatalf("%s %s: %v", name, dns.TypeToString[qtype], err)
	}
	return rec.Msg
}

// TestBigHeadlessAnswersFitTCP: the answers of a headless import of 10,000
// endpoints fit a TCP message, without TC: A and AAAA the same count of the
// same endpoints (host names), SRV whole targets with the addresses of each
// target kept; each cut is counted.
func TestBigHeadlessAnswersFitTCP(t *testing.T) {
	m := bigHeadlessPlugin(t)
	const name = "db.big.svc.clusterset.local."
	before := testutil.ToFloat64(cappedAnswersTotal.WithLabelValues("", "AAAA"))
	addressesOf := func(r *dns.Msg) []string { return dnscheck.Addresses(r.Answer) }
	a, aaaa := serve(t, m, name, dns.TypeA), serve(t, m, name, dns.TypeAAAA)
	for _, r := range []*dns.Msg{a, aaaa} {
		if r.Rcode != dns.RcodeSuccess || r.Truncated || len(r.Answer) != maxAnswerRecords {
			t.Errorf("%s: %s, TC %v, %d records; want NOERROR, no TC, %d records", dns.TypeToString[r.Question[0].Qtype], dns.RcodeToString[r.Rcode], r.Truncated, len(r.Answer), maxAnswerRecords)
		}
		r.Compress = true
		if n := r.Len(); n > dns.MaxMsgSize {
			t.Errorf("%s: %d octets, over a TCP message", dns.TypeToString[r.Question[0].Qtype], n)
		}
	}
	// The same endpoints: 10.c.x.y and fd00::c+1:i are endpoint i of cluster c.
	v4, v6 := addressesOf(a), addressesOf(aaaa)
	for i := range min(len(v4), len(v6)) {
		var c4, c6, hi, lo, i6 int
		fmt.Sscanf(v4[i], "10.%d.%d.%d", &c4, &hi, &lo)
		fmt.Sscanf(strings.ReplaceAll(v6[i], ":", " "), "fd00 %x %x", &c6, &i6)
		if c4+1 != c6 || hi<<8|lo != hexAsDecimal(i6) {
			t.Fatalf("record %d: A %s and AAAA %s are not one endpoint's", i, v4[i], v6[i])
		}
	}
	if got := testutil.ToFloat64(cappedAnswersTotal.WithLabelValues("", "AAAA")) - before; got != 1 {
		t.Errorf("capped AAAA answers counted %v, want 1", got)
	}

	srv := serve(t, m, name, dns.TypeSRV)
	srv.Compress = true
	if srv.Rcode != dns.RcodeSuccess || srv.Truncated || len(srv.Answer) == 0 || srv.Len() > dns.MaxMsgSize {
		t.Fatalf("SRV: %s, TC %v, %d records, %d octets", dns.RcodeToString[srv.Rcode], srv.Truncated, len(srv.Answer), srv.Len())
	}
	targets := map[string]int{}
	for _, rr := range srv.Answer {
		targets[rr.(*dns.SRV).Target] = 0
	}
	for _, rr := range srv.Extra {
		if _, ok := targets[rr.Header().Name]; !ok {
			t.Fatalf("additional record %s of no target answered", rr)
		}
		targets[rr.Header().Name]++
	}
	for target, n := range targets {
		if n != 2 {
			t.Errorf("target %s has %d addresses in the additional section, want its A and AAAA", target, n)
		}
	}
	t.Logf("A %d, AAAA %d, SRV %d records (%d additional, %d octets)", len(a.Answer), len(aaaa.Answer), len(srv.Answer), len(srv.Extra), srv.Len())
}

// hexAsDecimal reads the digits of a number printed in decimal and parsed
// as hexadecimal (fd00::c+1:i above writes i in decimal).
func hexAsDecimal(x int) int {
	var n int
	fmt.Sscanf(fmt.Sprintf("%x", x), "%d", &n)
	return n
}

// Small answers are never measured nor cut.
func TestSmallAnswersUncapped(t *testing.T) {
	a := answer{answer: make([]dns.RR, uncheckedRecords)}
	if _, cut := capAnswer(new(dns.Msg), a); cut {
		t.Error("an answer of uncheckedRecords records was cut")
	}
}
