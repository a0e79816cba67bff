package mcsctl

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/coredns-mcs/coredns-mcs/internal/front"
)

func TestLeavesOutImported(t *testing.T) {
	for _, tc := range []struct {
		labels string // the kubernetes stanza's labels line, if any
		want   bool
	}{
		{"", false},
		{"labels !multicluster.kubernetes.io/source-cluster", true},
		{"labels app=web,!multicluster.kubernetes.io/source-cluster", true},
		{"labels app in (a, b), !multicluster.kubernetes.io/source-cluster", true},
		{"labels multicluster.kubernetes.io/source-cluster", false},
		{"labels multicluster.kubernetes.io/source-cluster!=east", false},
		{"labels !multicluster.kubernetes.io/service-name", false},
		{"labels !!bad", false},
	} {
		text := ".:53 {\n    multicluster clusterset.local\n    kubernetes cluster.local {\n        pods insecure\n        " + tc.labels + "\n        fallthrough in-addr.arpa\n    }\n}\n"
		cf, err := parseCorefile("test", text)
		if err != nil {
			t.Fatalf("%q: %v", tc.labels, err)
		}
		k, _, ok := stanza(cf.blocks[0], "kubernetes")
		if !ok {
			t.Fatalf("%q: no kubernetes stanza", tc.labels)
		}
		if got := leavesOutImported(k); got != tc.want {
			t.Errorf("%q: leavesOutImported = %v, want %v", tc.labels, got, tc.want)
		}
	}
}

// TestCheckReady: the standalone layout FAILs with no ready pod.
func TestCheckReady(t *testing.T) {
	two := int32(2)
	zero := int32(0)
	for _, tc := range []struct {
		replicas *int32
		ready    int32
		want     status
		text     string
	}{
		{&two, 0, fail, "has 0 of 2 pods ready"},
		{&two, 1, warn, "has 1 of 2 pods ready"},
		{&two, 2, ok, "has 2 of 2 pods ready"},
		{&zero, 0, fail, "is scaled to 0"},
		{nil, 0, fail, "has 0 of 1 pods ready"},
	} {
		d := &appsv1.Deployment{ObjectMeta: meta.ObjectMeta{Name: "coredns-mcs", Namespace: "kube-system"}, Spec: appsv1.DeploymentSpec{Replicas: tc.replicas}, Status: appsv1.DeploymentStatus{ReadyReplicas: tc.ready}}
		c := &checker{}
		checkReady(c, "kube-system/coredns-mcs", d)
		if len(c.lines) != 1 || c.lines[0].Status != tc.want || !strings.Contains(c.lines[0].Message, tc.text) {
			t.Errorf("%v ready %d: %+v", tc.replicas, tc.ready, c.lines)
		}
	}
}

// TestCheckClusterProperty: check says the id the server takes, lower case,
// and warns of a value the server takes as none.
func TestCheckClusterProperty(t *testing.T) {
	for _, tc := range []struct {
		value  any
		status status
		text   string
	}{
		{"West", ok, `this cluster's id is "west"`},
		{"east.eu", ok, `this cluster's id is "east.eu"`},
		{"not an id", warn, `spec.value "not an id" is not a cluster id`},
		{int64(7), warn, `spec.value "" is not a cluster id`},
	} {
		prop := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "about.k8s.io/v1alpha1", "kind": "ClusterProperty",
			"metadata": map[string]any{"name": "cluster.clusterset.k8s.io"},
			"spec":     map[string]any{"value": tc.value},
		}}
		c := &checker{}
		checkClusterProperty(c, prop)
		if len(c.lines) != 1 || c.lines[0].Status != tc.status || !strings.Contains(c.lines[0].Message, tc.text) {
			t.Errorf("value %v: %+v, want %s with %q", tc.value, c.lines, tc.status, tc.text)
		}
	}
}

// TestFrontReviewReadTimeout: check warns where the front's CoreDNS has
// forward's read_timeout (1.14.5 on) but the blocks forwarding to
// coredns-mcs do not set it, naming kubectl mcs front with the version;

// kubeadmFront returns kubeadm's objects with the front's blocks written
// for CoreDNS written merged into the Corefile, and the Deployment's image
// tagged image (none when empty: the version is unknown).
func kubeadmFront(t *testing.T, image, written string) []runtime.Object {
	t.Helper()
	servers, err := front.Options{Standalone: testStandaloneIP, ReverseCIDRs: []string{"10.42.0.0/16"}, CoreDNSVersion: written}.Servers()
	if err != nil {
		t.Fatal(err)
	}
	objs := platformObjects("kubeadm")
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.ConfigMap:
			if o.Name == "coredns" {
				o.Data["Corefile"] = front.Merge(front.KubeadmCorefile, front.Corefile(servers))
			}
		case *appsv1.Deployment:
			o.Spec.Template.Spec.Containers[0].Image = strings.TrimSuffix("registry.k8s.io/coredns/coredns:v"+image, ":v")
		}
	}
	return objs
}

// not where they set it, nor on a CoreDNS without it.
func TestFrontReviewReadTimeout(t *testing.T) {
	for _, tc := range []struct {
		image, written string // the front's image tag; the version the blocks were written for
		warn           bool
	}{
		{"1.14.6", "", true},
		{"1.14.5", "1.14.4", true},
		{"1.14.6", "1.14.6", false},
		{"1.14.4", "", false},
		{"", "", false}, // no version in the tag: unknown
	} {
		objs := kubeadmFront(t, tc.image, tc.written)
		var warns, fails []string
		for _, l := range reviewLines(t, objs) {
			switch l.Status {
			case warn:
				warns = append(warns, l.Message)
			case fail:
				fails = append(fails, l.Message)
			}
		}
		if len(fails) > 0 {
			t.Errorf("image %q, written for %q: FAIL lines %v", tc.image, tc.written, fails)
		}
		got := slices.ContainsFunc(warns, func(m string) bool {
			return strings.Contains(m, "without read_timeout, which CoreDNS "+tc.image+" (image ") && strings.Contains(m, "kubectl mcs front --coredns-version "+tc.image+" --apply")
		})
		if got != tc.warn {
			t.Errorf("image %q, written for %q: WARN about read_timeout %v, want %v: %q", tc.image, tc.written, got, tc.warn, warns)
		}
	}
}

// TestFrontReviewPath: check says what the standalone path costs: behind a
// CoreDNS without read_timeout a WARN that names the swap; with it, an OK
// that names the read timeouts; nothing on an unknown version.
func TestFrontReviewPath(t *testing.T) {
	for _, tc := range []struct {
		image  string
		status status
		want   string
	}{
		{"1.14.4", warn, "the standalone path behind CoreDNS 1.14.4 (image "},
		{"1.14.6", ok, "the standalone path behind CoreDNS 1.14.6 (image "},
		{"", "", "the standalone path"},
	} {
		objs := kubeadmFront(t, tc.image, tc.image)
		var found []string
		for _, l := range reviewLines(t, objs) {
			if strings.Contains(l.Message, "the standalone path") {
				found = append(found, string(l.Status)+" "+l.Message)
				if l.Status != tc.status || !strings.Contains(l.Message, tc.want) {
					t.Errorf("image %q: %s %s, want %s with %q", tc.image, l.Status, l.Message, tc.status, tc.want)
				}
				if tc.status == warn && !strings.Contains(l.Message, "Swap on k3s, EKS and rke2") {
					t.Errorf("image %q: the WARN does not name the swap: %s", tc.image, l.Message)
				}
			}
		}
		if (tc.status != "") != (len(found) == 1) {
			t.Errorf("image %q: lines about the path %q", tc.image, found)
		}
	}
}
