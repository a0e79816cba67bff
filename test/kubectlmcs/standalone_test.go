package kubectlmcs

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/coredns-mcs/coredns-mcs/internal/front"
	"github.com/coredns-mcs/coredns-mcs/test/internal/apply"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// standaloneCluster is a control plane in the standalone layout: kubeadm's
// cluster DNS (the front: its Deployment, kubeadm-config, its Corefile with
// the blocks kubectl mcs front writes, for the standalone Service's real
// ClusterIP) and manifests/standalone, with check and explain run on
// default flags.
type standaloneCluster struct {
	*cluster
	front string // the front's Corefile, correct
}

func startStandalone(t *testing.T) *standaloneCluster {
	t.Helper()
	c := newCluster(t)
	cp := c.cp
	ctx := t.Context()
	if _, err := c.kube.AppsV1().Deployments("kube-system").Create(ctx, dnsDeployment("coredns", "registry.k8s.io/coredns/coredns:v"+front.KubeadmCoreDNSVersion, "coredns"), meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.kube.CoreV1().ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: "kubeadm-config", Namespace: "kube-system"}}, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var manifests []apply.Manifest
	for _, f := range []string{"crds/about.k8s.io_clusterproperties.yaml", "standalone/serviceaccount.yaml", "standalone/rbac.yaml", "standalone/configmap.yaml", "standalone/deployment.yaml", "standalone/service.yaml"} {
		found, err := apply.ReadFile(filepath.Join(repo, "manifests", f))
		if err != nil {
			t.Fatal(err)
		}
		manifests = append(manifests, found...)
	}
	if err := apply.Apply(ctx, cp.Config, manifests); err != nil {
		t.Fatal(err)
	}
	c.clusterProperty(t, "west")
	// No kubelet runs the standalone pods here: report them ready, as a
	// node would, since check FAILs a standalone layout without a ready pod.
	dep, err := c.kube.AppsV1().Deployments("kube-system").Get(ctx, "coredns-mcs", meta.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	replicas := int32(1)
	if dep.Spec.Replicas != nil {
		replicas = *dep.Spec.Replicas
	}
	dep.Status.Replicas, dep.Status.ReadyReplicas, dep.Status.AvailableReplicas = replicas, replicas, replicas
	if _, err := c.kube.AppsV1().Deployments("kube-system").UpdateStatus(ctx, dep, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := &standaloneCluster{cluster: c, front: s0Front(t, standaloneIP(t, c.kube))}
	c.setCorefile(t, s.front)
	return s
}

// s0Front is kubeadm's Corefile with the blocks of kubectl mcs front for
// the standalone Service at ip, written by internal/front.
func s0Front(t *testing.T, ip string) string {
	t.Helper()
	servers, err := front.Options{Standalone: ip, ReverseCIDRs: []string{"10.42.0.0/16"}, KubernetesOptions: front.KubernetesOptions(front.Kubeadm), CoreDNSVersion: front.KubeadmCoreDNSVersion}.Servers()
	if err != nil {
		t.Fatal(err)
	}
	return front.Merge(front.KubeadmCorefile, front.Corefile(servers))
}

func standaloneIP(t *testing.T, kube kubernetes.Interface) string {
	t.Helper()
	svc, err := kube.CoreV1().Services("kube-system").Get(t.Context(), "coredns-mcs", meta.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return svc.Spec.ClusterIP
}

// failLines runs check and returns its exit status and its FAIL lines.
func (c *cluster) failLines(t *testing.T) (int, []string, string) {
	t.Helper()
	code, out, errOut := c.kubectlMCS(t, "check")
	var fails []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "FAIL") {
			fails = append(fails, l)
		}
	}
	return code, fails, out + errOut
}

// expectOneFail wants exit 1 and exactly one FAIL line, holding each of
// want.
func (c *cluster) expectOneFail(t *testing.T, want ...string) {
	t.Helper()
	code, fails, out := c.failLines(t)
	if code != 1 || len(fails) != 1 {
		t.Fatalf("exit %d and %d FAIL lines, want 1 and 1:\n%s", code, len(fails), out)
	}
	t.Logf("%s", fails[0])
	for _, w := range want {
		if !strings.Contains(fails[0], w) {
			t.Errorf("the FAIL line lacks %q", w)
		}
	}
}

func (c *cluster) expectPass(t *testing.T) {
	t.Helper()
	if code, fails, out := c.failLines(t); code != 0 || len(fails) != 0 {
		t.Fatalf("repaired, check exits %d:\n%s", code, out)
	}
}

func (c *cluster) setStandaloneCorefile(t *testing.T, text string) {
	t.Helper()
	cm, err := c.kube.CoreV1().ConfigMaps("kube-system").Get(t.Context(), "coredns-mcs", meta.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["Corefile"] = text
	if _, err := c.kube.CoreV1().ConfigMaps("kube-system").Update(t.Context(), cm, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestStandaloneLayout: check and explain find the standalone layout by
// its objects, with no flag, review the server and the front in front of
// it, and follow a name through the front to the server.
func TestStandaloneLayout(t *testing.T) {
	s := startStandalone(t)
	ctx := t.Context()
	s.namespace(t, "shop")
	if _, err := s.mcs.MulticlusterV1beta1().ServiceImports("shop").Create(ctx, newImport("shop", "cart", "10.42.3.1"), meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("check passes on a correct setup", func(t *testing.T) {
		s.expectCheckPasses(t,
			"OK    layout          standalone: the Service kube-system/coredns-mcs (app.kubernetes.io/component: standalone-dns) exists",
			"OK    image           Deployment kube-system/coredns-mcs runs ghcr.io/coredns-mcs/coredns-mcs:v0.1.0",
			"OK    rbac            system:serviceaccount:kube-system:coredns-mcs may watch serviceimports.multicluster.x-k8s.io",
			"OK    corefile        ConfigMap kube-system/coredns-mcs: server block .:53 has multicluster",
			"OK    loop            ConfigMap kube-system/coredns-mcs: no forward, and the standalone option",
			"OK    front           ConfigMap kube-system/coredns (between the coredns-mcs markers): block cluster.local:53 takes the service names of cluster.local. (view multicluster: name() matches '"+front.ServiceNamePattern("cluster.local")+"')",
			"blocks forward to the standalone Service kube-system/coredns-mcs at its ClusterIP "+standaloneIP(t, s.kube),
			"the reverse zones 42.10.in-addr.arpa. go to coredns-mcs",
			"OK    front           ConfigMap kube-system/coredns (between the coredns-mcs markers): stand-in cluster.local:5301",
			"prometheus in every added block",
			"OK    imports         1 ServiceImports served",
		)
	})

	t.Run("front blocks removed", func(t *testing.T) {
		s.setCorefile(t, front.KubeadmCorefile)
		s.expectOneFail(t, "ConfigMap kube-system/coredns has no server blocks forwarding to coredns-mcs", "kubectl mcs front --apply")
		s.setCorefile(t, s.front)
		s.expectPass(t)
	})

	t.Run("front forwards to a stale address", func(t *testing.T) {
		// The standalone Service re-created: a new ClusterIP.
		old := standaloneIP(t, s.kube)
		svcs := s.kube.CoreV1().Services("kube-system")
		found, err := apply.ReadFile(filepath.Join(repo, "manifests/standalone/service.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for standaloneIP(t, s.kube) == old {
			if err := svcs.Delete(ctx, "coredns-mcs", meta.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			poll.Eventually(t, 20*time.Second, "the standalone Service deleted", func() (bool, string) {
				_, err := svcs.Get(ctx, "coredns-mcs", meta.GetOptions{})
				return apierrors.IsNotFound(err), fmt.Sprint(err)
			})
			if err := apply.Apply(ctx, s.cp.Config, found); err != nil {
				t.Fatal(err)
			}
		}
		s.expectOneFail(t, "forward to an address that is not the standalone Service's ClusterIP "+standaloneIP(t, s.kube), "-> "+old, "kubectl mcs front --apply")
		// The fix the line names.
		if code, out, errOut := s.kubectlMCS(t, "front", "--clusterset-cidr", "10.42.0.0/16", "--apply"); code != 0 {
			t.Fatalf("front --apply: %d\n%s%s", code, out, errOut)
		}
		s.expectPass(t)
		s.front = s0Front(t, standaloneIP(t, s.kube))
		cm, err := s.kube.CoreV1().ConfigMaps("kube-system").Get(ctx, "coredns", meta.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cm.Data["Corefile"] != s.front {
			t.Errorf("kubectl mcs front --apply wrote\n%s\nwant\n%s", cm.Data["Corefile"], s.front)
		}
	})

	t.Run("standalone Corefile with a forward", func(t *testing.T) {
		cm, err := s.kube.CoreV1().ConfigMaps("kube-system").Get(ctx, "coredns-mcs", meta.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		good := cm.Data["Corefile"]
		if !strings.Contains(good, "\n    cache 5 {\n") {
			t.Fatalf("the standalone Corefile has no line \"cache 5 {\":\n%s", good)
		}
		s.setStandaloneCorefile(t, strings.Replace(good, "\n    cache 5 {\n", "\n    forward . /etc/resolv.conf\n    cache 5 {\n", 1))
		s.expectOneFail(t, "ConfigMap kube-system/coredns-mcs: server block .:53 has forward", "(a loop)", "remove it (manifests/standalone/configmap.yaml)")
		s.setStandaloneCorefile(t, good)
		s.expectPass(t)
	})

	t.Run("standalone RBAC removed", func(t *testing.T) {
		bindings := s.kube.RbacV1().ClusterRoleBindings()
		binding, err := bindings.Get(ctx, "system:coredns-mcs-standalone", meta.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := bindings.Delete(ctx, binding.Name, meta.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		s.expectOneFail(t, "system:serviceaccount:kube-system:coredns-mcs may not list services", "watch serviceimports.multicluster.x-k8s.io", "apply manifests/standalone (rbac.yaml)")
		binding.ResourceVersion = ""
		if _, err := bindings.Create(ctx, binding, meta.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		s.expectPass(t)
	})

	t.Run("prometheus removed from an added block", func(t *testing.T) {
		block := "clusterset.local:53 {\n    errors\n    prometheus :9153\n"
		if !strings.Contains(s.front, block) {
			t.Fatalf("the front has no block %q:\n%s", block, s.front)
		}
		s.setCorefile(t, strings.Replace(s.front, block, "clusterset.local:53 {\n    errors\n", 1))
		s.expectOneFail(t, "clusterset.local:53 have no prometheus", "kubectl mcs front --apply")
		s.setCorefile(t, s.front)
		s.expectPass(t)
	})

	t.Run("front without read_timeout on a CoreDNS that has it", func(t *testing.T) {
		// Blocks written for an older CoreDNS, in front of kubeadm's
		// 1.14.6: they work (exit 0), and a WARN names the fix.
		readTimeout := regexp.MustCompile(`\n        read_timeout \S+\n`)
		if !readTimeout.MatchString(s.front) {
			t.Fatalf("the front sets no read_timeout:\n%s", s.front)
		}
		s.setCorefile(t, readTimeout.ReplaceAllString(s.front, "\n"))
		code, out, errOut := s.kubectlMCS(t, "check")
		var warns []string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "WARN  front") && strings.Contains(l, "without read_timeout") {
				warns = append(warns, l)
			}
		}
		if code != 0 || len(warns) != 1 || !strings.Contains(warns[0], "CoreDNS "+front.KubeadmCoreDNSVersion+" (image ") || !strings.Contains(warns[0], "kubectl mcs front --coredns-version "+front.KubeadmCoreDNSVersion+" --apply") {
			t.Errorf("exit %d, want 0 and one WARN naming the fix:\n%s%s", code, out, errOut)
		}
		s.setCorefile(t, s.front)
		if _, out, _ := s.kubectlMCS(t, "check"); strings.Contains(out, "without read_timeout") {
			t.Errorf("with read_timeout, check still warns:\n%s", out)
		}
	})

	t.Run("explain follows an import-only name through the front", func(t *testing.T) {
		code, out, errOut := s.kubectlMCS(t, "explain", "cart.shop.svc.cluster.local")
		t.Logf("kubectl mcs explain cart.shop.svc.cluster.local:\n%s%s", out, errOut)
		if code != 0 {
			t.Fatalf("exit %d", code)
		}
		for _, want := range []string{
			"the cluster's DNS (front): server block cluster.local:53 of ConfigMap kube-system/coredns (between the coredns-mcs markers)",
			"view multicluster: name() matches '" + front.ServiceNamePattern("cluster.local") + "' is true for cart.shop.svc.cluster.local.",
			"the front's kubernetes plugin has no such name and falls through (fallthrough cluster.local.)",
			"forwarded to the standalone Service kube-system/coredns-mcs at its ClusterIP " + standaloneIP(t, s.kube) + " (then the stand-in 127.0.0.1:5301, when it does not answer within 120ms: NXDOMAIN)",
			"then coredns-mcs standalone: server block .:53 of ConfigMap kube-system/coredns-mcs",
			"no local Service shop/cart: the import answers",
			"Answer of the multicluster plugin: NOERROR",
			"cart.shop.svc.cluster.local.\t5\tIN\tA\t10.42.3.1",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("explain lacks %q", want)
			}
		}
	})

	t.Run("explain: the front keeps a search-path expansion", func(t *testing.T) {
		code, out, errOut := s.kubectlMCS(t, "explain", "example.com.cluster.local")
		t.Logf("kubectl mcs explain example.com.cluster.local:\n%s%s", out, errOut)
		if code != 0 {
			t.Fatalf("exit %d", code)
		}
		for _, want := range []string{
			"is false for example.com.cluster.local. (Go's regexp, as the view plugin's expr evaluates matches): not this block",
			"the front's own server block .:53 takes it",
			"the front's kubernetes plugin answers it (NXDOMAIN): it never reaches coredns-mcs",
			"Answer of the front's kubernetes plugin: NXDOMAIN",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("explain lacks %q", want)
			}
		}
		if strings.Contains(out, "coredns-mcs standalone") {
			t.Errorf("explain shows the standalone server's decision for a name the front keeps")
		}
	})
}
