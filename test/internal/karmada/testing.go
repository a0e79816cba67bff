package karmada

import (
	"fmt"
	"os"
	"testing"
)

// ForTest starts Karmada and its members for t and stops them when t and its
// subtests finish, whether they pass, fail or panic. On failure it logs the
// end of every component's log.
//
// When the binaries can neither be found nor built, the test fails if the
// environment variable CI is "true" and is skipped otherwise. With -short it
// is skipped without starting anything.
func ForTest(t testing.TB, opts Options) *Karmada {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping: needs a Karmada control plane and two member clusters, which -short leaves out")
	}
	if _, _, err := Assets(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the kube and karmada binaries are required in CI: %v", err)
		}
		t.Skipf("skipping: the kube and karmada binaries are unavailable (test/testbin/build.sh kube karmada): %v", err)
	}
	k, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("start Karmada: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(k.Logs(40))
		}
		if err := k.Stop(); err != nil {
			t.Errorf("stop Karmada: %v", err)
		}
	})
	return k
}

// Components are the names LogTail knows.
var Components = []string{
	"karmada-controller-manager", "karmada-scheduler", "karmada-webhook",
	"karmada-aggregated-apiserver", "kube-controller-manager", "karmada", Member1, Member2,
}

// Logs returns the last n lines of every component's log, for failure
// messages.
func (k *Karmada) Logs(n int) string {
	var out string
	for _, c := range Components {
		out += fmt.Sprintf("--- %s (last %d lines):\n%s\n", c, n, k.LogTail(c, n))
	}
	return out
}

// readFile reads a file the harness wrote itself.
func readFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}
