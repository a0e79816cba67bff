package deploy

// The swap on platforms whose controller owns kube-system/coredns (docs/deploy.md,
// "Swap on k3s, EKS and rke2"), run from the platform's own objects
// (testdata, each citing its source) with the real kubectl against a real
// kube-apiserver. The platforms' controllers themselves are not run: the
// tests start where the documented first step (k3s's .skip file, rke2's
// HelmChartConfig) leaves the objects.

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"
	"sigs.k8s.io/yaml"

	"github.com/coredns-mcs/coredns-mcs/internal/front"
	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"
	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// docBlock returns the fenced code block that follows the first line of
// docs/deploy.md's section "Swap on k3s, EKS and rke2" holding marker,
// without the indentation of its fence (blocks inside a list item are
// indented).
func docBlock(t *testing.T, marker string) string {
	t.Helper()
	doc := string(readRepoFile(t, "docs/deploy.md"))
	_, section, ok := strings.Cut(doc, "\n## Swap on k3s, EKS and rke2\n")
	if !ok {
		t.Fatal(`docs/deploy.md has no section "Swap on k3s, EKS and rke2"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	i := strings.Index(section, marker)
	if i < 0 {
		t.Fatalf("docs/deploy.md, Swap on k3s, EKS and rke2: no %q", marker)
	}
	lines := strings.Split(section[i:], "\n")
	for j, l := range lines {
		trimmed := strings.TrimLeft(l, " ")
		if j == 0 || !strings.HasPrefix(trimmed, "```") {
			continue
		}
		indent := l[:len(l)-len(trimmed)]
		var block []string
		for _, b := range lines[j+1:] {
			if strings.TrimLeft(b, " ") == "```" {
				return strings.Join(block, "\n") + "\n"
			}
			if b != "" && !strings.HasPrefix(b, indent) {
				t.Fatalf("docs/deploy.md: the block after %q is not indented as its fence: %q", marker, b)
			}
			block = append(block, strings.TrimPrefix(b, indent))
		}
		break
	}
	t.Fatalf("docs/deploy.md: no closed code block after %q", marker)
	return ""
}

// copyTree copies the directory src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// canI asks kubectl auth can-i whether ServiceAccount kube-system/coredns
// may verb resource, and waits (RBAC's cache follows role edits
// asynchronously) until the answer is want.
func canI(t *testing.T, k *kubectl, verb, resource string, want bool) {
	t.Helper()
	answer := map[bool]string{true: "yes", false: "no"}[want]
	poll.Eventually(t, 10*time.Second, fmt.Sprintf("kubectl auth can-i %s %s as kube-system/coredns: %s", verb, resource, answer), func() (bool, string) {
		// can-i exits 1 when the answer is no: the answer is its output.
		// Its last line: kubectl warns first about a resource the server
		// does not serve yet.
		out, _ := k.run("auth", "can-i", "--as=system:serviceaccount:kube-system:coredns", verb, resource)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		got := strings.TrimSpace(lines[len(lines)-1])
		return got == answer, got
	})
}

// The rights the multicluster plugin needs (README.md, "Corefile").
var multiclusterRights = [][2]string{
	{"list", "serviceimports.multicluster.x-k8s.io"},
	{"watch", "serviceimports.multicluster.x-k8s.io"},
	{"list", "clusterproperties.about.k8s.io"},
	{"watch", "clusterproperties.about.k8s.io"},
	{"list", "endpointslices.discovery.k8s.io"},
	{"list", "services"},
}

// trimmedLines returns the lines of a Corefile without their indentation
// and without empty lines, so that two Corefiles indented differently
// compare equal.
func trimmedLines(corefile string) []string {
	var out []string
	for _, l := range strings.Split(corefile, "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// k3sCorefile is the Corefile of docs/deploy.md's k3s/corefile.yaml.
func k3sCorefile(t *testing.T) (patch string, corefile string) {
	t.Helper()
	patch = docBlock(t, "`k3s/corefile.yaml`")
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict([]byte(patch), &cm); err != nil {
		t.Fatalf("docs/deploy.md k3s/corefile.yaml: %v\n%s", err, patch)
	}
	if cm.Namespace != "kube-system" || cm.Name != "coredns" || len(cm.Data) != 1 || cm.Data["Corefile"] == "" {
		t.Fatalf("docs/deploy.md k3s/corefile.yaml is %s/%s with %d keys, want kube-system/coredns with only a Corefile (the apply must leave NodeHosts to k3s)", cm.Namespace, cm.Name, len(cm.Data))
	}
	return patch, cm.Data["Corefile"]
}

// TestK3sCorefileIsShippedPlusK3s: the k3s Corefile of docs/deploy.md is
// manifests/corefile's with k3s's own lines added as k3s has them
// (testdata/k3s-coredns.yaml): the hosts block reading NodeHosts after
// kubernetes, and the two imports of coredns-custom. A change to the shipped
// Corefile that the k3s one misses fails here.
func TestK3sCorefileIsShippedPlusK3s(t *testing.T) {
	_, doc := k3sCorefile(t)
	k3s := trimmedLines(k3sFixtureCorefile(t))
	start := slices.Index(k3s, "hosts /etc/coredns/NodeHosts {")
	if start < 0 {
		t.Fatal("testdata/k3s-coredns.yaml: no hosts block")
	}
	end := start + slices.Index(k3s[start:], "}")
	hosts := k3s[start : end+1]
	for _, l := range []string{"import /etc/coredns/custom/*.override", "import /etc/coredns/custom/*.server"} {
		if !slices.Contains(k3s, l) {
			t.Fatalf("testdata/k3s-coredns.yaml has no %q", l)
		}
	}

	want := trimmedLines(shippedCorefile(t))
	// After the kubernetes block, k3s's hosts block.
	kube := slices.IndexFunc(want, func(l string) bool { return strings.HasPrefix(l, "kubernetes ") })
	if kube < 0 {
		t.Fatal("the shipped Corefile has no kubernetes block")
	}
	after := kube + slices.Index(want[kube:], "}") + 1
	want = slices.Concat(want[:after], hosts, want[after:])
	// The override import last in .:53, the server import after it.
	last := len(want) - 1
	if want[last] != "}" {
		t.Fatalf("the shipped Corefile does not end its server block last: %q", want[last])
	}
	want = slices.Concat(want[:last], []string{"import /etc/coredns/custom/*.override", "}", "import /etc/coredns/custom/*.server"})

	if got := trimmedLines(doc); !slices.Equal(got, want) {
		t.Errorf("docs/deploy.md's k3s Corefile\n%s\nwant manifests/corefile's with k3s's lines:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// k3sFixtureCorefile is the Corefile of k3s's own ConfigMap.
func k3sFixtureCorefile(t *testing.T) string {
	t.Helper()
	cm := loadObject[corev1.ConfigMap](t, "test/deploy/testdata/k3s-coredns.yaml", "ConfigMap")
	return cm.Data["Corefile"]
}

// TestSwapOnK3s runs docs/deploy.md's k3s steps from where the .skip file
// leaves k3s: its own CoreDNS objects (manifests/coredns.yaml of k3s,
// created by another field manager, the Service on k3s's 10.43.0.10), then
// the k3s/ kustomization the page gives, applied with kubectl. Afterwards
// the Deployment runs this image and still mounts NodeHosts and
// coredns-custom, the ConfigMap holds the page's Corefile and k3s's
// NodeHosts, the Service is where it was, and the ServiceAccount may read
// what the plugin reads.
func TestSwapOnK3s(t *testing.T) {
	path := lookTool(t, "kubectl", "https://kubernetes.io/docs/tasks/tools/")
	// k3s's default service CIDR (pkg/cli/cmds/server.go of k3s at
	// 4dcfdfb577f9), which holds its cluster DNS address.
	cp := controlplane.ForTest(t, controlplane.Options{ServiceClusterIPRange: "10.43.0.0/16"})
	k := &kubectl{t: t, path: path, kubeconfig: cp.Kubeconfig}
	kube := kubernetes.NewForConfigOrDie(cp.Config)
	ctx := t.Context()
	waitNamespace(t, kube, metav1.NamespaceSystem)

	k.must("create", "--field-manager=k3s", "-f", "test/deploy/testdata/k3s-coredns.yaml")
	before, err := kube.CoreV1().ConfigMaps("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodeHosts := before.Data["NodeHosts"]
	if nodeHosts == "" {
		t.Fatal("testdata/k3s-coredns.yaml: no NodeHosts")
	}
	// k3s's ClusterRole lets CoreDNS read no ServiceImports.
	canI(t, k, "list", "serviceimports.multicluster.x-k8s.io", false)

	// The page's two files, beside a copy of manifests/ as its
	// kustomization names it (../manifests).
	dir := t.TempDir()
	copyTree(t, filepath.Join(repoRoot(t), "manifests"), filepath.Join(dir, "manifests"))
	patch, corefile := k3sCorefile(t)
	if err := os.MkdirAll(filepath.Join(dir, "k3s"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "k3s", "kustomization.yaml"), docBlock(t, "`k3s/kustomization.yaml`"))
	writeFile(t, filepath.Join(dir, "k3s", "corefile.yaml"), patch)
	overlay := filepath.Join(dir, "k3s")

	out, err := k.run("apply", "--server-side", "--dry-run=server", "-k", overlay)
	if err == nil || !strings.Contains(out, `conflict with "k3s"`) {
		t.Errorf("want a conflict with k3s's field manager without --force-conflicts, got err %v:\n%s", err, out)
	}
	k.must("apply", "--server-side", "--force-conflicts", "--dry-run=server", "-k", overlay)
	k.must("apply", "--server-side", "--force-conflicts", "-k", overlay)

	dep, err := kube.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := dep.Spec.Template.Spec.Containers
	if len(c) != 1 || c[0].Image != image {
		t.Fatalf("containers after the swap: %+v, want one running %s", c, image)
	}
	if c[0].StartupProbe == nil {
		t.Error("the swap's startup probe is missing")
	}
	mounts := map[string]string{}
	for _, m := range c[0].VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	if mounts["config-volume"] != "/etc/coredns" || mounts["custom-config-volume"] != "/etc/coredns/custom" {
		t.Errorf("mounts after the swap: %v, want k3s's /etc/coredns and /etc/coredns/custom", mounts)
	}
	var keys []string
	custom := false
	for _, v := range dep.Spec.Template.Spec.Volumes {
		switch {
		case v.ConfigMap == nil:
		case v.ConfigMap.Name == "coredns":
			for _, item := range v.ConfigMap.Items {
				keys = append(keys, item.Key)
			}
		case v.ConfigMap.Name == "coredns-custom":
			custom = v.ConfigMap.Optional != nil && *v.ConfigMap.Optional
		}
	}
	if !slices.Equal(keys, []string{"Corefile", "NodeHosts"}) || !custom {
		t.Errorf("volumes after the swap: ConfigMap coredns keys %v, optional coredns-custom %v; want Corefile and NodeHosts, and coredns-custom", keys, custom)
	}

	cm, err := kube.CoreV1().ConfigMaps("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["Corefile"] != corefile {
		t.Errorf("Corefile after the swap:\n%s\nwant docs/deploy.md's k3s Corefile:\n%s", cm.Data["Corefile"], corefile)
	}
	if cm.Data["NodeHosts"] != nodeHosts {
		t.Errorf("NodeHosts after the swap: %q, want k3s's %q", cm.Data["NodeHosts"], nodeHosts)
	}
	svc, err := kube.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP != "10.43.0.10" {
		t.Errorf("kube-dns after the swap: %s, want k3s's 10.43.0.10", svc.Spec.ClusterIP)
	}
	for _, r := range multiclusterRights {
		canI(t, k, r[0], r[1], true)
	}
}

// helmChartConfigCRD is the HelmChartConfig kind (helm.cattle.io/v1,
// helmchartconfigs, namespaced, as internal/front names it), with a schema
// that keeps any field: the tests only store and read it back.
const helmChartConfigCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: helmchartconfigs.helm.cattle.io
spec:
  group: helm.cattle.io
  scope: Namespaced
  names:
    kind: HelmChartConfig
    plural: helmchartconfigs
    singular: helmchartconfig
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
`

// rke2Corefile renders servers[] as rke2-coredns writes its Corefile: the
// coredns chart's rendering (front.Corefile), with the cluster domain put
// before the kubernetes plugin's parameters
// (packages/rke2-coredns/generated-changes/patch/templates/configmap.yaml.patch
// of rke2-charts at 262e21a4d308: global.clusterDomain, else cluster.local).
func rke2Corefile(servers []front.Server, clusterDomain string) string {
	for i := range servers {
		for j, p := range servers[i].Plugins {
			if p.Name == "kubernetes" && p.Parameters != "" {
				servers[i].Plugins[j].Parameters = clusterDomain + " " + p.Parameters
			}
		}
	}
	return front.Corefile(servers)
}

// TestSwapOnRKE2 runs docs/deploy.md's rke2 steps on rke2's objects: the
// ServiceAccount and ClusterRole rke2-coredns runs with, and a
// HelmChartConfig of rke2's own tests. The page's RBAC step lets the
// ServiceAccount read what the plugin reads (the chart's role does not);
// its HelmChartConfig, applied with kubectl, replaces the values whole,
// names this image, and its servers[] render, as rke2-coredns renders them,
// to manifests/corefile's Corefile.
func TestSwapOnRKE2(t *testing.T) {
	k, cp := newKubectl(t)
	kube := kubernetes.NewForConfigOrDie(cp.Config)
	waitNamespace(t, kube, metav1.NamespaceSystem)
	dir := t.TempDir()
	crd := filepath.Join(dir, "crd.yaml")
	writeFile(t, crd, helmChartConfigCRD)
	k.must("apply", "-f", crd)
	k.must("wait", "--for=condition=Established", "--timeout=60s", "crd/helmchartconfigs.helm.cattle.io")
	k.must("apply", "-f", "test/deploy/testdata/rke2-coredns.yaml")
	for _, r := range multiclusterRights[:4] {
		canI(t, k, r[0], r[1], false)
	}

	// Step 1.
	k.must("apply", "--server-side", "-k", "manifests/crds")
	k.must("apply", "--server-side", "-k", "manifests/rbac")
	for _, r := range multiclusterRights {
		canI(t, k, r[0], r[1], true)
	}

	// Step 2: the page's HelmChartConfig, applied as it says.
	config := filepath.Join(dir, "rke2-coredns-config.yaml")
	writeFile(t, config, docBlock(t, "2. The HelmChartConfig"))
	k.must("apply", "-f", config)
	out := k.must("-n", "kube-system", "get", "helmchartconfig", "rke2-coredns", "-o", "jsonpath={.spec.valuesContent}")
	var values struct {
		Image struct {
			Repository string `json:"repository"`
			Tag        string `json:"tag"`
		} `json:"image"`
		Servers   []front.Server `json:"servers"`
		Nodelocal any            `json:"nodelocal"`
	}
	if err := yaml.Unmarshal([]byte(out), &values); err != nil {
		t.Fatalf("valuesContent after the apply: %v\n%s", err, out)
	}
	if got := values.Image.Repository + ":" + values.Image.Tag; got != image {
		t.Errorf("the HelmChartConfig's image: %s, want %s (manifests/)", got, image)
	}
	// The page says an apply replaces valuesContent whole: rke2's test
	// value is gone.
	if values.Nodelocal != nil {
		t.Errorf("nodelocal after the apply: %v; the page says kubectl apply replaces valuesContent whole", values.Nodelocal)
	}
	// rke2's default cluster domain: --cluster-domain, copied to k3s as is.
	got := rke2Corefile(values.Servers, "cluster.local")
	if !slices.Equal(trimmedLines(got), trimmedLines(shippedCorefile(t))) {
		t.Errorf("the HelmChartConfig's servers[] render as rke2-coredns renders them to\n%s\nwant manifests/corefile's\n%s", got, shippedCorefile(t))
	}
}

// k3sLocalCorefile rewrites docs/deploy.md's k3s Corefile to run on
// loopback: free ports, the given kubeconfig, NodeHosts and coredns-custom
// read from dir, and no forward (no upstream to reach here). Each edit must
// match exactly once.
func k3sLocalCorefile(t *testing.T, corefile string, p ports, kubeconfig, dir string) string {
	t.Helper()
	return editCorefile(t, "the k3s Corefile", corefile, append(loopbackEdits(p, kubeconfig),
		corefileEdit{`/etc/coredns/NodeHosts`, filepath.Join(dir, "NodeHosts")},
		corefileEdit{`(?m)^(\s+)import /etc/coredns/custom/\*\.override$`, "${1}import " + filepath.Join(dir, "custom", "*.override")},
		corefileEdit{`(?m)^import /etc/coredns/custom/\*\.server$`, "import " + filepath.Join(dir, "custom", "*.server")},
	))
}

// TestK3sCorefile runs docs/deploy.md's k3s Corefile with this image's
// coredns against a real API server: a node name of NodeHosts answers, so do
// a server block and an override of coredns-custom, and so does an import,
// in clusterset.local and, through fallback, in cluster.local.
func TestK3sCorefile(t *testing.T) {
	cp := controlplane.ForTest(t, controlplane.Options{InstallCRDs: true})
	ctx := t.Context()
	kube := kubernetes.NewForConfigOrDie(cp.Config)
	mcs := mcsclient.NewForConfigOrDie(cp.Config)
	waitNamespace(t, kube, metav1.NamespaceSystem)

	ns := "k3s-test"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := mcs.MulticlusterV1beta1().ServiceImports(ns).Create(ctx, &mcsv1beta1.ServiceImport{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: mcsv1beta1.ServiceImportSpec{
			Type:  mcsv1beta1.ClusterSetIP,
			IPs:   []string{"10.42.9.1"},
			Ports: []mcsv1beta1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// NodeHosts as k3s's node controller writes it, and coredns-custom's
	// two kinds of file as k3s's Corefile imports them.
	dir := t.TempDir()
	cm := loadObject[corev1.ConfigMap](t, "test/deploy/testdata/k3s-coredns.yaml", "ConfigMap")
	writeFile(t, filepath.Join(dir, "NodeHosts"), cm.Data["NodeHosts"])
	p := ports{dns: harness.FreePort(t), health: harness.FreePort(t), ready: harness.FreePort(t), metrics: harness.FreePort(t)}
	if err := os.MkdirAll(filepath.Join(dir, "custom"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "custom", "example.server"), fmt.Sprintf("custom.test:%d {\n    hosts {\n        192.0.2.8 www.custom.test\n    }\n}\n", p.dns))
	writeFile(t, filepath.Join(dir, "custom", "example.override"), "rewrite name exact alias-a. node-a.\n")

	_, corefile := k3sCorefile(t)
	corefile = k3sLocalCorefile(t, corefile, p, cp.Kubeconfig, dir)
	s := runCoreDNS(t, corefile, p, dir)
	for _, c := range []struct {
		name, want, what string
	}{
		{"node-a.", "10.0.0.5", "a node name of NodeHosts"},
		{"www.custom.test.", "192.0.2.8", "a name of coredns-custom's server block"},
		{"alias-a.", "10.0.0.5", "a name coredns-custom's override rewrites"},
		{"web." + ns + ".svc.clusterset.local.", "10.42.9.1", "an import in clusterset.local"},
		{"web." + ns + ".svc.cluster.local.", "10.42.9.1", "an import through fallback"},
	} {
		s.waitFor(t, 10*time.Second, c.what+": "+c.name+" A "+c.want, s.answersA(c.name, c.want))
	}
}
