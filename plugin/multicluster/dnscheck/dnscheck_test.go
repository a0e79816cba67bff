package dnscheck

import (
	"testing"

	"github.com/miekg/dns"
)

func rr(t *testing.T, s string) dns.RR {
	t.Helper()
	r, err := dns.NewRR(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDistinct(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  *dns.Msg
		ok   bool
	}{
		{"empty", new(dns.Msg), true},
		{"two addresses", &dns.Msg{Answer: []dns.RR{rr(t, "a.z. 5 IN A 10.0.0.1"), rr(t, "a.z. 5 IN A 10.0.0.2")}}, true},
		{"same address, other names", &dns.Msg{Answer: []dns.RR{rr(t, "a.z. 5 IN A 10.0.0.1"), rr(t, "b.z. 5 IN A 10.0.0.1")}}, true},
		{"same address twice", &dns.Msg{Answer: []dns.RR{rr(t, "a.z. 5 IN A 10.0.0.1"), rr(t, "a.z. 5 IN A 10.0.0.1")}}, false},
		{"TTL and case do not make a record new", &dns.Msg{Extra: []dns.RR{rr(t, "a.z. 5 IN A 10.0.0.1"), rr(t, "A.z. 30 IN A 10.0.0.1")}}, false},
		{"SRV twice", &dns.Msg{Answer: []dns.RR{rr(t, "s.z. 5 IN SRV 0 50 42 s.z."), rr(t, "s.z. 5 IN SRV 0 50 42 s.z.")}}, false},
		{"SRV, other ports", &dns.Msg{Answer: []dns.RR{rr(t, "s.z. 5 IN SRV 0 50 42 s.z."), rr(t, "s.z. 5 IN SRV 0 50 43 s.z.")}}, true},
		{"same record in two sections", &dns.Msg{Answer: []dns.RR{rr(t, "a.z. 5 IN A 10.0.0.1")}, Extra: []dns.RR{rr(t, "a.z. 5 IN A 10.0.0.1")}}, true},
	} {
		if err := Distinct(tc.msg); (err == nil) != tc.ok {
			t.Errorf("%s: Distinct = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
