// Package deploy tests what users deploy: the Dockerfile, the release
// archives of Makefile.release and the kustomizations in manifests/, the
// latter applied to a real kube-apiserver and etcd with kubectl, and the
// Corefile and RBAC of manifests/ run by the coredns binary.
package deploy

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
)

// ci and unavailable: a missing tool fails a test under CI=true, and
// skips it otherwise.
var ci, unavailable = harness.CI, harness.Unavailable

// repoRoot returns the repository root; go test runs in the package
// directory, test/deploy.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found from the working directory: %v", err)
	}
	return root
}

// readRepoFile returns the content of a file given relative to the
// repository root.
func readRepoFile(t testing.TB, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// lookTool returns the path of an executable on PATH, or fails or skips t.
func lookTool(t testing.TB, name, hint string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		unavailable(t, "%s not found (%s): %v", name, hint, err)
	}
	return path
}

var built struct {
	sync.Mutex
	dir, path string
	err       error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// corednsBinary returns $COREDNS_BINARY, or builds the binary once per test
// run into a temporary directory.
func corednsBinary(t testing.TB) string {
	t.Helper()
	if b := os.Getenv("COREDNS_BINARY"); b != "" {
		if _, err := os.Stat(b); err != nil {
			t.Fatalf("COREDNS_BINARY: %v", err)
		}
		return b
	}
	built.Lock()
	defer built.Unlock()
	if built.path == "" && built.err == nil {
		built.dir, built.err = os.MkdirTemp("", "coredns-mcs-deploy-")
		if built.err == nil {
			built.path, built.err = harness.GoBuild(filepath.Join(built.dir, "coredns"), "github.com/coredns-mcs/coredns-mcs/coredns")
		}
	}
	if built.err != nil {
		t.Fatalf("build coredns (or set COREDNS_BINARY): %v", built.err)
	}
	return built.path
}

// run runs a command in the repository root and returns its combined
// output; a non-zero exit is returned as an error that includes the output.
func run(ctx context.Context, t testing.TB, env []string, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s %s (%s)", filepath.Base(name), strings.Join(args, " "), time.Since(start).Round(10*time.Millisecond))
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
