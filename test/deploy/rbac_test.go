package deploy

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"
	"sigs.k8s.io/yaml"

	"github.com/coredns-mcs/coredns-mcs/plugin/multicluster/dnscheck"
	"github.com/coredns-mcs/coredns-mcs/test/internal/apply"
	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"

	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// shippedCorefile returns data.Corefile of the ConfigMap in manifests.
func shippedCorefile(t testing.TB) string {
	t.Helper()
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(readRepoFile(t, "manifests/corefile/configmap.yaml"), &cm); err != nil {
		t.Fatalf("manifests/corefile/configmap.yaml: %v", err)
	}
	if cm.Namespace != "kube-system" || cm.Name != "coredns" || cm.Data["Corefile"] == "" {
		t.Fatalf("manifests/corefile/configmap.yaml is %s/%s with keys %v, want kube-system/coredns with a Corefile", cm.Namespace, cm.Name, slices.Collect(maps.Keys(cm.Data)))
	}
	return cm.Data["Corefile"]
}

// ports are the addresses a test coredns listens on instead of the
// in-cluster ones.
type ports struct{ dns, health, ready, metrics int }

// localCorefile rewrites the shipped Corefile to run on loopback in a test:
// free ports instead of 53, 8080, 8181 and 9153, the given kubeconfig for
// both Kubernetes plugins, and no forward (there is no upstream resolver to
// reach here). withKubernetes false also drops the kubernetes block, so that
// the multicluster plugin watches Services itself. Every edit must match
// exactly once, so a changed ConfigMap fails here instead of being tested
// half-rewritten.
func localCorefile(t *testing.T, corefile string, p ports, kubeconfig string, withKubernetes bool) string {
	t.Helper()
	corefile = editCorefile(t, "the shipped Corefile", corefile, loopbackEdits(p, kubeconfig))
	if !withKubernetes {
		re := regexp.MustCompile(`(?ms)^(\s+)kubernetes [^\n]*\{\n.*?^\s+\}\n`)
		if n := len(re.FindAllStringIndex(corefile, -1)); n != 1 {
			t.Fatalf("cannot find the kubernetes block in:\n%s", corefile)
		}
		corefile = re.ReplaceAllString(corefile, "")
	}
	return corefile
}

// corefileEdit replaces what re matches by repl.
type corefileEdit struct{ re, repl string }

// loopbackEdits make a shipped Corefile run on loopback: the ports p
// instead of 53, 8080, 8181 and 9153, kubeconfig for both Kubernetes
// plugins, and no forward (there is no upstream resolver to reach here).
func loopbackEdits(p ports, kubeconfig string) []corefileEdit {
	return []corefileEdit{
		{`(?m)^\.:53 \{$`, fmt.Sprintf(".:%d {", p.dns)},
		{`(?m)^(\s+)health \{$`, fmt.Sprintf("${1}health 127.0.0.1:%d {", p.health)},
		{`(?m)^(\s+)ready$`, fmt.Sprintf("${1}ready 127.0.0.1:%d", p.ready)},
		{`(?m)^(\s+)prometheus :9153$`, fmt.Sprintf("${1}prometheus 127.0.0.1:%d", p.metrics)},
		{`(?m)^\s+forward \. /etc/resolv\.conf\n`, ""},
		{`(?m)^(\s+)(multicluster [^\n{]*\{)$`, "${1}${2}\n${1}    kubeconfig " + kubeconfig},
		{`(?m)^(\s+)(kubernetes [^\n{]*\{)$`, "${1}${2}\n${1}    kubeconfig " + kubeconfig},
	}
}

// editCorefile applies edits to corefile (what) in turn; each must match
// exactly once, so that a changed Corefile fails here instead of being
// tested half-rewritten.
func editCorefile(t *testing.T, what, corefile string, edits []corefileEdit) string {
	t.Helper()
	for _, e := range edits {
		re := regexp.MustCompile(e.re)
		if n := len(re.FindAllStringIndex(corefile, -1)); n != 1 {
			t.Fatalf("%s matches %s %d times, want once:\n%s", what, e.re, n, corefile)
		}
		corefile = re.ReplaceAllString(corefile, e.repl)
	}
	return corefile
}

// server is a running coredns process.
type server struct {
	addr   string
	ports  ports
	log    *harness.Output
	exited chan struct{}
}

// startCoreDNS runs the shipped Corefile, rewritten by localCorefile, and
// waits until /ready answers 200.
func startCoreDNS(t *testing.T, kubeconfig string, withKubernetes bool) *server {
	t.Helper()
	p := ports{dns: harness.FreePort(t), health: harness.FreePort(t), ready: harness.FreePort(t), metrics: harness.FreePort(t)}
	corefile := localCorefile(t, shippedCorefile(t), p, kubeconfig, withKubernetes)
	return runCoreDNS(t, corefile, p, t.TempDir())
}

// runCoreDNS runs corefile, written into dir, on the ports p, and waits
// until it answers DNS and /ready says 200; the test's cleanup stops it.
func runCoreDNS(t *testing.T, corefile string, p ports, dir string) *server {
	t.Helper()
	path := filepath.Join(dir, "Corefile")
	writeFile(t, path, corefile)
	s := &server{addr: fmt.Sprintf("127.0.0.1:%d", p.dns), ports: p, log: &harness.Output{}, exited: make(chan struct{})}
	cmd := exec.Command(corednsBinary(t), "-conf", path)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-s.exited
		if t.Failed() {
			t.Logf("Corefile:\n%s\ncoredns log:\n%s", corefile, s.log.String())
		}
	})
	// /ready can say 200 before the DNS listener is up: wait for both.
	s.waitFor(t, 30*time.Second, "/ready to answer 200 and DNS to answer", func() bool {
		_, err := s.query("ping.invalid.", dns.TypeA)
		return err == nil && s.isReady()
	})
	return s
}

// waitFor polls cond until it holds, failing t after timeout or when coredns
// exits.
func (s *server) waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	poll.Eventually(t, timeout, what, func() (bool, string) {
		select {
		case <-s.exited:
			t.Fatalf("coredns exited while waiting for %s:\n%s", what, s.log.String())
		default:
		}
		return cond(), "not yet"
	})
}

func (s *server) get(path string) (int, string) {
	port := s.ports.ready
	if path == "/metrics" {
		port = s.ports.metrics
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	return resp.StatusCode, b.String()
}

func (s *server) isReady() bool {
	code, _ := s.get("/ready")
	return code == http.StatusOK
}

// metric returns the value of the metric line with exactly this name and
// labels, as printed, or "" when there is none.
func (s *server) metric(series string) string {
	_, body := s.get("/metrics")
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}

// refusals is how many requests to the API server were answered 403
// Forbidden (coredns_kubernetes_rest_client_requests_total, which counts
// every client-go request of the process).
func (s *server) refusals() float64 {
	_, body := s.get("/metrics")
	n := 0.0
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, `coredns_kubernetes_rest_client_requests_total{code="403"`) {
			continue
		}
		if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
			n += v
		}
	}
	return n
}

// query asks over UDP; a timeout is an error.
func (s *server) query(name string, qtype uint16) (*dns.Msg, error) {
	c := dns.Client{Net: "udp", Timeout: 2 * time.Second}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	r, _, err := c.Exchange(m, s.addr)
	if err != nil {
		return nil, err
	}
	return r, dnscheck.Distinct(r)
}

// answersA reports whether name has exactly the A records want.
func (s *server) answersA(name string, want ...string) func() bool {
	return func() bool {
		r, err := s.query(name, dns.TypeA)
		if err != nil || r.Rcode != dns.RcodeSuccess {
			return false
		}
		var got []string
		for _, rr := range r.Answer {
			if a, ok := rr.(*dns.A); ok {
				got = append(got, a.A.String())
			}
		}
		slices.Sort(got)
		return slices.Equal(got, want)
	}
}

// loadObject reads the first object of kind from a file of manifests, which
// may hold several documents.
func loadObject[T any](t *testing.T, rel, kind string) *T {
	t.Helper()
	for _, doc := range strings.Split(string(readRepoFile(t, rel)), "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		if meta.Kind != kind {
			continue
		}
		obj := new(T)
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		return obj
	}
	t.Fatalf("%s has no %s", rel, kind)
	return nil
}

// serviceAccountUser is how RBAC sees kube-system/coredns.
var serviceAccountUser = authorizationv1.SubjectAccessReviewSpec{
	User:   "system:serviceaccount:kube-system:coredns",
	Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"},
}

// waitAllowed waits until RBAC's cache agrees that the ServiceAccount may (or
// may not) do verb on resource: role edits take effect asynchronously.
func waitAllowed(ctx context.Context, t *testing.T, kube kubernetes.Interface, group, resource, verb string, want bool) {
	t.Helper()
	poll.Eventually(t, 10*time.Second, fmt.Sprintf("%s %s.%s allowed %v", verb, resource, group, want), func() (bool, string) {
		spec := serviceAccountUser
		spec.ResourceAttributes = &authorizationv1.ResourceAttributes{Group: group, Resource: resource, Verb: verb}
		r, err := kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status.Allowed == want, fmt.Sprintf("allowed %v", r.Status.Allowed)
	})
}

// TestShippedCorefileAndRBAC runs build/coredns with the Corefile of
// manifests/ as ServiceAccount kube-system/coredns bound exactly as the
// manifests bind it, and shows the multicluster ClusterRole is exactly
// enough: with it, clusterset names answer; without any one verb of any of
// its rules, the plugin is degraded (SERVFAIL, still ready, a log line and
// the degraded metric say why).
//
// It does so against two API servers, one that streams lists (a watch with
// initial events, the WatchList feature, on by default in the API server
// under test) and one that does not, as older ones do not. The plugin's
// informers list, then watch, in both: every verb is needed in both, while
// the kubernetes plugin beside it streams where it can.
func TestShippedCorefileAndRBAC(t *testing.T) {
	for _, mode := range []struct {
		name  string
		flags []string
	}{
		{"streaming_lists", nil},
		{"list_and_watch", []string{"--feature-gates=WatchList=false"}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			testShippedCorefileAndRBAC(t, controlplane.ForTest(t, controlplane.Options{InstallCRDs: true, APIServerFlags: mode.flags}))
		})
	}
}

func testShippedCorefileAndRBAC(t *testing.T, cp *controlplane.ControlPlane) {
	ctx := t.Context()
	kube := kubernetes.NewForConfigOrDie(cp.Config)
	mcs := mcsclient.NewForConfigOrDie(cp.Config)
	waitNamespace(t, kube, metav1.NamespaceSystem)

	// RBAC as shipped: the multicluster role and binding of manifests/rbac,
	// and CoreDNS's own role and binding of manifests/install.
	mcRole := loadObject[rbacv1.ClusterRole](t, "manifests/rbac/clusterrole.yaml", "ClusterRole")
	mcBinding := loadObject[rbacv1.ClusterRoleBinding](t, "manifests/rbac/clusterrolebinding.yaml", "ClusterRoleBinding")
	coreRole := loadObject[rbacv1.ClusterRole](t, "manifests/install/clusterrole.yaml", "ClusterRole")
	coreBinding := loadObject[rbacv1.ClusterRoleBinding](t, "manifests/install/clusterrole.yaml", "ClusterRoleBinding")
	for _, b := range []*rbacv1.ClusterRoleBinding{mcBinding, coreBinding} {
		if len(b.Subjects) != 1 || b.Subjects[0].Kind != "ServiceAccount" || b.Subjects[0].Namespace != "kube-system" || b.Subjects[0].Name != "coredns" {
			t.Fatalf("ClusterRoleBinding %s binds %v, want ServiceAccount kube-system/coredns", b.Name, b.Subjects)
		}
	}
	roles := kube.RbacV1().ClusterRoles()
	for _, r := range []*rbacv1.ClusterRole{mcRole, coreRole} {
		if _, err := roles.Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, mcBinding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	coreBindingObj, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, coreBinding, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := cp.KubeconfigForServiceAccount(ctx, "kube-system", "coredns")
	if err != nil {
		t.Fatal(err)
	}

	ns := "deploy-test"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = mcs.MulticlusterV1beta1().ServiceImports(ns).Create(ctx, &mcsv1beta1.ServiceImport{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: mcsv1beta1.ServiceImportSpec{
			Type:  mcsv1beta1.ClusterSetIP,
			IPs:   []string{"10.42.9.1"},
			Ports: []mcsv1beta1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clusterset := "web." + ns + ".svc.clusterset.local."

	// The ClusterProperty CRD as shipped (the API server accepts it in the
	// protected about.k8s.io group only with its approval annotation), and
	// the property that names this cluster.
	crd, err := apply.ReadFile(filepath.Join(repoRoot(t), "manifests", "crds", "about.k8s.io_clusterproperties.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	property := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "about.k8s.io/v1alpha1", "kind": "ClusterProperty",
		"metadata": map[string]any{"name": "cluster.clusterset.k8s.io"},
		"spec":     map[string]any{"value": "east"},
	}}
	if err := apply.Apply(ctx, cp.Config, append(crd, apply.Manifest{Object: property, Source: "the test"})); err != nil {
		t.Fatal(err)
	}
	// readsClusterID checks that the plugin read the ClusterProperty.
	readsClusterID := func(t *testing.T, s *server) {
		t.Helper()
		s.waitFor(t, 10*time.Second, `coredns_multicluster_objects{kind="clusterproperty"} 1`, func() bool {
			return s.metric(`coredns_multicluster_objects{kind="clusterproperty"}`) == "1"
		})
	}

	// expectDegraded checks a server that lacks verb on a resource of the
	// multicluster role: it logs why and says so in the metric, answers
	// SERVFAIL in the clusterset zone, and is ready nonetheless.
	expectDegraded := func(t *testing.T, s *server, verb, resource, reason string) {
		t.Helper()
		s.waitFor(t, 15*time.Second, `the "Degraded" log line naming `+verb+" "+resource, func() bool {
			for _, line := range strings.Split(s.log.String(), "\n") {
				if strings.Contains(line, "Degraded, clusterset zones answer SERVFAIL") && strings.Contains(line, "cannot "+verb+` resource "`+resource+`"`) {
					return true
				}
			}
			return false
		})
		s.waitFor(t, 10*time.Second, "coredns_multicluster_degraded 1 for "+reason, func() bool {
			return s.metric(`coredns_multicluster_degraded{reason="`+reason+`"}`) == "1"
		})
		// Not once, but until the plugin retried and was refused again: a
		// degraded state that cleared between retries (as a successful list
		// without watch once did) would let queries through.
		refused := s.refusals()
		poll.Eventually(t, 30*time.Second, "another refused request, "+clusterset+" answering SERVFAIL all along", func() (bool, string) {
			r, err := s.query(clusterset, dns.TypeA)
			if err != nil {
				t.Fatal(err)
			}
			if r.Rcode != dns.RcodeServerFailure {
				t.Fatalf("%s: rcode %s, want SERVFAIL while degraded:\n%s", clusterset, dns.RcodeToString[r.Rcode], r)
			}
			n := s.refusals()
			return n > refused, fmt.Sprintf("%v refused requests, %v before", n, refused)
		})
		if code, body := s.get("/ready"); code != http.StatusOK {
			t.Errorf("/ready = %d %s while degraded, want 200: a degraded plugin must not take cluster DNS down", code, body)
		}
		for _, line := range strings.Split(s.log.String(), "\n") {
			if strings.Contains(line, "plugin/multicluster: Degraded") || strings.Contains(line, "plugin/multicluster: Recovered") {
				t.Log(line)
			}
		}
	}

	// withoutVerb runs check with verb removed from the rule of resource in
	// the multicluster role, and restores the role afterwards.
	withoutVerb := func(t *testing.T, group, resource, verb string, check func(t *testing.T)) {
		current, err := roles.Get(ctx, mcRole.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		edited := current.DeepCopy()
		found := false
		for i, rule := range edited.Rules {
			if slices.Contains(rule.APIGroups, group) && slices.Contains(rule.Resources, resource) && slices.Contains(rule.Verbs, verb) {
				edited.Rules[i].Verbs = slices.DeleteFunc(slices.Clone(rule.Verbs), func(v string) bool { return v == verb })
				found = true
			}
		}
		if !found {
			t.Fatalf("the multicluster role has no rule granting %s on %s.%s", verb, resource, group)
		}
		if _, err := roles.Update(ctx, edited, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			restored, err := roles.Get(context.Background(), mcRole.Name, metav1.GetOptions{})
			if err == nil {
				restored.Rules = mcRole.Rules
				_, err = roles.Update(context.Background(), restored, metav1.UpdateOptions{})
			}
			if err != nil {
				t.Errorf("restore the multicluster role: %v", err)
				return
			}
			// The next subtest must not start while RBAC still denies this.
			waitAllowed(context.Background(), t, kube, group, resource, verb, true)
		})
		waitAllowed(ctx, t, kube, group, resource, verb, false)
		check(t)
	}

	// Every verb the role grants, by resource: the test below takes each
	// away in turn.
	type grant struct{ group, resource, verb, reason string }
	var grants []grant
	for _, rule := range mcRole.Rules {
		for _, g := range rule.APIGroups {
			for _, r := range rule.Resources {
				for _, v := range rule.Verbs {
					grants = append(grants, grant{g, r, v, "rbac_" + r})
				}
			}
		}
	}
	wantGrants := []string{
		"multicluster.x-k8s.io/serviceimports/list", "multicluster.x-k8s.io/serviceimports/watch",
		"discovery.k8s.io/endpointslices/list", "discovery.k8s.io/endpointslices/watch",
		"/services/list", "/services/watch",
		"about.k8s.io/clusterproperties/list", "about.k8s.io/clusterproperties/watch",
	}
	var gotGrants []string
	for _, g := range grants {
		gotGrants = append(gotGrants, g.group+"/"+g.resource+"/"+g.verb)
	}
	if !slices.Equal(gotGrants, wantGrants) {
		t.Fatalf("the multicluster role grants %v, want exactly %v", gotGrants, wantGrants)
	}

	// expectWithout checks a server whose role lacks g. Without the
	// ClusterProperty, no answer prefers the local cluster: the plugin says
	// so, and nothing else changes.
	expectWithout := func(t *testing.T, s *server, g grant) {
		t.Helper()
		if g.resource != "clusterproperties" {
			expectDegraded(t, s, g.verb, g.resource, g.reason)
			return
		}
		s.waitFor(t, 15*time.Second, "the warning that the ClusterProperty cannot be read", func() bool {
			return strings.Contains(s.log.String(), "Not allowed to read ClusterProperty cluster.clusterset.k8s.io")
		})
		s.waitFor(t, 10*time.Second, clusterset+" A 10.42.9.1", s.answersA(clusterset, "10.42.9.1"))
		if strings.Contains(s.log.String(), "Degraded") {
			t.Errorf("degraded without %s %s:\n%s", g.verb, g.resource, s.log.String())
		}
	}

	// The Corefile as deployed, with the kubernetes plugin, which reads
	// Services, EndpointSlices and the rest with CoreDNS's own role.
	t.Run("deployed", func(t *testing.T) {
		s := startCoreDNS(t, kubeconfig, true)
		s.waitFor(t, 10*time.Second, clusterset+" A 10.42.9.1", s.answersA(clusterset, "10.42.9.1"))
		// The fallback zone answers the import, since no Service web exists.
		s.waitFor(t, 10*time.Second, "web."+ns+".svc.cluster.local. A 10.42.9.1", s.answersA("web."+ns+".svc.cluster.local.", "10.42.9.1"))
		// And the kubernetes plugin serves local Services.
		s.waitFor(t, 10*time.Second, "kubernetes.default.svc.cluster.local. A 10.96.0.1", s.answersA("kubernetes.default.svc.cluster.local.", "10.96.0.1"))
		if v := s.metric(`coredns_multicluster_objects{kind="serviceimport"}`); v != "1" {
			t.Errorf(`coredns_multicluster_objects{kind="serviceimport"} = %q, want 1`, v)
		}
		readsClusterID(t, s)
		if strings.Contains(s.log.String(), "Degraded") {
			t.Errorf("degraded with the shipped RBAC:\n%s", s.log.String())
		}

		// ServiceImports and ClusterProperties are the multicluster role's
		// alone. (EndpointSlices and Services are also in CoreDNS's own
		// role, so dropping them from the multicluster role changes nothing
		// here; the next subtest covers them.)
		for _, g := range grants {
			if g.resource != "serviceimports" && g.resource != "clusterproperties" {
				continue
			}
			t.Run("without_"+g.resource+"_"+g.verb, func(t *testing.T) {
				withoutVerb(t, g.group, g.resource, g.verb, func(t *testing.T) {
					expectWithout(t, startCoreDNS(t, kubeconfig, true), g)
				})
			})
		}
	})

	// The multicluster role alone, with the Corefile minus its kubernetes
	// block: the plugin then also watches Services itself, so each of the
	// role's grants is needed, and the role is enough.
	t.Run("multicluster_role_alone", func(t *testing.T) {
		if err := kube.RbacV1().ClusterRoleBindings().Delete(ctx, coreBindingObj.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitAllowed(ctx, t, kube, "", "pods", "list", false)

		s := startCoreDNS(t, kubeconfig, false)
		s.waitFor(t, 10*time.Second, clusterset+" A 10.42.9.1", s.answersA(clusterset, "10.42.9.1"))
		s.waitFor(t, 10*time.Second, "web."+ns+".svc.cluster.local. A 10.42.9.1", s.answersA("web."+ns+".svc.cluster.local.", "10.42.9.1"))
		if v := s.metric(`coredns_multicluster_objects{kind="service"}`); v == "" || v == "0" {
			t.Errorf(`coredns_multicluster_objects{kind="service"} = %q, want the local Services (the plugin watches them itself)`, v)
		}
		readsClusterID(t, s)
		if strings.Contains(s.log.String(), "Degraded") {
			t.Errorf("degraded with the multicluster role:\n%s", s.log.String())
		}

		for _, g := range grants {
			t.Run("without_"+g.resource+"_"+g.verb, func(t *testing.T) {
				withoutVerb(t, g.group, g.resource, g.verb, func(t *testing.T) {
					expectWithout(t, startCoreDNS(t, kubeconfig, false), g)
				})
			})
		}
	})
}

// TestLocalCorefileRewrite checks the rewrite on the shipped Corefile without
// a cluster: it changes the listen addresses and upstream only.
func TestLocalCorefileRewrite(t *testing.T) {
	got := localCorefile(t, shippedCorefile(t), ports{dns: 1, health: 2, ready: 3, metrics: 4}, "/kc", true)
	for _, want := range []string{".:1 {", "health 127.0.0.1:2 {", "ready 127.0.0.1:3\n", "prometheus 127.0.0.1:4\n",
		"multicluster clusterset.local in-addr.arpa ip6.arpa {\n        kubeconfig /kc\n        fallback cluster.local",
		"kubernetes cluster.local in-addr.arpa ip6.arpa {\n        kubeconfig /kc\n        pods insecure"} {
		if !strings.Contains(got, want) {
			t.Errorf("rewritten Corefile lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "forward") || strings.Contains(got, ":53") || strings.Contains(got, ":9153") {
		t.Errorf("rewritten Corefile still has in-cluster addresses or forward:\n%s", got)
	}
	alone := localCorefile(t, shippedCorefile(t), ports{dns: 1, health: 2, ready: 3, metrics: 4}, "/kc", false)
	if strings.Contains(alone, "kubernetes") || strings.Contains(alone, "pods insecure") || !strings.Contains(alone, "    cache 30 {\n") {
		t.Errorf("Corefile without the kubernetes block:\n%s", alone)
	}
}
