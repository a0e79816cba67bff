package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// TestStandaloneAlertsWithPrometheus monitors the standalone layout with a
// real Prometheus and the shipped rules: stock CoreDNS running the recipe of
// docs/platforms.md (the front, scraped as job coredns) in front of
// coredns-mcs standalone with the Corefile of manifests/standalone (job
// coredns-mcs), both against the real API server, while queries of imported
// names flow through the front. Healthy, nothing fires and the front's
// stand-in answers nothing. coredns-mcs killed: the front answers those
// names NXDOMAIN from its stand-in, and CoreDNSMulticlusterStandaloneDown
// and CoreDNSMulticlusterFrontFallingBack fire within a minute, while
// CoreDNSDown (the cluster DNS) stays quiet. Started again, the import
// answers again and both resolve.
//
// The rules are the shipped ones with every "for" cut to 2 s and the range
// windows to 10 s, so that alerts fire and resolve within seconds. The
// stand-in listens on a free port rather than 5301; the front's job
// relabels its server label to dns://127.0.0.1:5301, the label it has in a
// cluster, which the rules select (the relabelling matches only the label
// a stand-in bound to 127.0.0.1 gets).
func TestStandaloneAlertsWithPrometheus(t *testing.T) {
	stock, err := stockCoreDNS()
	if err != nil {
		t.Fatal(err)
	}
	ns := namespace(t, "standalone-mon")
	createImport(t, newImport(ns, "remote", "10.42.7.1"))
	upstream := startRecordingResolver(t)

	// coredns-mcs standalone, a process the test kills and starts again on
	// the same ports.
	// Its imports only: the other tests' objects in the shared API server
	// (imports without addresses, per-cluster copies) would fire alerts
	// of their own.
	shipped := shippedStandaloneCorefile(t)
	scoped := strings.Replace(shipped, "        standalone\n", "        standalone\n        namespaces "+ns+"\n", 1)
	if scoped == shipped {
		t.Fatalf("manifests/standalone's Corefile has no standalone line to scope:\n%s", shipped)
	}
	standalone := startStandalone(t, scoped)
	sMetrics := strings.TrimSuffix(strings.TrimPrefix(standalone.metrics.metrics, "http://127.0.0.1:"), "/metrics")

	// The front: stock CoreDNS with the recipe, every prometheus stanza on
	// one port as in a pod, its stand-in on a port of its own.
	recipe := corefileOfDoc(t, "../../docs/platforms.md", "<!-- recipe: stock -->")
	if !strings.Contains(recipe, "forward . "+recipeAddress+" 127.0.0.1:5301") || !strings.Contains(recipe, ":5301 {") {
		t.Fatalf("docs/platforms.md: the recipe has no stand-in on 127.0.0.1:5301 after the standalone server:\n%s", recipe)
	}
	frontMetrics, standIn := harness.FreePort(t), harness.FreePort(t)
	recipe = strings.ReplaceAll(recipe, "prometheus :9153", fmt.Sprintf("prometheus 127.0.0.1:%d", frontMetrics))
	recipe = strings.ReplaceAll(recipe, ":5301", fmt.Sprintf(":%d", standIn))
	fPort, fReady := harness.FreePort(t), harness.FreePort(t)
	front := startCorefile(t, "stock CoreDNS with the recipe", stock, localize(t, recipe, fPort, fReady, map[string]string{
		"/etc/resolv.conf": upstream.addr,
		recipeAddress:      standalone.addr,
	}), fPort, fReady)

	prom := startPrometheusWith(t, fmt.Sprintf(`  - job_name: coredns
    static_configs:
      - targets: ["127.0.0.1:%d"]
    metric_relabel_configs:
      - source_labels: [server]
        regex: 'dns://127\.0\.0\.1:%d'
        target_label: server
        replacement: 'dns://127.0.0.1:5301'
  - job_name: coredns-mcs
    static_configs:
      - targets: ["127.0.0.1:%s"]
`, frontMetrics, standIn, sMetrics), func(rules []byte) []byte {
		windows := regexp.MustCompile(`\[\d+m\]`)
		if !windows.Match(rules) {
			t.Fatal("no range window to shorten in the rules: the file is not what this test expects")
		}
		return windows.ReplaceAll(rules, []byte("[10s]"))
	})

	remote := []string{"remote." + ns + ".svc.cluster.local.", "remote." + ns + ".svc.clusterset.local."}
	for _, name := range remote {
		expectAddresses(t, front, name, dns.TypeA, propagation, "10.42.7.1")
	}
	traffic := startTraffic(t, front.addr, remote)

	// Healthy: both jobs up and scraped, the rules evaluated since, nothing
	// of the standalone server or the cluster DNS pending or firing, and
	// no answer from the stand-in.
	waitScraped(t, prom, `up{job="coredns"} == 1`)
	waitScraped(t, prom, `up{job="coredns-mcs"} == 1`)
	waitScraped(t, prom, `coredns_multicluster_synced{job="coredns-mcs"} == 1`)
	waitScraped(t, prom, `coredns_dns_requests_total{job="coredns",server="dns://:`+fmt.Sprint(fPort)+`",zone="cluster.local."}`)
	prom.waitEvaluated(t, time.Now().Add(3*time.Second))
	for _, a := range prom.active(t) {
		if strings.HasPrefix(a, "CoreDNSMulticluster") || a == "CoreDNSDown" {
			t.Errorf("healthy, yet %s is pending or firing", a)
		}
	}
	// A slow coredns-mcs is never an unknown name (docs/platforms.md):
	// while it is up, every import answers.
	healthy := traffic.snapshot()
	if healthy[dns.RcodeSuccess] == 0 || len(healthy) > 1 {
		t.Errorf("healthy: answers by rcode %v; want NOERROR alone", healthy)
	}
	// The stand-in's series may also count the lookups of the set-up
	// above (expectAddresses asks again until coredns-mcs answers in
	// time): what the clients got is the measure, not the series.
	if n, err := prom.query(`coredns_dns_requests_total{job="coredns",server="dns://127.0.0.1:5301"}`); err != nil {
		t.Errorf("the stand-in's requests: %v", err)
	} else if n != 0 {
		t.Logf("healthy: the stand-in has answered %d series of requests, the set-up's", n)
	}
	checkDashboard(t, prom, "../../docs/dashboards/coredns-mcs.json", "coredns|coredns-mcs",
		[]string{"Caches synced", "Objects in the cache", "Requests by zone kind and outcome", "Requests by server and zone", "Targets up by job", "Answers of the front's stand-in (coredns-mcs standalone unreachable)"})
	if n, err := prom.query(`count by (job) (coredns_dns_requests_total)`); err != nil || n != 2 {
		t.Errorf("the dashboard's job variable: %d jobs (%v), want coredns and coredns-mcs", n, err)
	}

	// coredns-mcs killed, imported names still asked through the front.
	standalone.kill(t)
	killed := time.Now()
	r := expectStandIn(t, front, remote[0], 10*time.Second)
	t.Logf("coredns-mcs killed: the front answers %s %s from its stand-in after %s, authority %v", remote[0], dns.RcodeToString[r.Rcode], time.Since(killed).Round(time.Millisecond), r.Ns)
	for _, alert := range []string{"CoreDNSMulticlusterStandaloneDown", "CoreDNSMulticlusterFrontFallingBack"} {
		prom.expectAlert(t, alert, true, time.Minute-time.Since(killed))
		t.Logf("coredns-mcs killed: %s fired after %s", alert, time.Since(killed).Round(time.Millisecond))
	}
	if firing := prom.firing(t); slices.Contains(firing, "CoreDNSDown") {
		t.Errorf("coredns-mcs standalone down, the cluster DNS up, yet CoreDNSDown fires: %v", firing)
	}
	down := traffic.snapshot()

	// Started again: the imports answer through the front, the alerts
	// resolve.
	standalone.start(t)
	started := time.Now()
	for _, name := range remote {
		expectAddresses(t, front, name, dns.TypeA, 10*time.Second, "10.42.7.1")
	}
	t.Logf("coredns-mcs started again: the front answers the import %s after the start", time.Since(started).Round(time.Millisecond))
	for _, alert := range []string{"CoreDNSMulticlusterStandaloneDown", "CoreDNSMulticlusterFrontFallingBack"} {
		prom.expectAlert(t, alert, false, time.Minute)
		t.Logf("coredns-mcs started again: %s resolved %s after the start", alert, time.Since(started).Round(time.Millisecond))
	}
	end := traffic.snapshot()
	t.Logf("answers to the imported names through the front, by rcode: healthy %v; until the alerts fired %v; to the end %v",
		rcodes(healthy), rcodes(down), rcodes(end))
	for _, a := range prom.firing(t) {
		if strings.HasPrefix(a, "CoreDNSMulticluster") || a == "CoreDNSDown" {
			t.Errorf("coredns-mcs back, yet %s fires", a)
		}
	}
}

// expectStandIn waits until front answers name NXDOMAIN with the SOA of the
// recipe's stand-in (ns.dns.ZONE).
func expectStandIn(t *testing.T, front *server, name string, within time.Duration) *dns.Msg {
	t.Helper()
	var r *dns.Msg
	poll.Eventually(t, within, name+": the front answers NXDOMAIN from its stand-in", func() (bool, string) {
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		var err error
		if r, err = harness.Ask("udp", front.addr, m); err != nil {
			return false, err.Error()
		}
		if r.Rcode == dns.RcodeNameError && len(r.Ns) == 1 {
			if soa, ok := r.Ns[0].(*dns.SOA); ok && strings.HasPrefix(soa.Ns, "ns.dns.") {
				return true, ""
			}
		}
		return false, r.String()
	})
	return r
}

// traffic asks a server for names, one every 100 ms, until the test ends,
// and counts the answers by rcode (-1 for no answer).
type traffic struct {
	mu     sync.Mutex
	counts map[int]int
}

func startTraffic(t *testing.T, addr string, names []string) *traffic {
	t.Helper()
	tr := &traffic{counts: map[int]int{}}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			m := new(dns.Msg)
			m.SetQuestion(names[i%len(names)], dns.TypeA)
			rcode := -1
			if r, err := harness.Ask("udp", addr, m); err == nil {
				rcode = r.Rcode
			}
			tr.mu.Lock()
			tr.counts[rcode]++
			tr.mu.Unlock()
		}
	}()
	t.Cleanup(func() { close(quit); <-done })
	return tr
}

// snapshot returns the counts so far.
func (tr *traffic) snapshot() map[int]int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := map[int]int{}
	for k, v := range tr.counts {
		out[k] = v
	}
	return out
}

// rcodes formats counts by rcode name.
func rcodes(counts map[int]int) string {
	var parts []string
	for rcode, n := range counts {
		name := dns.RcodeToString[rcode]
		if rcode < 0 {
			name = "no answer"
		}
		parts = append(parts, fmt.Sprintf("%s %d", name, n))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// waitEvaluated waits until every rule group has been evaluated after
// since.
func (p *prometheusServer) waitEvaluated(t *testing.T, since time.Time) {
	t.Helper()
	poll.Eventually(t, time.Until(since.Add(20*time.Second)), "rule groups evaluated after "+since.Format(time.RFC3339Nano), func() (bool, string) {
		var data struct {
			Groups []struct {
				Name           string    `json:"name"`
				LastEvaluation time.Time `json:"lastEvaluation"`
			} `json:"groups"`
		}
		if err := p.api("/api/v1/rules", &data); err != nil {
			t.Fatal(err)
		}
		evaluated := len(data.Groups) > 0
		for _, g := range data.Groups {
			evaluated = evaluated && g.LastEvaluation.After(since)
		}
		return evaluated, fmt.Sprintf("%+v", data.Groups)
	})
}
