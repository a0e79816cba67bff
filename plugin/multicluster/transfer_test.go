package multicluster

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/coredns/coredns/plugin/transfer"
	"github.com/miekg/dns"
	discovery "k8s.io/api/discovery/v1"
)

// collect reads a whole transfer.
func collect(t *testing.T, m *Multicluster, zone string, serial uint32) []dns.RR {
	t.Helper()
	ch, err := m.Transfer(zone, serial)
	if err != nil {
		t.Fatalf("Transfer(%s, %d): %v", zone, serial, err)
	}
	var rrs []dns.RR
	for batch := range ch {
		rrs = append(rrs, batch...)
	}
	return rrs
}

func TestTransfer(t *testing.T) {
	m := headlessPlugin(t)
	for _, d := range testImports {
		spec, _, err := newImportSpec(d.fields())
		if err != nil {
			t.Fatal(err)
		}
		m.sources.setImport(spec)
	}
	// Endpoints without a cluster, and a per-cluster copy that must not appear.
	addSlice(t, m, "ns1", "db", "", "db-anon", discovery.AddressTypeIPv4, ep("10.9.0.1", "db-9", nil))
	spec, _, err := newImportSpec(importDef{ns: "ops", name: "web-ns1-east", typ: "ClusterSetIP", ips: []string{"10.42.9.9"}, copy: true}.fields())
	if err != nil {
		t.Fatal(err)
	}
	m.sources.setImport(spec)

	rrs := collect(t, m, "clusterset.local.", 0)
	if len(rrs) < 3 || rrs[0].Header().Rrtype != dns.TypeSOA || rrs[len(rrs)-1].Header().Rrtype != dns.TypeSOA {
		t.Fatalf("transfer does not start and end with the SOA: %v", rrs)
	}
	if got, want := rrs[0].(*dns.SOA).Serial, m.index.serial.Load(); got != want {
		t.Errorf("SOA serial %d, want the index's %d", got, want)
	}

	// Every record is what a query for its name and type answers, and
	// every answer of those queries is in the transfer.
	type question struct {
		name  string
		qtype uint16
	}
	byQuestion := map[question][]string{}
	for _, rr := range rrs[1 : len(rrs)-1] {
		q := question{rr.Header().Name, rr.Header().Rrtype}
		byQuestion[q] = append(byQuestion[q], rr.String())
	}
	for q, transferred := range byQuestion {
		rec := dnstest.NewRecorder(&test.ResponseWriter{})
		r := new(dns.Msg)
		r.SetQuestion(q.name, q.qtype)
		if _, err := m.ServeDNS(context.Background(), rec, r); err != nil || rec.Msg == nil {
			t.Fatalf("%s %s: %v", q.name, dns.TypeToString[q.qtype], err)
		}
		var answered []string
		for _, rr := range rec.Msg.Answer {
			answered = append(answered, rr.String())
		}
		slices.Sort(answered)
		slices.Sort(transferred)
		if !slices.Equal(answered, transferred) {
			t.Errorf("%s %s: transferred\n%s\nqueried\n%s", q.name, dns.TypeToString[q.qtype], strings.Join(transferred, "\n"), strings.Join(answered, "\n"))
		}
	}

	// The names of every import are there (an import without addresses
	// still has its SRV names); per-cluster copies, endpoints without a
	// cluster and headless imports with nothing ready have none.
	names := map[string]bool{}
	for q := range byQuestion {
		names[q.name] = true
	}
	for _, want := range []string{
		"clusterset.local.", "dns-version.clusterset.local.",
		"web.ns1.svc.clusterset.local.", "_http._tcp.web.ns1.svc.clusterset.local.", "_https._tcp.web.ns1.svc.clusterset.local.",
		"dual.ns1.svc.clusterset.local.", "six.ns1.svc.clusterset.local.", "api.ns2.svc.clusterset.local.",
		"db.ns1.svc.clusterset.local.", "_pg._tcp.db.ns1.svc.clusterset.local.",
		"db-0.east.db.ns1.svc.clusterset.local.", "db-0.west.prod.db.ns1.svc.clusterset.local.", "fd00--21.west.prod.db.ns1.svc.clusterset.local.",
	} {
		if !names[want] {
			t.Errorf("%s is not in the transfer", want)
		}
	}
	for name := range names {
		if strings.Contains(name, "ops.svc") || strings.Contains(name, "db-9.") || strings.Contains(name, "empty.ns1") {
			t.Errorf("%s is in the transfer", name)
		}
	}

	// IXFR from the current serial: the SOA alone; from an older one: all.
	current := m.index.serial.Load()
	if rrs := collect(t, m, "clusterset.local.", current); len(rrs) != 1 || rrs[0].Header().Rrtype != dns.TypeSOA {
		t.Errorf("IXFR at the current serial: %v, want the SOA alone", rrs)
	}
	if rrs := collect(t, m, "clusterset.local.", current-10); len(rrs) < 3 {
		t.Errorf("IXFR from an older serial: %d records, want a full transfer", len(rrs))
	}

	// Not ours: reverse, fallback and other zones. Not synced: refused.
	for _, zone := range []string{"in-addr.arpa.", "cluster.local.", "example.org."} {
		if _, err := m.Transfer(zone, 0); err != transfer.ErrNotAuthoritative {
			t.Errorf("Transfer(%s) = %v, want ErrNotAuthoritative", zone, err)
		}
	}
	m.synced.Store(false)
	if _, err := m.Transfer("clusterset.local.", 0); err == nil {
		t.Errorf("Transfer before sync succeeded")
	}
}
