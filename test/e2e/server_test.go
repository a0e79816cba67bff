package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/coredns-mcs/coredns-mcs/plugin/multicluster/dnscheck"
	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// server is a running coredns process.
type server struct {
	addr     string // 127.0.0.1:port, UDP and TCP
	ready    string // URL of the ready plugin
	log      *harness.Output
	corefile string // what it runs, where the test keeps it
}

// startServer runs coredns with the Corefile template, in which {{.Port}}
// and {{.ReadyPort}} are replaced by free ports and {{.Kubeconfig}} by the
// admin kubeconfig. It waits until /ready says 200 when waitReady is set.
func startServer(t *testing.T, corefile string, waitReady bool) *server {
	t.Helper()
	port, readyPort := harness.FreePort(t), harness.FreePort(t)
	corefile = strings.NewReplacer("{{.Port}}", fmt.Sprint(port), "{{.ReadyPort}}", fmt.Sprint(readyPort), "{{.Kubeconfig}}", cp.Kubeconfig).Replace(corefile)
	path := filepath.Join(t.TempDir(), "Corefile")
	if err := os.WriteFile(path, []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &server{addr: fmt.Sprintf("127.0.0.1:%d", port), ready: fmt.Sprintf("http://127.0.0.1:%d/ready", readyPort)}
	s.log = harness.StartCoreDNS(t, "coredns", binary, path, s.addr, func() bool { return !waitReady || s.isReady() })
	return s
}

func (s *server) isReady() bool {
	return harness.HTTPOK(s.ready)
}

// query asks the server over proto ("udp" or "tcp").
func (s *server) query(t *testing.T, proto, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	r, err := harness.Ask(proto, s.addr, m)
	if err != nil {
		t.Fatalf("query %s %s over %s: %v", name, dns.TypeToString[qtype], proto, err)
	}
	return r
}

// addresses returns the A and AAAA values of an answer, in order.
func addresses(r *dns.Msg) []string { return dnscheck.Addresses(r.Answer) }

// expectAddresses waits until name answers exactly want, in any order (over
// UDP and TCP).
func expectAddresses(t *testing.T, s *server, name string, qtype uint16, within time.Duration, want ...string) {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	poll.Eventually(t, within, fmt.Sprintf("%s %s answers %v", name, dns.TypeToString[qtype], want), func() (bool, string) {
		for _, proto := range []string{"udp", "tcp"} {
			r := s.query(t, proto, name, qtype)
			got := slices.Sorted(slices.Values(addresses(r)))
			if r.Rcode != dns.RcodeSuccess || !slices.Equal(got, want) {
				return false, fmt.Sprintf("%s: %s %v", proto, dns.RcodeToString[r.Rcode], got)
			}
		}
		return true, ""
	})
}

// expectRcode waits until name answers rcode.
func expectRcode(t *testing.T, s *server, name string, qtype uint16, within time.Duration, rcode int) {
	t.Helper()
	poll.Eventually(t, within, fmt.Sprintf("%s %s answers %s", name, dns.TypeToString[qtype], dns.RcodeToString[rcode]), func() (bool, string) {
		r := s.query(t, "udp", name, qtype)
		return r.Rcode == rcode, dns.RcodeToString[r.Rcode] + " " + fmt.Sprint(addresses(r))
	})
}

// namespace creates a namespace for one test and deletes it afterwards.
func namespace(t *testing.T, prefix string) string {
	t.Helper()
	ns, err := kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: meta.ObjectMeta{GenerateName: prefix + "-"}}, meta.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emptyNamespace(ns.Name) })
	return ns.Name
}

// namespaced are the kinds the tests create in their namespaces that the
// plugin or the API server keeps account of across namespaces: imports
// claim reverse names, Services their cluster IPs.
var namespaced = []schema.GroupVersionResource{
	{Group: "multicluster.x-k8s.io", Version: "v1beta1", Resource: "serviceimports"},
	{Group: "multicluster.x-k8s.io", Version: "v1beta1", Resource: "serviceexports"},
	{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"},
	{Version: "v1", Resource: "services"},
}

// emptyNamespace deletes what a test left in ns, then ns. No namespace
// controller runs beside this API server, so a deleted namespace would
// keep its objects: the imports of a test run before, in the same process
// (go test -count) or earlier in a shuffled order, would claim the same
// addresses as this run's and make their reverse names a conflict.
func emptyNamespace(ns string) {
	deleteContents(ns)
	_ = kube.CoreV1().Namespaces().Delete(context.Background(), ns, meta.DeleteOptions{})
}

// deleteContents deletes the objects of the namespaced kinds in ns.
func deleteContents(ns string) {
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(cp.Config)
	for _, gvr := range namespaced {
		// Services have no deletecollection: one at a time.
		list, err := dyn.Resource(gvr).Namespace(ns).List(ctx, meta.ListOptions{})
		if err != nil {
			continue
		}
		for _, o := range list.Items {
			_ = dyn.Resource(gvr).Namespace(ns).Delete(ctx, o.GetName(), meta.DeleteOptions{})
		}
	}
}

func newImport(ns, name string, ips ...string) *mcsv1beta1.ServiceImport {
	return &mcsv1beta1.ServiceImport{
		ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name},
		Spec: mcsv1beta1.ServiceImportSpec{
			Type:  mcsv1beta1.ClusterSetIP,
			IPs:   ips,
			Ports: []mcsv1beta1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}},
		},
	}
}

func createImport(t *testing.T, si *mcsv1beta1.ServiceImport) *mcsv1beta1.ServiceImport {
	t.Helper()
	out, err := mcs.MulticlusterV1beta1().ServiceImports(si.Namespace).Create(context.Background(), si, meta.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func createService(t *testing.T, ns, name string, clusterIPs ...string) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}},
		},
	}
	if len(clusterIPs) > 0 {
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = clusterIPs[0], clusterIPs
	}
	out, err := kube.CoreV1().Services(ns).Create(context.Background(), svc, meta.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
