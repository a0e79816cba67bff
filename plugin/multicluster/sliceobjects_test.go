package multicluster

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
)

// TestEndpointSliceObjectsDecoded: status.endpointSliceObjects is read in
// both API versions; a value of another JSON type does not fail the
// import, and reads as that text.
func TestEndpointSliceObjectsDecoded(t *testing.T) {
	for _, c := range []struct {
		version, status, want string
	}{
		{"v1beta1", `{"endpointSliceObjects":"Absent"}`, "Absent"},
		{"v1alpha1", `{"endpointSliceObjects":"Present"}`, "Present"},
		{"v1beta1", `{}`, ""},
		{"v1beta1", `{"endpointSliceObjects":null}`, ""},
		{"v1beta1", `{"endpointSliceObjects":7}`, "7"},
		{"v1beta1", `{"endpointSliceObjects":{"a":1},"conditions":[{"lastTransitionTime":"` + badTime + `"}]}`, `{"a":1}`},
	} {
		raw := `{"apiVersion":"multicluster.x-k8s.io/` + c.version + `","kind":"ServiceImport","metadata":{"name":"db","namespace":"ns1","resourceVersion":"3"},` +
			`"spec":{"type":"Headless"},"status":` + c.status + `}`
		var o importObject
		if err := json.Unmarshal([]byte(raw), &o); err != nil {
			t.Fatalf("%s: %v", c.status, err)
		}
		if o.err != nil || o.unusable != nil {
			t.Fatalf("%s: the import failed to decode: %v %v", c.status, o.err, o.unusable)
		}
		if got := o.fields().endpointSliceObjects; got != c.want {
			t.Errorf("%s %s: endpointSliceObjects %q, want %q", c.version, c.status, got, c.want)
		}
	}
}

// TestEndpointSliceObjectsProblems: Absent sets the view's flag, Present
// and unset do not, and any other value is reported and read as unset.
func TestEndpointSliceObjectsProblems(t *testing.T) {
	for value, want := range map[string]bool{"Absent": true, "Present": false, "": false, "absent": false, "7": false} {
		s, problems, err := newImportSpec(importDef{ns: "ns1", name: "db", typ: "Headless", slices: value}.fields())
		if err != nil {
			t.Fatal(err)
		}
		if s.slicesAbsent != want {
			t.Errorf("%q: slicesAbsent %v, want %v", value, s.slicesAbsent, want)
		}
		reported := strings.Contains(strings.Join(problems, "; "), "status.endpointSliceObjects")
		if known := value == "" || value == "Absent" || value == "Present"; reported == known {
			t.Errorf("%q: reported %v: %v", value, reported, problems)
		}
	}
}

// slicesStatusPlugin serves imports without addresses whose controllers
// say they write EndpointSlices (Present), say nothing, or say they write
// none (Absent).
func slicesStatusPlugin(t *testing.T) *Multicluster {
	t.Helper()
	m, _ := newTestPlugin(t, []importDef{
		{ns: "ns1", name: "hl-present", typ: "Headless", slices: "Present"},
		{ns: "ns1", name: "hl-unset", typ: "Headless"},
		{ns: "ns1", name: "hl-absent", typ: "Headless", slices: "Absent"},
		{ns: "ns1", name: "ip-present", typ: "ClusterSetIP", slices: "Present"},
		{ns: "ns1", name: "ip-absent", typ: "ClusterSetIP", slices: "Absent"},
		{ns: "ns1", name: "ip-absent-ips", typ: "ClusterSetIP", ips: []string{"10.42.0.7"}, slices: "Absent"},
	}, fakeLocal{})
	return m
}

// TestEndpointSliceObjectsAnswers: an import without an address is
// pending (SOA TTL and minimum pendingTTL) while its controller may still
// write EndpointSlices, and not when it says it writes none: its denial
// carries the zone's own TTL. spec.ips answer either way.
func TestEndpointSliceObjectsAnswers(t *testing.T) {
	m := slicesStatusPlugin(t)
	z := "clusterset.local."
	for _, tc := range []test.Case{
		{Qname: "hl-present.ns1.svc." + z, Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{pendingSOAOf(z)}},
		{Qname: "hl-unset.ns1.svc." + z, Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{pendingSOAOf(z)}},
		{Qname: "hl-absent.ns1.svc." + z, Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soaOf(z)}},
		{Qname: "_pg._tcp.hl-absent.ns1.svc." + z, Qtype: dns.TypeSRV, Rcode: dns.RcodeNameError, Ns: []dns.RR{soaOf(z)}},
		{Qname: "ip-present.ns1.svc." + z, Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Ns: []dns.RR{pendingSOAOf(z)}},
		{Qname: "ip-absent.ns1.svc." + z, Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Ns: []dns.RR{soaOf(z)}},
		{Qname: "ip-absent.ns1.svc." + z, Qtype: dns.TypeAAAA, Rcode: dns.RcodeSuccess, Ns: []dns.RR{soaOf(z)}},
		{Qname: "ip-absent-ips.ns1.svc." + z, Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, Answer: []dns.RR{test.A("ip-absent-ips.ns1.svc." + z + " 5 IN A 10.42.0.7")}},
	} {
		t.Run(dns.TypeToString[tc.Qtype]+" "+tc.Qname, func(t *testing.T) { checkCase(t, m, tc) })
	}
}

// TestEndpointSliceObjectsExplained: explain says why a denial is final
// or pending, from the decision the query path recorded.
func TestEndpointSliceObjectsExplained(t *testing.T) {
	m := slicesStatusPlugin(t)
	for name, want := range map[string]string{
		"hl-absent.ns1.svc.clusterset.local.":  "its controller writes no EndpointSlices for it (status.endpointSliceObjects: Absent): the service has no names, and none are on their way",
		"hl-present.ns1.svc.clusterset.local.": "the headless import has no ready endpoint: the service has no names (NXDOMAIN, with a TTL of at most 1 s",
		"ip-absent.ns1.svc.clusterset.local.":  "no address at all, and its controller writes no EndpointSlices for it (status.endpointSliceObjects: Absent)",
		"ip-present.ns1.svc.clusterset.local.": "no address at all: A and AAAA answer NODATA, with a TTL of at most 1 s",
	} {
		r := new(dns.Msg)
		r.SetQuestion(name, dns.TypeA)
		if steps := strings.Join(m.Explain(r).Steps, "\n"); !strings.Contains(steps, want) {
			t.Errorf("%s: explain lacks %q:\n%s", name, want, steps)
		}
	}
}

// TestEndpointSliceObjectsGauge: the gauge counts the imports whose
// controller writes no EndpointSlices.
func TestEndpointSliceObjectsGauge(t *testing.T) {
	const name = "coredns_multicluster_imports_endpointslices_absent"
	m := slicesStatusPlugin(t)
	runningForTest(t, m)
	if got := gaugeValue(t, name); got != 3 {
		t.Errorf("%s = %v, want 3", name, got)
	}
}
