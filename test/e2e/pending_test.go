package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/miekg/dns"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPendingImportNegativeTTL: controllers write a ServiceImport first and
// its spec.ips (or the derived Service) after. Until then the import's name
// answers NODATA whose negative TTL (the SOA's TTL and minimum, RFC 2308) is
// at most 1 s, over UDP and TCP, in the clusterset and the fallback zone, so
// that no resolver caches the gap; an ordinary NODATA (the other family of
// an import that has an address) keeps the zone's TTL. Once spec.ips is
// written, the name answers it.
func TestPendingImportNegativeTTL(t *testing.T) {
	s := startServer(t, corefileWith, true)
	ns := namespace(t, "pending")
	ctx := context.Background()
	clusterset := "web." + ns + ".svc.clusterset.local."
	local := "web." + ns + ".svc.cluster.local."

	si := createImport(t, newImport(ns, "web"))
	expectRcode(t, s, clusterset, dns.TypeA, propagation, dns.RcodeSuccess)
	for _, name := range []string{clusterset, local} {
		for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA} {
			for _, proto := range []string{"udp", "tcp"} {
				r := s.query(t, proto, name, qtype)
				ttl, minttl, err := negativeTTL(r)
				if err != nil || ttl > 1 || minttl > 1 {
					t.Errorf("%s %s over %s, an import without an address: SOA TTL %d minimum %d (%v), want at most 1 s\n%v", name, dns.TypeToString[qtype], proto, ttl, minttl, err, r)
				}
			}
		}
	}

	si.Spec.IPs = []string{"10.42.7.1"}
	if _, err := mcs.MulticlusterV1beta1().ServiceImports(ns).Update(ctx, si, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectAddresses(t, s, clusterset, dns.TypeA, propagation, "10.42.7.1")
	expectAddresses(t, s, local, dns.TypeA, propagation, "10.42.7.1")
	// AAAA of an IPv4 import is an ordinary NODATA: the zone's TTL.
	r := s.query(t, "udp", clusterset, dns.TypeAAAA)
	if ttl, minttl, err := negativeTTL(r); err != nil || ttl <= 1 || minttl <= 1 {
		t.Errorf("%s AAAA of an IPv4 import: SOA TTL %d minimum %d (%v), want the zone's TTL\n%v", clusterset, ttl, minttl, err, r)
	}
}

// negativeTTL returns the TTL and minimum of the SOA of a NODATA answer.
func negativeTTL(r *dns.Msg) (ttl, minttl uint32, err error) {
	if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 || len(r.Ns) != 1 {
		return 0, 0, fmt.Errorf("not a NODATA answer with one SOA")
	}
	soa, ok := r.Ns[0].(*dns.SOA)
	if !ok {
		return 0, 0, fmt.Errorf("authority holds %v, not an SOA", r.Ns[0])
	}
	return soa.Hdr.Ttl, soa.Minttl, nil
}
