package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// The hostile-object suite: objects that a compromised MCS controller
// writes try to change what a name or an address of another namespace, of
// kube-system, of the cluster's own Services or a public address answers,
// or to exhaust the server. Every row is a subtest of TestHostileObjects,
// listed in docs/trust.md. Each attempt must fail,
// and the server must go on answering everything else.

// trustSuite is the servers and the victim's objects the rows share.
type trustSuite struct {
	with    resilientServer // multicluster, with failover
	without *server         // the same server without multicluster
	own     string          // the namespace the server says it runs in
	victim  string          // namespace of the imports under attack
	web     string          // ClusterIP of the victim's derived Service
	api     string          // ClusterIP of a local Service of the victim
}

const (
	victimVIP  = "10.250.0.10" // demo/checkout's spec.ips
	victimDB0  = "10.250.1.1"  // demo/db's endpoint db-0 in cluster east
	victimDB1  = "10.250.1.2"  // demo/db's endpoint db-1 in cluster east
	localPod   = "10.244.250.5"
	publicIPv4 = "8.8.8.8"
	publicIPv6 = "2001:4860:4860::8888"
	// upstreamPTR is the name upstream DNS gives every address.
	upstreamPTR = "upstream.example."
)

func TestHostileObjects(t *testing.T) {
	s := &trustSuite{own: "dns-system-trust"}
	// The namespace the server runs in, as a pod reads it from the
	// downward API.
	t.Setenv("POD_NAMESPACE", s.own)
	// What the cluster's DNS asks upstream gets a name there.
	upstream := startServer(t, corefileUpstream, false)
	metricsPort := harness.FreePort(t)
	s.with = resilientServer{
		server:  startServer(t, trustCorefile(metricsPort, upstream.addr, false), true),
		metrics: "http://127.0.0.1:" + strconv.Itoa(metricsPort) + "/metrics",
	}
	s.without = startServer(t, trustCorefile(harness.FreePort(t), upstream.addr, true), true)
	s.setUpVictim(t)

	for _, row := range []struct {
		name string
		run  func(*trustSuite, *testing.T)
	}{
		{"ServiceImport/another namespace's ClusterSetIP", (*trustSuite).claimClusterSetIP},
		{"ServiceImport/an address a derived Service holds", (*trustSuite).claimDerivedAddress},
		{"ServiceImport v1alpha1/another namespace's ClusterSetIP", (*trustSuite).claimWithV1alpha1},
		{"ServiceImport/the cluster's own Services' ClusterIPs", (*trustSuite).claimClusterServices},
		{"ServiceImport/public addresses", (*trustSuite).claimPublic},
		{"ServiceImport/kube-system name without a local Service", (*trustSuite).systemFallback},
		{"ServiceImport/kube-system name whose Service has no ready endpoint", (*trustSuite).systemFailover},
		{"ServiceImport/the server's own namespace", (*trustSuite).ownNamespace},
		{"EndpointSlice/another namespace's endpoint addresses", (*trustSuite).sliceClaimsEndpoints},
		{"EndpointSlice/labelled with another namespace's service", (*trustSuite).sliceForeignLabel},
		{"EndpointSlice/a local pod's address", (*trustSuite).sliceLocalPod},
		{"derived Service annotation/another namespace's Service", (*trustSuite).derivedElsewhere},
		{"AWS derived-service annotation/another namespace's Services", (*trustSuite).awsDerivedElsewhere},
		{"exhaustion/huge objects", (*trustSuite).hugeObjects},
		{"exhaustion/many slices for one import", (*trustSuite).manySlices},
		{"exhaustion/rapid flapping", (*trustSuite).flapping},
		{"exhaustion/an EndpointSlice at the API server's limits", (*trustSuite).sliceAtTheLimits},
		{"exhaustion/a ServiceImport of 20,000 ports", (*trustSuite).importAtTheLimits},
		{"exhaustion/slices of distinct ports and a small one that flaps", (*trustSuite).slicesOfDistinctPorts},
		{"exhaustion/10,000 refused port names", (*trustSuite).refusedPortNames},
		{"exhaustion/slices of 300,000 addresses and a small one that comes and goes", (*trustSuite).slicesOfManyAddresses},
		{"exhaustion/1,000 hosts a slice, each at the same 60 addresses", (*trustSuite).repeatedAddresses},
	} {
		t.Run(row.name, func(t *testing.T) {
			// The attack, then, once its objects are gone, the victim.
			t.Run("attack", func(t *testing.T) { row.run(s, t) })
			s.victimIntact(t)
		})
	}
}

// corefileUpstream names every address upstreamPTR, as the DNS outside a
// cluster has names of its own for addresses.
const corefileUpstream = `.:{{.Port}} {
    template IN PTR in-addr.arpa ip6.arpa {
        answer "{{ .Name }} 60 IN PTR upstream.example."
    }
}
`

// trustCorefile is the kube-system Corefile with metrics
// (resilienceCorefile), failover, and the rest of the world at upstream;
// plain leaves multicluster out.
func trustCorefile(metricsPort int, upstream string, plain bool) string {
	corefile := strings.Replace(resilienceCorefile(cp.Kubeconfig, metricsPort, plain, "failover"), "    }\n}\n", "    }\n    forward . "+upstream+"\n}\n", 1)
	if !strings.Contains(corefile, "forward") {
		panic("the kube-system Corefile changed shape: no forward in\n" + corefile)
	}
	return corefile
}

// setUpVictim creates the namespace under attack: a ClusterSetIP import
// with spec.ips (checkout), one whose address is its derived Service's
// ClusterIP (web, the layout of the mcs-api controller and Cilium), a
// headless import (db) and a local Service with a selectorless endpoint
// (api).
func (s *trustSuite) setUpVictim(t *testing.T) {
	s.victim = namespace(t, "demo")
	createImport(t, newImport(s.victim, "checkout", victimVIP))
	s.web = createService(t, s.victim, "derived-web").Spec.ClusterIP
	web := newImport(s.victim, "web")
	web.Annotations = map[string]string{"multicluster.kubernetes.io/derived-service": "derived-web"}
	createImport(t, web)
	db := newImport(s.victim, "db")
	db.Spec.Type = mcsv1beta1.Headless
	createImport(t, db)
	createSlice(t, s.victim, "db", "east", "db-east", discovery.AddressTypeIPv4, endpoint("db-0", victimDB0, nil), endpoint("db-1", victimDB1, nil))
	s.api = createService(t, s.victim, "api").Spec.ClusterIP
	local := &discovery.EndpointSlice{
		ObjectMeta:  meta.ObjectMeta{Namespace: s.victim, Name: "api-1", Labels: map[string]string{discovery.LabelServiceName: "api"}},
		AddressType: discovery.AddressTypeIPv4,
		Endpoints:   []discovery.Endpoint{endpoint("", localPod, nil)},
		Ports:       []discovery.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](80)}},
	}
	if _, err := kube.DiscoveryV1().EndpointSlices(s.victim).Create(context.Background(), local, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectAddresses(t, s.with.server, "db."+s.victim+".svc.clusterset.local.", dns.TypeA, propagation, victimDB0, victimDB1)
	expectAddresses(t, s.with.server, "web."+s.victim+".svc.clusterset.local.", dns.TypeA, propagation, s.web)
	s.victimIntact(t)
}

// victimIntact checks every name and address of the victim: the forward
// names answer its own addresses, and the reverse names of its addresses
// its own names, or the local cluster's as without the plugin.
func (s *trustSuite) victimIntact(t *testing.T) {
	t.Helper()
	for _, zone := range []string{"clusterset.local.", "cluster.local."} {
		expectAddresses(t, s.with.server, "checkout."+s.victim+".svc."+zone, dns.TypeA, propagation, victimVIP)
		expectAddresses(t, s.with.server, "db."+s.victim+".svc."+zone, dns.TypeA, propagation, victimDB0, victimDB1)
		expectAddresses(t, s.with.server, "db-0.east.db."+s.victim+".svc."+zone, dns.TypeA, propagation, victimDB0)
	}
	expectAddresses(t, s.with.server, "web."+s.victim+".svc.clusterset.local.", dns.TypeA, propagation, s.web)
	expectPTR(t, s.with.server, s.web, "web."+s.victim+".svc.clusterset.local.")
	s.expectOwnPTR(t, victimVIP, "checkout."+s.victim+".svc.clusterset.local.")
	s.expectOwnPTR(t, victimDB0, "db-0.east.db."+s.victim+".svc.clusterset.local.")
	expectSameAnswers(t, s.with.server, s.without, []question{
		{"api." + s.victim + ".svc.cluster.local.", dns.TypeA},
		{reverse(t, s.api), dns.TypePTR},
		{reverse(t, localPod), dns.TypePTR},
		{"kubernetes.default.svc.cluster.local.", dns.TypeA},
	})
}

// expectOwnPTR waits until ip points back to target: a row that contests it
// has cleaned up, and the victim has its name back.
func (s *trustSuite) expectOwnPTR(t *testing.T, ip, target string) {
	t.Helper()
	poll.Eventually(t, propagation, "PTR "+ip+" -> "+target, func() (bool, string) {
		r := s.with.query(t, "udp", reverse(t, ip), dns.TypePTR)
		return len(r.Answer) == 1 && r.Answer[0].(*dns.PTR).Ptr == target, r.String()
	})
	expectPTR(t, s.with.server, ip, target)
}

// attacker returns a namespace for a row's hostile objects, named to sort
// before the victim's ("aaa-..."), as a tie between namespaces was once
// broken in the first one's favour.
// No controller-manager deletes what a deleted namespace held: the row's
// objects are deleted when it ends.
func attacker(t *testing.T) string {
	t.Helper()
	ns := namespace(t, "aaa")
	t.Cleanup(func() { deleteAll(t, ns) })
	return ns
}

// deleteAll deletes the ServiceImports (both versions are one resource),
// EndpointSlices and Services of ns.
func deleteAll(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	for what, err := range map[string]error{
		"serviceimports": mcs.MulticlusterV1beta1().ServiceImports(ns).DeleteCollection(ctx, meta.DeleteOptions{}, meta.ListOptions{}),
		"endpointslices": kube.DiscoveryV1().EndpointSlices(ns).DeleteCollection(ctx, meta.DeleteOptions{}, meta.ListOptions{}),
	} {
		if err != nil {
			t.Errorf("delete the %s of %s: %v", what, ns, err)
		}
	}
}

// hostileImport creates the ClusterSetIP import ns/name with ips, waits
// until the server answers its own name (so that the server has seen it),
// and deletes it when the row ends.
func (s *trustSuite) hostileImport(t *testing.T, si *mcsv1beta1.ServiceImport) {
	t.Helper()
	createImport(t, si)
	t.Cleanup(func() {
		_ = mcs.MulticlusterV1beta1().ServiceImports(si.Namespace).Delete(context.Background(), si.Name, meta.DeleteOptions{})
	})
	if si.Spec.Type == mcsv1beta1.ClusterSetIP && len(si.Spec.IPs) > 0 {
		var v4 []string
		for _, ip := range si.Spec.IPs {
			if !strings.Contains(ip, ":") {
				v4 = append(v4, ip)
			}
		}
		expectAddresses(t, s.with.server, si.Name+"."+si.Namespace+".svc.clusterset.local.", dns.TypeA, propagation, v4...)
	}
}

// expectPassedOn checks that the reverse names of ips go on, past the
// kubernetes plugin, to the DNS upstream of the cluster: the plugin names
// none of them. (Without the plugin, an address that multicluster
// EndpointSlices list gets no answer at all: the kubernetes plugin, which
// caches those slices too, names it with an empty label, and the answer
// cannot be sent.)
func (s *trustSuite) expectPassedOn(t *testing.T, ips ...string) {
	t.Helper()
	for _, ip := range ips {
		name := reverse(t, ip)
		poll.Eventually(t, propagation, "PTR "+ip+" answered upstream", func() (bool, string) {
			r := s.with.query(t, "udp", name, dns.TypePTR)
			return len(r.Answer) == 1 && r.Answer[0].(*dns.PTR).Ptr == upstreamPTR, r.String()
		})
		expectRecords(t, s.with.server, name, dns.TypePTR, dns.RcodeSuccess, []string{name + " 60 IN PTR " + upstreamPTR}, nil)
	}
}

// conflicts reads coredns_multicluster_reverse_conflicts.
func (s *trustSuite) conflicts(t *testing.T) float64 {
	t.Helper()
	return s.with.metric(t, "coredns_multicluster_reverse_conflicts", "")
}

func (s *trustSuite) claimClusterSetIP(t *testing.T) {
	ns := attacker(t)
	before := s.conflicts(t)
	s.hostileImport(t, newImport(ns, "evil", victimVIP, "10.250.9.9"))
	// Two namespaces claim the address: neither name answers for it.
	s.expectPassedOn(t, victimVIP)
	if got := s.conflicts(t); got != before+1 {
		t.Errorf("reverse_conflicts %v, want %v", got, before+1)
	}
	if !strings.Contains(s.with.log.String(), "ServiceImport "+ns+"/evil: address "+victimVIP+" is claimed by imports of namespaces "+ns+", "+s.victim) {
		t.Errorf("the conflict was not logged:\n%s", s.with.log.String())
	}
	// The attacker's other address is its own.
	expectPTR(t, s.with.server, "10.250.9.9", "evil."+ns+".svc.clusterset.local.")
	expectAddresses(t, s.with.server, "checkout."+s.victim+".svc.cluster.local.", dns.TypeA, propagation, victimVIP)
}

func (s *trustSuite) claimDerivedAddress(t *testing.T) {
	ns := attacker(t)
	before := metricSum(t, s.with.metrics, "coredns_multicluster_policy_decisions_total", `rule="ptr_local_conflict"`)
	s.hostileImport(t, newImport(ns, "evil", s.web, "10.250.9.10"))
	// Contested: neither import's name answers, but the cluster's own,
	// the derived Service's, as without the plugin (a Service of the
	// attacker's could hold a ClusterSetIP of the victim's just as well:
	// TestReverseNamesAcrossNamespaces).
	expectSameAnswers(t, s.with.server, s.without, []question{{reverse(t, s.web), dns.TypePTR}})
	expectPTR(t, s.with.server, s.web, "derived-web."+s.victim+".svc.cluster.local.")
	if got := metricSum(t, s.with.metrics, "coredns_multicluster_policy_decisions_total", `rule="ptr_local_conflict"`); got <= before {
		t.Errorf("ptr_local_conflict %v, was %v: the conflict was not counted", got, before)
	}
	expectPTR(t, s.with.server, "10.250.9.10", "evil."+ns+".svc.clusterset.local.")
}

func (s *trustSuite) claimWithV1alpha1(t *testing.T) {
	ns := attacker(t)
	si := &mcsv1alpha1.ServiceImport{
		ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: "evil"},
		Spec: mcsv1alpha1.ServiceImportSpec{
			Type:  mcsv1alpha1.ClusterSetIP,
			IPs:   []string{victimVIP, s.api},
			Ports: []mcsv1alpha1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}},
		},
	}
	if _, err := mcs.MulticlusterV1alpha1().ServiceImports(ns).Create(context.Background(), si, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = mcs.MulticlusterV1alpha1().ServiceImports(ns).Delete(context.Background(), "evil", meta.DeleteOptions{})
	})
	expectAddresses(t, s.with.server, "evil."+ns+".svc.clusterset.local.", dns.TypeA, propagation, victimVIP, s.api)
	s.expectPassedOn(t, victimVIP)
	expectSameAnswers(t, s.with.server, s.without, []question{{reverse(t, s.api), dns.TypePTR}})
}

func (s *trustSuite) claimClusterServices(t *testing.T) {
	ns := attacker(t)
	k, err := kube.CoreV1().Services("default").Get(context.Background(), "kubernetes", meta.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.hostileImport(t, newImport(ns, "evil", k.Spec.ClusterIP, s.api))
	// And the name of the API server's own Service, in its namespace: the
	// local Service wins.
	s.hostileImport(t, newImport("default", "kubernetes", "10.250.9.11"))
	expectSameAnswers(t, s.with.server, s.without, []question{
		{reverse(t, k.Spec.ClusterIP), dns.TypePTR},
		{reverse(t, s.api), dns.TypePTR},
		{"kubernetes.default.svc.cluster.local.", dns.TypeA},
	})
}

func (s *trustSuite) claimPublic(t *testing.T) {
	ns := attacker(t)
	s.hostileImport(t, newImport(ns, "evil", publicIPv4, publicIPv6))
	expectAddresses(t, s.with.server, "evil."+ns+".svc.clusterset.local.", dns.TypeAAAA, propagation, publicIPv6)
	s.expectPassedOn(t, publicIPv4, publicIPv6)
}

// systemImport creates an import in kube-system (a controller that may
// write there) and deletes it when the row ends.
func (s *trustSuite) systemImport(t *testing.T, ns, name, ip string) {
	t.Helper()
	s.hostileImport(t, newImport(ns, name, ip))
}

func (s *trustSuite) systemFallback(t *testing.T) {
	s.systemImport(t, "kube-system", "metrics-server", "10.250.9.12")
	// Between the delete and the re-create of a system component's
	// Service: the name stays the cluster's.
	expectSameAnswers(t, s.with.server, s.without, []question{
		{"metrics-server.kube-system.svc.cluster.local.", dns.TypeA},
		{"_http._tcp.metrics-server.kube-system.svc.cluster.local.", dns.TypeSRV},
	})
}

func (s *trustSuite) systemFailover(t *testing.T) {
	svc := createService(t, "kube-system", "trust-dns")
	t.Cleanup(func() {
		_ = kube.CoreV1().Services("kube-system").Delete(context.Background(), svc.Name, meta.DeleteOptions{})
	})
	s.systemImport(t, "kube-system", "trust-dns", "10.250.9.13")
	// The local Service has no endpoint at all: failover would apply to
	// any other namespace; not to kube-system.
	expectSameAnswers(t, s.with.server, s.without, []question{{"trust-dns.kube-system.svc.cluster.local.", dns.TypeA}})
}

func (s *trustSuite) ownNamespace(t *testing.T) {
	if _, err := kube.CoreV1().Namespaces().Get(context.Background(), s.own, meta.GetOptions{}); err != nil {
		if _, err := kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: meta.ObjectMeta{Name: s.own}}, meta.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	s.systemImport(t, s.own, "coredns-mcs", "10.250.9.14")
	expectSameAnswers(t, s.with.server, s.without, []question{{"coredns-mcs." + s.own + ".svc.cluster.local.", dns.TypeA}})
	// kube-public and kube-node-lease are system namespaces too.
	for _, ns := range []string{"kube-public", "kube-node-lease"} {
		if _, err := kube.CoreV1().Namespaces().Get(context.Background(), ns, meta.GetOptions{}); err != nil {
			t.Logf("%s: %v", ns, err)
			continue
		}
		s.systemImport(t, ns, "trust", "10.250.9.15")
		expectSameAnswers(t, s.with.server, s.without, []question{{"trust." + ns + ".svc.cluster.local.", dns.TypeA}})
	}
}

// hostileHeadless creates a headless import ns/name with one slice of
// cluster east holding endpoints, waits until its name answers them, and
// deletes it when the row ends.
func (s *trustSuite) hostileHeadless(t *testing.T, ns, name string, endpoints ...discovery.Endpoint) {
	t.Helper()
	si := newImport(ns, name)
	si.Spec.Type = mcsv1beta1.Headless
	s.hostileImport(t, si)
	createSlice(t, ns, name, "east", name+"-east", discovery.AddressTypeIPv4, endpoints...)
	var ips []string
	for _, e := range endpoints {
		ips = append(ips, e.Addresses...)
	}
	expectAddresses(t, s.with.server, name+"."+ns+".svc.clusterset.local.", dns.TypeA, propagation, ips...)
}

func (s *trustSuite) sliceClaimsEndpoints(t *testing.T) {
	ns := attacker(t)
	s.hostileHeadless(t, ns, "db", endpoint("db-0", victimDB0, nil), endpoint("db-1", "10.250.9.16", nil))
	s.expectPassedOn(t, victimDB0)
	expectPTR(t, s.with.server, "10.250.9.16", "db-1.east.db."+ns+".svc.clusterset.local.")
}

func (s *trustSuite) sliceForeignLabel(t *testing.T) {
	ns := attacker(t)
	// A slice in the attacker's namespace labelled for "db", the victim's
	// service: labels name a service of the slice's own namespace, where no
	// import db exists.
	createSlice(t, ns, "db", "east", "db-steal", discovery.AddressTypeIPv4, endpoint("db-9", "10.250.9.17", nil))
	// Then an import there that the server answers, so that the slice has
	// been seen by the time it does.
	s.hostileImport(t, newImport(ns, "marker", "10.250.9.18"))
	expectRcode(t, s.with.server, "db."+ns+".svc.clusterset.local.", dns.TypeA, propagation, dns.RcodeNameError)
	expectRcode(t, s.with.server, "db-9.east.db."+s.victim+".svc.clusterset.local.", dns.TypeA, propagation, dns.RcodeNameError)
	s.expectPassedOn(t, "10.250.9.17")
}

func (s *trustSuite) sliceLocalPod(t *testing.T) {
	ns := attacker(t)
	s.hostileHeadless(t, ns, "pods", endpoint("", localPod, nil), endpoint("", "10.250.9.19", nil))
	// The local endpoint's name is the kubernetes plugin's own; the
	// plugin answers it only because that plugin, caching the hostile
	// slice too, could not (see TestAddressesOfTheLocalCluster).
	expectPTR(t, s.with.server, localPod, "10-244-250-5.api."+s.victim+".svc.cluster.local.")
}

func (s *trustSuite) derivedElsewhere(t *testing.T) {
	ns := attacker(t)
	for name, derived := range map[string]string{
		"steal":       "derived-web",                   // a Service of that name in the attacker's namespace: none
		"steal-path":  s.victim + "/derived-web",       // not a Service name: skipped
		"steal-local": "kubernetes",                    // no such Service in the attacker's namespace
		"steal-dots":  "derived-web." + s.victim,       // not a Service name either
		"steal-api":   "api.default.svc.cluster.local", // nor a DNS name
	} {
		si := newImport(ns, name)
		si.Annotations = map[string]string{"multicluster.kubernetes.io/derived-service": derived}
		s.hostileImport(t, si)
	}
	s.hostileImport(t, newImport(ns, "marker", "10.250.9.20"))
	for _, name := range []string{"steal", "steal-path", "steal-local", "steal-dots", "steal-api"} {
		r := s.with.query(t, "udp", name+"."+ns+".svc.clusterset.local.", dns.TypeA)
		if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 {
			t.Errorf("%s answers %s %v, want NODATA: it has no address of its own", name, dns.RcodeToString[r.Rcode], r.Answer)
		}
	}
	expectPTR(t, s.with.server, s.web, "web."+s.victim+".svc.clusterset.local.")
	if !strings.Contains(s.with.log.String(), "ServiceImport "+ns+"/steal-path") {
		t.Errorf("the annotation that is no Service name was not logged:\n%s", s.with.log.String())
	}
}

func (s *trustSuite) awsDerivedElsewhere(t *testing.T) {
	ns := attacker(t)
	si := newImport(ns, "steal", "10.250.9.21")
	si.Annotations = map[string]string{"multicluster.k8s.aws/derived-service": `["derived-web","api","` + s.victim + `/api"]`}
	s.hostileImport(t, si)
	expectPTR(t, s.with.server, s.web, "web."+s.victim+".svc.clusterset.local.")
	expectSameAnswers(t, s.with.server, s.without, []question{{reverse(t, s.api), dns.TypePTR}})
}

// heapLive estimates the server's live heap from the heap size the Go
// runtime aims at, which is twice what the last collection left live.
func (s *trustSuite) heapLive(t *testing.T) float64 {
	t.Helper()
	return s.with.metric(t, "go_memstats_next_gc_bytes", "") / 2
}

func (s *trustSuite) hugeObjects(t *testing.T) {
	ns := attacker(t)
	const imports, annotation = 100, 200 << 10
	before := s.heapLive(t)
	filler := strings.Repeat("x", annotation)
	for i := range imports {
		si := newImport(ns, fmt.Sprintf("huge-%d", i), fmt.Sprintf("10.250.10.%d", i+1))
		si.Annotations = map[string]string{"example.com/filler": filler}
		si.Labels = map[string]string{"example.com/filler": strings.Repeat("y", 63)}
		createImport(t, si)
	}
	// 2,000 ports on one import: each becomes an SRV record.
	ports := newImport(ns, "ports", "10.250.10.250")
	ports.Spec.Ports = nil
	for p := range 2000 {
		ports.Spec.Ports = append(ports.Spec.Ports, mcsv1beta1.ServicePort{Name: fmt.Sprintf("p%d", p), Protocol: corev1.ProtocolTCP, Port: int32(10000 + p)})
	}
	createImport(t, ports)
	expectAddresses(t, s.with.server, fmt.Sprintf("huge-%d.%s.svc.clusterset.local.", imports-1, ns), dns.TypeA, 3*propagation, fmt.Sprintf("10.250.10.%d", imports))
	expectAddresses(t, s.with.server, "ports."+ns+".svc.clusterset.local.", dns.TypeA, propagation, "10.250.10.250")
	// The SRV answer is too big for UDP: truncated, never a failure.
	if r := s.with.query(t, "udp", "ports."+ns+".svc.clusterset.local.", dns.TypeSRV); r.Rcode != dns.RcodeSuccess || !r.Truncated {
		t.Errorf("SRV of 2,000 ports over UDP: %s, truncated %v", dns.RcodeToString[r.Rcode], r.Truncated)
	}
	if r := s.with.query(t, "tcp", "_p1999._tcp.ports."+ns+".svc.clusterset.local.", dns.TypeSRV); len(r.Answer) != 1 {
		t.Errorf("one port of 2,000: %v", r.Answer)
	}
	// The annotations (20 MiB written) are not kept: what the plugin holds
	// grows by far less than what was written.
	written := float64(imports * annotation)
	grown := s.heapLive(t) - before
	t.Logf("live heap %.1f MiB -> %.1f MiB after %.1f MiB of annotations", before/(1<<20), (before+grown)/(1<<20), written/(1<<20))
	if grown > written/2 {
		t.Errorf("the live heap grew by %.1f MiB for %.1f MiB of annotations the plugin never reads", grown/(1<<20), written/(1<<20))
	}
}

func (s *trustSuite) manySlices(t *testing.T) {
	ns := attacker(t)
	const slices, perSlice = 300, 100
	si := newImport(ns, "many")
	si.Spec.Type = mcsv1beta1.Headless
	s.hostileImport(t, si)
	before := s.heapLive(t)
	// The victim answers throughout.
	stop := s.keepAsking(t, "checkout."+s.victim+".svc.cluster.local.", victimVIP)
	for i := range slices {
		var eps []discovery.Endpoint
		for j := range perSlice {
			eps = append(eps, endpoint(fmt.Sprintf("m-%d-%d", i, j), fmt.Sprintf("10.251.%d.%d", i%250, j+1+100*(i/250)), nil))
		}
		createSlice(t, ns, "many", fmt.Sprintf("c%d", i), fmt.Sprintf("many-%d", i), discovery.AddressTypeIPv4, eps...)
	}
	last := fmt.Sprintf("m-%d-%d.c%d.many.%s.svc.clusterset.local.", slices-1, perSlice-1, slices-1, ns)
	expectAddresses(t, s.with.server, last, dns.TypeA, 5*propagation, fmt.Sprintf("10.251.%d.%d", (slices-1)%250, perSlice+100*((slices-1)/250)))
	stop()
	if r := s.with.query(t, "udp", "many."+ns+".svc.clusterset.local.", dns.TypeA); r.Rcode != dns.RcodeSuccess || !r.Truncated {
		t.Errorf("A of 30,000 endpoints over UDP: %s, truncated %v", dns.RcodeToString[r.Rcode], r.Truncated)
	}
	grown := s.heapLive(t) - before
	t.Logf("live heap grew %.1f MiB for %d endpoints (%.0f B each)", grown/(1<<20), slices*perSlice, grown/(slices*perSlice))
	if grown > 1536*slices*perSlice {
		t.Errorf("the live heap grew by %.0f B per endpoint, more than 1.5 KiB", grown/(slices*perSlice))
	}
}

// keepAsking asks name over UDP in a loop until the returned function runs,
// which fails the test if any answer was not exactly want.
func (s *trustSuite) keepAsking(t *testing.T, name, want string) (stop func()) {
	t.Helper()
	var done atomic.Bool
	var wg sync.WaitGroup
	var asked, wrong atomic.Int64
	var last atomic.Value
	wg.Add(1)
	go func() {
		defer wg.Done()
		// One lookup every 5 ms: a client's steady pace, not a wait.
		pace := time.NewTicker(5 * time.Millisecond)
		defer pace.Stop()
		for ; !done.Load(); <-pace.C {
			m := new(dns.Msg)
			m.SetQuestion(name, dns.TypeA)
			r, err := harness.Ask("udp", s.with.addr, m)
			asked.Add(1)
			if err != nil || r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != want {
				wrong.Add(1)
				last.Store(fmt.Sprint(r, err))
			}
		}
	}()
	return func() {
		done.Store(true)
		wg.Wait()
		t.Logf("%s: %d lookups during the attack", name, asked.Load())
		if wrong.Load() > 0 || asked.Load() == 0 {
			t.Errorf("%s: %d of %d lookups during the attack were not %s; last: %v", name, wrong.Load(), asked.Load(), want, last.Load())
		}
	}
}

func (s *trustSuite) flapping(t *testing.T) {
	ns := attacker(t)
	const flaps = 300
	si := createImport(t, newImport(ns, "flap", "10.250.11.1"))
	t.Cleanup(func() {
		_ = mcs.MulticlusterV1beta1().ServiceImports(ns).Delete(context.Background(), "flap", meta.DeleteOptions{})
	})
	stop := s.keepAsking(t, "checkout."+s.victim+".svc.clusterset.local.", victimVIP)
	before := s.heapLive(t)
	linesBefore := strings.Count(s.with.log.String(), "is claimed by imports of namespaces")
	for i := range flaps {
		// Claim the victim's address, then let it go, as fast as the API
		// server takes it.
		si.Spec.IPs = []string{"10.250.11.1"}
		if i%2 == 0 {
			si.Spec.IPs = append(si.Spec.IPs, victimVIP)
		}
		var err error
		if si, err = mcs.MulticlusterV1beta1().ServiceImports(ns).Update(context.Background(), si, meta.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The last update let the address go.
	s.expectOwnPTR(t, victimVIP, "checkout."+s.victim+".svc.clusterset.local.")
	stop()
	logged := strings.Count(s.with.log.String(), "is claimed by imports of namespaces") - linesBefore
	t.Logf("%d flaps logged %d conflict lines", flaps, logged)
	// At most 20 a minute; the flaps take seconds, but may straddle the
	// end of a minute.
	if logged > 40 {
		t.Errorf("%d flaps logged %d conflict lines, want at most 20 a minute", flaps, logged)
	}
	if grown := s.heapLive(t) - before; grown > 16<<20 {
		t.Errorf("the live heap grew by %.1f MiB over %d flaps", grown/(1<<20), flaps)
	}
}
