package mcsctl

import (
	"strings"
	"testing"

	"github.com/coredns/caddy/caddyfile"
	"github.com/coredns/coredns/plugin/kubernetes"

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

// TestForwardReadTimeout: explain says how long the front waits for the
// standalone server: the forward's read_timeout, or forward's fixed 2 s on
// a CoreDNS without it.
func TestForwardReadTimeout(t *testing.T) {
	for _, c := range []struct {
		version, name, want string
	}{
		{"1.14.6", "cart.shop.svc.clusterset.local.", "1s"},
		{"1.14.6", "cart.shop.svc.cluster.local.", "120ms"},
		{"1.14.4", "cart.shop.svc.clusterset.local.", "2s"},
	} {
		servers, err := front.Options{Standalone: "10.96.0.53", CoreDNSVersion: c.version}.Servers()
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := caddyfile.Parse("Corefile", strings.NewReader(front.Corefile(servers)), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := takeBlock(blocks, c.name)
		if b == nil {
			t.Fatalf("CoreDNS %s: no block takes %s", c.version, c.name)
		}
		if got := forwardReadTimeout(*b); got != c.want {
			t.Errorf("CoreDNS %s, %s: read timeout %s, want %s", c.version, c.name, got, c.want)
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
