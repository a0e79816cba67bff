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
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"
	"sigs.k8s.io/yaml"

	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"
	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
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

const schemaError = "values don't meet the specifications of the schema"

// lintRefuses: helm lint --strict and helm template both fail on args, with
// want in the message: the schema's refusals.
func lintRefuses(t *testing.T, want string, args ...string) {
	t.Helper()
	for _, cmd := range [][]string{{"lint", "--strict", chart}, {"template", "r", chart}} {
		out, err := helm(t, append(cmd, args...)...)
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("helm %s %v: accepted, or an error without %q: %v\n%s", cmd[0], args, want, err, out)
		}
	}
}

// templateRefuses: helm template fails on args with want in the message (a
// template's fail, which install and upgrade hit too). helm lint reports
// such a fail only as [INFO] and passes, even with --strict: what must make
// lint fail is in the schema.
func templateRefuses(t *testing.T, want string, args ...string) {
	t.Helper()
	out, err := helm(t, append([]string{"template", "r", chart}, args...)...)
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("helm template %v: accepted, or an error without %q: %v\n%s", args, want, err, out)
	}
}

// deployment decodes the rendered Deployment.
func deployment(t *testing.T, objs []*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	u := find(objs, "Deployment")
	if u == nil {
		t.Fatal("no Deployment rendered")
	}
	var d appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

// manifestDeployment reads a Deployment of manifests/.
func manifestDeployment(t *testing.T, path string) *appsv1.Deployment {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(b, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &d
}

func rulesOf(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	role := find(objs, "ClusterRole")
	if role == nil {
		t.Fatal("no ClusterRole rendered")
	}
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	return fmt.Sprint(rules)
}

// noFallback turns the multicluster plugin's cluster.local fallback off.
var noFallback = []string{"--set-json", "multicluster.fallback=[]"}

// customPort is a server on container port 5353 behind Service port 53.
const customPort = `servers=[{"port":5353,"servicePort":53,"plugins":[{"name":"errors"},{"name":"health","configBlock":"lameduck 5s"},{"name":"ready"},` +
	`{"name":"multicluster","parameters":"clusterset.local"},{"name":"kubernetes","parameters":"cluster.local in-addr.arpa ip6.arpa","configBlock":"pods insecure"},{"name":"cache","parameters":5}]}]`

func TestLintAndRender(t *testing.T) {
	clusterDNS := []string{"--set", "isClusterService=true", "--set", "service.clusterIP=10.96.0.10"}
	everything := []string{"--set", "prometheus.monitor.enabled=true", "--set", "prometheus.rules.enabled=true",
		"--set", "podDisruptionBudget.maxUnavailable=1", "--set", "priorityClassName=system-cluster-critical"}
	corednsServers := []string{"-f", "testdata/coredns-chart-servers.yaml"}
	for _, args := range [][]string{nil, clusterDNS, everything, slices.Concat(clusterDNS, everything), noFallback, slices.Concat(clusterDNS, noFallback),
		corednsServers, slices.Concat(clusterDNS, corednsServers), {"--set-json", customPort}, slices.Concat(clusterDNS, []string{"--set-json", customPort})} {
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
		if ip, _, _ := unstructured.NestedString(svc.Object, "spec", "clusterIP"); svc.GetName() != "r-coredns-mcs" || svc.GetLabels()["k8s-app"] != "" || ip != "" {
			t.Errorf("standalone Service %s with labels %v, clusterIP %q (want one allocated)", svc.GetName(), svc.GetLabels(), ip)
		}
		for _, absent := range []string{"ServiceMonitor", "PrometheusRule"} {
			if find(objs, absent) != nil {
				t.Errorf("%s rendered by default", absent)
			}
		}
	})
	t.Run("defaults as the manifests", func(t *testing.T) {
		for _, mode := range [][]string{nil, clusterDNS} {
			objs := render(t, mode...)
			pdb := find(objs, "PodDisruptionBudget")
			if pdb == nil {
				t.Fatalf("%v: no PodDisruptionBudget by default", mode)
			}
			spec, _, _ := unstructured.NestedMap(pdb.Object, "spec")
			if fmt.Sprint(spec["maxUnavailable"]) != "1" || spec["minAvailable"] != nil {
				t.Errorf("%v: PodDisruptionBudget spec %v, want maxUnavailable 1", mode, spec)
			}
			got, want := deployment(t, objs).Spec.Template.Spec, manifestDeployment(t, "../../manifests/standalone/deployment.yaml").Spec.Template.Spec
			if got.PriorityClassName != want.PriorityClassName || !equality.Semantic.DeepEqual(got.Tolerations, want.Tolerations) ||
				!equality.Semantic.DeepEqual(got.SecurityContext, want.SecurityContext) || got.DNSPolicy != want.DNSPolicy {
				t.Errorf("%v: pod spec priorityClassName %q tolerations %v securityContext %v dnsPolicy %s; the manifest's %q %v %v %s", mode,
					got.PriorityClassName, got.Tolerations, got.SecurityContext, got.DNSPolicy, want.PriorityClassName, want.Tolerations, want.SecurityContext, want.DNSPolicy)
			}
			gc, wc := got.Containers[0], want.Containers[0]
			for _, p := range []struct {
				name      string
				got, want any
			}{{"livenessProbe", gc.LivenessProbe, wc.LivenessProbe}, {"readinessProbe", gc.ReadinessProbe, wc.ReadinessProbe},
				{"startupProbe", gc.StartupProbe, wc.StartupProbe}, {"securityContext", gc.SecurityContext, wc.SecurityContext},
				{"ports", gc.Ports, wc.Ports}, {"resources", gc.Resources, wc.Resources}} {
				if !equality.Semantic.DeepEqual(p.got, p.want) {
					t.Errorf("%v: container %s %+v, the manifest's %+v", mode, p.name, p.got, p.want)
				}
			}
			selector := deployment(t, objs).Spec.Selector.MatchLabels
			aff := got.Affinity
			if aff == nil || aff.PodAntiAffinity == nil || len(aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
				t.Fatalf("%v: affinity %+v, want a preferred pod anti-affinity", mode, aff)
			}
			term := aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm
			if term.TopologyKey != "kubernetes.io/hostname" || term.LabelSelector == nil || term.LabelSelector.MatchLabels["app.kubernetes.io/instance"] != "r" ||
				!subset(term.LabelSelector.MatchLabels, selector) {
				t.Errorf("%v: anti-affinity term %+v, want hostname over the release's pods (%v)", mode, term, selector)
			}
			if len(got.TopologySpreadConstraints) != 1 {
				t.Fatalf("%v: topologySpreadConstraints %+v", mode, got.TopologySpreadConstraints)
			}
			tsc := got.TopologySpreadConstraints[0]
			if tsc.TopologyKey != "kubernetes.io/hostname" || tsc.WhenUnsatisfiable != corev1.ScheduleAnyway || tsc.MaxSkew != 1 ||
				tsc.LabelSelector == nil || !subset(tsc.LabelSelector.MatchLabels, selector) || tsc.LabelSelector.MatchLabels["app.kubernetes.io/instance"] != "r" {
				t.Errorf("%v: topology spread constraint %+v", mode, tsc)
			}
		}
		// The PDB: minAvailable replaces the default maxUnavailable, null removes it.
		pdb := find(render(t, "--set", "podDisruptionBudget.minAvailable=1"), "PodDisruptionBudget")
		if spec, _, _ := unstructured.NestedMap(pdb.Object, "spec"); spec["maxUnavailable"] != nil || fmt.Sprint(spec["minAvailable"]) != "1" {
			t.Errorf("minAvailable: PodDisruptionBudget spec %v", spec)
		}
		if find(render(t, "--set", "podDisruptionBudget=null"), "PodDisruptionBudget") != nil {
			t.Error("podDisruptionBudget=null still renders one")
		}
	})
	t.Run("cluster DNS", func(t *testing.T) {
		objs := render(t, slices.Concat(clusterDNS, everything)...)
		corefile := corefileOf(t, objs)
		mc, k, fwd := strings.Index(corefile, "multicluster "), strings.Index(corefile, "kubernetes cluster.local in-addr.arpa ip6.arpa {"), strings.Index(corefile, "forward . /etc/resolv.conf")
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
	t.Run("fallback off keeps cluster.local", func(t *testing.T) {
		for _, mode := range [][]string{nil, clusterDNS} {
			corefile := corefileOf(t, render(t, slices.Concat(mode, noFallback)...))
			if !strings.Contains(corefile, "kubernetes cluster.local in-addr.arpa ip6.arpa {") || strings.Contains(corefile, "fallback") {
				t.Errorf("%v with fallback []: Corefile\n%s", mode, corefile)
			}
			if mode == nil && (strings.Contains(corefile, "forward") || strings.Contains(corefile, "fallthrough") || !strings.Contains(corefile, "standalone")) {
				t.Errorf("standalone with fallback []: loops are no longer refused:\n%s", corefile)
			}
		}
		// Values that would drop the cluster domain from the kubernetes stanza are refused.
		lintRefuses(t, schemaError, "--set-json", `kubernetes.zones=["in-addr.arpa","ip6.arpa"]`)
		lintRefuses(t, schemaError, slices.Concat(clusterDNS, noFallback, []string{"--set-json", `kubernetes.zones=["in-addr.arpa","ip6.arpa"]`})...)
		lintRefuses(t, schemaError, "--set-json", `kubernetes.zones=[]`)
		templateRefuses(t, "lacks example.internal", "--set", "clusterDomain=example.internal", "--set-json", `multicluster.fallback=[]`)
		templateRefuses(t, "not in kubernetes.zones", "--set-json", `multicluster.fallback=["example.org"]`)
		templateRefuses(t, "moved to kubernetes.options", "--set-json", `multicluster.kubernetesOptions=["pods insecure"]`)
		// Another cluster domain: all three values move together.
		corefile := corefileOf(t, render(t, "--set", "clusterDomain=example.internal", "--set-json", `kubernetes.zones=["example.internal","in-addr.arpa"]`,
			"--set-json", `multicluster.fallback=["example.internal"]`))
		if !strings.Contains(corefile, "kubernetes example.internal in-addr.arpa {") || !strings.Contains(corefile, "fallback example.internal") {
			t.Errorf("clusterDomain example.internal:\n%s", corefile)
		}
	})
	t.Run("RBAC", func(t *testing.T) {
		for _, mode := range [][]string{nil, clusterDNS, corednsServers} {
			got := rulesOf(t, render(t, mode...))
			for _, want := range []string{"serviceimports", "endpointslices", "clusterproperties", "services", "namespaces"} {
				if !strings.Contains(got, want) {
					t.Errorf("%v: ClusterRole lacks %s: %s", mode, want, got)
				}
			}
			for _, never := range []string{"pods", "endpoints "} {
				if strings.Contains(got+" ", never) {
					t.Errorf("%v: ClusterRole grants %s, which no rendered option reads: %s", mode, never, got)
				}
			}
		}
		if got := rulesOf(t, render(t, "--set-json", `kubernetes.options=["pods verified"]`)); !strings.Contains(got, "pods") {
			t.Errorf("pods verified, and the ClusterRole lacks pods: %s", got)
		}
	})
	t.Run("servers", func(t *testing.T) {
		objs := render(t, "--set", "servers[0].zones[0].zone=clusterset.local.", "--set", "servers[0].port=53",
			"--set", "servers[0].plugins[0].name=errors", "--set", "servers[0].plugins[1].name=multicluster",
			"--set", "servers[0].plugins[1].parameters=clusterset.local", "--set", "servers[0].plugins[1].configBlock=standalone",
			"--set", "servers[0].plugins[2].name=health", "--set", "servers[0].plugins[3].name=ready")
		want := "clusterset.local.:53 {\n    errors\n    multicluster clusterset.local {\n        standalone\n    }\n    health\n    ready\n}"
		if got := corefileOf(t, objs); !strings.Contains(got, want) {
			t.Errorf("servers rendered\n%s\nwant\n%s", got, want)
		}
	})
	t.Run("the coredns chart's servers", func(t *testing.T) {
		for _, mode := range [][]string{nil, clusterDNS} {
			objs := render(t, slices.Concat(mode, corednsServers)...)
			corefile := corefileOf(t, objs)
			for _, want := range []string{".:53 {", "    kubernetes cluster.local in-addr.arpa ip6.arpa {\n        pods insecure\n", "    prometheus 0.0.0.0:9153\n", "    cache 30\n", "    health {\n        lameduck 10s\n    }\n"} {
				if !strings.Contains(corefile, want) {
					t.Errorf("%v: Corefile lacks %q:\n%s", mode, want, corefile)
				}
			}
			c := deployment(t, objs).Spec.Template.Spec.Containers[0]
			if fmt.Sprint(c.Ports) != fmt.Sprint([]corev1.ContainerPort{{Name: "dns", ContainerPort: 53, Protocol: "UDP"}, {Name: "dns-tcp", ContainerPort: 53, Protocol: "TCP"}, {Name: "metrics", ContainerPort: 9153, Protocol: "TCP"}}) {
				t.Errorf("%v: container ports %v (hostPort is not rendered)", mode, c.Ports)
			}
			svc := find(objs, "Service")
			ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
			if got := fmt.Sprint(ports); strings.Contains(got, "nodePort") || !strings.Contains(got, "port:53") {
				t.Errorf("%v: Service ports %s (nodePort is not rendered)", mode, got)
			}
		}
	})
	t.Run("custom DNS port", func(t *testing.T) {
		for _, c := range []struct {
			args        []string
			servicePort int64
		}{{slices.Concat(clusterDNS, []string{"--set-json", customPort}), 53}, {[]string{"--set-json", strings.Replace(customPort, `,"servicePort":53`, "", 1)}, 5353}} {
			objs := render(t, c.args...)
			ctr := deployment(t, objs).Spec.Template.Spec.Containers[0]
			if ctr.Ports[0].ContainerPort != 5353 || ctr.Ports[1].ContainerPort != 5353 || ctr.Ports[1].Protocol != corev1.ProtocolTCP || ctr.StartupProbe.TCPSocket.Port.IntValue() != 5353 {
				t.Errorf("container ports %v, startup probe %v: want 5353", ctr.Ports, ctr.StartupProbe.TCPSocket)
			}
			var svc corev1.Service
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(find(objs, "Service").Object, &svc); err != nil {
				t.Fatal(err)
			}
			for _, p := range svc.Spec.Ports[:2] {
				if int64(p.Port) != c.servicePort || p.TargetPort.IntValue() != 5353 {
					t.Errorf("Service port %+v: want port %d, targetPort 5353", p, c.servicePort)
				}
			}
			if !strings.Contains(corefileOf(t, objs), ".:5353 {") {
				t.Errorf("Corefile:\n%s", corefileOf(t, objs))
			}
		}
		// As the cluster DNS, Service port 53 is required: pods ask there.
		lintRefuses(t, schemaError, slices.Concat(clusterDNS, []string{"--set-json", strings.Replace(customPort, `,"servicePort":53`, "", 1)})...)
	})
	t.Run("refused", func(t *testing.T) {
		for _, bad := range [][]string{
			{"--set", "replicaCount=0"}, {"--set", "imag.repository=x"}, {"--set", "service.clusterIP=ten"},
			{"--set", "service.clusterIP=None"}, {"--set", "service.clusterIP=999.1"}, {"--set", "service.clusterIP=10.96.0.256"}, {"--set", "service.clusterIP=fd00::53::1"},
			{"--set-json", `servers=[{"port":0,"plugins":[{"name":"health"}]}]`}, {"--set-json", `servers=[{"port":70000,"plugins":[{"name":"health"}]}]`},
			{"--set-json", `servers=[{"zones":[{"zone":".","scheme":"tls://"}],"plugins":[{"name":"health"}]}]`},
			{"--set-json", `servers=[{"plugins":[{"name":"health","parameters":{"a":1}}]}]`},
			{"--set-json", `servers=[{"protocol":"UDP","plugins":[{"name":"health"}]}]`},
			{"--set", "podDisruptionBudget.maxUnavailable=-1"},
		} {
			lintRefuses(t, schemaError, bad...)
		}
		ready := `{"name":"health"},{"name":"ready"}`
		lintRefuses(t, schemaError, "--set-json", `servers=[{"plugins":[{"name":"ready"},{"name":"kubernetes","parameters":"cluster.local"}]}]`)
		lintRefuses(t, schemaError, "--set-json", `servers=[{"plugins":[{"name":"health","parameters":":8081"},{"name":"ready"}]}]`)
		lintRefuses(t, schemaError, "--set-json", `servers=[{"plugins":[{"name":"health"},{"name":"ready","parameters":":8182"}]}]`)
		lintRefuses(t, schemaError, slices.Concat(clusterDNS, []string{"--set-json", `servers=[{"plugins":[` + ready + `,{"name":"kubernetes","parameters":"in-addr.arpa"}]}]`})...)
		lintRefuses(t, schemaError, slices.Concat(clusterDNS, []string{"--set-json", `servers=[{"plugins":[` + ready + `]}]`})...)
		// Another cluster domain: the templates check what the schema cannot.
		templateRefuses(t, "no kubernetes plugin serves example.internal", slices.Concat(clusterDNS, []string{"--set", "clusterDomain=example.internal", "--set-json", `servers=[{"plugins":[` + ready + `,{"name":"kubernetes","parameters":"cluster.local"}]}]`})...)
		templateRefuses(t, "both want Service port 53", "--set-json", `servers=[{"port":53,"plugins":[`+ready+`]},{"port":5353,"servicePort":53,"plugins":[`+ready+`]}]`)
		for _, ok := range [][]string{{"--set", "service.clusterIP=10.96.0.53"}, {"--set", "service.clusterIP=fd00:10:96::53"}, {"--set", "service.clusterIP="}} {
			mustHelm(t, append([]string{"lint", "--strict", chart}, ok...)...)
		}
	})
}

func subset(a, b map[string]string) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return len(a) > 0
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
	createImport(t, mcs, si)

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
// server of kubeconfig, and returns its address once it is ready. The
// listening addresses become free loopback ports, and forward goes to a
// loopback port where nothing answers: the tests ask only names of the
// cluster.
func serve(t *testing.T, corefile, kubeconfig string) string {
	t.Helper()
	binary, err := harness.CoreDNSBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	port, readyPort := harness.FreePort(t), harness.FreePort(t)
	for _, r := range []struct{ re, repl string }{
		{`(?m)^(\S*):\d+ \{$`, fmt.Sprintf("${1}:%d {", port)},
		{`(?m)^(\s+)health( \{)?$`, fmt.Sprintf("${1}health 127.0.0.1:%d$2", harness.FreePort(t))},
		{`(?m)^(\s+)ready$`, fmt.Sprintf("${1}ready 127.0.0.1:%d", readyPort)},
		{`(?m)^(\s+)prometheus \S*:9153$`, fmt.Sprintf("${1}prometheus 127.0.0.1:%d", harness.FreePort(t))},
		{`(?m)^(\s+)forward \. /etc/resolv.conf$`, fmt.Sprintf("${1}forward . 127.0.0.1:%d", harness.FreePort(t))},
		{`(?m)^(\s+)(kubernetes|multicluster)( [^{\n]*)\{$`, "${1}${2}${3}{\n${1}    kubeconfig " + kubeconfig},
		{`(?m)^([ \t]+)(kubernetes|multicluster)( [^{\n]*)?$`, "${1}${2}${3} {\n${1}    kubeconfig " + kubeconfig + "\n${1}}"},
	} {
		corefile = regexp.MustCompile(r.re).ReplaceAllString(corefile, r.repl)
	}
	path := filepath.Join(t.TempDir(), "Corefile")
	if err := os.WriteFile(path, []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	harness.StartCoreDNS(t, "coredns (the chart's Corefile)", binary, path, addr, func() bool { return harness.HTTPOK(fmt.Sprintf("http://127.0.0.1:%d/ready", readyPort)) })
	return addr
}

// TestServeEachMode installs the chart once per mode, each release in a
// namespace of its own, and serves each rendered Corefile with the token of
// that release's ServiceAccount: a local Service in cluster.local answers in
// every mode, fallback [] included, and the chart's RBAC is enough for each.
func TestServeEachMode(t *testing.T) {
	helmBinary(t)
	cp := controlplane.ForTest(t, controlplane.Options{})
	kube := kubernetes.NewForConfigOrDie(cp.Config)
	ctx := t.Context()
	clusterDNS := []string{"--set", "isClusterService=true"}
	cases := []struct {
		name string
		args []string
		// import: what the clusterset name answers (its import), and
		// whether the import-only cluster.local name does (fallback).
		clusterset, fallback bool
	}{
		{"standalone", nil, true, true},
		{"standalone-nofallback", noFallback, true, false},
		{"clusterdns", clusterDNS, true, true},
		{"clusterdns-nofallback", slices.Concat(clusterDNS, noFallback), true, false},
		{"corednschart", slices.Concat(clusterDNS, []string{"-f", "testdata/coredns-chart-servers.yaml"}), false, false},
		{"customport", slices.Concat(clusterDNS, []string{"--set-json", customPort}), true, false},
	}
	for _, c := range cases {
		// A release name of its own: the ClusterRole is named after it.
		out := mustHelm(t, append([]string{"install", c.name, chart, "--namespace", c.name, "--create-namespace", "--kubeconfig", cp.Kubeconfig}, c.args...)...)
		if ignored := strings.Contains(out, "sets nodePort hostPort (keys of the coredns chart)"); ignored != (c.name == "corednschart") {
			t.Errorf("%s: NOTES about nodePort and hostPort: %t\n%s", c.name, ignored, out)
		}
	}

	// A local Service and an import (the CRDs came with the first install).
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: meta.ObjectMeta{Name: "shop"}}, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	web, err := kube.CoreV1().Services("shop").Create(ctx, &corev1.Service{ObjectMeta: meta.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{
		Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
	}}, meta.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mcs := mcsclient.NewForConfigOrDie(cp.Config)
	si := &mcsv1beta1.ServiceImport{ObjectMeta: meta.ObjectMeta{Namespace: "shop", Name: "cart"}, Spec: mcsv1beta1.ServiceImportSpec{
		Type: mcsv1beta1.ClusterSetIP, IPs: []string{"10.42.6.1"}, Ports: []mcsv1beta1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}},
	}}
	createImport(t, mcs, si)

	ask := func(t *testing.T, addr, name string) *dns.Msg {
		t.Helper()
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		r, err := harness.Ask("udp", addr, m)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	answers := func(r *dns.Msg, ip string) bool {
		return r.Rcode == dns.RcodeSuccess && len(r.Answer) == 1 && strings.HasSuffix(r.Answer[0].String(), "\t"+ip)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cm, err := kube.CoreV1().ConfigMaps(c.name).Get(ctx, c.name+"-coredns-mcs", meta.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			dep, err := kube.AppsV1().Deployments(c.name).Get(ctx, c.name+"-coredns-mcs", meta.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			kubeconfig, err := cp.KubeconfigForServiceAccount(ctx, c.name, dep.Spec.Template.Spec.ServiceAccountName)
			if err != nil {
				t.Fatal(err)
			}
			addr := serve(t, cm.Data["Corefile"], kubeconfig)
			// The local Service: the kubernetes plugin answers, the first
			// query maybe before its informers hold the new Service.
			poll.Eventually(t, 10*time.Second, "web.shop.svc.cluster.local answers "+web.Spec.ClusterIP, func() (bool, string) {
				r := ask(t, addr, "web.shop.svc.cluster.local.")
				return answers(r, web.Spec.ClusterIP), r.String()
			})
			if r := ask(t, addr, "cart.shop.svc.clusterset.local."); answers(r, "10.42.6.1") != c.clusterset {
				t.Errorf("cart.shop.svc.clusterset.local: %v", r)
			}
			r := ask(t, addr, "cart.shop.svc.cluster.local.")
			if c.fallback && !answers(r, "10.42.6.1") || !c.fallback && r.Rcode != dns.RcodeNameError {
				t.Errorf("cart.shop.svc.cluster.local (fallback %t): %v", c.fallback, r)
			}
			if r := ask(t, addr, "nope.shop.svc.cluster.local."); r.Rcode != dns.RcodeNameError {
				t.Errorf("nope.shop.svc.cluster.local: %v", r)
			}
		})
	}
}

// warnings collects the API server's warnings (Warning headers).
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.list
	w.list = nil
	return l
}

// TestPodSecurityRestricted: every workload the chart renders (both modes,
// and with the coredns chart's servers) and the Deployments of manifests/
// pass kube-apiserver's Pod Security admission at the restricted level.
//
// What the API server does: in a namespace labelled enforce: restricted it
// refuses a Pod that violates the level (403, also for a dry run, which runs
// admission); a Deployment it admits either way (enforcement is for pods,
// which a controller would then fail to create), with a warning when the
// namespace also has warn: restricted. So each pod template is created as a
// Pod (dry run) and as a Deployment (dry run) with its warnings read, and a
// template without the seccomp profile shows that both checks bite.
func TestPodSecurityRestricted(t *testing.T) {
	helmBinary(t)
	cp := controlplane.ForTest(t, controlplane.Options{})
	cfg := rest.CopyConfig(cp.Config)
	warned := &warnings{}
	cfg.WarningHandler = warned
	kube := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()
	ns := "restricted"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: meta.ObjectMeta{Name: ns, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest",
		"pod-security.kubernetes.io/warn": "restricted", "pod-security.kubernetes.io/warn-version": "latest",
	}}}, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	workloads := map[string]*appsv1.Deployment{
		"manifests/install":    manifestDeployment(t, "../../manifests/install/deployment.yaml"),
		"manifests/standalone": manifestDeployment(t, "../../manifests/standalone/deployment.yaml"),
	}
	for name, args := range map[string][]string{
		"chart standalone":            nil,
		"chart cluster DNS":           {"--set", "isClusterService=true"},
		"chart coredns chart servers": {"--set", "isClusterService=true", "-f", "testdata/coredns-chart-servers.yaml"},
		"chart custom port":           {"--set", "isClusterService=true", "--set-json", customPort},
	} {
		objs := render(t, args...)
		for _, o := range objs {
			if k := o.GetKind(); k == "DaemonSet" || k == "StatefulSet" || k == "Job" || k == "Pod" {
				t.Errorf("%s: a %s the test does not check", name, k)
			}
		}
		workloads[name] = deployment(t, objs)
	}
	dryRun := meta.CreateOptions{DryRun: []string{meta.DryRunAll}}
	admit := func(name string, d *appsv1.Deployment) (podErr error, deploymentWarnings []string) {
		t.Helper()
		pod := &corev1.Pod{ObjectMeta: meta.ObjectMeta{Name: "psa", Labels: d.Spec.Template.Labels}, Spec: d.Spec.Template.Spec}
		_, podErr = kube.CoreV1().Pods(ns).Create(ctx, pod, dryRun)
		warned.take()
		d = d.DeepCopy()
		d.Namespace, d.ResourceVersion = ns, ""
		if _, err := kube.AppsV1().Deployments(ns).Create(ctx, d, dryRun); err != nil {
			t.Errorf("%s: Deployment (dry run): %v", name, err)
		}
		return podErr, warned.take()
	}
	for name, d := range workloads {
		if sc := d.Spec.Template.Spec.SecurityContext; sc == nil || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: pod securityContext %+v, want seccompProfile RuntimeDefault", name, sc)
		}
		podErr, w := admit(name, d)
		if podErr != nil {
			t.Errorf("%s: Pod refused in a namespace that enforces restricted: %v", name, podErr)
		}
		if len(w) > 0 {
			t.Errorf("%s: Deployment warnings in a namespace that warns at restricted: %q", name, w)
		}
		t.Logf("%s: admitted at restricted", name)
	}
	// The control: without the seccomp profile the same template is refused.
	d := workloads["chart standalone"].DeepCopy()
	d.Spec.Template.Spec.SecurityContext = nil
	podErr, w := admit("no seccomp", d)
	if podErr == nil || !strings.Contains(podErr.Error(), "seccompProfile") {
		t.Errorf("a pod without a seccomp profile: %v, want refused for seccompProfile", podErr)
	}
	if !slices.ContainsFunc(w, func(s string) bool { return strings.Contains(s, "seccompProfile") }) {
		t.Errorf("a Deployment without a seccomp profile: warnings %q, want one for seccompProfile", w)
	}
	t.Logf("without seccompProfile: Pod %v; Deployment warnings %q", podErr, w)
}

// createImport creates si once the API server serves the ServiceImport CRD
// the chart installed, which it does a moment after the CRD is created.
func createImport(t *testing.T, mcs mcsclient.Interface, si *mcsv1beta1.ServiceImport) {
	t.Helper()
	poll.Eventually(t, 20*time.Second, "ServiceImport "+si.Namespace+"/"+si.Name+" created (CRD from the chart)", func() (bool, string) {
		_, err := mcs.MulticlusterV1beta1().ServiceImports(si.Namespace).Create(t.Context(), si, meta.CreateOptions{})
		return err == nil, fmt.Sprint(err)
	})
}
