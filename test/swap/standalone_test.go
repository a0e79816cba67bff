//go:build linux

package swap

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/testbin"
)

// upstreamRecorder listens where the node's pods with dnsPolicy Default
// (CoreDNS) send what they forward: the node's address, port 53, in the
// node's network namespace (test/internal/node's kubelet resolv.conf). It keeps every
// name, so that a test can tell what the cluster's DNS sent upstream, and
// answers as the Internet would for the names of externalZone (A
// externalAddress, NODATA for other types) and NXDOMAIN for every other
// name.
type upstreamRecorder struct {
	mu    sync.Mutex
	names []string
	srv   *dns.Server
}

// externalZone is where the names that exist outside the cluster are, for
// the clients that look them up through their search path; each answers
// externalAddress.
const (
	externalZone    = "example.org."
	externalAddress = "192.0.2.1"
)

func (s *scenario) recordUpstream() *upstreamRecorder {
	s.t.Helper()
	pc, err := s.n.NetNS.ListenPacket("udp", s.n.Layout.IP+":53")
	if err != nil {
		s.t.Fatalf("listen on the node's upstream resolver address: %v", err)
	}
	r := &upstreamRecorder{}
	r.srv = &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		question := q.Question[0]
		name := strings.ToLower(question.Name)
		r.mu.Lock()
		r.names = append(r.names, name)
		r.mu.Unlock()
		m := new(dns.Msg)
		if !dns.IsSubDomain(externalZone, name) {
			m.SetRcode(q, dns.RcodeNameError)
			_ = w.WriteMsg(m)
			return
		}
		m.SetReply(q)
		m.Authoritative = true
		if question.Qtype == dns.TypeA {
			m.Answer = append(m.Answer, &dns.A{
				Hdr: dns.RR_Header{Name: question.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30},
				A:   net.ParseIP(externalAddress).To4(),
			})
		}
		_ = w.WriteMsg(m)
	})}
	started := make(chan struct{})
	r.srv.NotifyStartedFunc = func() { close(started) }
	go func() { _ = r.srv.ActivateAndServe() }()
	<-started
	s.t.Cleanup(func() { _ = r.srv.Shutdown() })
	return r
}

// reset forgets what was asked so far.
func (r *upstreamRecorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.names = nil
}

func (r *upstreamRecorder) asked() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.names)
}

// kubectlMCS runs kubectl mcs (built from cmd/kubectl-mcs) in the node's
// network namespace, where kube-apiserver listens, against the node's
// cluster.
func (s *scenario) kubectlMCS(args ...string) string {
	s.t.Helper()
	bin := filepath.Join(s.work, "kubectl-mcs")
	if _, err := os.Stat(bin); err != nil {
		if _, err := harness.GoBuild(bin, "github.com/coredns-mcs/coredns-mcs/cmd/kubectl-mcs"); err != nil {
			s.t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(s.ctx, bin, append(args, "--kubeconfig", s.n.ControlPlane.Kubeconfig)...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	err := s.n.NetNS.Do(cmd.Start)
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		s.t.Fatalf("kubectl mcs %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// front applies the cluster DNS's configuration kubectl mcs front writes
// for this cluster (this test's ClusterSetIP range is 10.100.0.0/16) and
// restarts stock CoreDNS; it returns the Corefile applied, which must be
// kubeadm's (corefile) with blocks forwarding to the standalone Service's
// current address.
func (s *scenario) front(corefile string) string {
	s.t.Helper()
	out := s.kubectlMCS("front", "--apply", "--clusterset-cidr", "10.100.0.0/16")
	if !strings.Contains(out, "# platform: kubeadm") {
		s.t.Errorf("kubectl mcs front detected:\n%s", out)
	}
	applied := s.kubectl("-n", "kube-system", "get", "configmap", "coredns", "-o", "jsonpath={.data.Corefile}")
	address := strings.TrimSpace(s.kubectl("-n", "kube-system", "get", "service", "coredns-mcs", "-o", "jsonpath={.spec.clusterIP}"))
	if !strings.HasPrefix(applied, strings.TrimRight(corefile, "\n")+"\n") {
		s.t.Fatalf("the applied Corefile does not begin with kubeadm's:\n%s\nkubeadm's:\n%s", applied, corefile)
	}
	if !strings.Contains(applied, "forward . "+address+" 127.0.0.1:5301") || !strings.Contains(applied, "100.10.in-addr.arpa:53") {
		s.t.Fatalf("the applied Corefile does not forward to the standalone Service at %s:\n%s", address, applied)
	}
	s.restartDNS()
	return applied
}

// localQueries are the names of the cluster's own Services.
func localQueries(webIP string) []query {
	var qs []query
	for _, proto := range protos {
		qs = append(qs,
			query{proto, localName, "A"},
			query{proto, localName, "AAAA"},
			query{proto, "_http._tcp." + localName, "SRV"},
			query{proto, reverse(webIP), "PTR"},
			query{proto, "kubernetes.default.svc.cluster.local.", "A"},
		)
	}
	return qs
}

var queryTime = regexp.MustCompile(`Query time: (\d+) msec`)

// standalone runs docs/platforms.md on the node while kubeadm's CoreDNS runs
// stock CoreDNS with its own Corefile (corefile): coredns-mcs installed
// standalone (kubectl apply -k manifests/standalone, then the Helm chart),
// the stock Corefile edited as the recipe says, and pods asking through the
// cluster DNS as before. Then everything is removed, and the stock answers
// are back.
func (s *scenario) standalone(manifests, corefile, webIP string) {
	t := s.t
	t.Helper()
	began := time.Now()
	upstream := s.recordUpstream()
	stock := s.dig("stock", localQueries(webIP)...)
	// The C resolvers' lookups through stock CoreDNS alone, for a
	// baseline: the import-only name is NXDOMAIN there.
	clients := s.startResolvers(webIP)
	baseline := resolverCase{name: "stock CoreDNS alone", start: uptime(t), importMayFail: true}
	clients.waitUntil(baseline.start + 10)
	baseline.end = uptime(t)

	// kubectl mcs front writes kubeadm's Corefile, unchanged, plus server
	// blocks forwarding to the Service's address, which the cluster chose.
	s.kubectl("apply", "--server-side", "-k", filepath.Join(manifests, "standalone"))
	s.kubectl("-n", "kube-system", "rollout", "status", "deploy/coredns-mcs", "--timeout=3m")
	s.front(corefile)
	t.Logf("standalone (kubectl -k) installed and the Corefile edited by kubectl mcs front in %.1fs", time.Since(began).Seconds())
	// From now on the recipe is in place: stock CoreDNS with kubeadm's
	// Corefile alone sends clusterset names upstream (the looker-up pod
	// still asks one), with the recipe it must not.
	upstream.reset()
	s.checkStandalone("standalone-k", webIP, stock)

	// The same with the Helm chart.
	s.kubectl("delete", "--cascade=foreground", "-k", filepath.Join(manifests, "standalone"))
	helmBinary := testbin.Binary(t, "helm", "helm")
	helm := func(args ...string) string {
		// In the node's network namespace, where kube-apiserver listens.
		cmd := exec.CommandContext(s.ctx, helmBinary, append(args, "--kubeconfig", s.n.ControlPlane.Kubeconfig)...)
		cmd.Env = append(os.Environ(), "HOME="+s.work)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		err := s.n.NetNS.Do(cmd.Start)
		if err == nil {
			err = cmd.Wait()
		}
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		return out.String()
	}
	helm("install", "coredns-mcs", filepath.Join(s.root, "charts", "coredns-mcs"), "--namespace", "kube-system",
		"--set", "image.tag="+mcsImageTag, "--set", "image.pullPolicy=Never", "--set", "replicaCount=1")
	s.kubectl("-n", "kube-system", "rollout", "status", "deploy/coredns-mcs", "--timeout=3m")
	// The chart's Service has another address: kubectl mcs front again.
	s.front(corefile)
	s.checkStandalone("standalone-helm", webIP, stock)
	// The standalone server taken away in every way it can go, while the
	// C resolvers keep looking names up.
	cases := append([]resolverCase{baseline}, s.standaloneOutages(clients, webIP, stock)...)
	table := clients.check(cases)
	for _, c := range resolverClients {
		s.kubectl("delete", "pod", "resolve-"+c.name, "--wait=false")
	}
	var durations []string
	for _, c := range cases {
		durations = append(durations, fmt.Sprintf("%s %.1fs", c.name, c.end-c.start))
	}
	t.Logf("the C resolvers' lookups through the cluster DNS (%s), lookups / failed / p50 / p99 (ms):\n%s", strings.Join(durations, ", "), table)
	asked := upstream.asked()

	// Removal: kubectl mcs front --remove puts kubeadm's Corefile back; the
	// chart is uninstalled.
	s.kubectlMCS("front", "--remove", "--apply")
	if got := s.kubectl("-n", "kube-system", "get", "configmap", "coredns", "-o", "jsonpath={.data.Corefile}"); got != corefile {
		t.Errorf("after kubectl mcs front --remove, the Corefile is\n%s\nnot kubeadm's\n%s", got, corefile)
	}
	s.restartDNS()
	helm("uninstall", "coredns-mcs", "--namespace", "kube-system", "--wait")
	restored := s.dig("restored", append(localQueries(webIP), query{"+notcp", importedName, "A"}, query{"+notcp", clustersetName, "A"})...)
	restored.expect(t, query{"+notcp", importedName, "A"}, "NXDOMAIN")
	for _, q := range localQueries(webIP) {
		if a, b := stock[q], restored[q]; a.status != b.status || !slices.Equal(a.records, b.records) {
			t.Errorf("after removal %s %s over %s: %s %v, stock CoreDNS answered %s %v", q.name, q.qtype, protoName(q.proto), b.status, b.records, a.status, a.records)
		}
	}

	external := 0
	var others []string
	for _, name := range asked {
		if strings.HasSuffix(name, ".cluster.local.") || strings.HasSuffix(name, ".clusterset.local.") || strings.HasSuffix(name, ".100.10.in-addr.arpa.") {
			t.Errorf("the node's upstream resolver was asked %s", name)
		}
		if dns.IsSubDomain(externalZone, name) {
			external++
		} else {
			others = append(others, name)
		}
	}
	t.Logf("with the recipe in place, the node's upstream resolver was asked %d names: %d under %s (the C resolvers'), and %v", len(asked), external, externalZone, others)
	if logs := s.kubectl("-n", "kube-system", "logs", "deploy/coredns"); strings.Contains(logs, "Loop") {
		t.Errorf("stock CoreDNS's log:\n%s", logs)
	}
	t.Logf("standalone phase: %.1fs", time.Since(began).Seconds())
}

// setCorefile replaces the stock Corefile and restarts stock CoreDNS (its
// reload plugin would take up to 45 s to notice).
func (s *scenario) setCorefile(corefile string) {
	s.t.Helper()
	writeFile(s.t, filepath.Join(s.work, "Corefile.next"), corefile)
	configMap := s.kubectl("-n", "kube-system", "create", "configmap", "coredns", "--from-file=Corefile=Corefile.next", "--dry-run=client", "-o", "yaml")
	s.kubectlWithInput(configMap, "apply", "--server-side", "--force-conflicts", "-f", "-")
	s.restartDNS()
}

// restartDNS restarts stock CoreDNS, so that it reads its Corefile at once.
func (s *scenario) restartDNS() {
	s.t.Helper()
	s.kubectl("-n", "kube-system", "rollout", "restart", "deploy/coredns")
	s.kubectl("-n", "kube-system", "rollout", "status", "deploy/coredns", "--timeout=3m")
	s.waitOldDNSPodsGone()
}

// checkStandalone asks, from a pod, through the cluster DNS (stock CoreDNS
// with the recipe, forwarding to the standalone coredns-mcs).
func (s *scenario) checkStandalone(name, webIP string, stock digResults) {
	t := s.t
	t.Helper()
	nope := "nope.demo.svc.cluster.local."
	qs := append(localQueries(webIP),
		query{"+search", "remote.demo", "A"},
		query{"+search", "web.demo", "A"},
		query{"+stats", nope, "A"},
		query{"+stats", "nope.demo.svc.clusterset.local.", "A"},
	)
	for _, proto := range protos {
		qs = append(qs,
			query{proto, importedName, "A"},
			query{proto, clustersetName, "A"},
			query{proto, "web.demo.svc.clusterset.local.", "A"},
			query{proto, "_http._tcp." + clustersetName, "SRV"},
			query{proto, "_http._tcp." + importedName, "SRV"},
			query{proto, reverse(remoteIP), "PTR"},
		)
	}
	got := s.dig(name, qs...)
	for _, q := range localQueries(webIP) {
		if a, b := stock[q], got[q]; a.status != b.status || !slices.Equal(a.records, b.records) {
			t.Errorf("%s: %s %s over %s: %s %v, stock CoreDNS alone answered %s %v", name, q.name, q.qtype, protoName(q.proto), b.status, b.records, a.status, a.records)
		}
	}
	for _, proto := range protos {
		got.expect(t, query{proto, importedName, "A"}, "NOERROR", remoteIP)
		got.expect(t, query{proto, clustersetName, "A"}, "NOERROR", remoteIP)
		got.expect(t, query{proto, "web.demo.svc.clusterset.local.", "A"}, "NOERROR", webImportIP)
		got.expect(t, query{proto, "_http._tcp." + clustersetName, "SRV"}, "NOERROR", "80 "+clustersetName)
		got.expect(t, query{proto, "_http._tcp." + importedName, "SRV"}, "NOERROR", "80 "+importedName)
		got.expect(t, query{proto, reverse(remoteIP), "PTR"}, "NOERROR", clustersetName)
	}
	// The pod's own resolver path: the search list of its resolv.conf,
	// ndots:5, as an application's lookup of "remote.demo" goes.
	got.expect(t, query{"+search", "remote.demo", "A"}, "NOERROR", remoteIP)
	got.expect(t, query{"+search", "web.demo", "A"}, "NOERROR", webIP)
	for _, q := range []query{{"+stats", nope, "A"}, {"+stats", "nope.demo.svc.clusterset.local.", "A"}} {
		got.expect(t, q, "NXDOMAIN")
		if m := queryTime.FindStringSubmatch(got[q].raw); m == nil {
			t.Errorf("%s: no query time:\n%s", q.name, got[q].raw)
		} else if ms, _ := strconv.Atoi(m[1]); ms > 500 {
			t.Errorf("%s: NXDOMAIN took %d ms", q.name, ms)
		} else {
			t.Logf("%s: %s NXDOMAIN in %d ms", name, q.name, ms)
		}
	}
}
