package kubectlmcs

import (
	"encoding/json"
	"net"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/coredns-mcs/coredns-mcs/internal/front"
	"github.com/coredns-mcs/coredns-mcs/test/internal/apply"
	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"
)

// platformCluster is a control plane shaped as a platform ships its
// cluster DNS: its Service range, its DNS objects, and coredns-mcs
// standalone installed from manifests/standalone.
type platformCluster struct {
	cp      *controlplane.ControlPlane
	kube    kubernetes.Interface
	address string // the standalone Service's ClusterIP
}

// dnsDeployment is a cluster DNS Deployment in kube-system (no node runs
// its pods: only its shape matters) running image, mounting the
// ConfigMaps named.
func dnsDeployment(name, image string, configMaps ...string) *appsv1.Deployment {
	labels := map[string]string{"k8s-app": "kube-dns"}
	d := &appsv1.Deployment{
		ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "kube-system", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &meta.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: meta.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "dns", Image: image}}},
			},
		},
	}
	for _, cm := range configMaps {
		optional := cm != "coredns"
		d.Spec.Template.Spec.Volumes = append(d.Spec.Template.Spec.Volumes, corev1.Volume{Name: cm, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}, Optional: &optional},
		}})
	}
	return d
}

// startPlatform starts a control plane with serviceRange, creates objects
// and installs manifests/standalone.
func startPlatform(t *testing.T, serviceRange string, objects ...any) *platformCluster {
	t.Helper()
	cp := controlplane.ForTest(t, controlplane.Options{ServiceClusterIPRange: serviceRange})
	p := &platformCluster{cp: cp, kube: kubernetes.NewForConfigOrDie(cp.Config)}
	ctx := t.Context()
	for _, o := range objects {
		var err error
		switch o := o.(type) {
		case *appsv1.Deployment:
			_, err = p.kube.AppsV1().Deployments(o.Namespace).Create(ctx, o, meta.CreateOptions{})
		case *corev1.ConfigMap:
			_, err = p.kube.CoreV1().ConfigMaps(o.Namespace).Create(ctx, o, meta.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	var manifests []apply.Manifest
	for _, f := range []string{"serviceaccount.yaml", "rbac.yaml", "configmap.yaml", "deployment.yaml", "service.yaml"} {
		found, err := apply.ReadFile(filepath.Join(repo, "manifests", "standalone", f))
		if err != nil {
			t.Fatal(err)
		}
		manifests = append(manifests, found...)
	}
	if err := apply.Apply(ctx, cp.Config, manifests); err != nil {
		t.Fatal(err)
	}
	svc, err := p.kube.CoreV1().Services("kube-system").Get(ctx, "coredns-mcs", meta.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.address = svc.Spec.ClusterIP
	_, ipnet, _ := net.ParseCIDR(strings.Split(serviceRange, ",")[0])
	if ip := net.ParseIP(p.address); ip == nil || !ipnet.Contains(ip) {
		t.Fatalf("the standalone Service's ClusterIP %q is not in the cluster's range %s", p.address, serviceRange)
	}
	return p
}

func (p *platformCluster) front(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	c := &cluster{cp: p.cp}
	return c.kubectlMCS(t, append([]string{"front", "--clusterset-cidr", "10.42.0.0/16"}, args...)...)
}

func (p *platformCluster) configMap(t *testing.T, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := p.kube.CoreV1().ConfigMaps("kube-system").Get(t.Context(), name, meta.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// crd is a CustomResourceDefinition of kind in group, version v1, that
// keeps every field: only its name and scope matter here.
func crd(group, kind, plural, scope string) map[string]any {
	return map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + group},
		"spec": map[string]any{
			"group": group, "scope": scope,
			"names": map[string]any{"kind": kind, "plural": plural, "singular": strings.ToLower(kind), "listKind": kind + "List"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			}},
		},
	}
}

// applyObjects applies objects (CRDs first), as a platform's manager
// would have.
func (p *platformCluster) applyObjects(t *testing.T, objects ...map[string]any) {
	t.Helper()
	var manifests []apply.Manifest
	for _, o := range objects {
		manifests = append(manifests, apply.Manifest{Object: &unstructured.Unstructured{Object: o}, Source: t.Name()})
	}
	if err := apply.Apply(t.Context(), p.cp.Config, manifests); err != nil {
		t.Fatal(err)
	}
}

// object reads an object of group/v1 resource.
func (p *platformCluster) object(t *testing.T, group, resource, namespace, name string) map[string]any {
	t.Helper()
	dyn := dynamic.NewForConfigOrDie(p.cp.Config)
	r := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: resource})
	var get dynamic.ResourceInterface = r
	if namespace != "" {
		get = r.Namespace(namespace)
	}
	obj, err := get.Get(t.Context(), name, meta.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return obj.Object
}

// kubectlApply runs kubectl apply -f - with input, as the docs say to
// apply what kubectl mcs front prints, with the kubectl the control
// plane's binaries are built with.
func (p *platformCluster) kubectlApply(t *testing.T, input string) {
	t.Helper()
	dir, err := controlplane.Assets()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), filepath.Join(dir, "kubectl"), "--kubeconfig", p.cp.Kubeconfig, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(input)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply -f -: %v\n%s\ninput:\n%s", err, out, input)
	}
}

func corefileConfigMap(text string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: "coredns", Namespace: "kube-system"}, Data: map[string]string{"Corefile": text}}
}

// expectForwarding checks that blocks forward to the standalone Service's
// address, with the stand-in after it.
func (p *platformCluster) expectForwarding(t *testing.T, what, blocks string) {
	t.Helper()
	want := "forward . " + p.address + " 127.0.0.1:5301 {"
	if strings.Count(blocks, want) != 3 || !strings.Contains(blocks, "template ANY ANY") {
		t.Errorf("%s does not forward to %s with the stand-in after it:\n%s", what, p.address, blocks)
	}
}

// TestFrontPerPlatform runs kubectl mcs front against a real API server in
// each platform's shape: its Service range (the standalone Service takes
// an address of it), its cluster DNS objects, detected or named; the
// configuration printed, applied and removed again.
func TestFrontPerPlatform(t *testing.T) {
	t.Run("kubeadm", func(t *testing.T) {
		// kubeadm's default Service range (--service-cidr 10.96.0.0/12) and
		// its Corefile.
		p := startPlatform(t, "10.96.0.0/12", dnsDeployment("coredns", "registry.k8s.io/coredns/coredns:v"+front.KubeadmCoreDNSVersion, "coredns"), corefileConfigMap(front.KubeadmCorefile),
			&corev1.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: "kubeadm-config", Namespace: "kube-system"}})
		code, out, errOut := p.front(t)
		// The notes go to stderr, the payload alone to stdout.
		if code != 0 || !strings.Contains(errOut, "# platform: kubeadm (kube-system/kubeadm-config exists)") || strings.Contains(out, "# platform") {
			t.Fatalf("front: %d\n%s%s", code, out, errOut)
		}
		code, out, errOut = p.front(t, "--apply")
		if code != 0 {
			t.Fatalf("front --apply: %d\n%s%s", code, out, errOut)
		}
		applied := p.configMap(t, "coredns").Data["Corefile"]
		if !strings.HasPrefix(applied, front.KubeadmCorefile) {
			t.Errorf("kubeadm's own block changed:\n%s", applied)
		}
		p.expectForwarding(t, "the applied Corefile", applied)
		// kubeadm's CoreDNS has forward's read_timeout (1.14.5 on):
		// 120ms in cluster.local, 1s in clusterset.local and the reverse
		// zone.
		if !strings.Contains(errOut, "# CoreDNS version: "+front.KubeadmCoreDNSVersion+" (image ") || strings.Count(applied, "read_timeout 120ms") != 1 || strings.Count(applied, "read_timeout 1s") != 2 {
			t.Errorf("CoreDNS %s, read from its image, takes read_timeout:\n%s\n%s", front.KubeadmCoreDNSVersion, errOut, applied)
		}
		// kubeadm's stanza options, read from the cluster's Corefile.
		if !strings.Contains(applied, "kubernetes cluster.local {\n        pods insecure\n        ttl 30\n        fallthrough cluster.local\n    }") {
			t.Errorf("the added kubernetes stanza lacks kubeadm's options:\n%s", applied)
		}
		// Applied twice: the same.
		if code, out, errOut = p.front(t, "--apply"); code != 0 || p.configMap(t, "coredns").Data["Corefile"] != applied {
			t.Errorf("front --apply again: %d\n%s%s\n%s", code, out, errOut, p.configMap(t, "coredns").Data["Corefile"])
		}
		if code, out, errOut = p.front(t, "--remove", "--apply"); code != 0 {
			t.Fatalf("front --remove --apply: %d\n%s%s", code, out, errOut)
		}
		if got := p.configMap(t, "coredns").Data["Corefile"]; got != front.KubeadmCorefile {
			t.Errorf("after removal:\n%s\nwant kubeadm's:\n%s", got, front.KubeadmCorefile)
		}
	})
	t.Run("k3s", func(t *testing.T) {
		// A Service range outside kubeadm's, and k3s's CoreDNS, which
		// mounts the optional ConfigMap coredns-custom (manifests/coredns.yaml
		// of k3s).
		p := startPlatform(t, "10.43.0.0/16", dnsDeployment("coredns", "dns.example/coredns:1.12.1", "coredns", "coredns-custom"), corefileConfigMap(front.K3sCorefile))
		code, out, errOut := p.front(t, "--apply")
		if code != 0 || !strings.Contains(errOut, "# platform: k3s") {
			t.Fatalf("front --apply: %d\n%s%s", code, out, errOut)
		}
		custom := p.configMap(t, "coredns-custom").Data[front.CustomKey]
		p.expectForwarding(t, "coredns-custom "+front.CustomKey, custom)
		// A CoreDNS before 1.14.5 refuses read_timeout: it is left out,
		// and the note says what a hang costs there, as measured.
		if strings.Contains(custom, "read_timeout") || !strings.Contains(errOut, "# CoreDNS version: 1.12.1 (image dns.example/coredns:1.12.1): no read_timeout") ||
			!strings.Contains(errOut, "forward's fixed 2 s") || !strings.Contains(errOut, "timeout:1 can fail a lookup") {
			t.Errorf("CoreDNS 1.12.1 given read_timeout:\n%s\n%s", errOut, custom)
		}
		if strings.Contains(custom, "ttl") || !strings.Contains(custom, "pods insecure") {
			t.Errorf("k3s's kubernetes stanza has pods insecure and no ttl; the added one:\n%s", custom)
		}
		if got := p.configMap(t, "coredns").Data["Corefile"]; got != front.K3sCorefile {
			t.Errorf("k3s's own Corefile changed:\n%s", got)
		}
		if code, out, errOut = p.front(t, "--remove", "--apply"); code != 0 {
			t.Fatalf("front --remove --apply: %d\n%s%s", code, out, errOut)
		}
		if _, ok := p.configMap(t, "coredns-custom").Data[front.CustomKey]; ok {
			t.Errorf("%s is still in coredns-custom after removal", front.CustomKey)
		}
	})
	t.Run("aks", func(t *testing.T) {
		// Another Service range, and a coredns-custom ConfigMap that exists
		// already with a key of the user's own.
		other := &corev1.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: "coredns-custom", Namespace: "kube-system"}, Data: map[string]string{"log.override": "log"}}
		// An image pinned by digest alone says no version: no read_timeout.
		p := startPlatform(t, "10.0.0.0/16", dnsDeployment("coredns", "dns.example/coredns@sha256:"+strings.Repeat("0", 64), "coredns", "coredns-custom"), other)
		code, out, errOut := p.front(t, "--platform", "aks", "--apply")
		if code != 0 {
			t.Fatalf("front --apply: %d\n%s%s", code, out, errOut)
		}
		cm := p.configMap(t, "coredns-custom")
		p.expectForwarding(t, "coredns-custom "+front.CustomKey, cm.Data[front.CustomKey])
		if strings.Contains(cm.Data[front.CustomKey], "read_timeout") || !strings.Contains(errOut, "# CoreDNS version: unknown") {
			t.Errorf("an unknown CoreDNS version given read_timeout:\n%s\n%s", errOut, cm.Data[front.CustomKey])
		}
		if cm.Data["log.override"] != "log" {
			t.Errorf("the user's own key changed: %v", cm.Data)
		}
	})
	t.Run("eks", func(t *testing.T) {
		// Another Service range: the add-on value keeps the cluster's
		// Corefile.
		p := startPlatform(t, "172.20.0.0/16", dnsDeployment("coredns", "dns.example/coredns:v1.15.0-build.1", "coredns"), corefileConfigMap(front.KubeadmCorefile))
		code, out, errOut := p.front(t, "--platform", "eks")
		if code != 0 {
			t.Fatalf("front: %d\n%s%s", code, out, errOut)
		}
		var value struct {
			Corefile string `json:"corefile"`
		}
		// stdout is the add-on configuration alone: JSON, for jq and file://.
		if err := json.Unmarshal([]byte(out), &value); err != nil {
			t.Fatalf("the add-on configuration: %v\n%s", err, out)
		}
		if !strings.HasPrefix(value.Corefile, front.KubeadmCorefile) {
			t.Errorf("the cluster's own Corefile is not kept:\n%s", value.Corefile)
		}
		p.expectForwarding(t, "the add-on corefile", value.Corefile)
		if code, _, errOut = p.front(t, "--platform", "eks", "--apply"); code != 1 || !strings.Contains(errOut, "aws eks update-addon") {
			t.Errorf("front --platform eks --apply: %d, %s (want 1 and how to apply it)", code, errOut)
		}
		// Removal prints the same form: the value, its corefile without
		// the blocks (here the cluster's Corefile had none).
		code, out, errOut = p.front(t, "--platform", "eks", "--remove")
		value.Corefile = ""
		if err := json.Unmarshal([]byte(out), &value); code != 0 || err != nil || value.Corefile != front.KubeadmCorefile {
			t.Errorf("front --platform eks --remove: %d %v, want the add-on value with the cluster's Corefile:\n%s%s", code, err, out, errOut)
		}
	})
	t.Run("rke2", func(t *testing.T) {
		// The HelmChartConfig rke2 documents for rke2-coredns's values,
		// here enabling NodeLocal DNSCache (docs/networking/networking_services.md
		// of rancher/rke2-docs): what front prints keeps it, applied as the
		// docs say (kubectl apply -f -).
		p := startPlatform(t, "10.43.0.0/16", dnsDeployment("rke2-coredns-rke2-coredns", "rancher/hardened-coredns:v1.14.7-build20260819", "rke2-coredns-rke2-coredns"))
		p.applyObjects(t, crd("helm.cattle.io", "HelmChartConfig", "helmchartconfigs", "Namespaced"), map[string]any{
			"apiVersion": "helm.cattle.io/v1", "kind": "HelmChartConfig",
			"metadata": map[string]any{"name": "rke2-coredns", "namespace": "kube-system"},
			"spec":     map[string]any{"valuesContent": "nodelocal:\n  enabled: true\n"},
		})
		values := func() map[string]any {
			obj := p.object(t, "helm.cattle.io", "helmchartconfigs", "kube-system", "rke2-coredns")
			text, _, _ := unstructured.NestedString(obj, "spec", "valuesContent")
			v := map[string]any{}
			if err := yaml.Unmarshal([]byte(text), &v); err != nil {
				t.Fatal(err)
			}
			return v
		}
		code, out, errOut := p.front(t)
		if code != 0 || !strings.Contains(errOut, "# platform: rke2") {
			t.Fatalf("front: %d\n%s%s", code, out, errOut)
		}
		p.kubectlApply(t, out)
		applied := values()
		servers, _ := applied["servers"].([]any)
		if applied["nodelocal"] == nil || len(servers) != 5 || !strings.Contains(out, p.address+" 127.0.0.1:5301") {
			t.Errorf("applied valuesContent: nodelocal %v and %d servers (want it kept, and the chart's default and 4 added):\n%s", applied["nodelocal"], len(servers), out)
		}
		// Again: the same values, the servers once.
		_, out, _ = p.front(t)
		p.kubectlApply(t, out)
		if again := values(); !reflect.DeepEqual(again, applied) {
			t.Errorf("applied twice:\n%v\nwant\n%v", again, applied)
		}
		_, out, _ = p.front(t, "--remove")
		p.kubectlApply(t, out)
		removed := values()
		servers, _ = removed["servers"].([]any)
		if removed["nodelocal"] == nil || len(servers) != 1 {
			t.Errorf("removed: %v, want nodelocal kept and the chart's default server alone", removed)
		}
	})
	t.Run("openshift", func(t *testing.T) {
		// The DNS resource "default" with an entry of the user's own
		// (Server in operator/v1/types_dns.go of openshift/api): applying
		// what front prints keeps it.
		p := startPlatform(t, "172.30.0.0/16")
		corp := map[string]any{"name": "corp", "zones": []any{"corp.example"}, "forwardPlugin": map[string]any{"upstreams": []any{"10.1.2.3"}}}
		p.applyObjects(t, crd("operator.openshift.io", "DNS", "dnses", "Cluster"), map[string]any{
			"apiVersion": "operator.openshift.io/v1", "kind": "DNS",
			"metadata": map[string]any{"name": "default"},
			"spec":     map[string]any{"servers": []any{corp}},
		})
		names := func() []string {
			servers, _, _ := unstructured.NestedSlice(p.object(t, "operator.openshift.io", "dnses", "", "default"), "spec", "servers")
			var n []string
			for _, s := range servers {
				n = append(n, s.(map[string]any)["name"].(string))
			}
			return n
		}
		for range 2 {
			code, out, errOut := p.front(t, "--platform", "openshift")
			if code != 0 {
				t.Fatalf("front: %d\n%s%s", code, out, errOut)
			}
			p.kubectlApply(t, out)
			if got := names(); !slices.Equal(got, []string{"corp", front.OpenShiftServerName}) {
				t.Errorf("spec.servers applied: %v, want corp kept, then %s", got, front.OpenShiftServerName)
			}
		}
		_, out, _ := p.front(t, "--platform", "openshift", "--remove")
		p.kubectlApply(t, out)
		if got := names(); !slices.Equal(got, []string{"corp"}) {
			t.Errorf("spec.servers removed: %v, want corp alone", got)
		}
	})
	t.Run("kube-dns", func(t *testing.T) {
		existing := `{"corp.example":["10.1.2.3"]}`
		p := startPlatform(t, "10.96.0.0/12", dnsDeployment("kube-dns", "dns.example/kube-dns:1.0.0"),
			&corev1.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: "kube-dns", Namespace: "kube-system"}, Data: map[string]string{"stubDomains": existing}})
		code, out, errOut := p.front(t, "--apply")
		if code != 0 || !strings.Contains(errOut, "# platform: kube-dns") {
			t.Fatalf("front --apply: %d\n%s%s", code, out, errOut)
		}
		var stubs map[string][]string
		if err := json.Unmarshal([]byte(p.configMap(t, "kube-dns").Data["stubDomains"]), &stubs); err != nil {
			t.Fatal(err)
		}
		for _, z := range []string{"clusterset.local", "42.10.in-addr.arpa", "corp.example"} {
			if len(stubs[z]) != 1 || (z != "corp.example" && stubs[z][0] != p.address) {
				t.Errorf("stub domain %s: %v", z, stubs[z])
			}
		}
		if code, out, errOut = p.front(t, "--remove", "--apply"); code != 0 {
			t.Fatalf("front --remove --apply: %d\n%s%s", code, out, errOut)
		}
		if got := p.configMap(t, "kube-dns").Data["stubDomains"]; got != existing {
			t.Errorf("stubDomains after removal: %s, want %s", got, existing)
		}
	})
	t.Run("no standalone Service", func(t *testing.T) {
		cp := controlplane.ForTest(t, controlplane.Options{})
		kube := kubernetes.NewForConfigOrDie(cp.Config)
		if _, err := kube.AppsV1().Deployments("kube-system").Create(t.Context(), dnsDeployment("coredns", "registry.k8s.io/coredns/coredns:v"+front.KubeadmCoreDNSVersion, "coredns"), meta.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := kube.CoreV1().ConfigMaps("kube-system").Create(t.Context(), corefileConfigMap(front.KubeadmCorefile), meta.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		c := &cluster{cp: cp}
		code, _, errOut := c.kubectlMCS(t, "front")
		if code != 1 || !strings.Contains(errOut, "the standalone Service kube-system/coredns-mcs") || !strings.Contains(errOut, "manifests/standalone") {
			t.Errorf("front without the standalone Service: %d, %s", code, errOut)
		}
	})
}
