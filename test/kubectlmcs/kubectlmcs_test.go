// Package kubectlmcs tests kubectl mcs (cmd/kubectl-mcs).
package kubectlmcs

// The tests run kubectl mcs (mcsctl.Run, what the binary runs, in process) against a real
// kube-apiserver and etcd (test/internal/controlplane), and compare explain with the
// answers of a real coredns-mcs process reading the same API server. They
// need the kube test binaries (make testbin); without them they skip, and
// under CI=true fail.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coredns-mcs/coredns-mcs/internal/mcsctl"
	"github.com/coredns-mcs/coredns-mcs/test/internal/apply"
	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"
	"github.com/coredns-mcs/coredns-mcs/test/internal/corefiles"
	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
	"github.com/miekg/dns"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"
)

const repo = "../.."

// cluster is one control plane with coredns-mcs installed as the shipped
// manifests install it (no node: its pods never run), and a coredns-mcs
// process on loopback with the same Corefile.
type cluster struct {
	cp       *controlplane.ControlPlane
	kube     kubernetes.Interface
	mcs      mcsclient.Interface
	dyn      dynamic.Interface
	corefile string // as in the ConfigMap
	addr     string // the coredns process
}

func corefileText(kubeconfig string, port, readyPort int, extra string) string {
	return fmt.Sprintf(`.:%d {
    ready 127.0.0.1:%d
    multicluster clusterset.local in-addr.arpa ip6.arpa {
        kubeconfig %s
        fallback cluster.local
        derived_prefix derived-
%s    }
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %s
        pods insecure
        `+corefiles.KubernetesLabels+`
        fallthrough in-addr.arpa ip6.arpa
    }
}
`, port, readyPort, kubeconfig, extra, kubeconfig)
}

// newCluster starts a control plane with the CRDs, and its clients.
func newCluster(t *testing.T) *cluster {
	t.Helper()
	cp := controlplane.ForTest(t, controlplane.Options{InstallCRDs: true})
	return &cluster{
		cp:   cp,
		kube: kubernetes.NewForConfigOrDie(cp.Config),
		mcs:  mcsclient.NewForConfigOrDie(cp.Config),
		dyn:  dynamic.NewForConfigOrDie(cp.Config),
	}
}

// installCluster is newCluster with coredns-mcs installed as the shipped
// manifests install it, and a Corefile in its ConfigMap: what kubectl mcs
// reads, without a coredns process.
func installCluster(t *testing.T) *cluster {
	t.Helper()
	c := newCluster(t)
	cp := c.cp
	// What a user installs: manifests/install's ServiceAccount, CoreDNS's
	// ClusterRole and Deployment, and manifests/rbac.
	var manifests []apply.Manifest
	for _, f := range []string{"manifests/crds/about.k8s.io_clusterproperties.yaml", "manifests/install/serviceaccount.yaml", "manifests/install/clusterrole.yaml", "manifests/install/deployment.yaml", "manifests/rbac/clusterrole.yaml", "manifests/rbac/clusterrolebinding.yaml"} {
		found, err := apply.ReadFile(filepath.Join(repo, f))
		if err != nil {
			t.Fatal(err)
		}
		manifests = append(manifests, found...)
	}
	if err := apply.Apply(t.Context(), cp.Config, manifests); err != nil {
		t.Fatal(err)
	}
	c.setImage(t, "ghcr.io/coredns-mcs/coredns-mcs:v0.1.0")
	c.clusterProperty(t, "west")
	c.corefile = corefileText(cp.Kubeconfig, 53, 8181, "")
	c.setCorefile(t, c.corefile)
	return c
}

// startCluster is installCluster, and a coredns process on loopback with
// the same Corefile.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	c := installCluster(t)
	cp := c.cp
	binary, err := harness.CoreDNSBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	port, readyPort := harness.FreePort(t), harness.FreePort(t)
	c.corefile = corefileText(cp.Kubeconfig, port, readyPort, "")
	c.setCorefile(t, c.corefile)
	path := filepath.Join(t.TempDir(), "Corefile")
	if err := os.WriteFile(path, []byte(c.corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	c.addr = fmt.Sprintf("127.0.0.1:%d", port)
	harness.StartCoreDNS(t, "coredns", binary, path, c.addr, func() bool { return harness.HTTPOK(fmt.Sprintf("http://127.0.0.1:%d/ready", readyPort)) })
	return c
}

func (c *cluster) setCorefile(t *testing.T, text string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: meta.ObjectMeta{Namespace: "kube-system", Name: "coredns"}, Data: map[string]string{"Corefile": text}}
	_, err := c.kube.CoreV1().ConfigMaps("kube-system").Update(t.Context(), cm, meta.UpdateOptions{})
	if err != nil {
		_, err = c.kube.CoreV1().ConfigMaps("kube-system").Create(t.Context(), cm, meta.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) deployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	d, err := c.kube.AppsV1().Deployments("kube-system").Get(t.Context(), "coredns", meta.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (c *cluster) setImage(t *testing.T, image string) {
	t.Helper()
	d := c.deployment(t)
	d.Spec.Template.Spec.Containers[0].Image = image
	if _, err := c.kube.AppsV1().Deployments("kube-system").Update(t.Context(), d, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) clusterProperty(t *testing.T, id string) {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "about.k8s.io/v1alpha1", "kind": "ClusterProperty",
		"metadata": map[string]any{"name": "cluster.clusterset.k8s.io"},
		"spec":     map[string]any{"value": id},
	}}
	// The CRD was just created: retry until the API server serves it.
	poll.Eventually(t, 20*time.Second, "ClusterProperty created", func() (bool, string) {
		_, err := c.dyn.Resource(schema.GroupVersionResource{Group: "about.k8s.io", Version: "v1alpha1", Resource: "clusterproperties"}).Create(t.Context(), obj, meta.CreateOptions{})
		return err == nil, fmt.Sprint(err)
	})
}

// kubectlMCS runs kubectl mcs with args as the admin of c.
func (c *cluster) kubectlMCS(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return c.kubectlMCSAs(t, c.cp.Kubeconfig, args...)
}

func (c *cluster) kubectlMCSAs(t *testing.T, kubeconfig string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = mcsctl.Run(context.Background(), append(args, "--kubeconfig", kubeconfig, "--timeout", "30s"), &out, &errOut)
	return code, out.String(), errOut.String()
}

func newImport(ns, name string, ips ...string) *mcsv1beta1.ServiceImport {
	return &mcsv1beta1.ServiceImport{
		ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name},
		Spec: mcsv1beta1.ServiceImportSpec{
			Type:  mcsv1beta1.ClusterSetIP,
			IPs:   ips,
			Ports: []mcsv1beta1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}},
		},
	}
}

func (c *cluster) namespace(t *testing.T, name string) {
	t.Helper()
	if _, err := c.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: meta.ObjectMeta{Name: name}}, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestKubectlMCS(t *testing.T) {
	c := startCluster(t)
	c.namespace(t, "shop")
	if _, err := c.mcs.MulticlusterV1beta1().ServiceImports("shop").Create(t.Context(), newImport("shop", "cart", "10.42.3.1"), meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Run("check passes on a correct setup", func(t *testing.T) { c.testCheckCorrect(t) })
	t.Run("check names each fault", func(t *testing.T) { c.testCheckFaults(t) })
	t.Run("explain", func(t *testing.T) { c.testExplainOutput(t) })
	t.Run("explain needs read access", func(t *testing.T) { c.testExplainRefused(t) })
	t.Run("explain answers as the server", func(t *testing.T) { c.testExplainEqualsServer(t) })
}

// expectCheckPasses runs check, which must exit 0 with no FAIL line and
// print every line of want.
func (c *cluster) expectCheckPasses(t *testing.T, want ...string) {
	t.Helper()
	code, out, errOut := c.kubectlMCS(t, "check")
	t.Logf("kubectl mcs check:\n%s%s", out, errOut)
	if code != 0 || strings.Contains("\n"+out, "\nFAIL ") {
		t.Fatalf("exit %d on a correct setup", code)
	}
	for _, line := range want {
		if !strings.Contains(out, line) {
			t.Errorf("no line %q", line)
		}
	}
}

func (c *cluster) testCheckCorrect(t *testing.T) {
	c.expectCheckPasses(t,
		"OK    crd             ServiceImport served at v1beta1, v1alpha1",
		"OK    image           Deployment kube-system/coredns runs ghcr.io/coredns-mcs/coredns-mcs:v0.1.0, version v0.1.0",
		"OK    rbac            system:serviceaccount:kube-system:coredns may watch serviceimports.multicluster.x-k8s.io",
		"OK    corefile        server block",
		"kubernetes leaves out the objects labelled multicluster.kubernetes.io/source-cluster, which multicluster caches itself",
		"OK    clusterproperty this cluster's id is \"west\"",
		"OK    imports         1 ServiceImports served",
	)
	if code, out, _ := c.kubectlMCS(t, "check", "-o", "json"); code != 0 {
		t.Errorf("check -o json: exit %d", code)
	} else {
		var lines []mcsctl.Line
		if err := json.Unmarshal([]byte(out), &lines); err != nil || len(lines) < 10 {
			t.Errorf("check -o json: %d lines, %v:\n%s", len(lines), err, out)
		}
	}
}

// expectFail runs check and wants exit 1 and a FAIL line holding want.
func (c *cluster) expectFail(t *testing.T, want string) {
	t.Helper()
	code, out, errOut := c.kubectlMCS(t, "check")
	if code != 1 {
		t.Errorf("exit %d, want 1:\n%s%s", code, out, errOut)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "FAIL") && strings.Contains(l, want) {
			t.Logf("%s", l)
			return
		}
	}
	t.Errorf("no FAIL line with %q:\n%s", want, out)
}

func (c *cluster) testCheckFaults(t *testing.T) {
	ctx := t.Context()
	t.Run("RBAC rule missing", func(t *testing.T) {
		binding, err := c.kube.RbacV1().ClusterRoleBindings().Get(ctx, "system:coredns-multicluster", meta.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.kube.RbacV1().ClusterRoleBindings().Delete(ctx, binding.Name, meta.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		c.expectFail(t, "system:serviceaccount:kube-system:coredns may not list serviceimports.multicluster.x-k8s.io, watch serviceimports.multicluster.x-k8s.io: apply manifests/rbac")
		binding.ResourceVersion = ""
		if _, err := c.kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, meta.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("stock image", func(t *testing.T) {
		c.setImage(t, "registry.k8s.io/coredns/coredns:v1.12.0")
		c.expectFail(t, "which is not coredns-mcs")
		c.setImage(t, "ghcr.io/coredns-mcs/coredns-mcs:v0.1.0")
	})
	t.Run("Corefile without multicluster", func(t *testing.T) {
		c.setCorefile(t, ".:53 {\n    kubernetes cluster.local\n    forward . /etc/resolv.conf\n}\n")
		c.expectFail(t, "no server block has a multicluster stanza")
		c.setCorefile(t, c.corefile)
	})
	t.Run("Corefile whose kubernetes caches the imports' slices", func(t *testing.T) {
		c.setCorefile(t, strings.Replace(c.corefile, "        "+corefiles.KubernetesLabels+"\n", "", 1))
		code, out, _ := c.kubectlMCS(t, "check")
		if code != 0 || !strings.Contains(out, "WARN  corefile") || !strings.Contains(out, `add "labels !multicluster.kubernetes.io/source-cluster" to its stanza`) {
			t.Errorf("exit %d, want 0 and a WARN line that names the labels line:\n%s", code, out)
		}
		c.setCorefile(t, c.corefile)
	})
	t.Run("Corefile with a bad option", func(t *testing.T) {
		c.setCorefile(t, strings.Replace(c.corefile, "        fallback cluster.local\n", "        fallback cluster.local\n        fallback_scope [bad\n", 1))
		// The bad line is the sixth of the Corefile.
		c.expectFail(t, "at line 3: ConfigMap kube-system/coredns:6 - Error during parsing: fallback_scope")
		c.setCorefile(t, c.corefile)
	})
	t.Run("import without an address", func(t *testing.T) {
		if _, err := c.mcs.MulticlusterV1beta1().ServiceImports("shop").Create(ctx, newImport("shop", "lost"), meta.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		c.expectFail(t, "1 ClusterSetIP imports have no address and answer NODATA: shop/lost")
		if err := c.mcs.MulticlusterV1beta1().ServiceImports("shop").Delete(ctx, "lost", meta.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("NodeLocal DNSCache without clusterset.local", func(t *testing.T) {
		ds := &appsv1.DaemonSet{
			ObjectMeta: meta.ObjectMeta{Namespace: "kube-system", Name: "node-local-dns"},
			Spec: appsv1.DaemonSetSpec{
				Selector: &meta.LabelSelector{MatchLabels: map[string]string{"k8s-app": "node-local-dns"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: meta.ObjectMeta{Labels: map[string]string{"k8s-app": "node-local-dns"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "node-cache", Image: "registry.k8s.io/dns/k8s-dns-node-cache:1.26.4"}}},
				},
			},
		}
		if _, err := c.kube.AppsV1().DaemonSets("kube-system").Create(ctx, ds, meta.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cm := &corev1.ConfigMap{ObjectMeta: meta.ObjectMeta{Namespace: "kube-system", Name: "node-local-dns"}, Data: map[string]string{"Corefile": "cluster.local:53 {\n    forward . 10.96.0.10\n}\n.:53 {\n    forward . /etc/resolv.conf\n}\n"}}
		if _, err := c.kube.CoreV1().ConfigMaps("kube-system").Create(ctx, cm, meta.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		c.expectFail(t, "node-local-dns runs without a clusterset.local server block")
		data, err := os.ReadFile(filepath.Join(repo, "manifests/nodelocaldns/configmap.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "clusterset.local:53") {
			t.Fatal("manifests/nodelocaldns has no clusterset.local:53 block: this test adds what it ships")
		}
		cm.Data["Corefile"] = "clusterset.local:53 {\n    forward . 10.96.0.10\n}\n" + cm.Data["Corefile"]
		if _, err := c.kube.CoreV1().ConfigMaps("kube-system").Update(ctx, cm, meta.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if code, out, _ := c.kubectlMCS(t, "check"); code != 0 || !strings.Contains(out, "OK    nodelocaldns    node-local-dns has a clusterset.local server block") {
			t.Errorf("with the clusterset.local block: exit %d\n%s", code, out)
		}
		_ = c.kube.AppsV1().DaemonSets("kube-system").Delete(ctx, "node-local-dns", meta.DeleteOptions{})
	})
	t.Run("per-cluster copies are a warning", func(t *testing.T) {
		copyImport := newImport("shop", "cart-west", "10.42.3.9")
		copyImport.Labels = map[string]string{"multicluster.kubernetes.io/service-name": "cart"}
		if _, err := c.mcs.MulticlusterV1beta1().ServiceImports("shop").Create(ctx, copyImport, meta.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		code, out, _ := c.kubectlMCS(t, "check")
		if code != 0 || !strings.Contains(out, "WARN  imports         1 per-cluster copies (labelled multicluster.kubernetes.io/service-name) are not served: shop/cart-west") {
			t.Errorf("exit %d, want 0 and a WARN line:\n%s", code, out)
		}
		_ = c.mcs.MulticlusterV1beta1().ServiceImports("shop").Delete(ctx, "cart-west", meta.DeleteOptions{})
	})
	t.Run("CRD missing", func(t *testing.T) {
		crds := c.dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
		if err := crds.Delete(ctx, "serviceimports.multicluster.x-k8s.io", meta.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		poll.Eventually(t, 20*time.Second, "ServiceImports no longer served", func() (bool, string) {
			return !served(c.kube), "still served"
		})
		c.expectFail(t, "ServiceImport (serviceimports.multicluster.x-k8s.io) is not served")
		if err := c.cp.InstallCRDs(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := c.mcs.MulticlusterV1beta1().ServiceImports("shop").Create(ctx, newImport("shop", "cart", "10.42.3.1"), meta.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	if code, out, _ := c.kubectlMCS(t, "check"); code != 0 {
		t.Errorf("repaired, check still exits %d:\n%s", code, out)
	}
}

func (c *cluster) testExplainOutput(t *testing.T) {
	code, out, errOut := c.kubectlMCS(t, "explain", "cart.shop.svc.cluster.local")
	t.Logf("kubectl mcs explain cart.shop.svc.cluster.local:\n%s%s", out, errOut)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"a fallback zone", "no local Service shop/cart: the import answers", "address source: spec.ips (10.42.3.1)", "Answer of the multicluster plugin: NOERROR", "cart.shop.svc.cluster.local.\t5\tIN\tA\t10.42.3.1"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain lacks %q", want)
		}
	}
	code, out, _ = c.kubectlMCS(t, "explain", "kubernetes.default.svc.cluster.local")
	if code != 0 || !strings.Contains(out, "no ServiceImport default/kubernetes: passed on") || !strings.Contains(out, "Answer of the kubernetes plugin: NOERROR") {
		t.Errorf("a local name: exit %d\n%s", code, out)
	}
	code, out, _ = c.kubectlMCS(t, "explain", "10.42.3.1")
	if code != 0 || !strings.Contains(out, "10.42.3.1 is an address of ServiceImport shop/cart") || !strings.Contains(out, "PTR\tcart.shop.svc.clusterset.local.") {
		t.Errorf("PTR: exit %d\n%s", code, out)
	}
	if code, _, errOut := c.kubectlMCS(t, "explain"); code != 2 || !strings.Contains(errOut, "explain NAME [TYPE]") {
		t.Errorf("no name: exit %d, %s", code, errOut)
	}
}

func (c *cluster) testExplainRefused(t *testing.T) {
	kubeconfig, err := c.cp.KubeconfigFor("nobody")
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := c.kubectlMCSAs(t, kubeconfig, "explain", "cart.shop.svc.clusterset.local")
	t.Logf("without read access: %s", errOut)
	if code != 1 || out != "" || !strings.Contains(errOut, "not allowed to list services, endpointslices.discovery.k8s.io, namespaces, serviceimports.multicluster.x-k8s.io") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// testExplainEqualsServer applies the objects every MCS implementation
// writes (test/e2e/testdata/interop), then asks, for every import and every
// local Service, every name the e2e suites ask of them (the service in both
// zones for A, AAAA and SRV, the hosts of headless imports, PTR of every
// address, and names that do not exist), the real coredns process and
// explain, and wants the same answer from both.
func (c *cluster) testExplainEqualsServer(t *testing.T) {
	ctx := t.Context()
	var manifests []apply.Manifest
	impls, err := filepath.Glob(filepath.Join(repo, "test/e2e/testdata/interop/*/*.yaml"))
	if err != nil || len(impls) == 0 {
		t.Fatalf("no interop fixtures: %v", err)
	}
	slices.Sort(impls)
	for _, f := range impls {
		found, err := apply.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		manifests = append(manifests, found...)
	}
	// Last, markers: a headless Service with its EndpointSlice, for the
	// kubernetes plugin, and a headless import with its EndpointSlice, for
	// multicluster. Each informer gets its events in the order the objects
	// were written: once both names answer, the server has seen everything
	// before them.
	markersFile := filepath.Join(t.TempDir(), "markers.yaml")
	if err := os.WriteFile(markersFile, []byte(markersYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	markers, err := apply.ReadFile(markersFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := apply.Apply(ctx, c.cp.Config, append(manifests, markers...)); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 30*time.Second, "the server answers the markers", func() (bool, string) {
		for name, want := range map[string]string{
			"marker.zz-marker.svc.cluster.local.":           "10.99.0.1",
			"marker-import.zz-marker.svc.clusterset.local.": "10.99.0.2",
		} {
			r := new(dns.Msg)
			r.SetQuestion(name, dns.TypeA)
			resp, err := harness.Ask("udp", c.addr, r)
			if err != nil {
				return false, err.Error()
			}
			if got := rrStrings(resp.Answer); len(got) != 1 || !strings.HasSuffix(got[0], "\t"+want) {
				return false, fmt.Sprintf("%s: %s %v", name, dns.RcodeToString[resp.Rcode], got)
			}
		}
		return true, ""
	})

	e, err := mcsctl.Start(ctx, c.cp.Kubeconfig, "kube-system/coredns", "clusterset.local.")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()

	type q struct {
		name  string
		qtype uint16
	}
	var questions []q
	add := func(name string, types ...uint16) {
		for _, t := range types {
			questions = append(questions, q{dns.Fqdn(name), t})
		}
	}
	addresses := map[string]bool{}
	for _, imp := range e.Imports() {
		for _, zone := range []string{"clusterset.local", "cluster.local"} {
			add(imp.Name+"."+imp.Namespace+".svc."+zone, dns.TypeA, dns.TypeAAAA, dns.TypeSRV, dns.TypeTXT)
			add("_http._tcp."+imp.Name+"."+imp.Namespace+".svc."+zone, dns.TypeSRV)
		}
		for _, a := range imp.Addresses {
			addresses[a] = true
		}
	}
	svcs, err := c.kube.CoreV1().Services("").List(ctx, meta.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range svcs.Items {
		add(s.Name+"."+s.Namespace+".svc.cluster.local", dns.TypeA, dns.TypeSRV)
		add(s.Name+"."+s.Namespace+".svc.clusterset.local", dns.TypeA)
		for _, ip := range s.Spec.ClusterIPs {
			addresses[ip] = true
		}
	}
	for a := range addresses {
		rev, err := dns.ReverseAddr(a)
		if err != nil {
			continue
		}
		add(rev, dns.TypePTR)
	}
	add("nope.interop-lighthouse.svc.clusterset.local", dns.TypeA)
	add("nope.interop-lighthouse.svc.cluster.local", dns.TypeA)
	add("clusterset.local", dns.TypeSOA, dns.TypeNS, dns.TypeA)
	add("svc.clusterset.local", dns.TypeA)
	add("dns-version.clusterset.local", dns.TypeTXT)

	// The hosts of headless imports, as their SRV answers name them.
	for _, question := range slices.Clone(questions) {
		if question.qtype != dns.TypeSRV || !strings.HasSuffix(question.name, ".svc.clusterset.local.") {
			continue
		}
		r := new(dns.Msg)
		r.SetQuestion(question.name, dns.TypeSRV)
		resp, err := harness.Ask("udp", c.addr, r)
		if err != nil {
			t.Fatal(err)
		}
		for _, rr := range resp.Answer {
			if srv, ok := rr.(*dns.SRV); ok && srv.Target != question.name {
				add(srv.Target, dns.TypeA, dns.TypeAAAA)
			}
		}
	}

	compared, passed := 0, 0
	for _, question := range questions {
		r := new(dns.Msg)
		r.SetQuestion(question.name, question.qtype)
		res := e.Explain(r)
		if res.AnsweredBy == "" {
			passed++
			continue // the server's next plugin would answer; this server has none
		}
		resp, err := harness.Ask("udp", c.addr, r)
		if err != nil {
			t.Fatal(err)
		}
		compared++
		want := summary(dns.RcodeToString[resp.Rcode], rrStrings(resp.Answer), rrStrings(resp.Ns), rrStrings(resp.Extra))
		got := summary(res.Rcode, res.Answer, res.Authority, res.Additional)
		if got != want {
			t.Errorf("%s %s: explain (%s) says\n%s\nthe server says\n%s\nsteps: %s", question.name, dns.TypeToString[question.qtype], res.AnsweredBy, got, want, strings.Join(res.Steps, " / "))
		}
	}
	t.Logf("%d questions: %d answers of explain equal to the server's; %d passed on by both plugins", len(questions), compared, passed)
	if compared < 100 {
		t.Errorf("only %d answers compared: the fixtures are not what this test expects", compared)
	}
}

func rrStrings(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		if rr.Header().Rrtype == dns.TypeOPT {
			continue
		}
		out = append(out, rr.String())
	}
	return out
}

// summary is an answer in a form two answers compare by: the rcode, then
// each section sorted, with SOA serials left out (each plugin instance
// counts its own).
func summary(rcode string, sections ...[]string) string {
	var b strings.Builder
	b.WriteString(rcode)
	for _, s := range sections {
		s = slices.Clone(s)
		for i, rr := range s {
			if f := strings.Fields(rr); len(f) > 6 && f[3] == "SOA" {
				f[6] = "SERIAL"
				s[i] = strings.Join(f, " ")
			}
		}
		slices.Sort(s)
		b.WriteString("\n  " + strings.Join(s, "\n  ") + "\n  --")
	}
	return b.String()
}

// served reports whether the API server serves ServiceImports in any
// version. The group's versions stay served while another CRD of the group
// (ServiceExport) is: the resource is looked for in their lists.
func served(kube kubernetes.Interface) bool {
	for _, v := range []string{"v1beta1", "v1alpha1"} {
		list, err := kube.Discovery().ServerResourcesForGroupVersion("multicluster.x-k8s.io/" + v)
		if err == nil && slices.ContainsFunc(list.APIResources, func(r meta.APIResource) bool { return r.Name == "serviceimports" }) {
			return true
		}
	}
	return false
}

// markersYAML is written after the interop fixtures: see
// testExplainEqualsServer.
const markersYAML = `apiVersion: v1
kind: Namespace
metadata:
  name: zz-marker
---
apiVersion: v1
kind: Service
metadata:
  name: marker
  namespace: zz-marker
spec:
  clusterIP: None
  ports:
    - name: http
      port: 80
      protocol: TCP
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: marker-local
  namespace: zz-marker
  labels:
    kubernetes.io/service-name: marker
addressType: IPv4
endpoints:
  - addresses: [10.99.0.1]
    conditions:
      ready: true
ports:
  - name: http
    port: 80
    protocol: TCP
---
apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ServiceImport
metadata:
  name: marker-import
  namespace: zz-marker
spec:
  type: Headless
  ports:
    - name: http
      port: 80
      protocol: TCP
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: marker-import-east
  namespace: zz-marker
  labels:
    multicluster.kubernetes.io/service-name: marker-import
    multicluster.kubernetes.io/source-cluster: east
addressType: IPv4
endpoints:
  - addresses: [10.99.0.2]
    conditions:
      ready: true
ports:
  - name: http
    port: 80
    protocol: TCP
`
