package multicluster

import (
	"testing"

	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func addSlice(t *testing.T, m *Multicluster, ns, svc, cluster, name string, family discovery.AddressType, endpoints ...discovery.Endpoint) {
	t.Helper()
	port, proto, pname := int32(5432), "TCP", "pg"
	labels := map[string]string{labelServiceName: svc, labelSourceCluster: cluster}
	if cluster == "" {
		delete(labels, labelSourceCluster) // as mcs-api's e2e slices are
	}
	spec, _, err := newSliceSpec(&discovery.EndpointSlice{
		ObjectMeta:  meta.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		AddressType: family,
		Endpoints:   endpoints,
		Ports:       []discovery.EndpointPort{{Name: &pname, Protocol: (*corev1.Protocol)(&proto), Port: &port}},
	}, len(defaultZone))
	if err != nil {
		t.Fatal(err)
	}
	m.sources.setSlice(spec)
}

func ep(ip string, host string, ready *bool) discovery.Endpoint {
	e := discovery.Endpoint{Addresses: []string{ip}, Conditions: discovery.EndpointConditions{Ready: ready}}
	if host != "" {
		e.Hostname = &host
	}
	return e
}

func headlessPlugin(t *testing.T) *Multicluster {
	m, _ := newTestPlugin(t, []importDef{
		{ns: "ns1", name: "db", typ: "Headless"},
		{ns: "ns1", name: "empty", typ: "Headless", ports: []portFields{{name: "pg", port: 5432}}},
	}, fakeLocal{})
	no := false
	addSlice(t, m, "ns1", "db", "east", "db-east", discovery.AddressTypeIPv4, ep("10.1.0.1", "db-0", nil), ep("10.1.0.9", "db-9", &no))
	addSlice(t, m, "ns1", "db", "west.prod", "db-west", discovery.AddressTypeIPv4, ep("10.2.0.1", "db-0", nil))
	addSlice(t, m, "ns1", "db", "west.prod", "db-west-v6", discovery.AddressTypeIPv6, ep("fd00::21", "", nil))
	addSlice(t, m, "ns1", "empty", "east", "empty-east", discovery.AddressTypeIPv4, ep("10.1.1.1", "", &no))
	return m
}

func TestServeHeadless(t *testing.T) {
	m := headlessPlugin(t)
	soa := soaOf("clusterset.local.")
	for _, tc := range []test.Case{
		// Every ready endpoint of every cluster; not-ready ones left out.
		{Qname: "db.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Answer: []dns.RR{
			test.A("db.ns1.svc.clusterset.local. 5 IN A 10.1.0.1"),
			test.A("db.ns1.svc.clusterset.local. 5 IN A 10.2.0.1"),
		}},
		{Qname: "db.ns1.svc.clusterset.local.", Qtype: dns.TypeAAAA, Answer: []dns.RR{test.AAAA("db.ns1.svc.clusterset.local. 5 IN AAAA fd00::21")}},
		// Same hostname in two clusters stays distinct by cluster.
		{Qname: "db-0.east.db.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("db-0.east.db.ns1.svc.clusterset.local. 5 IN A 10.1.0.1")}},
		{Qname: "db-0.west.prod.db.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("db-0.west.prod.db.ns1.svc.clusterset.local. 5 IN A 10.2.0.1")}},
		{Qname: "db-0.east.db.ns1.svc.clusterset.local.", Qtype: dns.TypeAAAA, Ns: []dns.RR{soa}},
		// No hostname: the dashed address.
		{Qname: "fd00--21.west.prod.db.ns1.svc.clusterset.local.", Qtype: dns.TypeAAAA, Answer: []dns.RR{test.AAAA("fd00--21.west.prod.db.ns1.svc.clusterset.local. 5 IN AAAA fd00::21")}},
		// Not ready: no name.
		{Qname: "db-9.east.db.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soa}},
		{Qname: "db-0.north.db.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soa}},
		// SRV: one per endpoint name and port, addresses in Additional.
		{Qname: "_pg._tcp.db.ns1.svc.clusterset.local.", Qtype: dns.TypeSRV,
			Answer: []dns.RR{
				test.SRV("_pg._tcp.db.ns1.svc.clusterset.local. 5 IN SRV 0 33 5432 db-0.east.db.ns1.svc.clusterset.local."),
				test.SRV("_pg._tcp.db.ns1.svc.clusterset.local. 5 IN SRV 0 33 5432 db-0.west.prod.db.ns1.svc.clusterset.local."),
				test.SRV("_pg._tcp.db.ns1.svc.clusterset.local. 5 IN SRV 0 33 5432 fd00--21.west.prod.db.ns1.svc.clusterset.local."),
			},
			Extra: []dns.RR{
				test.A("db-0.east.db.ns1.svc.clusterset.local. 5 IN A 10.1.0.1"),
				test.A("db-0.west.prod.db.ns1.svc.clusterset.local. 5 IN A 10.2.0.1"),
				test.AAAA("fd00--21.west.prod.db.ns1.svc.clusterset.local. 5 IN AAAA fd00::21"),
			},
		},
		{Qname: "_http._tcp.db.ns1.svc.clusterset.local.", Qtype: dns.TypeSRV, Rcode: dns.RcodeNameError, Ns: []dns.RR{soa}},
		// No ready endpoint: NXDOMAIN for the service and every name below (spec 2.4.1).
		// Its negative TTL is pendingTTL: endpoints may be ready any moment.
		{Qname: "empty.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{pendingSOAOf("clusterset.local.")}},
		{Qname: "_pg._tcp.empty.ns1.svc.clusterset.local.", Qtype: dns.TypeSRV, Rcode: dns.RcodeNameError, Ns: []dns.RR{pendingSOAOf("clusterset.local.")}},
	} {
		t.Run(dns.TypeToString[tc.Qtype]+" "+tc.Qname, func(t *testing.T) { checkCase(t, m, tc) })
	}
}

func TestHeadlessSliceChanges(t *testing.T) {
	m := headlessPlugin(t)
	// One cluster's slice deleted leaves the other's.
	m.sources.deleteSlice("ns1", "db-east")
	checkCase(t, m, test.Case{Qname: "db.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("db.ns1.svc.clusterset.local. 5 IN A 10.2.0.1")}})
	// An endpoint turning not ready disappears.
	no := false
	addSlice(t, m, "ns1", "db", "west.prod", "db-west", discovery.AddressTypeIPv4, ep("10.2.0.1", "db-0", &no))
	checkCase(t, m, test.Case{Qname: "db.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Ns: []dns.RR{soaOf("clusterset.local.")}})
}

func TestServePTR(t *testing.T) {
	m := headlessPlugin(t)
	for _, d := range testImports {
		spec, _, err := newImportSpec(importFields{namespace: d.ns, name: d.name, typ: d.typ, ips: d.ips, ports: d.ports})
		if err != nil {
			t.Fatal(err)
		}
		m.sources.setImport(spec)
	}
	for _, tc := range []test.Case{
		{Qname: "1.0.42.10.in-addr.arpa.", Qtype: dns.TypePTR, Answer: []dns.RR{test.PTR("1.0.42.10.in-addr.arpa. 5 IN PTR web.ns1.svc.clusterset.local.")}},
		{Qname: "2.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa.", Qtype: dns.TypePTR,
			Answer: []dns.RR{test.PTR("2.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa. 5 IN PTR dual.ns1.svc.clusterset.local.")}},
		{Qname: "1.0.2.10.in-addr.arpa.", Qtype: dns.TypePTR, Answer: []dns.RR{test.PTR("1.0.2.10.in-addr.arpa. 5 IN PTR db-0.west.prod.db.ns1.svc.clusterset.local.")}},
		// Unknown addresses and other types go on.
		{Qname: "10.0.96.10.in-addr.arpa.", Qtype: dns.TypePTR, Rcode: dns.RcodeRefused},
		{Qname: "1.0.42.10.in-addr.arpa.", Qtype: dns.TypeA, Rcode: dns.RcodeRefused},
	} {
		t.Run(tc.Qname, func(t *testing.T) { checkCase(t, m, tc) })
	}
}

// clusterEndpoint is an endpoint with its slice's cluster.
type clusterEndpoint struct {
	endpoint
	cluster string
}

// endpointsOf returns every endpoint of a view, in the order answers use.
func endpointsOf(v *view) []clusterEndpoint {
	var out []clusterEndpoint
	v.eachEndpoint(func(cluster string, e endpoint) { out = append(out, clusterEndpoint{e, cluster}) })
	return out
}
