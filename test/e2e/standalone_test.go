package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	mcsfront "github.com/coredns-mcs/coredns-mcs/internal/front"
	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// stockCoreDNS builds stock CoreDNS (its own main package, from this
// module's graph: CoreDNS 1.15 without the multicluster plugin) once.
var stockCoreDNS = sync.OnceValues(func() (string, error) {
	return harness.GoBuild(filepath.Join(workDir, "coredns-stock"), "github.com/coredns/coredns")
})

// standaloneRuns counts the runs of TestStandaloneBehindStockCoreDNS in this
// process (go test -count).
var standaloneRuns atomic.Int32

// recordingResolver stands for the upstream resolver of the cluster's DNS
// (/etc/resolv.conf of its pods): it answers every query NXDOMAIN, but A
// of example.org. and the names below it, 192.0.2.1 (NODATA for their other
// types), and keeps every name
// it was asked.
type recordingResolver struct {
	addr  string
	mu    sync.Mutex
	names []string
}

func startRecordingResolver(t *testing.T) *recordingResolver {
	t.Helper()
	r := &recordingResolver{}
	port := harness.FreePort(t)
	r.addr = fmt.Sprintf("127.0.0.1:%d", port)
	handler := dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		r.mu.Lock()
		r.names = append(r.names, strings.ToLower(q.Question[0].Name))
		r.mu.Unlock()
		m := new(dns.Msg)
		if name := strings.ToLower(q.Question[0].Name); name == "example.org." || strings.HasSuffix(name, ".example.org.") {
			// NODATA for other types: a C library's getaddrinfo asks A
			// and AAAA, and takes an NXDOMAIN for either as the name's.
			m.SetReply(q)
			if q.Question[0].Qtype == dns.TypeA {
				rr, _ := dns.NewRR(q.Question[0].Name + " 300 IN A 192.0.2.1")
				m.Answer = []dns.RR{rr}
			}
		} else {
			m.SetRcode(q, dns.RcodeNameError)
		}
		_ = w.WriteMsg(m)
	})
	for _, proto := range []string{"udp", "tcp"} {
		srv := &dns.Server{Addr: r.addr, Net: proto, Handler: handler}
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		go func() { _ = srv.ListenAndServe() }()
		select {
		case <-started:
		case <-time.After(5 * time.Second):
			t.Fatalf("upstream resolver on %s %s did not start", proto, r.addr)
		}
		t.Cleanup(func() { _ = srv.Shutdown() })
	}
	return r
}

func (r *recordingResolver) asked() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.names)
}

// corefileOfDoc returns the code block that follows marker in a doc.
func corefileOfDoc(t *testing.T, doc, marker string) string {
	t.Helper()
	block, err := harness.DocBlock(doc, marker)
	if err != nil {
		t.Fatal(err)
	}
	return block
}

// localize makes a Corefile run on loopback against the test's API server:
// every server block on port, health, ready and prometheus on free ports
// (ready on readyPort; every prometheus line on one port), the stand-in of
// kubectl mcs front on a free port, every kubernetes and multicluster
// stanza given the kubeconfig, and forward targets replaced as in forwards.
func localize(t *testing.T, corefile string, port, readyPort int, forwards map[string]string) string {
	t.Helper()
	out := regexp.MustCompile(`(?m)^(\S+):53 \{$`).ReplaceAllString(corefile, fmt.Sprintf("${1}:%d {", port))
	out = regexp.MustCompile(`(?m)^(\s+)health$`).ReplaceAllStringFunc(out, func(s string) string {
		return s + fmt.Sprintf(" 127.0.0.1:%d", harness.FreePort(t))
	})
	out = regexp.MustCompile(`(?m)^(\s+)health \{$`).ReplaceAllStringFunc(out, func(s string) string {
		return strings.Replace(s, "health {", fmt.Sprintf("health 127.0.0.1:%d {", harness.FreePort(t)), 1)
	})
	out = regexp.MustCompile(`(?m)^(\s+)ready$`).ReplaceAllString(out, fmt.Sprintf("${1}ready 127.0.0.1:%d", readyPort))
	// Every prometheus line of one Corefile shares one listener, as :9153
	// does in a pod.
	metricsPort := harness.FreePort(t)
	out = regexp.MustCompile(`(?m)^(\s+)prometheus (:9153|0\.0\.0\.0:9153)$`).ReplaceAllString(out, fmt.Sprintf("${1}prometheus 127.0.0.1:%d", metricsPort))
	// The stand-in's loopback port, as kubectl mcs front writes it.
	if strings.Contains(out, fmt.Sprintf(":%d", mcsfront.DefaultStandInPort)) {
		standIn := fmt.Sprintf(":%d", harness.FreePort(t))
		out = strings.ReplaceAll(out, fmt.Sprintf(":%d", mcsfront.DefaultStandInPort), standIn)
	}
	out = regexp.MustCompile(`(?m)^(\s+)(kubernetes|multicluster)( [^{\n]*)\{$`).ReplaceAllString(out, "${1}${2}${3}{\n${1}    kubeconfig "+cp.Kubeconfig)
	for from, to := range forwards {
		out = strings.ReplaceAll(out, "forward . "+from, "forward . "+to)
	}
	return out
}

// startCorefile runs binary with corefile until the test ends and waits
// until it serves on port and readyPort says 200.
func startCorefile(t *testing.T, name, binary, corefile string, port, readyPort int) *server {
	t.Helper()
	path := filepath.Join(t.TempDir(), "Corefile")
	if err := os.WriteFile(path, []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &server{addr: fmt.Sprintf("127.0.0.1:%d", port), ready: fmt.Sprintf("http://127.0.0.1:%d/ready", readyPort), corefile: corefile}
	s.log = harness.StartCoreDNS(t, name, binary, path, s.addr, s.isReady)
	return s
}

// The standalone Service's addresses in the recipes of docs/platforms.md
// (internal/front's docs test writes them).
const (
	recipeAddress    = "10.96.143.7"
	recipeK3sAddress = "10.43.143.7"
)

// TestStandaloneBehindStockCoreDNS runs the recipe of docs/platforms.md
// (what kubectl mcs front writes): stock CoreDNS 1.15 with kubeadm's
// Corefile and the added server blocks, forwarding to a standalone
// coredns-mcs with the Corefile of manifests/standalone, both against the
// real API server, and an upstream resolver that records what reaches it.
// Local names answer byte for byte as stock CoreDNS with kubeadm's Corefile
// alone; import-only names, the clusterset zone, SRV and PTR answer from
// the import; a name that exists nowhere is NXDOMAIN at once; no cluster
// name reaches the upstream; the loop plugin stays quiet; a search-path
// miss is answered from the front's cache the second time. Then the
// standalone server hangs (SIGSTOP), resumes, is killed and comes back,
// under steady lookups: no lookup that does not need an import fails.
func TestStandaloneBehindStockCoreDNS(t *testing.T) {
	stock, err := stockCoreDNS()
	if err != nil {
		t.Fatal(err)
	}
	ns := namespace(t, "standalone")
	web := createService(t, ns, "web")
	// Addresses of this run's own: the namespaces of earlier runs in this
	// process are never deleted (no namespace controller runs), and their
	// imports would make the PTR of a shared address a conflict.
	run := standaloneRuns.Add(1)
	remoteIP, webIP := fmt.Sprintf("10.42.%d.1", 100+run), fmt.Sprintf("10.42.%d.2", 100+run)
	createImport(t, newImport(ns, "web", webIP)) // local wins
	createImport(t, newImport(ns, "remote", remoteIP))
	upstream := startRecordingResolver(t)

	// The standalone coredns-mcs, with the Corefile of manifests/standalone.
	standalone := startStandalone(t, shippedStandaloneCorefile(t))

	t.Run("kubeadm", func(t *testing.T) {
		// Stock CoreDNS with the recipe, and with kubeadm's Corefile alone.
		recipe := corefileOfDoc(t, "../../docs/platforms.md", "<!-- recipe: stock -->")
		kubeadmOnly := mcsfront.Remove(recipe)
		if kubeadmOnly == recipe {
			t.Fatalf("the recipe has no blocks between kubectl mcs front's markers:\n%s", recipe)
		}
		fPort, fReady := harness.FreePort(t), harness.FreePort(t)
		frontServer := startCorefile(t, "stock CoreDNS with the recipe", stock, localize(t, recipe, fPort, fReady, map[string]string{
			"/etc/resolv.conf": upstream.addr,
			recipeAddress:      standalone.addr,
		}), fPort, fReady)
		pPort, pReady := harness.FreePort(t), harness.FreePort(t)
		plain := startCorefile(t, "stock CoreDNS with kubeadm's Corefile", stock, localize(t, kubeadmOnly, pPort, pReady, map[string]string{"/etc/resolv.conf": upstream.addr}), pPort, pReady)
		checkFront(t, frontServer, plain, standalone, upstream, ns, web, remoteIP, webIP, "kubeadm")
		checkOutage(t, frontServer, plain, standalone, ns, web, remoteIP)
	})
	t.Run("k3s", func(t *testing.T) {
		// k3s's Corefile (manifests/coredns.yaml of k3s) imports the keys
		// of the optional ConfigMap coredns-custom ending in .server as
		// server blocks; the recipe for k3s is that ConfigMap.
		dir := t.TempDir()
		custom := filepath.Join(dir, "custom")
		if err := os.Mkdir(custom, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "NodeHosts"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		// k3s's kubernetes stanza has no ttl: neither has the standalone
		// server's, as docs/platforms.md says.
		withTTL := shippedStandaloneCorefile(t)
		k3sStandalone := strings.Replace(withTTL, "        ttl 30\n", "", 1)
		if k3sStandalone == withTTL {
			t.Fatal("manifests/standalone's Corefile has no ttl 30 line to remove, as docs/platforms.md tells k3s users to")
		}
		standalone := startStandalone(t, k3sStandalone)
		fPort, fReady := harness.FreePort(t), harness.FreePort(t)
		server := k3sCustomServer(t)
		if err := os.WriteFile(filepath.Join(custom, "multicluster.server"), []byte(localize(t, server, fPort, fReady, map[string]string{recipeK3sAddress: standalone.addr})), 0o644); err != nil {
			t.Fatal(err)
		}
		k3s := strings.NewReplacer("/etc/coredns/", dir+"/").Replace(mcsfront.K3sCorefile)
		frontServer := startCorefile(t, "k3s's CoreDNS with coredns-custom", stock, localize(t, k3s, fPort, fReady, map[string]string{"/etc/resolv.conf": upstream.addr}), fPort, fReady)
		pPort, pReady := harness.FreePort(t), harness.FreePort(t)
		plainDir := t.TempDir()
		if err := os.WriteFile(filepath.Join(plainDir, "NodeHosts"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		plainK3s := strings.NewReplacer("/etc/coredns/", plainDir+"/").Replace(mcsfront.K3sCorefile)
		plain := startCorefile(t, "k3s's CoreDNS alone", stock, localize(t, plainK3s, pPort, pReady, map[string]string{"/etc/resolv.conf": upstream.addr}), pPort, pReady)
		checkFront(t, frontServer, plain, standalone, upstream, ns, web, remoteIP, webIP, "k3s")
	})
}

// k3sCustomServer returns the multicluster.server key of the coredns-custom
// ConfigMap docs/platforms.md gives for k3s.
func k3sCustomServer(t *testing.T) string {
	t.Helper()
	doc := corefileOfDoc(t, "../../docs/platforms.md", "<!-- recipe: k3s -->")
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal([]byte(doc), &cm); err != nil {
		t.Fatal(err)
	}
	server := cm.Data["multicluster.server"]
	if server == "" {
		t.Fatalf("docs/platforms.md: the k3s ConfigMap has no multicluster.server:\n%s", doc)
	}
	return server
}

// checkFront asks front (stock CoreDNS with a recipe, forwarding to the
// standalone server) and plain (the same without the recipe).
func checkFront(t *testing.T, front, plain *server, standalone *standaloneServer, upstream *recordingResolver, ns string, web *corev1.Service, remoteIP, webIP, recipe string) {
	t.Helper()
	before0 := len(upstream.asked())
	// Local names: byte for byte what stock CoreDNS answers without the recipe.
	ptrOf := func(ip string) string { rev, _ := dns.ReverseAddr(ip); return rev }
	local := []question{
		{"web." + ns + ".svc.cluster.local.", dns.TypeA},
		{"web." + ns + ".svc.cluster.local.", dns.TypeSRV},
		{"_http._tcp.web." + ns + ".svc.cluster.local.", dns.TypeSRV},
		{"web." + ns + ".svc.cluster.local.", dns.TypeAAAA},
		{"kubernetes.default.svc.cluster.local.", dns.TypeA},
		{ptrOf(web.Spec.ClusterIP), dns.TypePTR},
		{"example.org.", dns.TypeA},
	}
	expectSameAnswers(t, front, plain, local)

	// Through the forward: import-only names, clusterset names, SRV, PTR.
	// A standalone server slower than the front's read timeout (a starved
	// machine) is answered for by the stand-in, NXDOMAIN for that query
	// (the stand-in's TTL is 0): the answers are awaited a few seconds.
	within := time.Duration(mcsfront.StandInTTL+5) * time.Second
	expectAddresses(t, front, "remote."+ns+".svc.cluster.local.", dns.TypeA, within, remoteIP)
	expectAddresses(t, front, "remote."+ns+".svc.clusterset.local.", dns.TypeA, within, remoteIP)
	expectAddresses(t, front, "web."+ns+".svc.clusterset.local.", dns.TypeA, within, webIP)
	for _, proto := range []string{"udp", "tcp"} {
		poll.Eventually(t, within, "SRV over "+proto, func() (bool, string) {
			srv := front.query(t, proto, "_http._tcp.remote."+ns+".svc.cluster.local.", dns.TypeSRV)
			return len(srv.Answer) == 1 && strings.Contains(srv.Answer[0].String(), "80 remote."+ns+".svc.cluster.local."), fmt.Sprint(srv.Answer)
		})
		poll.Eventually(t, within, "PTR over "+proto, func() (bool, string) {
			ptr := front.query(t, proto, ptrOf(remoteIP), dns.TypePTR)
			return len(ptr.Answer) == 1 && strings.HasSuffix(ptr.Answer[0].String(), "remote."+ns+".svc.clusterset.local."), fmt.Sprint(ptr.Answer)
		})
	}

	// A name that exists nowhere: NXDOMAIN with the zone's SOA, at once.
	for _, name := range []string{"nope." + ns + ".svc.cluster.local.", "nope." + ns + ".svc.clusterset.local."} {
		start := time.Now()
		r := front.query(t, "udp", name, dns.TypeA)
		took := time.Since(start)
		if r.Rcode != dns.RcodeNameError || len(r.Ns) != 1 || r.Ns[0].Header().Rrtype != dns.TypeSOA {
			t.Errorf("%s: %s with authority %v, want NXDOMAIN with the SOA", name, dns.RcodeToString[r.Rcode], r.Ns)
		}
		if took > time.Second {
			t.Errorf("%s: answered in %s", name, took)
		}
		t.Logf("%s: NXDOMAIN in %s", name, took.Round(time.Microsecond))
	}

	// A pod's search-path miss of the shape of a host name below a service
	// (ndots:5 tries www.example.org.NS.svc.cluster.local first): the
	// standalone server is asked once; the second time the front's cache
	// answers it. The standalone server counts a request after it
	// answered, so its count is awaited; the front's cache counts a hit
	// before it answers, so its count is read at once.
	miss := "www.example-" + recipe + ".org." + ns + ".svc.cluster.local."
	requests := func() float64 {
		return standalone.metrics.metric(t, "coredns_dns_requests_total", `family="1",proto="udp",server="dns://:`+strings.TrimPrefix(standalone.addr, "127.0.0.1:")+`",type="A",view="",zone="."`)
	}
	frontMetrics := resilientServer{server: front, metrics: metricsURL(t, front)}
	hits := func() float64 {
		return frontMetrics.metric(t, "coredns_cache_hits_total", `server="dns://:`+strings.TrimPrefix(front.addr, "127.0.0.1:")+`",type="denial",view="multicluster",zones="cluster.local."`)
	}
	before, hitsBefore := requests(), max(hits(), 0)
	if r := front.query(t, "udp", miss, dns.TypeA); r.Rcode != dns.RcodeNameError {
		t.Errorf("%s: %s, want NXDOMAIN", miss, dns.RcodeToString[r.Rcode])
	}
	poll.Eventually(t, 5*time.Second, "the standalone server counts the search-path miss", func() (bool, string) {
		n := requests()
		return n > before, fmt.Sprintf("requests %v, before %v", n, before)
	})
	if r := front.query(t, "udp", miss, dns.TypeA); r.Rcode != dns.RcodeNameError {
		t.Errorf("%s again: %s, want NXDOMAIN", miss, dns.RcodeToString[r.Rcode])
	}
	if got := hits(); got != hitsBefore+1 {
		t.Errorf("the front's denial cache hits went from %v to %v for %s asked again, want one more", hitsBefore, got, miss)
	}
	// Three labels before svc (example.org.NS: the expansion of every
	// external name with one dot) hold no records below a service: the
	// front's own kubernetes plugin answers them, the standalone server is
	// not asked. Its count is read after a name it is asked, so that a
	// request of the three-label name would have been counted first.
	before = requests()
	if r := front.query(t, "udp", "example-"+recipe+".org."+ns+".svc.cluster.local.", dns.TypeA); r.Rcode != dns.RcodeNameError {
		t.Errorf("example-%s.org.%s.svc.cluster.local.: %s, want NXDOMAIN", recipe, ns, dns.RcodeToString[r.Rcode])
	}
	front.query(t, "udp", "next-"+recipe+"."+ns+".svc.cluster.local.", dns.TypeA)
	poll.Eventually(t, 5*time.Second, "the standalone server counts the name after the three-label one", func() (bool, string) {
		n := requests()
		return n > before, fmt.Sprintf("requests %v, before %v", n, before)
	})
	if n := requests(); n != before+1 {
		t.Errorf("the standalone server counted %v requests for a three-label name and a service name, want 1 (the service name's)", n-before)
	}

	// Nothing of the cluster reached the upstream; the loop plugin is quiet.
	for _, name := range upstream.asked()[before0:] {
		if strings.HasSuffix(name, "cluster.local.") || strings.HasSuffix(name, "clusterset.local.") || strings.HasSuffix(name, "10.in-addr.arpa.") {
			t.Errorf("the upstream resolver was asked %s", name)
		}
	}
	t.Logf("the upstream resolver was asked %d names, none of the cluster", len(upstream.asked()[before0:]))
	if log := front.log.String(); strings.Contains(log, "Loop") || strings.Contains(log, "[ERROR]") {
		t.Errorf("stock CoreDNS's log:\n%s", log)
	}
	for _, l := range strings.Split(standalone.log.String(), "\n") {
		// ping.invalid is the harness's probe of whether a server answers,
		// a name no cluster DNS forwards: nothing serves it here.
		if strings.Contains(l, "[ERROR]") && !strings.Contains(l, " ping.invalid. ") {
			t.Errorf("the standalone server logged %s", l)
		}
	}
}

// standaloneServer is coredns-mcs standalone on loopback, which a test can
// stop (SIGSTOP), kill and start again on the same ports.
type standaloneServer struct {
	*server
	metrics resilientServer
	path    string
	process *os.Process
	exited  <-chan struct{}
}

// startStandalone runs coredns-mcs with a standalone Corefile on loopback,
// its metrics on a port of their own.
func startStandalone(t *testing.T, corefile string) *standaloneServer {
	t.Helper()
	port, ready, metricsPort := harness.FreePort(t), harness.FreePort(t), harness.FreePort(t)
	corefile = regexp.MustCompile(`prometheus 127\.0\.0\.1:\d+`).ReplaceAllString(localize(t, corefile, port, ready, nil), fmt.Sprintf("prometheus 127.0.0.1:%d", metricsPort))
	s := &standaloneServer{
		server: &server{addr: fmt.Sprintf("127.0.0.1:%d", port), ready: fmt.Sprintf("http://127.0.0.1:%d/ready", ready)},
		path:   filepath.Join(t.TempDir(), "Corefile"),
	}
	s.metrics = resilientServer{server: s.server, metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)}
	if err := os.WriteFile(s.path, []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	s.start(t)
	return s
}

// start runs the server (again) and waits until it is ready. Started
// again, it first waits for its port to be free: its port came from the
// ephemeral range, and while the server was away another process's
// socket may have been given it for a moment.
func (s *standaloneServer) start(t *testing.T) {
	t.Helper()
	if s.process != nil {
		poll.Eventually(t, 30*time.Second, s.addr+" free to listen on again", func() (bool, string) {
			u, err := net.ListenPacket("udp", s.addr)
			if err != nil {
				return false, err.Error()
			}
			u.Close()
			l, err := net.Listen("tcp", s.addr)
			if err != nil {
				return false, err.Error()
			}
			l.Close()
			return true, ""
		})
	}
	s.log, s.process, s.exited = harness.StartCoreDNSPID(t, "coredns-mcs standalone", binary, s.path, s.addr, s.isReady)
}

// kill kills the server and waits until it has exited.
func (s *standaloneServer) kill(t *testing.T) {
	t.Helper()
	if err := s.process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("coredns-mcs standalone did not exit after SIGKILL")
	}
}

// metricsURL returns the URL of the one prometheus listener of a server
// that localize wrote.
func metricsURL(t *testing.T, s *server) string {
	t.Helper()
	m := regexp.MustCompile(`prometheus (127\.0\.0\.1:\d+)`).FindStringSubmatch(s.corefile)
	if m == nil {
		t.Fatalf("no prometheus listener in:\n%s", s.corefile)
	}
	return "http://" + m[1] + "/metrics"
}

// shippedStandaloneCorefile returns the Corefile of manifests/standalone.
func shippedStandaloneCorefile(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../manifests/standalone/configmap.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(data), "  Corefile: |\n")
	if !ok {
		t.Fatal("manifests/standalone/configmap.yaml: no Corefile")
	}
	var lines []string
	for _, l := range strings.Split(body, "\n") {
		lines = append(lines, strings.TrimPrefix(l, "    "))
	}
	return strings.Join(lines, "\n")
}

// TestStandaloneRefusesALoop: a standalone Corefile whose kubernetes plugin
// falls through to a forward (kubeadm's stanza pasted as is) does not start,
// and says which line and why.
func TestStandaloneRefusesALoop(t *testing.T) {
	corefile := fmt.Sprintf(`.:%d {
    multicluster clusterset.local in-addr.arpa ip6.arpa {
        kubeconfig %s
        fallback cluster.local
        standalone
    }
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %s
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    forward . 127.0.0.1:1
}
`, harness.FreePort(t), cp.Kubeconfig, cp.Kubeconfig)
	path := filepath.Join(t.TempDir(), "Corefile")
	if err := os.WriteFile(path, []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	out, exited := harness.StartProcess(t, "coredns", binary, "-conf", path)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("coredns did not exit")
	}
	want := "standalone (Corefile line 5): names of in-addr.arpa. (the kubernetes plugin falls through), ip6.arpa. (the kubernetes plugin falls through) that this server does not know would reach forward"
	if !strings.Contains(out.String(), want) {
		t.Errorf("log:\n%s\nwant %q", out.String(), want)
	}
}
