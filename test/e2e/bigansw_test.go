package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"
	discovery "k8s.io/api/discovery/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// TestBigHeadlessImport: a dual-stack headless import of 10,000 endpoints
// per family (10 clusters, a StatefulSet's host names). Over UDP the answers
// are truncated with TC; over TCP they fit a message without TC, A and AAAA
// the same count of the same endpoints, SRV whole targets with their
// addresses; no query gets SERVFAIL.
func TestBigHeadlessImport(t *testing.T) {
	s := startServer(t, corefileWith, true)
	ns := namespace(t, "bigansw")
	si := newImport(ns, "db")
	si.Spec.Type = mcsv1beta1.Headless
	createImport(t, si)
	for c := range 10 {
		cluster := fmt.Sprintf("c%d", c)
		var v4, v6 []discovery.Endpoint
		for i := range 1000 {
			host := fmt.Sprintf("db-%d", i)
			v4 = append(v4, endpoint(host, fmt.Sprintf("10.%d.%d.%d", 100+c, i>>8, i&255), nil))
			v6 = append(v6, endpoint(host, fmt.Sprintf("fd00::%x:%d", c+1, i), nil))
		}
		createSlice(t, ns, "db", cluster, "db-"+cluster+"-v4", discovery.AddressTypeIPv4, v4...)
		createSlice(t, ns, "db", cluster, "db-"+cluster+"-v6", discovery.AddressTypeIPv6, v6...)
	}
	name := "db." + ns + ".svc.clusterset.local."
	// Every slice is served once the last cluster's endpoints are named.
	expectAddresses(t, s, "db-999.c9."+name, dns.TypeAAAA, 30*time.Second, "fd00::a:999")

	hosts := map[uint16][]string{}
	for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeSRV} {
		udp := s.query(t, "udp", name, qtype)
		if udp.Rcode != dns.RcodeSuccess || !udp.Truncated {
			t.Errorf("%s over UDP: %s, TC %v; want NOERROR with TC", dns.TypeToString[qtype], dns.RcodeToString[udp.Rcode], udp.Truncated)
		}
		tcp := s.query(t, "tcp", name, qtype)
		tcp.Compress = true
		if tcp.Rcode != dns.RcodeSuccess || tcp.Truncated || len(tcp.Answer) == 0 || tcp.Len() > dns.MaxMsgSize {
			t.Errorf("%s over TCP: %s, TC %v, %d records, %d octets; want NOERROR, no TC, a subset that fits", dns.TypeToString[qtype], dns.RcodeToString[tcp.Rcode], tcp.Truncated, len(tcp.Answer), tcp.Len())
		}
		t.Logf("%s: UDP %d records (TC), TCP %d records, %d additional, %d octets", dns.TypeToString[qtype], len(udp.Answer), len(tcp.Answer), len(tcp.Extra), tcp.Len())
		for _, rr := range tcp.Answer {
			// Endpoint i of cluster c: 10.100+c.x.y and fd00::c+1:i.
			var c, hi, lo, i int
			switch a := rr.(type) {
			case *dns.A:
				fmt.Sscanf(a.A.String(), "10.%d.%d.%d", &c, &hi, &lo)
				hosts[qtype] = append(hosts[qtype], fmt.Sprintf("%d/%d", c-100, hi<<8|lo))
			case *dns.AAAA:
				fmt.Sscanf(a.AAAA.String(), "fd00::%x:%d", &c, &i)
				hosts[qtype] = append(hosts[qtype], fmt.Sprintf("%d/%d", c-1, i))
			}
		}
		if qtype == dns.TypeSRV {
			targets := map[string]bool{}
			for _, rr := range tcp.Answer {
				targets[rr.(*dns.SRV).Target] = true
			}
			for _, rr := range tcp.Extra {
				if rr.Header().Rrtype != dns.TypeOPT && !targets[rr.Header().Name] {
					t.Errorf("SRV over TCP: additional %s of no target answered", rr)
				}
			}
		}
	}
	if a, aaaa := hosts[dns.TypeA], hosts[dns.TypeAAAA]; fmt.Sprint(a) != fmt.Sprint(aaaa) {
		t.Errorf("A and AAAA over TCP answer different endpoints: %d and %d", len(a), len(aaaa))
	}
}
