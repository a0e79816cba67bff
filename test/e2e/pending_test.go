package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
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

// TestEndpointSliceObjectsAbsent: mcs-api v0.5.2's
// status.endpointSliceObjects, written through the status subresource of
// the real API server with v0.5.2's CRDs. An import without an address
// whose controller may still write EndpointSlices (Present) is pending:
// its denial's SOA minimum (the plugin writes the TTL alike) is at most
// 1 s. Once the controller says it writes none (Absent), the denial is
// final and carries the zone's, in the clusterset and the fallback zone,
// and the gauge counts it.
func TestEndpointSliceObjectsAbsent(t *testing.T) {
	s := startStandalone(t, shippedStandaloneCorefile(t))
	ns := namespace(t, "sliceobjects")
	ctx := context.Background()
	headless := newImport(ns, "db")
	headless.Spec.Type = mcsv1beta1.Headless
	imports := []*mcsv1beta1.ServiceImport{createImport(t, headless), createImport(t, newImport(ns, "web"))}
	names := map[string]int{ // the name, and its rcode
		"db." + ns + ".svc.clusterset.local.":  dns.RcodeNameError,
		"web." + ns + ".svc.clusterset.local.": dns.RcodeSuccess,
		"web." + ns + ".svc.cluster.local.":    dns.RcodeSuccess,
	}
	// soaMinimums waits until every name answers its rcode with an SOA
	// whose minimum satisfies ok. The minimum, not the TTL: the server's
	// cache counts a record's TTL down (and keeps a denial 5 s at least),
	// and leaves the minimum as the plugin wrote it.
	soaMinimums := func(what string, ok func(ttl uint32) bool) {
		t.Helper()
		poll.Eventually(t, propagation+10*time.Second, what, func() (bool, string) {
			for name, rcode := range names {
				r := s.query(t, "udp", name, dns.TypeA)
				if r.Rcode != rcode || len(r.Answer) != 0 || len(r.Ns) != 1 {
					return false, fmt.Sprintf("%s: %s %v", name, dns.RcodeToString[r.Rcode], r.Answer)
				}
				soa, isSOA := r.Ns[0].(*dns.SOA)
				if !isSOA || !ok(soa.Minttl) {
					return false, fmt.Sprintf("%s: authority %v", name, r.Ns)
				}
			}
			return true, ""
		})
	}
	const gauge = "coredns_multicluster_imports_endpointslices_absent"
	for _, status := range []mcsv1beta1.EndpointSliceObjectsStatus{mcsv1beta1.EndpointSliceObjectsPresent, mcsv1beta1.EndpointSliceObjectsAbsent} {
		for i, si := range imports {
			si, err := mcs.MulticlusterV1beta1().ServiceImports(ns).Get(ctx, si.Name, meta.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			si.Status.EndpointSliceObjects = status
			if imports[i], err = mcs.MulticlusterV1beta1().ServiceImports(ns).UpdateStatus(ctx, si, meta.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if status == mcsv1beta1.EndpointSliceObjectsPresent {
			soaMinimums("status Present: pending denials, SOA minimum at most 1 s", func(ttl uint32) bool { return ttl <= 1 })
			if got := s.metrics.metric(t, gauge, ""); got != 0 {
				t.Errorf("status Present: %s = %v, want 0", gauge, got)
			}
			continue
		}
		soaMinimums("status Absent: final denials, the zone's SOA minimum", func(ttl uint32) bool { return ttl > 1 })
		poll.Eventually(t, propagation, gauge+" = 2", func() (bool, string) {
			got := s.metrics.metric(t, gauge, "")
			return got == 2, fmt.Sprint(got)
		})
	}
}

// TestPendingNotHeldByCache: the shipped standalone Corefile's cache keeps
// a pending denial for its 1 s TTL, not cache's default floor of 5 s
// (manifests/standalone: denial 10000 5 1), so that an import answers
// within a second of its address. A denial served from the cache says how
// long it is still kept: its SOA TTL, at most 1 s.
func TestPendingNotHeldByCache(t *testing.T) {
	s := startStandalone(t, shippedStandaloneCorefile(t))
	ns := namespace(t, "pendingcache")
	ctx := context.Background()
	si := createImport(t, newImport(ns, "web"))
	name := "web." + ns + ".svc.clusterset.local."
	poll.Eventually(t, propagation+10*time.Second, name+": a pending NODATA", func() (bool, string) {
		r := s.query(t, "udp", name, dns.TypeA)
		_, minttl, err := negativeTTL(r)
		return err == nil && minttl <= 1, fmt.Sprint(r)
	})
	// The same question again, from the cache while it holds the answer.
	for range 3 {
		r := s.query(t, "udp", name, dns.TypeA)
		if ttl, _, err := negativeTTL(r); err != nil || ttl > 1 {
			t.Fatalf("%s again: SOA TTL %d (%v): the cache holds the pending denial longer than 1 s\n%v", name, ttl, err, r)
		}
	}
	si.Spec.IPs = []string{"10.42.7.2"}
	if _, err := mcs.MulticlusterV1beta1().ServiceImports(ns).Update(ctx, si, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	expectAddresses(t, s.server, name, dns.TypeA, propagation+5*time.Second, "10.42.7.2")
	t.Logf("the address answered %s after the update", time.Since(began).Round(10*time.Millisecond))
}
