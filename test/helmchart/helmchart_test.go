// Package helmchart tests charts/coredns-mcs with the helm command
// (helm.sh/helm/v3, the helm testbin set): lint, render in both modes, a
// values schema that refuses bad values, and install, upgrade and uninstall
// against a real API server, whose rendered Corefile the real coredns binary
// then serves with the chart's own RBAC.
package helmchart

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"
	"sigs.k8s.io/yaml"

	"github.com/coredns-mcs/coredns-mcs/test/controlplane"
	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/testbin"
)

const chart = "../../charts/coredns-mcs"

func helmBinary(t *testing.T) string {
	t.Helper()
	return testbin.Binary(t, "helm", "helm")
}

// helm runs the helm command with a HOME of the test's own, so that no
// repository or plugin of the machine's user plays a part.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBinary(t), args...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mustHelm(t *testing.T, args ...string) string {
	t.Helper()
	out, err := helm(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// render runs helm template and decodes every object.
func render(t *testing.T, args ...string) []*unstructured.Unstructured {
	t.Helper()
	out := mustHelm(t, append([]string{"template", "r", chart, "--namespace", "kube-system"}, args...)...)
	var objs []*unstructured.Unstructured
	for _, doc := range strings.Split(out, "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("rendered YAML: %v\n%s", err, doc)
		}
		if m != nil {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
	return objs
}

func find(objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind {
			return o
		}
	}
	return nil
}

func corefileOf(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	cm := find(objs, "ConfigMap")
	if cm == nil {
		t.Fatal("no ConfigMap rendered")
	}
	s, _, _ := unstructured.NestedString(cm.Object, "data", "Corefile")
	return s
}

// TestChartCopies: the chart's CRDs and alerting rules are the project's.
func TestChartCopies(t *testing.T) {
	pairs := map[string]string{"files/coredns-mcs.rules.yaml": "../../manifests/monitoring/coredns-mcs.rules.yaml"}
	crds, _ := filepath.Glob("../../manifests/crds/*_*.yaml")
	for _, c := range crds {
		pairs["crds/"+filepath.Base(c)] = c
	}
	if len(pairs) != 4 {
		t.Fatalf("%d files to compare, want 4", len(pairs))
	}
	for in, want := range pairs {
		a, err := os.ReadFile(filepath.Join(chart, in))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(want)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("charts/coredns-mcs/%s differs from %s: copy it", in, want)
		}
	}
}

func TestLintAndRender(t *testing.T) {
	clusterDNS := []string{"--set", "isClusterService=true", "--set", "service.clusterIP=10.96.0.10"}
	everything := []string{"--set", "prometheus.monitor.enabled=true", "--set", "prometheus.rules.enabled=true",
		"--set", "podDisruptionBudget.maxUnavailable=1", "--set", "priorityClassName=system-cluster-critical"}
	for _, args := range [][]string{nil, clusterDNS, everything, slices.Concat(clusterDNS, everything)} {
		mustHelm(t, append([]string{"lint", "--strict", chart}, args...)...)
	}

	t.Run("standalone", func(t *testing.T) {
		objs := render(t)
		corefile := corefileOf(t, objs)
		for _, want := range []string{"multicluster clusterset.local in-addr.arpa ip6.arpa {", "fallback cluster.local", "standalone", "kubernetes cluster.local in-addr.arpa ip6.arpa {"} {
			if !strings.Contains(corefile, want) {
				t.Errorf("standalone Corefile lacks %q:\n%s", want, corefile)
			}
		}
		for _, never := range []string{"forward", "fallthrough"} {
			if strings.Contains(corefile, never) {
				t.Errorf("standalone Corefile has %s: names of its zones could go back upstream:\n%s", never, corefile)
			}
		}
		svc := find(objs, "Service")
		if svc.GetName() != "r-coredns-mcs" || svc.GetLabels()["k8s-app"] != "" {
			t.Errorf("standalone Service %s with labels %v", svc.GetName(), svc.GetLabels())
		}
		role := find(objs, "ClusterRole")
		rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
		got := fmt.Sprint(rules)
		for _, want := range []string{"serviceimports", "endpointslices", "clusterproperties", "services"} {
			if !strings.Contains(got, want) {
				t.Errorf("ClusterRole lacks %s: %s", want, got)
			}
		}
		for _, absent := range []string{"PodDisruptionBudget", "ServiceMonitor", "PrometheusRule"} {
			if find(objs, absent) != nil {
				t.Errorf("%s rendered by default", absent)
			}
		}
	})
	t.Run("cluster DNS", func(t *testing.T) {
		objs := render(t, slices.Concat(clusterDNS, everything)...)
		corefile := corefileOf(t, objs)
		mc, k, fwd := strings.Index(corefile, "multicluster "), strings.Index(corefile, "kubernetes "), strings.Index(corefile, "forward . /etc/resolv.conf")
		if mc < 0 || k < mc || fwd < k || strings.Contains(corefile, "standalone") {
			t.Errorf("cluster DNS Corefile:\n%s", corefile)
		}
		svc := find(objs, "Service")
		ip, _, _ := unstructured.NestedString(svc.Object, "spec", "clusterIP")
		if svc.GetName() != "kube-dns" || ip != "10.96.0.10" || svc.GetLabels()["k8s-app"] != "kube-dns" {
			t.Errorf("cluster DNS Service %s %s %v", svc.GetName(), ip, svc.GetLabels())
		}
		dep := find(objs, "Deployment")
		pc, _, _ := unstructured.NestedString(dep.Object, "spec", "template", "spec", "priorityClassName")
		sa, _, _ := unstructured.NestedString(dep.Object, "spec", "template", "spec", "serviceAccountName")
		if pc != "system-cluster-critical" || sa != "coredns" {
			t.Errorf("Deployment priorityClassName %q serviceAccountName %q", pc, sa)
		}
		for _, kind := range []string{"PodDisruptionBudget", "ServiceMonitor", "PrometheusRule"} {
			if find(objs, kind) == nil {
				t.Errorf("no %s rendered", kind)
			}
		}
		rule := find(objs, "PrometheusRule")
		groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
		if len(groups) != 2 {
			t.Errorf("PrometheusRule has %d groups, want the 2 of the rules file", len(groups))
		}
	})
	t.Run("monitor job", func(t *testing.T) {
		// The ServiceMonitor's job: coredns for the cluster DNS, which the
		// coredns-mixin's alerts (CoreDNSDown) select; coredns-mcs for the
		// standalone server, so that beside the cluster's own CoreDNS (job
		// coredns) two servers are never one job.
		for _, c := range []struct {
			args []string
			want string
		}{{everything, "coredns-mcs"}, {slices.Concat(clusterDNS, everything), "coredns"}} {
			sm := find(render(t, c.args...), "ServiceMonitor")
			endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
			got := fmt.Sprint(endpoints)
			if len(endpoints) != 1 || !strings.Contains(got, "replacement:"+c.want+" ") && !strings.Contains(got, "replacement:"+c.want+"]") {
				t.Errorf("%v: ServiceMonitor endpoints %s, want the job relabelled to %s", c.args, got, c.want)
			}
		}
	})
	t.Run("servers", func(t *testing.T) {
		objs := render(t, "--set", "servers[0].zones[0].zone=clusterset.local.", "--set", "servers[0].port=53",
			"--set", "servers[0].plugins[0].name=errors", "--set", "servers[0].plugins[1].name=multicluster",
			"--set", "servers[0].plugins[1].parameters=clusterset.local", "--set", "servers[0].plugins[1].configBlock=standalone")
		want := "clusterset.local.:53 {\n    errors\n    multicluster clusterset.local {\n        standalone\n    }\n}"
		if got := corefileOf(t, objs); !strings.Contains(got, want) {
			t.Errorf("servers rendered\n%s\nwant\n%s", got, want)
		}
	})
	t.Run("schema", func(t *testing.T) {
		for _, bad := range [][]string{{"--set", "replicaCount=0"}, {"--set", "imag.repository=x"}, {"--set", "service.clusterIP=ten"}} {
			out, err := helm(t, append([]string{"template", "r", chart}, bad...)...)
			if err == nil || !strings.Contains(out, "values don't meet the specifications of the schema") {
				t.Errorf("%v: accepted or an unclear error: %v\n%s", bad, err, out)
			}
		}
	})
}

// TestInstallServeUpgradeUninstall installs the chart into a real API
// server, runs the coredns binary with the Corefile the chart rendered and
// the token of the chart's ServiceAccount, asks it, upgrades, uninstalls.
func TestInstallServeUpgradeUninstall(t *testing.T) {
	helmBinary(t)
	cp := controlplane.ForTest(t, controlplane.Options{})
	kube := kubernetes.NewForConfigOrDie(cp.Config)
	ctx := t.Context()
	start := time.Now()
	out := mustHelm(t, "install", "mcs", chart, "--namespace", "kube-system", "--kubeconfig", cp.Kubeconfig, "--set", "service.clusterIP=10.96.0.53")
	t.Logf("helm install (%s):\n%s", time.Since(start).Round(time.Millisecond), out)
	if !strings.Contains(out, "coredns-mcs runs standalone: Service kube-system/mcs-coredns-mcs") {
		t.Error("NOTES do not name the Service")
	}
	svc, err := kube.CoreV1().Services("kube-system").Get(ctx, "mcs-coredns-mcs", meta.GetOptions{})
	if err != nil || svc.Spec.ClusterIP != "10.96.0.53" {
		t.Fatalf("Service: %v %v", svc, err)
	}
	cm, err := kube.CoreV1().ConfigMaps("kube-system").Get(ctx, "mcs-coredns-mcs", meta.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kube.AppsV1().Deployments("kube-system").Get(ctx, "mcs-coredns-mcs", meta.GetOptions{}); err != nil {
		t.Fatal(err)
	}

	// The CRDs of crds/ are installed; an import.
	mcs := mcsclient.NewForConfigOrDie(cp.Config)
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: meta.ObjectMeta{Name: "shop"}}, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	si := &mcsv1beta1.ServiceImport{ObjectMeta: meta.ObjectMeta{Namespace: "shop", Name: "cart"}, Spec: mcsv1beta1.ServiceImportSpec{
		Type: mcsv1beta1.ClusterSetIP, IPs: []string{"10.42.6.1"}, Ports: []mcsv1beta1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}},
	}}
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := mcs.MulticlusterV1beta1().ServiceImports("shop").Create(ctx, si, meta.CreateOptions{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ServiceImport (CRD from the chart): %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The rendered Corefile, served by coredns with the chart's RBAC.
	kubeconfig, err := cp.KubeconfigForServiceAccount(ctx, "kube-system", "mcs-coredns-mcs")
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, cm.Data["Corefile"], kubeconfig)
	for _, proto := range []string{"udp", "tcp"} {
		for _, name := range []string{"cart.shop.svc.clusterset.local.", "cart.shop.svc.cluster.local."} {
			m := new(dns.Msg)
			m.SetQuestion(name, dns.TypeA)
			r, err := harness.Ask(proto, addr, m)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Answer) != 1 || !strings.HasSuffix(r.Answer[0].String(), "10.42.6.1") {
				t.Errorf("%s over %s: %v", name, proto, r)
			}
		}
		m := new(dns.Msg)
		m.SetQuestion("nope.shop.svc.cluster.local.", dns.TypeA)
		if r, err := harness.Ask(proto, addr, m); err != nil || r.Rcode != dns.RcodeNameError {
			t.Errorf("nope over %s: %v %v", proto, r, err)
		}
	}

	// Upgrade: another option reaches the ConfigMap, and the pods roll.
	dep, _ := kube.AppsV1().Deployments("kube-system").Get(ctx, "mcs-coredns-mcs", meta.GetOptions{})
	before := dep.Spec.Template.Annotations["checksum/config"]
	mustHelm(t, "upgrade", "mcs", chart, "--namespace", "kube-system", "--kubeconfig", cp.Kubeconfig, "--reuse-values", "--set", "multicluster.options={derived_prefix derived-}")
	cm, _ = kube.CoreV1().ConfigMaps("kube-system").Get(ctx, "mcs-coredns-mcs", meta.GetOptions{})
	dep, _ = kube.AppsV1().Deployments("kube-system").Get(ctx, "mcs-coredns-mcs", meta.GetOptions{})
	if !strings.Contains(cm.Data["Corefile"], "derived_prefix derived-") || dep.Spec.Template.Annotations["checksum/config"] == before {
		t.Errorf("after the upgrade: Corefile\n%s\nchecksum %q (was %q)", cm.Data["Corefile"], dep.Spec.Template.Annotations["checksum/config"], before)
	}

	mustHelm(t, "uninstall", "mcs", "--namespace", "kube-system", "--kubeconfig", cp.Kubeconfig, "--wait")
	for _, get := range []func() error{
		func() error {
			_, err := kube.AppsV1().Deployments("kube-system").Get(ctx, "mcs-coredns-mcs", meta.GetOptions{})
			return err
		},
		func() error {
			_, err := kube.CoreV1().Services("kube-system").Get(ctx, "mcs-coredns-mcs", meta.GetOptions{})
			return err
		},
		func() error {
			_, err := kube.RbacV1().ClusterRoles().Get(ctx, "mcs-coredns-mcs", meta.GetOptions{})
			return err
		},
	} {
		if err := get(); err == nil {
			t.Error("an object of the release is left after helm uninstall")
		}
	}
}

// serve runs the coredns binary with corefile on loopback, reading the API
// server of kubeconfig, and returns its address once it is ready.
func serve(t *testing.T, corefile, kubeconfig string) string {
	t.Helper()
	binary, err := harness.CoreDNSBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	port, readyPort := harness.FreePort(t), harness.FreePort(t)
	corefile = strings.Replace(corefile, ".:53 {", fmt.Sprintf(".:%d {", port), 1)
	corefile = strings.Replace(corefile, "    health {", fmt.Sprintf("    health 127.0.0.1:%d {", harness.FreePort(t)), 1)
	corefile = strings.Replace(corefile, "    ready\n", fmt.Sprintf("    ready 127.0.0.1:%d\n", readyPort), 1)
	corefile = strings.Replace(corefile, "prometheus :9153", fmt.Sprintf("prometheus 127.0.0.1:%d", harness.FreePort(t)), 1)
	corefile = regexp.MustCompile(`(?m)^(\s+)(kubernetes|multicluster)( [^{\n]*)\{$`).ReplaceAllString(corefile, "${1}${2}${3}{\n${1}    kubeconfig "+kubeconfig)
	path := filepath.Join(t.TempDir(), "Corefile")
	if err := os.WriteFile(path, []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	harness.StartCoreDNS(t, "coredns (the chart's Corefile)", binary, path, addr, func() bool { return harness.HTTPOK(fmt.Sprintf("http://127.0.0.1:%d/ready", readyPort)) })
	return addr
}
