package multicluster

import (
	"slices"
	"testing"

	"github.com/coredns/coredns/plugin/kubernetes/object"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
	core "k8s.io/api/core/v1"
)

// fakeCluster is a set of local Services whose ClusterIPs and endpoint
// readiness tests change as they go.
type fakeCluster struct {
	services map[serviceKey]*object.Service
	ready    map[serviceKey]bool
	// endpoints are the local endpoints at an address; mixed the addresses
	// a multicluster slice in the cache holds too.
	endpoints map[string][]localEndpoint
	mixed     map[string]bool
	// hidden are the namespaces the kubernetes plugin's namespaces option
	// leaves out.
	hidden  map[string]bool
	changes int64
}

func newFakeCluster() *fakeCluster {
	return &fakeCluster{services: map[serviceKey]*object.Service{}, ready: map[serviceKey]bool{}}
}

func (f *fakeCluster) add(ns, name string, typ core.ServiceType, ready bool, ips ...string) {
	key := serviceKey{namespace: ns, name: name}
	f.services[key] = &object.Service{Namespace: ns, Name: name, Type: typ, ClusterIPs: ips}
	f.ready[key] = ready
	f.changes++
}

func (f *fakeCluster) service(namespace, name string) *object.Service {
	return f.services[serviceKey{namespace: namespace, name: name}]
}

func (f *fakeCluster) readyEndpoints(namespace, name string) bool {
	return f.ready[serviceKey{namespace: namespace, name: name}]
}

func (f *fakeCluster) byClusterIP(ip string) []*object.Service {
	var out []*object.Service
	for _, svc := range f.services {
		if slices.Contains(svc.ClusterIPs, ip) {
			out = append(out, svc)
		}
	}
	return out
}

func (f *fakeCluster) byEndpointIP(ip string) ([]localEndpoint, bool) {
	return f.endpoints[ip], f.mixed[ip]
}
func (f *fakeCluster) exposed(ns string) bool        { return !f.hidden[ns] }
func (f *fakeCluster) reverseExposed(ns string) bool { return !f.hidden[ns] }
func (f *fakeCluster) zone() string                  { return "cluster.local." }
func (f *fakeCluster) modified() int64               { return f.changes }
func (f *fakeCluster) hasSynced() bool               { return true }

// The Karmada layout: ServiceImport "serve" with no spec.ips, and the shadow
// Service "derived-serve" that carries the ClusterIP.
var karmadaImports = []importDef{
	{ns: "default", name: "serve", typ: "ClusterSetIP", ports: []portFields{{name: "http", protocol: "TCP", port: 80}}},
	{ns: "default", name: "pinned", typ: "ClusterSetIP", ips: []string{"10.42.7.7"}, ports: []portFields{{name: "http", port: 80}}},
	{ns: "default", name: "orphan", typ: "ClusterSetIP", ports: []portFields{{name: "http", port: 80}}},
	{ns: "default", name: "nodes", typ: "ClusterSetIP", ports: []portFields{{name: "http", port: 80}}},
}

func newKarmadaPlugin(t *testing.T) (*Multicluster, *fakeCluster) {
	t.Helper()
	local := newFakeCluster()
	local.add("default", "derived-serve", core.ServiceTypeClusterIP, true, "10.96.5.5", "fd00:10:96::5")
	local.add("default", "derived-pinned", core.ServiceTypeClusterIP, true, "10.96.5.6")
	local.add("default", "derived-nodes", core.ServiceTypeClusterIP, true, "None")
	m, _ := newTestPlugin(t, karmadaImports, nil)
	m.local = local
	m.derivedPrefix = "derived-"
	return m, local
}

func TestDerivedPrefix(t *testing.T) {
	m, local := newKarmadaPlugin(t)
	for _, tc := range []test.Case{
		{Qname: "serve.default.svc.clusterset.local.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("serve.default.svc.clusterset.local. 5 IN A 10.96.5.5")}},
		{Qname: "serve.default.svc.clusterset.local.", Qtype: dns.TypeAAAA, Answer: []dns.RR{test.AAAA("serve.default.svc.clusterset.local. 5 IN AAAA fd00:10:96::5")}},
		{Qname: "serve.default.svc.cluster.local.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("serve.default.svc.cluster.local. 5 IN A 10.96.5.5")}},
		{Qname: "_http._tcp.serve.default.svc.cluster.local.", Qtype: dns.TypeSRV,
			Answer: []dns.RR{test.SRV("_http._tcp.serve.default.svc.cluster.local. 5 IN SRV 0 100 80 serve.default.svc.cluster.local.")},
			Extra: []dns.RR{
				test.A("serve.default.svc.cluster.local. 5 IN A 10.96.5.5"),
				test.AAAA("serve.default.svc.cluster.local. 5 IN AAAA fd00:10:96::5"),
			}},
		// spec.ips, when set, win over the derived Service.
		{Qname: "pinned.default.svc.clusterset.local.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("pinned.default.svc.clusterset.local. 5 IN A 10.42.7.7")}},
		// No derived Service, or a headless one: nothing to answer with.
		{Qname: "orphan.default.svc.clusterset.local.", Qtype: dns.TypeA, Ns: []dns.RR{pendingSOAOf("clusterset.local.")}},
		{Qname: "nodes.default.svc.clusterset.local.", Qtype: dns.TypeA, Ns: []dns.RR{pendingSOAOf("clusterset.local.")}},
	} {
		t.Run(dns.TypeToString[tc.Qtype]+" "+tc.Qname, func(t *testing.T) { checkCase(t, m, tc) })
	}

	// The derived Service changes: the answer follows at once.
	local.add("default", "derived-serve", core.ServiceTypeClusterIP, true, "10.96.5.9")
	checkCase(t, m, test.Case{Qname: "serve.default.svc.clusterset.local.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("serve.default.svc.clusterset.local. 5 IN A 10.96.5.9")}})
	checkCase(t, m, test.Case{Qname: "serve.default.svc.clusterset.local.", Qtype: dns.TypeAAAA, Ns: []dns.RR{soaOf("clusterset.local.")}})
}

func TestDerivedPrefixOff(t *testing.T) {
	m, _ := newKarmadaPlugin(t)
	m.derivedPrefix = ""
	checkCase(t, m, test.Case{Qname: "serve.default.svc.clusterset.local.", Qtype: dns.TypeA, Ns: []dns.RR{pendingSOAOf("clusterset.local.")}})
}

func TestFailover(t *testing.T) {
	local := newFakeCluster()
	m, next := newTestPlugin(t, []importDef{
		{ns: "shop", name: "web", typ: "ClusterSetIP", ips: []string{"10.42.8.1"}, ports: []portFields{{name: "http", port: 80}}},
		{ns: "shop", name: "ext", typ: "ClusterSetIP", ips: []string{"10.42.8.2"}, ports: []portFields{{name: "http", port: 80}}},
	}, nil)
	m.local = local
	m.failover = true
	local.add("shop", "web", core.ServiceTypeClusterIP, true, "10.96.8.1")
	local.add("shop", "ext", core.ServiceTypeExternalName, false)

	answered := test.Case{Qname: "web.shop.svc.cluster.local.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("web.shop.svc.cluster.local. 5 IN A 10.42.8.1")}}
	passed := test.Case{Qname: "web.shop.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeRefused}
	expectPassed := func(want bool, tc test.Case) {
		t.Helper()
		before := next.calls
		checkCase(t, m, tc)
		if got := next.calls > before; got != want {
			t.Errorf("%s passed on: %v, want %v", tc.Qname, got, want)
		}
	}

	// A ready local endpoint: local wins.
	expectPassed(true, passed)
	// No ready endpoint: the import answers, under the cluster-local name.
	before := testutil.ToFloat64(failoverAnswersTotal.WithLabelValues(""))
	local.ready[serviceKey{namespace: "shop", name: "web"}] = false
	expectPassed(false, answered)
	expectPassed(false, test.Case{Qname: "_http._tcp.web.shop.svc.cluster.local.", Qtype: dns.TypeSRV,
		Answer: []dns.RR{test.SRV("_http._tcp.web.shop.svc.cluster.local. 5 IN SRV 0 100 80 web.shop.svc.cluster.local.")},
		Extra:  []dns.RR{test.A("web.shop.svc.cluster.local. 5 IN A 10.42.8.1")}})
	if got := testutil.ToFloat64(failoverAnswersTotal.WithLabelValues("")) - before; got != 2 {
		t.Errorf("failover answers counted %v, want 2", got)
	}
	// Ready again: local wins again.
	local.ready[serviceKey{namespace: "shop", name: "web"}] = true
	expectPassed(true, passed)
	// ExternalName Services have no endpoints and never fail over.
	expectPassed(true, test.Case{Qname: "ext.shop.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeRefused})

	// Without failover, a local Service with no ready endpoint still wins.
	m.failover = false
	local.ready[serviceKey{namespace: "shop", name: "web"}] = false
	expectPassed(true, passed)
}
