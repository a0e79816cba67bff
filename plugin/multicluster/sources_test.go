package multicluster

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"

	"github.com/coredns-mcs/coredns-mcs/plugin/multicluster/dnscheck"
	core "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

// The shapes of the ClusterSetIP imports real controllers write, one per
// address source (see test/e2e/testdata/interop for the objects themselves):
//
//	spec        spec.ips set (clusterset IPs; the AWS controller lists one
//	            ClusterIP per exporting cluster)
//	annotated   no spec.ips, a derived-service annotation (Cilium, the mcs-api
//	            reference controller, before they copy the ClusterIPs)
//	prefixed    no spec.ips, a derived-PREFIX Service (Karmada)
//	sliced      no spec.ips, one ready slice per cluster whose endpoint is
//	            that cluster's ClusterIP (Lighthouse)
//
// and the imports where two sources exist, to show which one wins.
var sourceImports = []importDef{
	{ns: "shop", name: "spec", typ: "ClusterSetIP", ips: []string{"10.42.0.1", "10.42.0.2", "10.42.0.1", "fd00::1"}, ports: []portFields{{name: "http", port: 80}}},
	{ns: "shop", name: "annotated", typ: "ClusterSetIP", derived: "derived-abcdefghij", ports: []portFields{{name: "http", port: 80}}},
	{ns: "shop", name: "prefixed", typ: "ClusterSetIP", ports: []portFields{{name: "http", port: 80}}},
	{ns: "shop", name: "sliced", typ: "ClusterSetIP", ports: []portFields{{name: "http", port: 80}}},
	// spec.ips beat the annotation, the prefix and the slices.
	{ns: "shop", name: "spec-wins", typ: "ClusterSetIP", ips: []string{"10.42.0.9"}, derived: "derived-specwins", ports: []portFields{{name: "http", port: 80}}},
	// The annotation beats the prefix; an annotated Service that does not
	// exist (yet) yields to the prefix, then to the slices.
	{ns: "shop", name: "both", typ: "ClusterSetIP", derived: "derived-both-annotated", ports: []portFields{{name: "http", port: 80}}},
	{ns: "shop", name: "pending", typ: "ClusterSetIP", derived: "derived-not-yet", ports: []portFields{{name: "http", port: 80}}},
	{ns: "shop", name: "pending-sliced", typ: "ClusterSetIP", derived: "derived-not-yet-either", ports: []portFields{{name: "http", port: 80}}},
	// Nothing at all: NODATA.
	{ns: "shop", name: "none", typ: "ClusterSetIP", derived: "derived-gone", ports: []portFields{{name: "http", port: 80}}},
	// A headless import with AWS's "None" in spec.ips.
	{ns: "shop", name: "db", typ: "Headless", ips: []string{"None"}},
	// Lighthouse's per-cluster copy: never served.
	{ns: "submariner-operator", name: "web-shop-east", typ: "ClusterSetIP", ips: []string{"10.42.9.9"}, copy: true},
}

func newSourcesPlugin(t *testing.T) (*Multicluster, *fakeCluster) {
	t.Helper()
	local := newFakeCluster()
	local.add("shop", "derived-abcdefghij", core.ServiceTypeClusterIP, true, "10.96.1.1", "fd00:10:96::1")
	local.add("shop", "derived-prefixed", core.ServiceTypeClusterIP, true, "10.96.1.2")
	local.add("shop", "derived-specwins", core.ServiceTypeClusterIP, true, "10.96.1.3")
	local.add("shop", "derived-both-annotated", core.ServiceTypeClusterIP, true, "10.96.1.4")
	local.add("shop", "derived-both", core.ServiceTypeClusterIP, true, "10.96.1.5")
	local.add("shop", "derived-pending", core.ServiceTypeClusterIP, true, "10.96.1.6")
	m, _ := newTestPlugin(t, sourceImports, nil)
	m.local = local
	m.derivedPrefix = "derived-"
	yes, no := true, false
	for _, name := range []string{"sliced", "spec-wins", "pending-sliced", "both"} {
		addSlice(t, m, "shop", name, "east", name+"-east", discovery.AddressTypeIPv4, ep("10.97.0.1", "", &yes))
		addSlice(t, m, "shop", name, "west", name+"-west", discovery.AddressTypeIPv4, ep("10.98.0.1", "", nil), ep("10.98.0.2", "", &no))
		// The same address twice (one cluster's two slices) answers once.
		addSlice(t, m, "shop", name, "west", name+"-west-2", discovery.AddressTypeIPv4, ep("10.98.0.1", "", nil))
	}
	addSlice(t, m, "shop", "db", "east", "db-east", discovery.AddressTypeIPv4, ep("10.244.0.7", "db-0", nil))
	return m, local
}

func TestClusterSetIPSources(t *testing.T) {
	m, local := newSourcesPlugin(t)
	a := func(name string, ips ...string) test.Case {
		tc := test.Case{Qname: name, Qtype: dns.TypeA}
		for _, ip := range ips {
			tc.Answer = append(tc.Answer, test.A(name+" 5 IN A "+ip))
		}
		if len(ips) == 0 {
			tc.Ns = []dns.RR{pendingSOAOf(name[strings.Index(name, ".svc.")+5:])} // no address of either family yet
		}
		return tc
	}
	for _, tc := range []test.Case{
		// Every address of spec.ips, once each.
		a("spec.shop.svc.clusterset.local.", "10.42.0.1", "10.42.0.2"),
		{Qname: "spec.shop.svc.clusterset.local.", Qtype: dns.TypeAAAA, Answer: []dns.RR{test.AAAA("spec.shop.svc.clusterset.local. 5 IN AAAA fd00::1")}},
		a("spec.shop.svc.cluster.local.", "10.42.0.1", "10.42.0.2"),
		// The annotated derived Service, dual-stack.
		a("annotated.shop.svc.clusterset.local.", "10.96.1.1"),
		{Qname: "annotated.shop.svc.clusterset.local.", Qtype: dns.TypeAAAA, Answer: []dns.RR{test.AAAA("annotated.shop.svc.clusterset.local. 5 IN AAAA fd00:10:96::1")}},
		a("annotated.shop.svc.cluster.local.", "10.96.1.1"),
		// derived_prefix.
		a("prefixed.shop.svc.clusterset.local.", "10.96.1.2"),
		// The ready addresses of every cluster's slices.
		a("sliced.shop.svc.clusterset.local.", "10.97.0.1", "10.98.0.1"),
		a("sliced.shop.svc.cluster.local.", "10.97.0.1", "10.98.0.1"),
		{Qname: "sliced.shop.svc.clusterset.local.", Qtype: dns.TypeAAAA, Ns: []dns.RR{soaOf("clusterset.local.")}},
		{Qname: "_http._tcp.sliced.shop.svc.clusterset.local.", Qtype: dns.TypeSRV,
			Answer: []dns.RR{test.SRV("_http._tcp.sliced.shop.svc.clusterset.local. 5 IN SRV 0 100 80 sliced.shop.svc.clusterset.local.")},
			Extra:  []dns.RR{test.A("sliced.shop.svc.clusterset.local. 5 IN A 10.97.0.1"), test.A("sliced.shop.svc.clusterset.local. 5 IN A 10.98.0.1")}},
		// The order.
		a("spec-wins.shop.svc.clusterset.local.", "10.42.0.9"),
		a("both.shop.svc.clusterset.local.", "10.96.1.4"),
		a("pending.shop.svc.clusterset.local.", "10.96.1.6"),
		a("pending-sliced.shop.svc.clusterset.local.", "10.97.0.1", "10.98.0.1"),
		a("none.shop.svc.clusterset.local."),
		// "None" in a headless import's spec.ips changes nothing.
		a("db.shop.svc.clusterset.local.", "10.244.0.7"),
		// A per-cluster copy is not a service, in any zone.
		{Qname: "web-shop-east.submariner-operator.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soaOf("clusterset.local.")}},
		{Qname: "submariner-operator.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soaOf("clusterset.local.")}},
	} {
		t.Run(dns.TypeToString[tc.Qtype]+" "+tc.Qname, func(t *testing.T) { checkCase(t, m, tc) })
	}

	// The controller creates the annotated Service: it takes over from the
	// prefix and the slices at once, with no event.
	local.add("shop", "derived-not-yet-either", core.ServiceTypeClusterIP, true, "10.96.1.7")
	checkCase(t, m, a("pending-sliced.shop.svc.clusterset.local.", "10.96.1.7"))
	// A headless derived Service has no address: the next source answers.
	local.add("shop", "derived-not-yet-either", core.ServiceTypeClusterIP, true, "None")
	checkCase(t, m, a("pending-sliced.shop.svc.clusterset.local.", "10.97.0.1", "10.98.0.1"))
	// A cluster's slice turns not ready: its address leaves the answer.
	no := false
	addSlice(t, m, "shop", "sliced", "east", "sliced-east", discovery.AddressTypeIPv4, ep("10.97.0.1", "", &no))
	checkCase(t, m, a("sliced.shop.svc.clusterset.local.", "10.98.0.1"))
	// spec.ips appear: they win over the slices.
	spec, _, err := newImportSpec(importDef{ns: "shop", name: "sliced", typ: "ClusterSetIP", ips: []string{"10.42.0.5"}, ports: []portFields{{name: "http", port: 80}}}.fields())
	if err != nil {
		t.Fatal(err)
	}
	m.sources.setImport(spec)
	checkCase(t, m, a("sliced.shop.svc.clusterset.local.", "10.42.0.5"))
}

// TestPerClusterCopyLabelledLater: an import that gains the service-name
// label stops answering; losing it again brings it back.
func TestPerClusterCopyLabelledLater(t *testing.T) {
	m, _ := newTestPlugin(t, []importDef{{ns: "ns1", name: "web", typ: "ClusterSetIP", ips: []string{"10.42.0.1"}}}, fakeLocal{})
	answered := test.Case{Qname: "web.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("web.ns1.svc.clusterset.local. 5 IN A 10.42.0.1")}}
	checkCase(t, m, answered)
	for _, labelled := range []bool{true, false} {
		spec, _, err := newImportSpec(importDef{ns: "ns1", name: "web", typ: "ClusterSetIP", ips: []string{"10.42.0.1"}, copy: labelled}.fields())
		if err != nil {
			t.Fatal(err)
		}
		m.sources.setImport(spec)
		if labelled {
			checkCase(t, m, test.Case{Qname: "web.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soaOf("clusterset.local.")}})
		} else {
			checkCase(t, m, answered)
		}
	}
}

func TestImportSpecProblems(t *testing.T) {
	for _, tc := range []struct {
		def  importDef
		want string // a problem reported, or "" for none
	}{
		{importDef{ns: "ns1", name: "db", typ: "Headless", ips: []string{"None"}}, ""},
		{importDef{ns: "ns1", name: "db", typ: "Headless", ips: []string{"none", "None"}}, ""},
		{importDef{ns: "ns1", name: "db", typ: "Headless", ips: []string{"None", "10.0.0.1"}}, "headless import has spec.ips [10.0.0.1]; ignored"},
		{importDef{ns: "ns1", name: "web", typ: "ClusterSetIP", ips: []string{"None", "10.0.0.1"}}, `spec.ips: "None" is not an IP address; skipped`},
		{importDef{ns: "ns1", name: "web", typ: "ClusterSetIP", ips: []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "fd00::1", "fd00::2"}}, ""},
		{importDef{ns: "ns1", name: "web", typ: "ClusterSetIP", derived: "Not_A_Name"}, `annotation multicluster.kubernetes.io/derived-service="Not_A_Name" is not a Service name; ignored`},
		{importDef{ns: "ns1", name: "web", typ: "Bogus", copy: true}, ""}, // a copy is never checked
	} {
		_, problems, err := newImportSpec(tc.def.fields())
		if err != nil {
			t.Errorf("%+v: %v", tc.def, err)
			continue
		}
		got := strings.Join(problems, "; ")
		if (tc.want == "" && got != "") || !strings.Contains(got, tc.want) {
			t.Errorf("%+v: problems %q, want %q", tc.def, got, tc.want)
		}
	}
}

// TestSlicesWithoutCluster: slices that name no source cluster serve the
// service's own names, never a host.cluster name, and no name with an empty
// label.
func TestSlicesWithoutCluster(t *testing.T) {
	m, _ := newTestPlugin(t, []importDef{
		{ns: "ns1", name: "db", typ: "Headless"},
		{ns: "ns1", name: "mixed", typ: "Headless"},
		{ns: "ns1", name: "web", typ: "ClusterSetIP", ports: []portFields{{name: "http", port: 80}}},
	}, fakeLocal{})
	addSlice(t, m, "ns1", "db", "", "db-abcde", discovery.AddressTypeIPv4, ep("10.244.0.1", "db-0", nil), ep("10.244.0.2", "", nil))
	addSlice(t, m, "ns1", "mixed", "", "mixed-abcde", discovery.AddressTypeIPv4, ep("10.244.1.1", "", nil))
	addSlice(t, m, "ns1", "mixed", "east", "mixed-east", discovery.AddressTypeIPv4, ep("10.244.2.1", "m-0", nil))
	addSlice(t, m, "ns1", "web", "", "web-abcde", discovery.AddressTypeIPv4, ep("10.97.0.5", "", nil))
	for _, tc := range []test.Case{
		{Qname: "db.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Answer: []dns.RR{
			test.A("db.ns1.svc.clusterset.local. 5 IN A 10.244.0.1"), test.A("db.ns1.svc.clusterset.local. 5 IN A 10.244.0.2")}},
		{Qname: "db.ns1.svc.cluster.local.", Qtype: dns.TypeA, Answer: []dns.RR{
			test.A("db.ns1.svc.cluster.local. 5 IN A 10.244.0.1"), test.A("db.ns1.svc.cluster.local. 5 IN A 10.244.0.2")}},
		// One SRV per port, at the service's own name, which answers every address.
		{Qname: "db.ns1.svc.clusterset.local.", Qtype: dns.TypeSRV,
			Answer: []dns.RR{test.SRV("db.ns1.svc.clusterset.local. 5 IN SRV 0 100 5432 db.ns1.svc.clusterset.local.")},
			Extra:  []dns.RR{test.A("db.ns1.svc.clusterset.local. 5 IN A 10.244.0.1"), test.A("db.ns1.svc.clusterset.local. 5 IN A 10.244.0.2")}},
		{Qname: "_pg._tcp.mixed.ns1.svc.clusterset.local.", Qtype: dns.TypeSRV,
			Answer: []dns.RR{
				test.SRV("_pg._tcp.mixed.ns1.svc.clusterset.local. 5 IN SRV 0 50 5432 m-0.east.mixed.ns1.svc.clusterset.local."),
				test.SRV("_pg._tcp.mixed.ns1.svc.clusterset.local. 5 IN SRV 0 50 5432 mixed.ns1.svc.clusterset.local."),
			},
			Extra: []dns.RR{
				test.A("m-0.east.mixed.ns1.svc.clusterset.local. 5 IN A 10.244.2.1"),
				test.A("mixed.ns1.svc.clusterset.local. 5 IN A 10.244.1.1"), test.A("mixed.ns1.svc.clusterset.local. 5 IN A 10.244.2.1"),
			}},
		// No cluster id, no host name.
		{Qname: "db-0.db.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soaOf("clusterset.local.")}},
		{Qname: "db-0..db.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soaOf("clusterset.local.")}},
		// A ClusterSetIP import answered from such a slice.
		{Qname: "web.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("web.ns1.svc.clusterset.local. 5 IN A 10.97.0.5")}},
		// PTR: the service's own name.
		{Qname: "1.0.244.10.in-addr.arpa.", Qtype: dns.TypePTR, Answer: []dns.RR{test.PTR("1.0.244.10.in-addr.arpa. 5 IN PTR db.ns1.svc.clusterset.local.")}},
		{Qname: "5.0.97.10.in-addr.arpa.", Qtype: dns.TypePTR, Answer: []dns.RR{test.PTR("5.0.97.10.in-addr.arpa. 5 IN PTR web.ns1.svc.clusterset.local.")}},
	} {
		t.Run(dns.TypeToString[tc.Qtype]+" "+tc.Qname, func(t *testing.T) { checkCase(t, m, tc) })
	}
}

// TestPTROneName: an address known under several names answers exactly one
// PTR, the same whatever order the objects arrived in.
func TestPTROneName(t *testing.T) {
	build := func(reversed bool) *Multicluster {
		defs := []importDef{
			// The mcs-api controller's import once it copied the derived
			// Service's ClusterIP into spec.ips.
			{ns: "b", name: "web", typ: "ClusterSetIP", ips: []string{"10.96.3.3"}, derived: "derived-web"},
			// Another import listing the same address.
			{ns: "a", name: "api", typ: "ClusterSetIP", ips: []string{"10.96.3.3"}},
			{ns: "a", name: "db", typ: "Headless"},
			// Before the controller copied anything: only the annotation.
			{ns: "c", name: "cart", typ: "ClusterSetIP", derived: "derived-cart"},
			{ns: "c", name: "kart", typ: "ClusterSetIP"},
		}
		if reversed {
			for i, j := 0, len(defs)-1; i < j; i, j = i+1, j-1 {
				defs[i], defs[j] = defs[j], defs[i]
			}
		}
		local := newFakeCluster()
		local.add("b", "derived-web", core.ServiceTypeClusterIP, true, "10.96.3.3")
		local.add("c", "derived-cart", core.ServiceTypeClusterIP, true, "10.96.3.4")
		local.add("c", "derived-kart", core.ServiceTypeClusterIP, true, "10.96.3.5")
		local.add("c", "plain", core.ServiceTypeClusterIP, true, "10.96.3.6")
		m, _ := newTestPlugin(t, defs, nil)
		m.local = local
		m.derivedPrefix = "derived-"
		// A headless endpoint at the same address as the ClusterSetIPs.
		addSlice(t, m, "a", "db", "east", "db-east", discovery.AddressTypeIPv4, ep("10.96.3.3", "db-0", nil))
		return m
	}
	for _, reversed := range []bool{false, true} {
		m := build(reversed)
		for _, tc := range []test.Case{
			// The derived Service of b/web holds it as its ClusterIP, and
			// a/api and a/db claim it too: a conflict, passed on, in
			// either order (TestDerivedServiceContested).
			{Qname: "3.3.96.10.in-addr.arpa.", Qtype: dns.TypePTR, Rcode: dns.RcodeRefused},
			// A derived Service's ClusterIP: the import's name, not the
			// derived Service's.
			{Qname: "4.3.96.10.in-addr.arpa.", Qtype: dns.TypePTR, Answer: []dns.RR{test.PTR("4.3.96.10.in-addr.arpa. 5 IN PTR cart.c.svc.clusterset.local.")}},
			{Qname: "5.3.96.10.in-addr.arpa.", Qtype: dns.TypePTR, Answer: []dns.RR{test.PTR("5.3.96.10.in-addr.arpa. 5 IN PTR kart.c.svc.clusterset.local.")}},
			// Any other local Service's address goes to the next plugin.
			{Qname: "6.3.96.10.in-addr.arpa.", Qtype: dns.TypePTR, Rcode: dns.RcodeRefused},
		} {
			t.Run(tc.Qname, func(t *testing.T) { checkCase(t, m, tc) })
		}
	}
}

// TestOneSliceDuplicates: a service with one slice keeps no counts of its
// addresses and names; the slice says itself whether its answers repeat a
// record (sliceSpec.selfDups). Over random slices whose endpoints share
// addresses (in two texts too), hostnames, and hostnames that read as an
// address's name, the flag is set whenever the counts would have found a
// repeat, and the zone, which one slice's view answers from, has no record
// twice. A second slice brings the counts, and its going takes them away.
func TestOneSliceDuplicates(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 32))
	pools := map[discovery.AddressType][]string{
		discovery.AddressTypeIPv4: {"10.1.0.1", "10.1.0.2", "10.1.0.9", "::ffff:10.1.0.1"},
		discovery.AddressTypeIPv6: {"fd00::1", "FD00:0::1", "fd00::2", "fd00::9"},
	}
	hosts := []string{"", "", "db-0", "db-1", "10-1-0-1", "fd00--2"}
	pg := []discovery.EndpointPort{endpointPort("pg", core.ProtocolTCP, 5432)}
	const z = "clusterset.local."
	flagged := 0
	for i := range 400 {
		family := discovery.AddressTypeIPv4
		if i%2 == 1 {
			family = discovery.AddressTypeIPv6
		}
		var eps []discovery.Endpoint
		for range 1 + rng.IntN(5) {
			eps = append(eps, ep(pools[family][rng.IntN(4)], hosts[rng.IntN(len(hosts))], nil))
		}
		m, _ := newTestPlugin(t, []importDef{{ns: "ns1", name: "db", typ: "Headless"}}, fakeLocal{})
		setSlice(t, m, slice{ns: "ns1", svc: "db", cluster: "east", name: "db-a", family: family, ports: pg, endpoints: eps})
		spec := m.sources.slices[serviceKey{namespace: "ns1", name: "db"}].byName["db-a"]
		counts := &serviceSlices{counted: true, addrs4: map[[4]byte]int32{}, addrs6: map[[16]byte]int32{}, names: map[hostKey]int32{}}
		counts.recount(nil, spec)
		if counts.duplicates() && !spec.selfDups {
			t.Fatalf("%v: the counts find a repeat the slice does not flag", eps)
		}
		if spec.selfDups {
			flagged++
		}
		rrs := collect(t, m, z, 0)
		if err := dnscheck.DistinctRecords(rrs[1 : len(rrs)-1]); err != nil {
			t.Fatalf("%v: %v", eps, err)
		}
		// A second slice, of this cluster or another: counted.
		var more []discovery.Endpoint
		for range 1 + rng.IntN(3) {
			more = append(more, ep(pools[family][rng.IntN(4)], hosts[rng.IntN(len(hosts))], nil))
		}
		setSlice(t, m, slice{ns: "ns1", svc: "db", cluster: []string{"east", "west"}[rng.IntN(2)], name: "db-b", family: family, ports: pg, endpoints: more})
		rrs = collect(t, m, z, 0)
		if err := dnscheck.DistinctRecords(rrs[1 : len(rrs)-1]); err != nil {
			t.Fatalf("%v and %v: %v", eps, more, err)
		}
	}
	if flagged == 0 || flagged == 400 {
		t.Fatalf("%d of 400 random slices flagged: the test does not tell them apart", flagged)
	}

	m, _ := newTestPlugin(t, []importDef{{ns: "ns1", name: "db", typ: "Headless"}}, fakeLocal{})
	setSlice(t, m, slice{ns: "ns1", svc: "db", cluster: "east", name: "db-a", ports: pg, endpoints: []discovery.Endpoint{ep("10.1.0.1", "", nil)}})
	ss := m.sources.slices[serviceKey{namespace: "ns1", name: "db"}]
	if ss.counted || ss.addrs4 != nil {
		t.Fatal("one slice is counted")
	}
	setSlice(t, m, slice{ns: "ns1", svc: "db", cluster: "west", name: "db-b", ports: pg, endpoints: []discovery.Endpoint{ep("10.1.0.1", "", nil)}})
	if !ss.counted || ss.addrs4[[4]byte{10, 1, 0, 1}] != 2 || !m.index.lookup("ns1", "db").eps.dups {
		t.Fatalf("two slices with one address: counted %v, %v, dups %v", ss.counted, ss.addrs4, m.index.lookup("ns1", "db").eps.dups)
	}
	// Counted still, so that a slice that comes and goes beside another
	// costs its own size.
	m.sources.deleteSlice("ns1", "db-b")
	if !ss.counted || ss.addrs4[[4]byte{10, 1, 0, 1}] != 1 || m.index.lookup("ns1", "db").eps.dups {
		t.Fatalf("one slice again: counted %v, %v, dups %v", ss.counted, ss.addrs4, m.index.lookup("ns1", "db").eps.dups)
	}
	m.sources.deleteSlice("ns1", "db-a")
	if ss.counted || ss.addrs4 != nil {
		t.Fatalf("no slice: counted %v, %v", ss.counted, ss.addrs4)
	}
}
