package controlplane

import (
	"os"
	"testing"
)

// ForTest starts a control plane for t and stops it when t and its subtests
// finish, whether they pass, fail or panic.
//
// When the binaries can neither be found nor built, the test fails if the
// environment variable CI is "true" (so CI never silently skips the
// integration tests) and is skipped otherwise. With -short it is skipped
// without starting anything.
func ForTest(t testing.TB, opts Options) *ControlPlane {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping: needs etcd and kube-apiserver, which -short leaves out")
	}
	if opts.AssetsDir == "" {
		dir, err := Assets()
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("kube-apiserver and etcd are required in CI: %v", err)
			}
			t.Skipf("skipping: kube-apiserver and etcd are unavailable (run %s or set %s): %v", buildScript, AssetsEnv, err)
		}
		opts.AssetsDir = dir
	}
	cp, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("start control plane: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kube-apiserver log (last 40 lines):\n%s", cp.APIServerLogTail(40))
		}
		if err := cp.Stop(); err != nil {
			t.Errorf("stop control plane: %v", err)
		}
	})
	return cp
}
