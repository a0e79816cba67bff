package e2e

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"
)

// corefileTransfer is the kube-system Corefile with the transfer plugin
// serving the clusterset zone.
var corefileTransfer = strings.Replace(corefileWith, "    multicluster ", "    transfer clusterset.local {\n        to *\n    }\n    multicluster ", 1)

// TestZoneTransfer: `dig AXFR clusterset.local` lists every name the zone
// answers, each with what a query for it answers, between two SOAs; a
// CoreDNS secondary pulls the zone and answers a clusterset name from it.
func TestZoneTransfer(t *testing.T) {
	dig := digPath(t)
	s := startServer(t, corefileTransfer, true)
	ns := namespace(t, "axfr")
	createImport(t, newImport(ns, "web", "10.42.20.1", "fd00::20:1"))
	db := newImport(ns, "db")
	db.Spec.Type = "Headless"
	createImport(t, db)
	createSlice(t, ns, "db", "east", "db-east", discovery.AddressTypeIPv4, endpoint("db-0", "10.244.20.1", nil), endpoint("", "10.244.20.2", ptr.To(true)))
	createSlice(t, ns, "db", "west.prod", "db-west", discovery.AddressTypeIPv4, endpoint("db-0", "10.245.20.1", nil))
	expectAddresses(t, s, "db."+ns+".svc.clusterset.local.", dns.TypeA, propagation, "10.244.20.1", "10.244.20.2", "10.245.20.1")

	host, port, _ := strings.Cut(s.addr, ":")
	out, err := exec.Command(dig, "@"+host, "-p", port, "+time=5", "+tries=1", "+nocmd", "+nostats", "AXFR", "clusterset.local").CombinedOutput()
	if err != nil {
		t.Fatalf("dig AXFR: %v\n%s", err, out)
	}
	var records []dns.RR
	for _, line := range strings.Split(string(out), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, ";") {
			continue
		}
		rr, err := dns.NewRR(line)
		if err != nil {
			t.Fatalf("dig AXFR printed %q: %v", line, err)
		}
		records = append(records, rr)
	}
	if len(records) < 3 || records[0].Header().Rrtype != dns.TypeSOA || records[len(records)-1].Header().Rrtype != dns.TypeSOA {
		t.Fatalf("dig AXFR: want the SOA first and last:\n%s", out)
	}
	t.Logf("dig AXFR clusterset.local: %d records", len(records))

	// Every name of the imports is there, and each holds what a query for
	// it answers.
	type question struct {
		name  string
		qtype uint16
	}
	transferred := map[question][]string{}
	for _, rr := range records[1 : len(records)-1] {
		q := question{rr.Header().Name, rr.Header().Rrtype}
		transferred[q] = append(transferred[q], strings.Join(strings.Fields(rr.String()), " "))
	}
	zone := ns + ".svc.clusterset.local."
	for _, want := range []question{
		{"web." + zone, dns.TypeA}, {"web." + zone, dns.TypeAAAA}, {"web." + zone, dns.TypeSRV}, {"_http._tcp.web." + zone, dns.TypeSRV},
		{"db." + zone, dns.TypeA}, {"db." + zone, dns.TypeSRV}, {"_https._tcp.db." + zone, dns.TypeSRV},
		{"db-0.east.db." + zone, dns.TypeA}, {"10-244-20-2.east.db." + zone, dns.TypeA}, {"db-0.west.prod.db." + zone, dns.TypeA},
		{"dns-version.clusterset.local.", dns.TypeTXT}, {"clusterset.local.", dns.TypeNS},
	} {
		if _, ok := transferred[want]; !ok {
			t.Errorf("%s %s is not in the transfer", want.name, dns.TypeToString[want.qtype])
		}
	}
	for q, rrs := range transferred {
		if !strings.HasSuffix(q.name, zone) {
			continue // other tests' imports, which may change meanwhile
		}
		r := s.query(t, "tcp", q.name, q.qtype)
		if got, want := presentation(r.Answer), sorted(rrs); !slices.Equal(got, want) {
			t.Errorf("%s %s: transferred\n%s\nqueried\n%s", q.name, dns.TypeToString[q.qtype], strings.Join(want, "\n"), strings.Join(got, "\n"))
		}
	}

	// A secondary pulls the zone at start-up and answers from it.
	secondary := startServer(t, fmt.Sprintf(`clusterset.local:{{.Port}} {
    ready 127.0.0.1:{{.ReadyPort}}
    secondary {
        transfer from %s
    }
}
`, s.addr), true)
	expectAddresses(t, secondary, "web."+zone, dns.TypeA, 10*time.Second, "10.42.20.1")
	expectAddresses(t, secondary, "web."+zone, dns.TypeAAAA, propagation, "fd00::20:1")
	expectAddresses(t, secondary, "db-0.west.prod.db."+zone, dns.TypeA, propagation, "10.245.20.1")
}
