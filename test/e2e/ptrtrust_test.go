package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// Reverse names across namespaces, against the real kubernetes plugin,
// whose namespaces option hides a namespace: a namespace that writes
// Services, EndpointSlices and ServiceImports of its own can neither take
// another namespace's address silently, nor make its import's name answer
// for it, nor make the server name, or fail to answer, an address of the
// hidden namespace. Rows of docs/trust.md.

// Addresses of the victim's imports. The ClusterSetIPs lie in the API
// server's Service range (10.96.0.0/12), free there until a row takes them.
const (
	ptrTrustVIP     = "10.111.250.10" // demo/checkout, taken by a Service
	ptrTrustDerived = "10.111.250.11" // demo/cart, taken by a derived Service
	ptrTrustSlice   = "10.111.250.12" // demo/pay, listed by a local slice
	ptrTrustDB      = "10.250.3.1"    // demo/db's endpoint db-0 in cluster east
	hiddenPod       = "10.244.251.9"  // hidden/secret-svc's endpoint secret-host
	markerPod       = "10.244.251.11"
)

// ptrTrustCorefile is the cluster's Corefile with metrics, its kubernetes
// plugin limited to namespaces; without multicluster when plain is set.
func ptrTrustCorefile(metricsPort int, plain bool, namespaces ...string) string {
	multicluster := `
    multicluster clusterset.local in-addr.arpa ip6.arpa {
        kubeconfig {{.Kubeconfig}}
        fallback cluster.local
    }`
	if plain {
		multicluster = ""
	}
	return `.:{{.Port}} {
    ready 127.0.0.1:{{.ReadyPort}}
    prometheus 127.0.0.1:` + strconv.Itoa(metricsPort) + multicluster + `
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig {{.Kubeconfig}}
        namespaces ` + strings.Join(namespaces, " ") + `
    }
}
`
}

func TestReverseNamesAcrossNamespaces(t *testing.T) {
	victim, attacker, hidden := namespace(t, "demo"), namespace(t, "aaa"), namespace(t, "hidden")
	metricsPort := harness.FreePort(t)
	with := resilientServer{
		server:  startServer(t, ptrTrustCorefile(metricsPort, false, "default", victim, attacker), true),
		metrics: "http://127.0.0.1:" + strconv.Itoa(metricsPort) + "/metrics",
	}
	without := startServer(t, ptrTrustCorefile(harness.FreePort(t), true, "default", victim, attacker), true)
	localConflicts := func() float64 {
		return metricSum(t, with.metrics, "coredns_multicluster_policy_decisions_total", `rule="ptr_local_conflict"`)
	}
	// expectLocalConflict waits until the reverse name of ip is the
	// cluster's own, want, and checks that asking it counts as a conflict,
	// logged as held by holder and claimed by the victim.
	expectLocalConflict := func(t *testing.T, ip, want, holder string) {
		t.Helper()
		waitPTR(t, with.server, ip, want)
		before := localConflicts()
		expectPTR(t, with.server, ip, want)
		if got := localConflicts() - before; got < 1 {
			t.Errorf("PTR %s: ptr_local_conflict counted %v, want at least 1", ip, got)
		}
		// Once a minute per address: once, unless the row took a minute.
		if line := "address " + ip + ", " + holder + ", is claimed by imports of namespaces " + victim + " too"; !strings.Contains(with.log.String(), line) {
			t.Errorf("the log does not say %q:\n%s", line, with.log.String())
		}
	}

	t.Run("a Service takes another namespace's ClusterSetIP", func(t *testing.T) {
		createImport(t, newImport(victim, "checkout", ptrTrustVIP))
		waitPTR(t, with.server, ptrTrustVIP, "checkout."+victim+".svc.clusterset.local.")
		createService(t, attacker, "grab", ptrTrustVIP)
		// kube-proxy sends the address to the Service: its name is the
		// cluster's answer, as without the plugin, and a counted, logged
		// conflict.
		expectSameAnswers(t, with.server, without, []question{{reverse(t, ptrTrustVIP), dns.TypePTR}})
		expectLocalConflict(t, ptrTrustVIP, "grab."+attacker+".svc.cluster.local.", "the ClusterIP of the local Service "+attacker+"/grab")
		expectAddresses(t, with.server, "checkout."+victim+".svc.clusterset.local.", dns.TypeA, propagation, ptrTrustVIP)
	})

	t.Run("a derived Service takes another namespace's ClusterSetIP", func(t *testing.T) {
		createImport(t, newImport(victim, "cart", ptrTrustDerived))
		waitPTR(t, with.server, ptrTrustDerived, "cart."+victim+".svc.clusterset.local.")
		createService(t, attacker, "grab-cart", ptrTrustDerived)
		evil := newImport(attacker, "evil")
		evil.Annotations = map[string]string{"multicluster.kubernetes.io/derived-service": "grab-cart"}
		createImport(t, evil)
		// The server has seen the import once its name answers the
		// derived Service's address.
		expectAddresses(t, with.server, "evil."+attacker+".svc.clusterset.local.", dns.TypeA, propagation, ptrTrustDerived)
		// Not the attacker's clusterset name: the cluster's own.
		expectLocalConflict(t, ptrTrustDerived, "grab-cart."+attacker+".svc.cluster.local.", "the ClusterIP of the local Service "+attacker+"/grab-cart (the derived Service of ["+attacker+"/evil])")
		expectSameAnswers(t, with.server, without, []question{{reverse(t, ptrTrustDerived), dns.TypePTR}})
	})

	t.Run("a local EndpointSlice lists another namespace's addresses", func(t *testing.T) {
		createImport(t, newImport(victim, "pay", ptrTrustSlice))
		db := newImport(victim, "db")
		db.Spec.Type = mcsv1beta1.Headless
		createImport(t, db)
		createSlice(t, victim, "db", "east", "db-east", discovery.AddressTypeIPv4, endpoint("db-0", ptrTrustDB, nil))
		waitPTR(t, with.server, ptrTrustSlice, "pay."+victim+".svc.clusterset.local.")
		waitPTR(t, with.server, ptrTrustDB, "db-0.east.db."+victim+".svc.clusterset.local.")
		// No Service: the kubernetes plugin names any endpoint of a slice
		// labelled kubernetes.io/service-name (serviceRecordForIP).
		localSlice(t, attacker, "steal", endpoint("pay", ptrTrustSlice, nil), endpoint("db", ptrTrustDB, nil))
		expectLocalConflict(t, ptrTrustSlice, "pay.steal."+attacker+".svc.cluster.local.", "the address of a local endpoint of "+attacker+"/steal")
		expectSameAnswers(t, with.server, without, []question{{reverse(t, ptrTrustSlice), dns.TypePTR}})
		// The kubernetes plugin caches db's multicluster slice too, and
		// could send no answer for its address (without the plugin, none
		// comes): the plugin answers the local endpoint's name for it.
		expectLocalConflict(t, ptrTrustDB, "db.steal."+attacker+".svc.cluster.local.", "the address of a local endpoint of "+attacker+"/steal")
	})

	t.Run("a namespace the kubernetes plugin hides", func(t *testing.T) {
		secret := createService(t, hidden, "secret-svc")
		localSlice(t, hidden, "secret-svc", endpoint("secret-host", hiddenPod, nil))
		// A multicluster slice without a source-cluster label, which the
		// kubernetes plugin caches too, at the hidden pod's address and
		// the hidden ClusterIP.
		leak := &discovery.EndpointSlice{
			ObjectMeta:  meta.ObjectMeta{Namespace: attacker, Name: "leak-1", Labels: map[string]string{mcsv1beta1.LabelServiceName: "leak"}},
			AddressType: discovery.AddressTypeIPv4,
			Endpoints:   []discovery.Endpoint{endpoint("x", hiddenPod, nil), endpoint("", secret.Spec.ClusterIP, nil)},
		}
		if _, err := kube.DiscoveryV1().EndpointSlices(attacker).Create(context.Background(), leak, meta.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The kubernetes plugin's informer delivers slices in the order
		// they were written: once it names the marker, it has the leak.
		localSlice(t, attacker, "marker", endpoint("", markerPod, nil))
		waitPTR(t, with.server, markerPod, "10-244-251-11.marker."+attacker+".svc.cluster.local.")
		expectHidden := func(t *testing.T) {
			t.Helper()
			for _, ip := range []string{hiddenPod, secret.Spec.ClusterIP} {
				for _, proto := range []string{"udp", "tcp"} {
					m := new(dns.Msg)
					m.SetQuestion(reverse(t, ip), dns.TypePTR)
					r, err := harness.Ask(proto, with.addr, m)
					if err != nil {
						t.Errorf("PTR %s over %s: no answer: %v", ip, proto, err)
						continue
					}
					// As the kubernetes plugin answers an address it does
					// not know.
					if r.Rcode != dns.RcodeNameError || len(r.Answer) != 0 || strings.Contains(r.String(), hidden) {
						t.Errorf("PTR %s over %s: want NXDOMAIN naming nothing of %s, got\n%s", ip, proto, hidden, r)
					}
				}
			}
		}
		expectHidden(t)
		// An import of the slice: the plugin serves its addresses too.
		leakImport := newImport(attacker, "leak")
		leakImport.Spec.Type = mcsv1beta1.Headless
		createImport(t, leakImport)
		expectAddresses(t, with.server, "leak."+attacker+".svc.clusterset.local.", dns.TypeA, propagation, hiddenPod, secret.Spec.ClusterIP)
		expectHidden(t)
		if log := with.log.String(); strings.Contains(log, "secret-host") {
			t.Errorf("the log names the hidden endpoint's host:\n%s", log)
		}
	})
}

// waitPTR waits until ip points back to exactly target, over UDP and TCP.
func waitPTR(t *testing.T, s *server, ip, target string) {
	t.Helper()
	poll.Eventually(t, propagation, "PTR "+ip+" -> "+target, func() (bool, string) {
		r := s.query(t, "udp", reverse(t, ip), dns.TypePTR)
		return len(r.Answer) == 1 && r.Answer[0].(*dns.PTR).Ptr == target, r.String()
	})
	expectPTR(t, s, ip, target)
}

// localSlice creates an EndpointSlice of ns labelled
// kubernetes.io/service-name=service, as the endpoint slice controller
// does for a Service, or anyone may for none.
func localSlice(t *testing.T, ns, service string, endpoints ...discovery.Endpoint) {
	t.Helper()
	slice := &discovery.EndpointSlice{
		ObjectMeta:  meta.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-local", service), Labels: map[string]string{discovery.LabelServiceName: service}},
		AddressType: discovery.AddressTypeIPv4,
		Endpoints:   endpoints,
		Ports:       []discovery.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](80)}},
	}
	if _, err := kube.DiscoveryV1().EndpointSlices(ns).Create(context.Background(), slice, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
