// Package karmadae2e runs the walkthrough of docs/karmada.md against a real
// Karmada control plane and two member clusters (test/internal/karmada): Karmada's own
// controllers move a Service from member1 to member2, and build/coredns,
// pointed at a member's API server with the Corefile of that guide, is
// queried over UDP and TCP next to the same binary without the multicluster
// plugin.
package karmadae2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/karmada"
	"github.com/coredns-mcs/coredns-mcs/test/internal/testbin"
)

// Shared by the package's tests; each works in namespaces of its own.
var (
	kmd    *karmada.Karmada
	binary string
	// guide is docs/karmada.md, whose Corefile and manifests the tests run.
	guide string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		return m.Run() // every test skips without kmd
	}
	ci := os.Getenv("CI") == "true"
	if _, _, err := karmada.Assets(); err != nil {
		if ci {
			fmt.Fprintf(os.Stderr, "FAIL: the kube and karmada binaries are required in CI: %v\n", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "SKIP: the Karmada tests need the kube and karmada binaries (test/testbin/build.sh kube karmada): %v\n", err)
		return 0
	}
	root, err := testbin.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	data, err := os.ReadFile(filepath.Join(root, "docs", "karmada.md"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	guide = string(data)
	workDir, err := os.MkdirTemp("", "coredns-mcs-karmadae2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	defer os.RemoveAll(workDir)
	if binary, err = harness.CoreDNSBinary(workDir); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: coredns binary: %v\n", err)
		return 1
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	kmd, err = karmada.Start(ctx, karmada.Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: start Karmada: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "karmada %s: control plane and 2 members ready in %s\n", karmada.Version, time.Since(start).Round(time.Millisecond))
	code := m.Run()
	if code != 0 {
		fmt.Fprintln(os.Stderr, kmd.Logs(200))
	}
	if err := kmd.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: stop Karmada: %v\n", err)
		code = 1
	}
	return code
}

// needKarmada skips t under -short, where TestMain starts nothing.
func needKarmada(t *testing.T) {
	t.Helper()
	if kmd == nil {
		t.Skip("skipping: needs a Karmada control plane and two member clusters, which -short leaves out")
	}
}
