package mcsctl

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	"github.com/coredns-mcs/coredns-mcs/internal/front"
)

// The fixtures below are shaped like each platform's own DNS objects;
// each label, annotation and field manager names the file it comes from.

const testStandaloneIP = "10.96.143.7"

func deployment(name string, labels, podLabels, annotations map[string]string, managers []string, configMaps ...string) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "kube-system", Labels: labels, Annotations: annotations},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: meta.ObjectMeta{Labels: podLabels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "coredns", Image: "dns.example/coredns:1.14.6"}}},
		}},
	}
	for _, m := range managers {
		d.ManagedFields = append(d.ManagedFields, meta.ManagedFieldsEntry{Manager: m, Operation: meta.ManagedFieldsOperationApply})
	}
	for _, cm := range configMaps {
		optional := cm != "coredns"
		d.Spec.Template.Spec.Volumes = append(d.Spec.Template.Spec.Volumes, corev1.Volume{Name: cm, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}, Optional: &optional},
		}})
	}
	return d
}

func configMapOf(ns, name string, labels, annotations map[string]string, managers []string, data map[string]string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: ns, Labels: labels, Annotations: annotations}, Data: data}
	for _, m := range managers {
		cm.ManagedFields = append(cm.ManagedFields, meta.ManagedFieldsEntry{Manager: m, Operation: meta.ManagedFieldsOperationApply})
	}
	return cm
}

func standaloneService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: meta.ObjectMeta{Name: "coredns-mcs", Namespace: "kube-system", Labels: map[string]string{componentLabel: standaloneComponent}},
		Spec:       corev1.ServiceSpec{ClusterIP: testStandaloneIP},
	}
}

var kubeDNSLabel = map[string]string{"k8s-app": "kube-dns"}

// platformObjects returns a cluster DNS in the shape each platform ships.
func platformObjects(name string) []runtime.Object {
	corefile := map[string]string{"Corefile": front.KubeadmCorefile}
	switch name {
	case "kubeadm":
		// cmd/kubeadm/app/phases/addons/dns/manifests.go (Kubernetes
		// v1.37.1): k8s-app: kube-dns; kubeadm-config in kube-system.
		return []runtime.Object{
			deployment("coredns", kubeDNSLabel, kubeDNSLabel, nil, []string{"kubeadm"}, "coredns"),
			configMapOf("kube-system", "coredns", nil, nil, []string{"kubeadm"}, corefile),
			configMapOf("kube-system", "kubeadm-config", nil, nil, nil, nil),
		}
	case "k3s":
		// manifests/coredns.yaml of k3s: the optional coredns-custom mount;
		// applied by k3s's deploy controller with wrangler, owned by the
		// Addon named after the manifest (pkg/deploy/controller.go,
		// rancher/wrangler pkg/apply/desiredset_apply.go).
		owner := map[string]string{front.WranglerOwnerGVK: front.K3sAddonGVK, front.WranglerOwnerName: "coredns", "objectset.rio.cattle.io/owner-namespace": "kube-system"}
		return []runtime.Object{
			deployment("coredns", map[string]string{"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"}, kubeDNSLabel, owner, []string{"deploy@server"}, "coredns", "coredns-custom"),
			configMapOf("kube-system", "coredns", nil, owner, nil, map[string]string{"Corefile": front.K3sCorefile}),
		}
	case "rke2":
		// rancher/rke2 tests/client.go names the Deployment; the coredns
		// chart's labels (charts/coredns/templates/_helpers.tpl), chart
		// rke2-coredns 1.47.003 (charts/chart_versions.yaml).
		helm := map[string]string{front.HelmManagedByLabel: "Helm", front.HelmChartLabel: "rke2-coredns-1.47.003", "k8s-app": "kube-dns"}
		return []runtime.Object{
			deployment("rke2-coredns-rke2-coredns", helm, kubeDNSLabel, nil, []string{"helm"}, "rke2-coredns-rke2-coredns"),
			configMapOf("kube-system", "rke2-coredns-rke2-coredns", helm, nil, nil, corefile),
		}
	case "eks":
		// The add-on: its pods labelled eks.amazonaws.com/component=coredns
		// (awsdocs/amazon-eks-user-guide doc_source/coredns.md), its
		// fields managed by "eks" (kubernetes-field-management.adoc).
		pods := map[string]string{"k8s-app": "kube-dns", front.EKSComponentLabel: "coredns"}
		return []runtime.Object{
			deployment("coredns", kubeDNSLabel, pods, nil, []string{front.EKSFieldManager}, "coredns"),
			configMapOf("kube-system", "coredns", kubeDNSLabel, nil, []string{front.EKSFieldManager}, corefile),
		}
	case "eks-self-managed":
		// The same pods, no field managed by "eks": the user's.
		pods := map[string]string{"k8s-app": "kube-dns", front.EKSComponentLabel: "coredns"}
		return []runtime.Object{
			deployment("coredns", kubeDNSLabel, pods, nil, []string{"kubectl-client-side-apply"}, "coredns"),
			configMapOf("kube-system", "coredns", kubeDNSLabel, nil, []string{"kubectl-client-side-apply"}, corefile),
		}
	case "aks":
		// kubernetes.azure.com/managedby: aks on managed addon components
		// (Azure/AKS CHANGELOG.md); coredns-custom mounted (AKS reads it).
		aks := map[string]string{"k8s-app": "kube-dns", front.AKSManagedByLabel: "aks"}
		return []runtime.Object{
			deployment("coredns", aks, kubeDNSLabel, nil, nil, "coredns", "coredns-custom"),
			configMapOf("kube-system", "coredns", aks, nil, nil, corefile),
			configMapOf("kube-system", "coredns-custom", aks, nil, nil, map[string]string{"log.override": "log"}),
		}
	case "gke":
		// cluster/addons/dns/kube-dns/kube-dns.yaml.in (Kubernetes
		// v1.37.1): the Deployment Reconcile, the ConfigMap EnsureExists
		// (GKE's kube-dns page shows the same label on it).
		return []runtime.Object{
			deployment("kube-dns", map[string]string{"k8s-app": "kube-dns", front.AddonManagerLabel: "Reconcile"}, kubeDNSLabel, nil, nil),
			configMapOf("kube-system", "kube-dns", map[string]string{front.AddonManagerLabel: "EnsureExists"}, nil, nil, nil),
		}
	case "kube-dns-reconciled":
		// A kube-dns whose ConfigMap the addon manager reconciles.
		return []runtime.Object{
			deployment("kube-dns", kubeDNSLabel, kubeDNSLabel, nil, nil),
			configMapOf("kube-system", "kube-dns", map[string]string{front.AddonManagerLabel: "Reconcile"}, nil, nil, nil),
		}
	case "openshift":
		// openshift/cluster-dns-operator pkg/operator/controller/names.go:
		// the DaemonSet "dns-default" in openshift-dns, its pods selected
		// by dns.operator.openshift.io/daemonset-dns; the Corefile a server
		// of spec.servers becomes (controller_dns_configmap.go).
		ds := &appsv1.DaemonSet{ObjectMeta: meta.ObjectMeta{Name: "dns-default", Namespace: "openshift-dns", Labels: map[string]string{"dns.operator.openshift.io/owning-dns": "default"}}}
		ds.Spec.Template.Labels = map[string]string{"dns.operator.openshift.io/daemonset-dns": "default"}
		ds.Spec.Template.Spec.Containers = []corev1.Container{{Name: "dns", Image: "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + strings.Repeat("0", 64)}}
		return []runtime.Object{ds, &corev1.Namespace{ObjectMeta: meta.ObjectMeta{Name: "openshift-dns"}}}
	case "coredns-chart":
		// The coredns chart's labels (charts/coredns/templates/_helpers.tpl).
		helm := map[string]string{front.HelmManagedByLabel: "Helm", front.HelmChartLabel: "coredns-1.46.2", "app.kubernetes.io/instance": "coredns"}
		return []runtime.Object{
			deployment("coredns", helm, helm, nil, []string{"helm"}, "coredns"),
			configMapOf("kube-system", "coredns", helm, nil, nil, corefile),
		}
	}
	panic(name)
}

// TestDetect: each platform's objects are recognised as that platform;
// EKS and AKS are never taken for kubeadm's editable ConfigMap.
func TestDetect(t *testing.T) {
	for _, tc := range []struct{ objects, want string }{
		{"kubeadm", "kubeadm"},
		{"k3s", "k3s"},
		{"rke2", "rke2"},
		{"eks", "eks"},
		{"eks-self-managed", "eks"},
		{"aks", "aks"},
		{"gke", "gke"},
		{"kube-dns-reconciled", "kube-dns"},
		{"openshift", "openshift"},
		{"coredns-chart", "coredns-chart"},
	} {
		kube := fake.NewSimpleClientset(platformObjects(tc.objects)...)
		row, why, err := (&frontOptions{}).detect(context.Background(), kube)
		if err != nil {
			t.Errorf("%s: %v", tc.objects, err)
			continue
		}
		if row.Name != tc.want {
			t.Errorf("%s: detected %s (%s), want %s", tc.objects, row.Name, why, tc.want)
		}
	}
	// EKS with a kubeadm-config left over is still EKS.
	objs := append(platformObjects("eks"), configMapOf("kube-system", "kubeadm-config", nil, nil, nil, nil))
	if row, _, _ := (&frontOptions{}).detect(context.Background(), fake.NewSimpleClientset(objs...)); row == nil || row.Name != "eks" {
		t.Errorf("EKS with kubeadm-config: %v", row)
	}
	if _, _, err := (&frontOptions{}).detect(context.Background(), fake.NewSimpleClientset()); err == nil {
		t.Error("no cluster DNS: detected one")
	}
}

func runFrontOn(t *testing.T, objs []runtime.Object, args ...string) (code int, stdout, stderr string, err error) {
	t.Helper()
	f := &frontOptions{clusterDomain: front.DefaultClusterDomain, readTimeout: front.DefaultReadTimeout, standalone: "kube-system/coredns-mcs", cidrs: stringList{"10.42.0.0/16"}}
	for _, a := range args {
		switch {
		case a == "--apply":
			f.apply = true
		case a == "--remove":
			f.remove = true
		case strings.HasPrefix(a, "--platform="):
			f.platform = strings.TrimPrefix(a, "--platform=")
		}
	}
	// Objects of kinds outside client-go's (OpenShift's DNS, rke2's
	// HelmChartConfig) are read through the dynamic client.
	var typed, custom []runtime.Object
	for _, o := range objs {
		if _, ok := o.(*unstructured.Unstructured); ok {
			custom = append(custom, o)
		} else {
			typed = append(typed, o)
		}
	}
	kube := fake.NewSimpleClientset(append(typed, standaloneService())...)
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	code, err = runFront(ctx, kube, dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), custom...), f, &out, &errOut)
	return code, out.String(), errOut.String(), err
}

// TestFrontStdout: stdout is the payload alone, every note on stderr:
// EKS's add-on value parses as JSON (jq, file://), kubeadm's ConfigMap as
// YAML without a comment line.
func TestFrontStdout(t *testing.T) {
	code, out, errOut, err := runFrontOn(t, platformObjects("eks"), "--platform=eks")
	if code != 0 || err != nil {
		t.Fatalf("front --platform eks: %d %v\n%s", code, err, errOut)
	}
	var value map[string]string
	if err := json.Unmarshal([]byte(out), &value); err != nil {
		t.Fatalf("stdout of front --platform eks is not JSON: %v\n%s", err, out)
	}
	if !strings.HasPrefix(value["corefile"], front.KubeadmCorefile) || !strings.Contains(value["corefile"], "forward . "+testStandaloneIP+" 127.0.0.1:5301") || len(value) != 1 {
		t.Errorf("the add-on value:\n%s", out)
	}
	for _, want := range []string{"# platform: eks (--platform)", "# standalone Service kube-system/coredns-mcs: " + testStandaloneIP, "# CoreDNS version: 1.14.6"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	// Detected, the same.
	if _, out, errOut, _ := runFrontOn(t, platformObjects("eks")); json.Unmarshal([]byte(out), &value) != nil || !strings.Contains(errOut, "# platform: eks (fields of kube-system/coredns are managed by \"eks\"") {
		t.Errorf("detected EKS:\n%s\n%s", out, errOut)
	}
	_, out, errOut, err = runFrontOn(t, platformObjects("kubeadm"))
	if err != nil || strings.Contains(out, "# platform") || strings.Contains(out, "# standalone") || !strings.HasPrefix(out, "apiVersion: v1\n") || !strings.Contains(errOut, "# platform: kubeadm") {
		t.Errorf("kubeadm: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
}

// TestApplyRefusesManaged: --apply writes no object a platform manager
// keeps, and says who keeps it and the supported way; it writes the
// objects that are the user's.
func TestApplyRefusesManaged(t *testing.T) {
	for _, tc := range []struct {
		name, objects, platform string
		refused                 []string // in the error; none: applied
	}{
		{"the EKS add-on's ConfigMap, detected", "eks", "", []string{"not an object kubectl mcs front writes", "aws eks update-addon"}},
		{"the EKS add-on's ConfigMap, as kubeadm's", "eks", "kubeadm", []string{"ConfigMap kube-system/coredns key Corefile is kept by the Amazon EKS add-on", "aws eks update-addon"}},
		{"a self-managed CoreDNS on EKS", "eks-self-managed", "", []string{"aws eks update-addon", "--platform kubeadm --apply edits its ConfigMap"}},
		{"a self-managed CoreDNS on EKS, as kubeadm's", "eks-self-managed", "kubeadm", nil},
		{"k3s's own coredns ConfigMap", "k3s", "kubeadm", []string{"k3s's deploy controller", "--platform k3s --apply"}},
		{"k3s's coredns-custom", "k3s", "", nil},
		{"AKS's coredns ConfigMap", "aks", "kubeadm", []string{"kept by AKS", "--platform aks --apply"}},
		{"AKS's coredns-custom", "aks", "", nil},
		{"the coredns chart's ConfigMap", "coredns-chart", "kubeadm", []string{"kept by Helm (chart coredns-1.46.2)", "helm upgrade"}},
		{"GKE's kube-dns ConfigMap (EnsureExists)", "gke", "", nil},
		{"a reconciled kube-dns ConfigMap", "kube-dns-reconciled", "", []string{"kept by the addon manager", "addonmanager.kubernetes.io/mode: Reconcile"}},
		{"kubeadm", "kubeadm", "", nil},
		{"OpenShift", "openshift", "", []string{"kubectl apply -f -", "spec.servers whole"}},
	} {
		args := []string{"--apply"}
		if tc.platform != "" {
			args = append(args, "--platform="+tc.platform)
		}
		code, _, errOut, err := runFrontOn(t, platformObjects(tc.objects), args...)
		if tc.refused == nil {
			if code != 0 || err != nil || !strings.Contains(errOut, "applied: ") {
				t.Errorf("%s: %d %v\n%s", tc.name, code, err, errOut)
			}
			// CoreDNS's reload follows imported files (docs/platforms.md).
			if strings.Contains(errOut, "coredns-custom") && !strings.Contains(errOut, "reload picks it up") {
				t.Errorf("%s: the message does not say that reload picks the imported file up:\n%s", tc.name, errOut)
			}
			continue
		}
		if code != 1 || err == nil {
			t.Errorf("%s: applied (%d)\n%s", tc.name, code, errOut)
			continue
		}
		for _, want := range tc.refused {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q lacks %q", tc.name, err, want)
			}
		}
		if strings.Contains(err.Error(), "instead: kubectl mcs front --apply") {
			t.Errorf("%s: recommends --apply on what it refused: %v", tc.name, err)
		}
	}
	// --remove --apply refuses the same.
	if code, _, _, err := runFrontOn(t, platformObjects("eks"), "--remove", "--apply", "--platform=kubeadm"); code != 1 || err == nil || !strings.Contains(err.Error(), "Amazon EKS add-on") {
		t.Errorf("--remove --apply on the EKS add-on's ConfigMap: %d %v", code, err)
	}
}

func standaloneServer(t *testing.T) *corefile {
	t.Helper()
	server, err := parseCorefile("ConfigMap kube-system/coredns-mcs", ".:53 {\n    multicluster clusterset.local in-addr.arpa ip6.arpa {\n        fallback cluster.local\n        standalone\n    }\n    kubernetes cluster.local\n}\n")
	if err != nil {
		t.Fatal(err)
	}
	return server
}

func reviewLines(t *testing.T, objs []runtime.Object) []Line {
	t.Helper()
	c := &checker{}
	l := layout{standalone: true, service: standaloneService()}
	frontReview(context.Background(), c, fake.NewSimpleClientset(objs...), l, standaloneServer(t))
	return c.lines
}

// TestFrontReviewManaged: where a manager keeps the front's configuration,
// check recommends the platform's way, never kubectl mcs front --apply.
func TestFrontReviewManaged(t *testing.T) {
	for _, tc := range []struct{ objects, want string }{
		{"eks", "kubectl mcs front --platform eks > value.json, then aws eks update-addon"},
		{"eks-self-managed", "kubectl mcs front --platform kubeadm --apply"},
		{"kube-dns-reconciled", "the platform's own way"},
		{"kubeadm", "kubectl mcs front --apply"},
	} {
		var fails []string
		for _, l := range reviewLines(t, platformObjects(tc.objects)) {
			if l.Status == fail {
				fails = append(fails, l.Message)
			}
		}
		if len(fails) == 0 {
			t.Errorf("%s: no FAIL line without the blocks", tc.objects)
		}
		for _, f := range fails {
			if !strings.Contains(f, tc.want) {
				t.Errorf("%s: %q lacks %q", tc.objects, f, tc.want)
			}
			if tc.objects != "kubeadm" && tc.objects != "eks-self-managed" && strings.Contains(f, "front --apply") {
				t.Errorf("%s: recommends --apply: %s", tc.objects, f)
			}
		}
	}
}

// TestFrontReviewOpenShift: the operator's Corefile, with the server
// front writes (a block per spec.servers entry, on 5353), forwards the
// clusterset zone to the standalone Service; without it, check says how
// to add it.
func TestFrontReviewOpenShift(t *testing.T) {
	withServer := ".:5353 {\n    errors\n    kubernetes cluster.local in-addr.arpa ip6.arpa {\n        pods insecure\n        fallthrough in-addr.arpa ip6.arpa\n    }\n    forward . /etc/resolv.conf\n}\n" +
		"# coredns-mcs\nclusterset.local:5353 42.10.in-addr.arpa:5353 {\n    prometheus 127.0.0.1:9153\n    forward . " + testStandaloneIP + " {\n        policy sequential\n    }\n    errors\n}\n"
	objs := append(platformObjects("openshift"), configMapOf("openshift-dns", "dns-default", nil, nil, nil, map[string]string{"Corefile": withServer}))
	lines := reviewLines(t, objs)
	if len(lines) != 1 || lines[0].Status != ok || !strings.Contains(lines[0].Message, "sends clusterset.local. to the standalone Service's ClusterIP") {
		t.Errorf("with the server: %+v", lines)
	}
	objs = append(platformObjects("openshift"), configMapOf("openshift-dns", "dns-default", nil, nil, nil, map[string]string{"Corefile": withServer[:strings.Index(withServer, "# coredns-mcs")]}))
	lines = reviewLines(t, objs)
	if len(lines) != 1 || lines[0].Status != fail || !strings.Contains(lines[0].Message, "kubectl mcs front --platform openshift | kubectl apply -f -") || strings.Contains(lines[0].Message, "--apply") {
		t.Errorf("without it: %+v", lines)
	}
}

// TestFrontRemoveEKS: --remove on the EKS add-on prints the same form as
// the install, the add-on's configuration value, whose corefile is the
// cluster's Corefile without coredns-mcs's blocks: aws eks update-addon
// --configuration-values takes no bare Corefile.
func TestFrontRemoveEKS(t *testing.T) {
	_, installed, _, err := runFrontOn(t, platformObjects("eks"), "--platform=eks")
	if err != nil {
		t.Fatal(err)
	}
	var value map[string]string
	if err := json.Unmarshal([]byte(installed), &value); err != nil {
		t.Fatal(err)
	}
	objs := platformObjects("eks")
	for _, o := range objs {
		if cm, ok := o.(*corev1.ConfigMap); ok && cm.Name == "coredns" {
			cm.Data["Corefile"] = value["corefile"]
		}
	}
	code, out, errOut, err := runFrontOn(t, objs, "--platform=eks", "--remove")
	if code != 0 || err != nil {
		t.Fatalf("front --platform eks --remove: %d %v\n%s", code, err, errOut)
	}
	value = nil
	if err := json.Unmarshal([]byte(out), &value); err != nil {
		t.Fatalf("stdout of --remove is not the add-on's JSON value: %v\n%s", err, out)
	}
	if len(value) != 1 || value["corefile"] != front.KubeadmCorefile {
		t.Errorf("the value of --remove, want the corefile without the blocks:\n%s", out)
	}
	if code, out, _, err := runFrontOn(t, objs, "--platform=eks", "--remove", "--apply"); code != 1 || err == nil || !strings.Contains(err.Error(), "aws eks update-addon") || json.Unmarshal([]byte(out), &value) != nil {
		t.Errorf("--remove --apply on the add-on: %d %v\n%s", code, err, out)
	}
}

// openShiftDNS is the DNS resource "default" with servers, in the shape of
// Server in operator/v1/types_dns.go of openshift/api (name, zones,
// forwardPlugin.upstreams).
func openShiftDNS(servers ...any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "operator.openshift.io/v1", "kind": "DNS",
		"metadata": map[string]any{"name": "default"},
		"spec":     map[string]any{"servers": servers, "logLevel": "Normal"},
	}}
}

// rke2CoreDNSConfig is the HelmChartConfig kube-system/rke2-coredns with
// valuesContent, as rke2's docs write it to enable NodeLocal DNSCache
// (docs/networking/networking_services.md of rancher/rke2-docs).
func rke2CoreDNSConfig(values string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "helm.cattle.io/v1", "kind": "HelmChartConfig",
		"metadata": map[string]any{"name": "rke2-coredns", "namespace": "kube-system"},
		"spec":     map[string]any{"valuesContent": values},
	}}
}

// liveFrom returns the object front prints, as the cluster holds it once
// applied.
func liveFrom(t *testing.T, out string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(out), &obj.Object); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return obj
}

// TestFrontKeepsOpenShiftServers: what front prints for OpenShift replaces
// spec.servers whole when applied, so it holds the user's own entries,
// kept, then coredns-mcs's, once however often it is applied; --remove
// prints the user's alone.
func TestFrontKeepsOpenShiftServers(t *testing.T) {
	corp := map[string]any{"name": "corp", "zones": []any{"corp.example"}, "forwardPlugin": map[string]any{"upstreams": []any{"10.1.2.3"}}}
	names := func(out string) []string {
		servers, _, err := unstructured.NestedSlice(liveFrom(t, out).Object, "spec", "servers")
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, s := range servers {
			n = append(n, s.(map[string]any)["name"].(string))
		}
		return n
	}
	objs := append(platformObjects("openshift"), openShiftDNS(corp))
	code, out, errOut, err := runFrontOn(t, objs)
	if code != 0 || err != nil {
		t.Fatalf("front: %d %v\n%s", code, err, errOut)
	}
	if got := names(out); !slices.Equal(got, []string{"corp", front.OpenShiftServerName}) || !strings.Contains(out, "- 10.1.2.3") || !strings.Contains(out, "- "+testStandaloneIP) {
		t.Errorf("servers %v, want the user's corp kept, then coredns-mcs:\n%s", got, out)
	}
	// Applied, then printed again: the same list.
	again := append(platformObjects("openshift"), liveFrom(t, out))
	if _, out2, _, _ := runFrontOn(t, again); out2 != out {
		t.Errorf("printed again over its own output:\n%s\nwant\n%s", out2, out)
	}
	code, out, errOut, err = runFrontOn(t, again, "--remove")
	if code != 0 || err != nil || !slices.Equal(names(out), []string{"corp"}) {
		t.Errorf("--remove: %d %v, want corp alone:\n%s%s", code, err, out, errOut)
	}
	// No DNS resource to read: the entry alone.
	if _, out, errOut, _ := runFrontOn(t, platformObjects("openshift")); !slices.Equal(names(out), []string{front.OpenShiftServerName}) || !strings.Contains(errOut, "none yet") {
		t.Errorf("without a DNS resource:\n%s%s", out, errOut)
	}
}

// TestFrontKeepsRKE2Values: the HelmChartConfig front prints for rke2
// replaces valuesContent whole when applied, so it holds the user's own
// values (here NodeLocal DNSCache, as rke2's docs enable it) and servers,
// kept, with coredns-mcs's added once; --remove takes those out alone.
func TestFrontKeepsRKE2Values(t *testing.T) {
	values := func(out string) map[string]any {
		text, _, err := unstructured.NestedString(liveFrom(t, out).Object, "spec", "valuesContent")
		if err != nil {
			t.Fatal(err)
		}
		v := map[string]any{}
		if err := yaml.Unmarshal([]byte(text), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	zones := func(v map[string]any) []string {
		var z []string
		for _, s := range v["servers"].([]any) {
			var names []string
			for _, zone := range s.(map[string]any)["zones"].([]any) {
				names = append(names, zone.(map[string]any)["zone"].(string))
			}
			z = append(z, strings.Join(names, " "))
		}
		return z
	}
	added := []string{"cluster.local.", "clusterset.local.", "42.10.in-addr.arpa.", "cluster.local. clusterset.local. 42.10.in-addr.arpa."}
	for _, tc := range []struct {
		name, values string
		first        []string // the servers before the added ones
	}{
		{"nodelocal, no servers", "nodelocal:\n  enabled: true\n", []string{"."}},
		{"the user's own servers", "nodelocal:\n  enabled: true\nservers:\n- zones:\n  - zone: .\n  port: 53\n  plugins:\n  - name: errors\n- zones:\n  - zone: corp.example.\n  port: 53\n  plugins:\n  - name: forward\n    parameters: . 10.1.2.3\n", []string{".", "corp.example."}},
	} {
		objs := append(platformObjects("rke2"), rke2CoreDNSConfig(tc.values))
		code, out, errOut, err := runFrontOn(t, objs)
		if code != 0 || err != nil {
			t.Fatalf("%s: front: %d %v\n%s", tc.name, code, err, errOut)
		}
		v := values(out)
		if got := zones(v); !slices.Equal(got, append(slices.Clone(tc.first), added...)) || v["nodelocal"] == nil {
			t.Errorf("%s: servers %v and nodelocal %v, want %v then the added ones, and nodelocal kept:\n%s", tc.name, got, v["nodelocal"], tc.first, out)
		}
		again := append(platformObjects("rke2"), liveFrom(t, out))
		if _, out2, _, _ := runFrontOn(t, again); out2 != out {
			t.Errorf("%s: printed again over its own output:\n%s\nwant\n%s", tc.name, out2, out)
		}
		code, out, errOut, err = runFrontOn(t, again, "--remove")
		if v := values(out); code != 0 || err != nil || !slices.Equal(zones(v), tc.first) || v["nodelocal"] == nil {
			t.Errorf("%s: --remove: %d %v, want servers %v and nodelocal:\n%s%s", tc.name, code, err, tc.first, out, errOut)
		}
	}
}

// TestFrontKeepsStubDomains: the kube-dns ConfigMap front prints replaces
// stubDomains whole when applied, so it holds the cluster's own stub
// domains, kept, as --apply writes them.
func TestFrontKeepsStubDomains(t *testing.T) {
	objs := platformObjects("gke")
	for _, o := range objs {
		if cm, ok := o.(*corev1.ConfigMap); ok && cm.Name == "kube-dns" {
			cm.Data = map[string]string{"stubDomains": `{"corp.example":["10.1.2.3"]}`}
		}
	}
	code, out, errOut, err := runFrontOn(t, objs)
	if code != 0 || err != nil {
		t.Fatalf("front: %d %v\n%s", code, err, errOut)
	}
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal([]byte(out), &cm); err != nil {
		t.Fatal(err)
	}
	var stubs map[string][]string
	if err := json.Unmarshal([]byte(cm.Data["stubDomains"]), &stubs); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !slices.Equal(stubs["corp.example"], []string{"10.1.2.3"}) || !slices.Equal(stubs["clusterset.local"], []string{testStandaloneIP}) || !slices.Equal(stubs["42.10.in-addr.arpa"], []string{testStandaloneIP}) {
		t.Errorf("stub domains %v, want corp.example kept and coredns-mcs's zones:\n%s", stubs, out)
	}
}
