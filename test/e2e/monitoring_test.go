package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	rbacv1 "k8s.io/api/rbac/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"
	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
	"github.com/coredns-mcs/coredns-mcs/test/internal/testbin"
)

// prometheusServer is a Prometheus server of the prometheus testbin set
// (github.com/prometheus/prometheus), run on loopback for one test.
type prometheusServer struct {
	url string
	log *harness.Output
}

// startPrometheus scrapes target (host:port of a /metrics) every second as
// job "coredns", and evaluates the rules of manifests/monitoring every
// second with every "for" cut to 2 s, so that an alert fires within seconds
// of its cause rather than minutes. The expressions are the shipped ones.
func startPrometheus(t *testing.T, target string) *prometheusServer {
	t.Helper()
	return startPrometheusWith(t, fmt.Sprintf(`  - job_name: coredns
    static_configs:
      - targets: [%q]
`, target), nil)
}

// startPrometheusWith runs Prometheus with scrapeConfigs (the entries of
// scrape_configs), scraping every second, and the rules of
// manifests/monitoring evaluated every second with every "for" cut to 2 s,
// then rewritten by rewrite if it is not nil.
func startPrometheusWith(t *testing.T, scrapeConfigs string, rewrite func([]byte) []byte) *prometheusServer {
	t.Helper()
	prometheus := testbin.Binary(t, "prometheus", "prometheus")
	rules, err := os.ReadFile("../../manifests/monitoring/coredns-mcs.rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	shortened := regexp.MustCompile(`(?m)^(\s+for: )\S+$`).ReplaceAll(rules, []byte("${1}2s"))
	if slices.Equal(shortened, rules) {
		t.Fatal("no \"for\" to shorten in the rules: the file is not what this test expects")
	}
	if rewrite != nil {
		shortened = rewrite(shortened)
	}
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "rules.yaml"), shortened, 0o644); err != nil {
		t.Fatal(err)
	}
	config := `global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [rules.yaml]
scrape_configs:
` + scrapeConfigs
	if err := os.WriteFile(filepath.Join(work, "prometheus.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	port := harness.FreePort(t)
	p := &prometheusServer{url: fmt.Sprintf("http://127.0.0.1:%d", port)}
	var exited <-chan struct{}
	p.log, exited = harness.StartProcess(t, "prometheus", prometheus,
		"--config.file="+filepath.Join(work, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(work, "data"),
		"--web.listen-address="+fmt.Sprintf("127.0.0.1:%d", port),
		"--log.level=warn")
	harness.WaitFor(t, "prometheus", exited, p.log, 30*time.Second, func() bool { return harness.HTTPOK(p.url + "/-/ready") })
	return p
}

// api GETs path of Prometheus's HTTP API and decodes its data into v.
func (p *prometheusServer) api(path string, v any) error {
	resp, err := http.Get(p.url + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if body.Status != "success" {
		return fmt.Errorf("%s: %s %s", path, body.Status, body.Error)
	}
	return json.Unmarshal(body.Data, v)
}

type promAlert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

// firing returns the alerts that fire, as "Name{reason=...}", sorted.
func (p *prometheusServer) firing(t *testing.T) []string {
	t.Helper()
	return p.alerts(t, false)
}

// active returns the alerts that are pending or firing, as firing names
// them.
func (p *prometheusServer) active(t *testing.T) []string {
	t.Helper()
	return p.alerts(t, true)
}

// alerts returns the firing alerts, and with pending the pending ones too,
// as "Name{reason=...}" (the reason label where there is one), sorted.
func (p *prometheusServer) alerts(t *testing.T, pending bool) []string {
	t.Helper()
	var data struct {
		Alerts []promAlert `json:"alerts"`
	}
	if err := p.api("/api/v1/alerts", &data); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range data.Alerts {
		if a.State != "firing" && !pending {
			continue
		}
		id := a.Labels["alertname"]
		if r := a.Labels["reason"]; r != "" {
			id += "{reason=" + r + "}"
		}
		out = append(out, id)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// expectAlert waits until alert (as firing names it) fires, or, with want
// false, no longer fires; it returns how long that took.
func (p *prometheusServer) expectAlert(t *testing.T, alert string, want bool, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	verb := "fire"
	if !want {
		verb = "resolve"
	}
	poll.Eventually(t, within, alert+" to "+verb, func() (bool, string) {
		got := p.firing(t)
		return slices.Contains(got, alert) == want, fmt.Sprintf("firing %v", got)
	})
	return time.Since(start)
}

// query runs an instant query and returns its number of series.
func (p *prometheusServer) query(expr string) (int, error) {
	var data struct {
		ResultType string            `json:"resultType"`
		Result     []json.RawMessage `json:"result"`
	}
	if err := p.api("/api/v1/query?query="+url.QueryEscape(expr), &data); err != nil {
		return 0, err
	}
	return len(data.Result), nil
}

// TestAlertsWithPrometheus runs the shipped alerting rules in a real
// Prometheus that scrapes a real coredns-mcs, and makes each fault happen to
// the real API server: an import left without addresses, an RBAC rule
// removed, the API server stopped, the CRD deleted. Each alert fires, and
// resolves once the fault is repaired. Then every query of the shipped
// dashboard is run against what Prometheus collected.
func TestAlertsWithPrometheus(t *testing.T) {
	// Its own API server, no fixed port, most of it waiting: it runs beside
	// the package's other parallel tests, after the serial ones.
	t.Parallel()
	c := startOwnCluster(t, controlplane.Options{InstallCRDs: true})
	ctx := context.Background()
	const user = "coredns-monitored"
	c.grant(t, "coredns-base", user,
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"services", "endpoints", "namespaces", "pods"}, Verbs: []string{"list", "watch"}},
		rbacv1.PolicyRule{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		rbacv1.PolicyRule{APIGroups: []string{"about.k8s.io"}, Resources: []string{"clusterproperties"}, Verbs: []string{"list", "watch"}},
	)
	importsRule := rbacv1.PolicyRule{APIGroups: []string{mcsv1beta1.GroupName}, Resources: []string{"serviceimports"}, Verbs: []string{"list", "watch"}}
	c.grant(t, "coredns-imports", user, importsRule)
	kubeconfig, err := c.cp.KubeconfigFor(user)
	if err != nil {
		t.Fatal(err)
	}

	metricsPort := harness.FreePort(t)
	s := startServer(t, resilienceCorefile(kubeconfig, metricsPort, false, "failover", "fallback_scope !quiet-*/*"), true)
	prom := startPrometheus(t, fmt.Sprintf("127.0.0.1:%d", metricsPort))

	// Traffic of every kind the dashboard shows: clusterset and fallback
	// answers, a failover (a local Service without endpoints), a name the
	// fallback scope keeps local, PTR.
	ns := c.namespace(t, "mon")
	quiet := c.namespace(t, "quiet")
	c.createImport(t, newImport(ns, "web", "10.42.9.1"))
	c.service(t, ns, "down") // no selector, so no endpoints: failover
	c.createImport(t, newImport(ns, "down", "10.42.9.2"))
	c.createImport(t, newImport(quiet, "db", "10.42.9.3"))
	expectAddresses(t, s, "web."+ns+".svc.clusterset.local.", dns.TypeA, propagation, "10.42.9.1")
	expectAddresses(t, s, "web."+ns+".svc.cluster.local.", dns.TypeA, propagation, "10.42.9.1")
	expectAddresses(t, s, "down."+ns+".svc.cluster.local.", dns.TypeA, propagation, "10.42.9.2")
	// The scope's NXDOMAIN only once the import is known: before, the
	// name has no import and is NXDOMAIN without the scope deciding, so
	// no policy decision would be counted.
	expectAddresses(t, s, "db."+quiet+".svc.clusterset.local.", dns.TypeA, propagation, "10.42.9.3")
	expectRcode(t, s, "db."+quiet+".svc.cluster.local.", dns.TypeA, propagation, dns.RcodeNameError)
	expectRcode(t, s, "1.9.42.10.in-addr.arpa.", dns.TypePTR, propagation, dns.RcodeSuccess)

	// Healthy: after a few evaluations nothing of the plugin fires. The
	// rules are evaluated every second, with "for: 2s": an alert pending
	// at the first evaluation after the scrape fires at the first one
	// 3 s after the scrape.
	prom.expectAlert(t, "CoreDNSDown", false, 10*time.Second)
	waitScraped(t, prom, `coredns_multicluster_synced{job="coredns"} == 1`)
	prom.waitEvaluated(t, time.Now().Add(3*time.Second))
	for _, a := range prom.firing(t) {
		if strings.HasPrefix(a, "CoreDNSMulticluster") {
			t.Errorf("healthy, yet %s fires", a)
		}
	}

	// An import whose only address may not be served: no address, and a
	// malformed object.
	si, err := c.mcs.MulticlusterV1beta1().ServiceImports(ns).Create(ctx, newImport(ns, "lost", "169.254.169.254"), meta.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	took := prom.expectAlert(t, "CoreDNSMulticlusterImportsWithoutAddresses", true, 30*time.Second)
	t.Logf("import without addresses: fired after %s", took.Round(time.Millisecond))
	prom.expectAlert(t, "CoreDNSMulticlusterMalformedObjects", true, 30*time.Second)
	si.Spec.IPs = []string{"10.42.9.4"}
	if _, err := c.mcs.MulticlusterV1beta1().ServiceImports(ns).Update(ctx, si, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	took = prom.expectAlert(t, "CoreDNSMulticlusterImportsWithoutAddresses", false, 30*time.Second)
	t.Logf("import given an address: resolved after %s", took.Round(time.Millisecond))

	// An import of another namespace claims web's address: a conflict.
	if _, err := c.mcs.MulticlusterV1beta1().ServiceImports(quiet).Create(ctx, newImport(quiet, "claim", "10.42.9.1"), meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	took = prom.expectAlert(t, "CoreDNSMulticlusterReverseConflicts", true, 30*time.Second)
	t.Logf("an address claimed by two namespaces: fired after %s", took.Round(time.Millisecond))
	if err := c.mcs.MulticlusterV1beta1().ServiceImports(quiet).Delete(ctx, "claim", meta.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	took = prom.expectAlert(t, "CoreDNSMulticlusterReverseConflicts", false, 30*time.Second)
	t.Logf("the claim withdrawn: resolved after %s", took.Round(time.Millisecond))

	// The RBAC rule removed: an established watch goes on, so nothing
	// changes until the plugin has to list or watch again, which it does
	// when the API server comes back.
	if err := c.kube.RbacV1().ClusterRoleBindings().Delete(ctx, "coredns-imports", meta.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.cp.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	took = prom.expectAlert(t, "CoreDNSMulticlusterAPIUnreachable", true, 60*time.Second)
	t.Logf("API server stopped: CoreDNSMulticlusterAPIUnreachable fired after %s", took.Round(time.Millisecond))
	expectAddresses(t, s, "web."+ns+".svc.clusterset.local.", dns.TypeA, time.Second, "10.42.9.1") // from the cache
	restart := time.Now()
	if err := c.cp.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("API server ready %s after its start", time.Since(restart).Round(time.Millisecond))
	prom.expectAlert(t, "CoreDNSMulticlusterAPIUnreachable", false, 60*time.Second)
	t.Logf("API server started: CoreDNSMulticlusterAPIUnreachable resolved %s after the start", time.Since(restart).Round(time.Millisecond))
	prom.expectAlert(t, "CoreDNSMulticlusterDegraded{reason=rbac_serviceimports}", true, 60*time.Second)
	t.Logf("RBAC rule missing: CoreDNSMulticlusterDegraded fired %s after the API server's start", time.Since(restart).Round(time.Millisecond))
	expectRcode(t, s, "web."+ns+".svc.clusterset.local.", dns.TypeA, time.Second, dns.RcodeServerFailure)
	c.grant(t, "coredns-imports-again", user, importsRule)
	took = prom.expectAlert(t, "CoreDNSMulticlusterDegraded{reason=rbac_serviceimports}", false, 30*time.Second)
	t.Logf("RBAC rule granted: resolved after %s", took.Round(time.Millisecond))
	expectAddresses(t, s, "web."+ns+".svc.clusterset.local.", dns.TypeA, propagation, "10.42.9.1")

	// The CRD deleted, then installed again.
	dyn := dynamic.NewForConfigOrDie(c.cp.Config)
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	if err := crds.Delete(ctx, "serviceimports.multicluster.x-k8s.io", meta.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	took = prom.expectAlert(t, "CoreDNSMulticlusterDegraded{reason=crd}", true, 60*time.Second)
	t.Logf("CRD deleted: CoreDNSMulticlusterDegraded fired after %s", took.Round(time.Millisecond))
	if err := c.cp.InstallCRDs(ctx); err != nil {
		t.Fatal(err)
	}
	took = prom.expectAlert(t, "CoreDNSMulticlusterDegraded{reason=crd}", false, 60*time.Second)
	t.Logf("CRD installed: resolved after %s", took.Round(time.Millisecond))
	for _, a := range prom.firing(t) {
		if strings.HasPrefix(a, "CoreDNSMulticluster") && a != "CoreDNSMulticlusterMalformedObjects" {
			t.Errorf("repaired, yet %s fires", a)
		}
	}

	checkDashboard(t, prom, "../../docs/dashboards/coredns-mcs.json", "coredns", nil)
}

// waitScraped waits until expr has a result.
func waitScraped(t *testing.T, p *prometheusServer, expr string) {
	t.Helper()
	poll.Eventually(t, 20*time.Second, expr+" has a result", func() (bool, string) {
		n, err := p.query(expr)
		return err == nil && n > 0, fmt.Sprintf("%d series, %v", n, err)
	})
}

// checkDashboard runs the queries of the dashboard's panels (all of them,
// or those titled in only), with its variables set as Grafana would for this
// Prometheus (job to the regular expression of the jobs selected), and wants
// each to parse and return series.
func checkDashboard(t *testing.T, p *prometheusServer, path, job string, only []string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	vars := map[string]bool{}
	for _, v := range dash.Templating.List {
		vars[v.Name] = true
	}
	for _, want := range []string{"datasource", "job", "instance"} {
		if !vars[want] {
			t.Errorf("dashboard: no %q variable", want)
		}
	}
	set := strings.NewReplacer(`"$job"`, strconv.Quote(job), `"$instance"`, `".*"`, "$__rate_interval", "1m")
	queries, panels := 0, 0
	for _, panel := range dash.Panels {
		if panel.Type == "row" || only != nil && !slices.Contains(only, panel.Title) {
			continue
		}
		panels++
		if len(panel.Targets) == 0 {
			t.Errorf("panel %q has no query", panel.Title)
		}
		for _, target := range panel.Targets {
			expr := set.Replace(target.Expr)
			if strings.Contains(expr, "$") {
				t.Errorf("panel %q: a variable the test does not set in %s", panel.Title, expr)
				continue
			}
			queries++
			// A rate needs two scrapes within its range: on a busy
			// machine a scrape can fail, and its series go stale until
			// two more succeed. Wait for them, within a deadline.
			var n int
			var err error
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			poll.Until(ctx, expr+" has series", func() (bool, string) {
				n, err = p.query(expr)
				return err != nil || n > 0, fmt.Sprintf("%d series", n)
			})
			cancel()
			switch {
			case err != nil:
				t.Errorf("panel %q: %s: %v", panel.Title, expr, err)
			case n == 0:
				t.Errorf("panel %q: %s returned no series within 15s", panel.Title, expr)
			}
		}
	}
	if only != nil && panels != len(only) {
		t.Errorf("dashboard: %d of the panels %q found", panels, only)
	}
	t.Logf("dashboard, job=~%q: %d queries of %d panels answered with series", job, queries, panels)
}
