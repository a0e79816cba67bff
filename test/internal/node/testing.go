//go:build linux

package node

import (
	"errors"
	"os"
	"testing"
)

// ForTest starts a node for t and stops it when t and its subtests finish,
// whether they pass, fail or panic. Progress and timings go to t.Log; when
// t failed, the ends of the daemons' logs too.
//
// When the machine lacks a prerequisite (root, a Debian package, the kube
// binaries), the test fails if the environment variable CI is "true" and is
// skipped otherwise. With -short it is skipped without starting anything.
func ForTest(t testing.TB, opts Options) *Node {
	t.Helper()
	Require(t)
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	n, err := Start(t.Context(), opts)
	if errors.Is(err, ErrPrerequisite) && os.Getenv("CI") != "true" {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatalf("start node: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, name := range []string{"kubelet", "containerd", "kube-proxy", "kube-controller-manager", "kube-scheduler", "kube-apiserver"} {
				t.Logf("%s log (last 25 lines):\n%s", name, n.LogTail(name, 25))
			}
		}
		if err := n.Stop(); err != nil {
			t.Errorf("stop node: %v", err)
		}
	})
	return n
}

// Require skips t with -short, and when the machine cannot run a node:
// then it fails t if the environment variable CI is "true" and skips it
// otherwise, saying what is missing.
func Require(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping: needs a real node, which -short leaves out")
	}
	if err := CheckPrerequisites(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("a node is required in CI: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
}

// ClustersForTest starts count clusters side by side (indexes 0 to
// count-1, each with opts but its own Index), joins them with Connect, and
// undoes it all when t and its subtests finish. Skips and failures as in
// ForTest.
func ClustersForTest(t testing.TB, count int, opts Options) ([]*Node, *Network) {
	t.Helper()
	Require(t)
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	nodes, err := StartClusters(t.Context(), count, opts)
	if errors.Is(err, ErrPrerequisite) && os.Getenv("CI") != "true" {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatalf("start %d clusters: %v", count, err)
	}
	for _, n := range nodes {
		t.Cleanup(func() {
			if t.Failed() {
				for _, name := range []string{"kubelet", "containerd", "kube-proxy", "kube-apiserver"} {
					t.Logf("%s: %s log (last 25 lines):\n%s", n.Layout.Name, name, n.LogTail(name, 25))
				}
			}
			if err := n.Stop(); err != nil {
				t.Errorf("stop %s: %v", n.Layout.Name, err)
			}
		})
	}
	net, err := Connect(t.Context(), nodes...)
	if err != nil {
		t.Fatalf("connect the clusters: %v", err)
	}
	t.Cleanup(func() {
		if err := net.Close(); err != nil {
			t.Errorf("disconnect the clusters: %v", err)
		}
	})
	return nodes, net
}
