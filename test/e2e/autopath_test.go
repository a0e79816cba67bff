package e2e

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-mcs/coredns-mcs/plugin/multicluster/dnscheck"
	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// corefileAutopath is the kube-system Corefile with metrics
// (resilienceCorefile), plus autopath, which needs the kubernetes plugin's
// pod cache (pods verified), and the rest of the world at upstream; plain
// leaves multicluster out.
func corefileAutopath(metricsPort int, upstream string, plain bool) string {
	corefile := strings.NewReplacer(
		"\n    kubernetes ", "\n    autopath @kubernetes\n    kubernetes ",
		"pods insecure", "pods verified",
		"    }\n}\n", "    }\n    forward . "+upstream+"\n}\n",
	).Replace(resilienceCorefile(cp.Kubeconfig, metricsPort, plain))
	for _, want := range []string{"autopath", "pods verified", "forward"} {
		if !strings.Contains(corefile, want) {
			panic("the kube-system Corefile changed shape: no " + want + " in\n" + corefile)
		}
	}
	return corefile
}

// queryFrom asks s for name over UDP from the local address source, as a
// client with that address does.
func queryFrom(t *testing.T, s *server, source, name string, qtype uint16) *dns.Msg {
	t.Helper()
	c := dns.Client{Net: "udp", Timeout: 2 * time.Second, Dialer: &net.Dialer{LocalAddr: &net.UDPAddr{IP: net.ParseIP(source)}}}
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	r, _, err := c.Exchange(m, s.addr)
	if err != nil {
		t.Fatalf("query %s from %s: %v", name, source, err)
	}
	if err := dnscheck.Distinct(r); err != nil {
		t.Errorf("query %s from %s: %v", name, source, err)
	}
	return r
}

// TestAutopath runs the kube-system Corefile with autopath, with and without
// multicluster side by side. The tests query from 127.0.0.1, which a Pod
// object in namespace "client" claims as its address (there is no kubelet:
// the test sets the Pod's status itself), so the kubernetes plugin gives
// autopath that pod's search path: client.svc.cluster.local,
// svc.cluster.local, cluster.local, then the host's.
//
// The names are what a pod's resolver sends first for a short name: the
// name with the first search domain appended. With multicluster, the short
// names of import-only services resolve through autopath to the fallback
// answer, with a CNAME from the name asked when the expansion changed it,
// and a clusterset name asked that way resolves to its clusterset answer;
// every local name is answered byte for byte as without multicluster.
func TestAutopath(t *testing.T) {
	ctx := context.Background()
	client, other := namespace(t, "client"), namespace(t, "remote")
	search := client + ".svc.cluster.local."

	pod, err := kube.CoreV1().Pods(client).Create(ctx, &corev1.Pod{
		ObjectMeta: meta.ObjectMeta{Name: "app"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}},
	}, meta.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// No controller-manager deletes the pods of a deleted namespace, and a
	// pod that was never scheduled goes at once.
	t.Cleanup(func() { _ = kube.CoreV1().Pods(client).Delete(ctx, pod.Name, meta.DeleteOptions{}) })
	pod.Status.Phase = corev1.PodRunning
	pod.Status.PodIP = "127.0.0.1"
	pod.Status.PodIPs = []corev1.PodIP{{IP: "127.0.0.1"}}
	if _, err := kube.CoreV1().Pods(client).UpdateStatus(ctx, pod, meta.UpdateOptions{}); err != nil {
		t.Fatalf("set the pod's address: %v", err)
	}

	createImport(t, newImport(client, "remote-only", "10.42.18.1"))
	createImport(t, newImport(other, "remote-only", "10.42.18.2"))
	createService(t, client, "local-svc")
	createService(t, other, "b-svc")
	both := createService(t, client, "both")
	createImport(t, newImport(client, "both", "10.42.18.3"))

	internet := startServer(t, corefileInternet, false)
	start := func(plain bool) (*server, string) {
		port := harness.FreePort(t)
		return startServer(t, corefileAutopath(port, internet.addr, plain), true), fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	}
	with, metrics := start(false)
	without, _ := start(true)
	expectAddresses(t, with, "remote-only."+other+".svc.cluster.local.", dns.TypeA, propagation, "10.42.18.2")

	// The kubernetes plugin's pod cache must know the pod before autopath
	// expands anything: until then "local-svc.CLIENT" is not expanded.
	localShort := "local-svc." + client + "." + search
	for _, s := range []*server{with, without} {
		poll.Eventually(t, 5*time.Second, "autopath expands names for the pod at 127.0.0.1", func() (bool, string) {
			r := s.query(t, "udp", localShort, dns.TypeA)
			return r.Rcode == dns.RcodeSuccess, r.String()
		})
	}

	// The wait above ends on the first answer autopath expanded for the
	// server with the plugin: count from after autopath has counted it
	// (it counts after writing, see below), so that it does not land in
	// the count of the questions that follow.
	var successes float64
	poll.Eventually(t, 5*time.Second, "autopath counts the pod's first expansion", func() (bool, string) {
		successes = metricSum(t, metrics, "coredns_autopath_success_total")
		return successes >= 1, fmt.Sprint(successes)
	})
	ttl := " 5 IN "
	expectRecords(t, with, "remote-only."+search, dns.TypeA, dns.RcodeSuccess, []string{
		"remote-only." + search + ttl + "A 10.42.18.1",
	}, nil)
	expectRecords(t, with, "remote-only."+other+"."+search, dns.TypeA, dns.RcodeSuccess, []string{
		"remote-only." + other + "." + search + ttl + "CNAME remote-only." + other + ".svc.cluster.local.",
		"remote-only." + other + ".svc.cluster.local." + ttl + "A 10.42.18.2",
	}, nil)
	expectRecords(t, with, "remote-only."+other+".svc.clusterset.local."+search, dns.TypeA, dns.RcodeSuccess, []string{
		"remote-only." + other + ".svc.clusterset.local." + search + ttl + "CNAME remote-only." + other + ".svc.clusterset.local.",
		"remote-only." + other + ".svc.clusterset.local." + ttl + "A 10.42.18.2",
	}, nil)
	// The import has no IPv6 address: NODATA, the search ends there.
	expectRecords(t, with, "remote-only."+other+"."+search, dns.TypeAAAA, dns.RcodeSuccess, nil, nil)
	// autopath answered each, over UDP and TCP (the first at the first
	// step of the search path, which it counts too). It counts an answer
	// after writing it (autopath.go in CoreDNS v1.15.0: WriteMsg, then
	// autoPathCount.Add), so the last count may come just after the reply.
	var got float64
	poll.Eventually(t, 5*time.Second, "autopath counts the eight answers", func() (bool, string) {
		got = metricSum(t, metrics, "coredns_autopath_success_total") - successes
		return got >= 8, fmt.Sprintf("grew by %v", got)
	})
	if got != 8 {
		t.Errorf("coredns_autopath_success_total grew by %v, want 8 (four questions, over UDP and TCP)", got)
	}
	for _, name := range []string{"remote-only." + search, "remote-only." + other + "." + search} {
		expectRcodeNow(t, without, name, dns.TypeA, dns.RcodeNameError)
	}

	// From an address no pod has, nothing is expanded.
	if r := queryFrom(t, with, "127.0.0.2", "remote-only."+other+"."+search, dns.TypeA); r.Rcode != dns.RcodeNameError {
		t.Errorf("from 127.0.0.2, which is no pod's: %s %v, want NXDOMAIN", dns.RcodeToString[r.Rcode], addresses(r))
	}

	expectSameAnswers(t, with, without, []question{
		{"local-svc." + search, dns.TypeA},
		{"local-svc." + search, dns.TypeAAAA},
		{"local-svc." + search, dns.TypeSRV},
		{localShort, dns.TypeA},
		{"local-svc." + client + ".svc." + search, dns.TypeA},
		{"_http._tcp.local-svc." + client + "." + search, dns.TypeSRV},
		{"b-svc." + other + "." + search, dns.TypeA},
		{"both." + search, dns.TypeA},
		{"both." + client + "." + search, dns.TypeA},
		{"kubernetes.default." + search, dns.TypeA},
		{"nope." + search, dns.TypeA},
		{"nope." + other + "." + search, dns.TypeA},
		{"www.example.com." + search, dns.TypeA},
	})
	if got := addresses(with.query(t, "udp", "both."+search, dns.TypeA)); len(got) != 1 || got[0] != both.Spec.ClusterIP {
		t.Errorf("both (a local Service and an import): %v, want the local ClusterIP %s", got, both.Spec.ClusterIP)
	}
}
