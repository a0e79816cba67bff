package controlplane

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// AssetsEnv names the directory with the kube-apiserver and etcd binaries, as
// in envtest-based tooling, so an existing setup can be reused.
const AssetsEnv = "KUBEBUILDER_ASSETS"

// buildScript is the script, relative to the repository root, that builds
// the binaries and prints their directory.
const buildScript = "test/testbin/build.sh"

var assets struct {
	sync.Mutex
	dir string
}

// Assets returns the directory with the kube-apiserver and etcd binaries:
// $KUBEBUILDER_ASSETS if set, otherwise the output of test/testbin/build.sh,
// which returns a cached build at once but needs several minutes and the Go
// module proxy the first time on a machine. Build progress goes to stderr.
func Assets() (string, error) {
	if dir := os.Getenv(AssetsEnv); dir != "" {
		if err := checkAssets(dir); err != nil {
			return "", fmt.Errorf("%s: %w", AssetsEnv, err)
		}
		return dir, nil
	}

	// Serialise builds within one test binary; build.sh itself serialises
	// builds across processes.
	assets.Lock()
	defer assets.Unlock()
	if assets.dir != "" {
		return assets.dir, nil
	}
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("bash", filepath.Join(root, buildScript))
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("build kube-apiserver and etcd with %s (or set %s): %w", buildScript, AssetsEnv, err)
	}
	dir := strings.TrimSpace(string(out))
	if i := strings.LastIndexByte(dir, '\n'); i >= 0 {
		dir = dir[i+1:]
	}
	if err := checkAssets(dir); err != nil {
		return "", fmt.Errorf("%s printed %q: %w", buildScript, dir, err)
	}
	assets.dir = dir
	return dir, nil
}

// checkAssets reports whether dir holds executable kube-apiserver and etcd
// binaries.
func checkAssets(dir string) error {
	for _, name := range []string{"kube-apiserver", "etcd"} {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("no %s binary in %s: %w", name, dir, err)
		}
		if info.IsDir() || info.Mode()&0o111 == 0 {
			return fmt.Errorf("%s is not an executable file", filepath.Join(dir, name))
		}
	}
	return nil
}

// repoRoot finds the repository root: first from this source file's
// location, which works wherever the test binary runs, then, for binaries
// built with -trimpath, by walking up from the working directory.
func repoRoot() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		root := filepath.Join(filepath.Dir(file), "..", "..")
		if isRepoRoot(root) {
			return filepath.Clean(root), nil
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repository root: %w", err)
	}
	for {
		if isRepoRoot(dir) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find repository root: no directory above the working directory has " + buildScript +
				"; set " + AssetsEnv + " to a directory with kube-apiserver and etcd")
		}
		dir = parent
	}
}

// isRepoRoot reports whether dir is the root of this module: it has the build
// script and a go.mod declaring this module (not the nested testbin module).
func isRepoRoot(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, buildScript)); err != nil {
		return false
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	return err == nil && bytes.Contains(gomod, []byte("module github.com/coredns-mcs/coredns-mcs\n"))
}
