// Package monitoring checks the alerting rules of manifests/monitoring with
// promtool (github.com/prometheus/prometheus, the prometheus testbin set):
// they load, every alert fires and stays quiet when it should (promtool's
// unit tests in testdata), every alert has a runbook, and the PrometheusRule
// is the rules file.
package monitoring

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/coredns-mcs/coredns-mcs/test/internal/testbin"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite manifests/monitoring/prometheusrule.yaml from the rules file")

const (
	rulesFile      = "../../manifests/monitoring/coredns-mcs.rules.yaml"
	prometheusRule = "../../manifests/monitoring/prometheusrule.yaml"
	runbooks       = "../../docs/runbooks.md"
	unitTests      = "testdata/alerts_test.yaml"
	scrapeConfigs  = "../../manifests/monitoring/prometheus-scrape-configs.yaml"
)

func promtool(t *testing.T) string {
	t.Helper()
	return testbin.Binary(t, "prometheus", "promtool")
}

func run(t *testing.T, bin string, args ...string) string {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestRulesLoad(t *testing.T) {
	out := run(t, promtool(t), "check", "rules", "--lint=all", "--lint-fatal", rulesFile)
	t.Log(strings.TrimSpace(out))
}

// TestScrapeConfigs: the scrape jobs shipped for a Prometheus without the
// Operator load in a Prometheus configuration, with the job names the rules
// select.
func TestScrapeConfigs(t *testing.T) {
	data, err := os.ReadFile(scrapeConfigs)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		ScrapeConfigs []struct {
			JobName string `json:"job_name"`
		} `json:"scrape_configs"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	var jobs []string
	for _, c := range cfg.ScrapeConfigs {
		jobs = append(jobs, c.JobName)
	}
	if strings.Join(jobs, ",") != "coredns,coredns-mcs" {
		t.Errorf("%s: jobs %v, want coredns and coredns-mcs", scrapeConfigs, jobs)
	}
	config := filepath.Join(t.TempDir(), "prometheus.yml")
	if err := os.WriteFile(config, append([]byte("global:\n  scrape_interval: 30s\n"), data...), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Log(strings.TrimSpace(run(t, promtool(t), "check", "config", "--lint=all", "--lint-fatal", config)))
}

func TestAlertsUnitTests(t *testing.T) {
	out := run(t, promtool(t), "test", "rules", unitTests)
	if !strings.Contains(out, "SUCCESS") {
		t.Fatalf("promtool test rules: %s", out)
	}
}

// ruleGroups is the part of a rules file the checks read.
type ruleGroups struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

func readRules(t *testing.T) (raw map[string]any, groups ruleGroups) {
	t.Helper()
	data, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &groups); err != nil {
		t.Fatal(err)
	}
	return raw, groups
}

// TestEveryAlertTestedAndDocumented: each alert has a firing case in the
// unit tests, a severity, a runbook_url that names its own section, and that
// section in docs/runbooks.md.
func TestEveryAlertTestedAndDocumented(t *testing.T) {
	_, groups := readRules(t)
	tests, err := os.ReadFile(unitTests)
	if err != nil {
		t.Fatal(err)
	}
	var unit struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string           `json:"alertname"`
				ExpAlerts []map[string]any `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(tests, &unit); err != nil {
		t.Fatal(err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range unit.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	doc, err := os.ReadFile(runbooks)
	if err != nil {
		t.Fatal(err)
	}
	headings := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^## (\S+)$`).FindAllStringSubmatch(string(doc), -1) {
		headings[m[1]] = true
	}
	n := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			n++
			if !fires[r.Alert] || !quiet[r.Alert] {
				t.Errorf("%s: unit tests where it fires: %v, where it stays quiet: %v; want both", r.Alert, fires[r.Alert], quiet[r.Alert])
			}
			if r.Labels["severity"] == "" {
				t.Errorf("%s: no severity label", r.Alert)
			}
			if want := "docs/runbooks.md#" + strings.ToLower(r.Alert); !strings.HasSuffix(r.Annotations["runbook_url"], want) {
				t.Errorf("%s: runbook_url %q, want it to end with %s", r.Alert, r.Annotations["runbook_url"], want)
			}
			if !headings[r.Alert] {
				t.Errorf("%s: no section \"## %s\" in docs/runbooks.md", r.Alert, r.Alert)
			}
		}
	}
	if n < 10 {
		t.Errorf("%d alerts read from %s: the file is not what this test expects", n, rulesFile)
	}
}

// TestPrometheusRuleIsTheRulesFile: the PrometheusRule shipped for the
// Prometheus Operator holds exactly the groups of the rules file.
func TestPrometheusRuleIsTheRulesFile(t *testing.T) {
	raw, _ := readRules(t)
	obj := map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "PrometheusRule",
		"metadata": map[string]any{
			"name":      "coredns-mcs",
			"namespace": "kube-system",
			"labels":    map[string]any{"app.kubernetes.io/name": "coredns-mcs"},
		},
		"spec": raw,
	}
	body, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]byte("# Generated from coredns-mcs.rules.yaml by go test ./test/monitoring -update: edit that file.\n"), body...)
	if *update {
		if err := os.WriteFile(prometheusRule, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(prometheusRule)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what %s makes: run go test ./test/monitoring -update", prometheusRule, rulesFile)
	}
}
