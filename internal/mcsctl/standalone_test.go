package mcsctl

import (
	"context"
	"strings"
	"testing"

	"github.com/coredns/caddy/caddyfile"
	"github.com/coredns/coredns/plugin/kubernetes"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/coredns-mcs/coredns-mcs/internal/front"
)

func frontBlocks(t *testing.T, ip string) string {
	t.Helper()
	servers, err := front.Options{Standalone: ip, ReverseCIDRs: []string{"10.42.0.0/16"}}.Servers()
	if err != nil {
		t.Fatal(err)
	}
	return front.Corefile(servers)
}

// TestTakeBlock: the front's block for a name, as CoreDNS picks it, the
// view's expression evaluated with Go's regexp.
func TestTakeBlock(t *testing.T) {
	text := front.Merge(front.KubeadmCorefile, frontBlocks(t, "10.96.0.53"))
	blocks, err := caddyfile.Parse("Corefile", strings.NewReader(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, block, step string }{
		{"cart.shop.svc.cluster.local.", "cluster.local:53", "is true for cart.shop.svc.cluster.local."},
		{"Cart.Shop.svc.Cluster.Local.", "cluster.local:53", "is true for cart.shop.svc.cluster.local."},
		{"_http._tcp.cart.shop.svc.cluster.local.", "cluster.local:53", "is true"},
		{"example.com.cluster.local.", ".:53", "is false for example.com.cluster.local."},
		{"shop.svc.cluster.local.", ".:53", "is false"},
		{"10-0-0-1.shop.pod.cluster.local.", ".:53", "is false"},
		{"cart.shop.svc.clusterset.local.", "clusterset.local:53", ""},
		{"1.3.42.10.in-addr.arpa.", "42.10.in-addr.arpa:53", ""},
		{"1.0.96.10.in-addr.arpa.", ".:53", ""},
		{"example.com.", ".:53", ""},
	} {
		b, steps := takeBlock(blocks, tc.name)
		if b == nil || strings.Join(b.Keys, " ") != tc.block {
			t.Errorf("%s: block %v, want %s", tc.name, b, tc.block)
			continue
		}
		if !strings.Contains(strings.Join(steps, "\n"), tc.step) {
			t.Errorf("%s: steps lack %q: %v", tc.name, tc.step, steps)
		}
	}
}

func TestKubernetesPassesOn(t *testing.T) {
	k := kubernetes.New([]string{"cluster.local.", "in-addr.arpa."})
	k.Fall.SetZonesFromArgs([]string{"in-addr.arpa."})
	if got := kubernetesPassesOn(k, "example.com."); !strings.Contains(got, "example.com. is not in the kubernetes plugin's zones (cluster.local. in-addr.arpa.)") || strings.Contains(got, "fallthrough") {
		t.Errorf("outside its zones: %s", got)
	}
	if got := kubernetesPassesOn(k, "1.0.0.10.in-addr.arpa."); !strings.Contains(got, "falls through (fallthrough in-addr.arpa.)") {
		t.Errorf("fallthrough: %s", got)
	}
}

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

// TestForwardReadTimeout: explain says how long the front waits for the
// standalone server: the forward's read_timeout, or forward's fixed 2 s on
// a CoreDNS without it.
func TestForwardReadTimeout(t *testing.T) {
	for _, c := range []struct {
		version, want string
	}{
		{"1.14.6", "20ms"},
		{"1.14.4", "2s"},
	} {
		servers, err := front.Options{Standalone: "10.96.0.53", CoreDNSVersion: c.version}.Servers()
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := caddyfile.Parse("Corefile", strings.NewReader(front.Corefile(servers)), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := takeBlock(blocks, "cart.shop.svc.clusterset.local.")
		if b == nil {
			t.Fatalf("CoreDNS %s: no block takes the clusterset name", c.version)
		}
		if got := forwardReadTimeout(*b); got != c.want {
			t.Errorf("CoreDNS %s: read timeout %s, want %s", c.version, got, c.want)
		}
	}
}
