package mcsctl

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/coredns-mcs/coredns-mcs/internal/front"
)

func k3sObjects(custom map[string]string) []runtime.Object {
	optional := true
	dep := &appsv1.Deployment{
		ObjectMeta: meta.ObjectMeta{Name: "coredns", Namespace: "kube-system"},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "custom", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "coredns-custom"}, Optional: &optional},
		}}}}}},
	}
	objs := []runtime.Object{dep, &corev1.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: "coredns", Namespace: "kube-system"}, Data: map[string]string{"Corefile": front.K3sCorefile}}}
	if custom != nil {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: "coredns-custom", Namespace: "kube-system"}, Data: custom})
	}
	return objs
}

// TestFrontReviewK3s: on k3s (and AKS) the blocks are the key
// multicluster.server of coredns-custom.
func TestFrontReviewK3s(t *testing.T) {
	const ip = "10.43.0.53"
	l := layout{standalone: true, service: &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: ip}}}
	server, err := parseCorefile("ConfigMap kube-system/coredns-mcs", ".:53 {\n    multicluster clusterset.local in-addr.arpa ip6.arpa {\n        fallback cluster.local\n        standalone\n    }\n    kubernetes cluster.local\n}\n")
	if err != nil {
		t.Fatal(err)
	}
	review := func(custom map[string]string) []Line {
		c := &checker{}
		frontReview(context.Background(), c, fake.NewSimpleClientset(k3sObjects(custom)...), l, server)
		return c.lines
	}
	fails := func(lines []Line) []string {
		var out []string
		for _, l := range lines {
			if l.Status == fail {
				out = append(out, l.Message)
			}
		}
		return out
	}
	good := frontBlocks(t, ip)
	if f := fails(review(map[string]string{front.CustomKey: good, "log.override": "log"})); len(f) != 0 {
		t.Errorf("correct coredns-custom: %v", f)
	}
	for _, tc := range []struct {
		name   string
		custom map[string]string
		want   string
	}{
		{"no coredns-custom", nil, "ConfigMap kube-system/coredns-custom key multicluster.server has no server blocks forwarding to coredns-mcs"},
		{"stale address", map[string]string{front.CustomKey: strings.ReplaceAll(good, ip, "10.43.0.99")}, "forward to an address that is not the standalone Service's ClusterIP 10.43.0.53"},
		{"no stand-in", map[string]string{front.CustomKey: good[:strings.Index(good, "cluster.local:5301")]}, "no stand-in block"},
		{"no view", map[string]string{front.CustomKey: strings.Replace(good, "    view multicluster {\n        expr name() matches '"+front.ServiceNamePattern("cluster.local")+"'\n    }\n", "", 1)}, "has no view"},
	} {
		f := fails(review(tc.custom))
		if len(f) != 1 || !strings.Contains(f[0], tc.want) || !strings.Contains(f[0], "kubectl mcs front --apply") {
			t.Errorf("%s: FAIL lines %q, want one with %q and its fix", tc.name, f, tc.want)
		}
	}
}

// TestCheckNoLoop: a forward, or no standalone option, in the standalone
// Corefile is one FAIL line each.
func TestCheckNoLoop(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{".:53 {\n    multicluster clusterset.local {\n        standalone\n    }\n    kubernetes cluster.local\n}\n", ""},
		{".:53 {\n    multicluster clusterset.local {\n        standalone\n    }\n    kubernetes cluster.local\n    forward . /etc/resolv.conf\n}\n", "has forward"},
		{".:53 {\n    multicluster clusterset.local\n    kubernetes cluster.local\n}\n", "no standalone option"},
	} {
		cf, err := parseCorefile("Corefile", tc.text)
		if err != nil {
			t.Fatal(err)
		}
		c := &checker{}
		checkNoLoop(c, cf)
		var fails []string
		for _, l := range c.lines {
			if l.Status == fail {
				fails = append(fails, l.Message)
			}
		}
		switch {
		case tc.want == "" && len(fails) > 0:
			t.Errorf("%q: %v", tc.text, fails)
		case tc.want != "" && (len(fails) != 1 || !strings.Contains(fails[0], tc.want)):
			t.Errorf("%q: %v, want one with %q", tc.text, fails, tc.want)
		}
	}
}
