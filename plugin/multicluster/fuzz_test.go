package multicluster

import (
	"context"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
)

// FuzzServeDNS feeds arbitrary wire messages through the plugin: it must
// never panic, and must either write a reply that packs, or pass the query on.
func FuzzServeDNS(f *testing.F) {
	seeds := []struct {
		name  string
		qtype uint16
	}{
		{"web.ns1.svc.clusterset.local.", dns.TypeA},
		{"_http._tcp.web.ns1.svc.cluster.local.", dns.TypeSRV},
		{"db-0.west.prod.db.ns1.svc.clusterset.local.", dns.TypeAAAA},
		{"1.0.42.10.in-addr.arpa.", dns.TypePTR},
		{"clusterset.local.", dns.TypeSOA},
		{"dns-version.clusterset.local.", dns.TypeTXT},
		{"WEB.NS1.SVC.CLUSTER.LOCAL.", dns.TypeANY},
	}
	for _, s := range seeds {
		m := new(dns.Msg)
		m.SetQuestion(s.name, s.qtype)
		m.SetEdns0(4096, true)
		wire, err := m.Pack()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(wire)
	}
	m, _ := newTestPlugin(f, testImports, testLocal)
	f.Fuzz(func(t *testing.T, wire []byte) {
		r := new(dns.Msg)
		if err := r.Unpack(wire); err != nil {
			return
		}
		next := &nextHandler{}
		m.Next = next
		rec := dnstest.NewRecorder(&test.ResponseWriter{})
		rcode, _ := m.ServeDNS(context.Background(), rec, r)
		if next.calls > 0 {
			return
		}
		if rec.Msg == nil {
			if rcode == dns.RcodeServerFailure {
				return // the server writes it
			}
			t.Fatalf("no reply written and not passed on (rcode %d) for %v", rcode, r.Question)
		}
		if _, err := rec.Msg.Pack(); err != nil {
			t.Fatalf("reply does not pack: %v\n%v", err, rec.Msg)
		}
	})
}
