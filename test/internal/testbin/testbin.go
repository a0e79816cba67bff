// Package testbin finds the third-party binaries the tests run, which
// test/testbin/build.sh builds in sets (kube, mcs, karmada...) and caches.
//
// Dir(set) returns the directory of a set: the one named by the set's
// environment variable when it is set (so that CI and `make test` build once
// and every test package reuses the result), otherwise the one build.sh
// prints, building the set the first time on a machine (minutes).
package testbin

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
	"testing"
)

// Script is the build script, relative to the repository root.
const Script = "test/testbin/build.sh"

// EnvVar returns the environment variable that names the directory of set:
// TESTBIN_<SET>, such as TESTBIN_MCS. The kube set also answers to
// KUBEBUILDER_ASSETS, which envtest-based tooling sets (see Dir).
func EnvVar(set string) string {
	return "TESTBIN_" + strings.ToUpper(set)
}

// KubebuilderAssets is the variable envtest-based tooling uses for the
// directory of kube-apiserver and etcd; Dir("kube") honours it.
const KubebuilderAssets = "KUBEBUILDER_ASSETS"

var built struct {
	sync.Mutex
	dirs map[string]string
}

// Dir returns the directory of set, after checking that it holds every
// binary in want. Build progress goes to stderr.
func Dir(set string, want ...string) (string, error) {
	envs := []string{EnvVar(set)}
	if set == "kube" {
		envs = append(envs, KubebuilderAssets)
	}
	for _, env := range envs {
		if dir := os.Getenv(env); dir != "" {
			if err := Check(dir, want...); err != nil {
				return "", fmt.Errorf("%s: %w", env, err)
			}
			return dir, nil
		}
	}

	// Serialise builds within one test binary; build.sh itself serialises
	// builds across processes.
	built.Lock()
	defer built.Unlock()
	if dir := built.dirs[set]; dir != "" {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("bash", filepath.Join(root, Script), set)
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("build the %s binaries with %s %s (or set %s): %w", set, Script, set, EnvVar(set), err)
	}
	dir := strings.TrimSpace(string(out))
	if i := strings.LastIndexByte(dir, '\n'); i >= 0 {
		dir = dir[i+1:]
	}
	if err := Check(dir, want...); err != nil {
		return "", fmt.Errorf("%s %s printed %q: %w", Script, set, dir, err)
	}
	if built.dirs == nil {
		built.dirs = map[string]string{}
	}
	built.dirs[set] = dir
	return dir, nil
}

// Check reports whether dir holds an executable file for every name.
func Check(dir string, names ...string) error {
	for _, name := range names {
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

// RepoRoot finds the repository root: first from this source file's
// location, which works wherever the test binary runs, then, for binaries
// built with -trimpath, by walking up from the working directory.
func RepoRoot() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		root := filepath.Join(filepath.Dir(file), "..", "..", "..")
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
			return "", errors.New("find repository root: no directory above the working directory has " + Script)
		}
		dir = parent
	}
}

// isRepoRoot reports whether dir is the root of this module: it has the build
// script and a go.mod declaring this module (not a nested tools module).
func isRepoRoot(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, Script)); err != nil {
		return false
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	return err == nil && bytes.Contains(gomod, []byte("module github.com/coredns-mcs/coredns-mcs\n"))
}

// Binary returns the path of the binary name of set for a test: without the
// set the test is skipped, and under CI=true, where every set is built, it
// fails.
func Binary(t testing.TB, set, name string) string {
	t.Helper()
	dir, err := Dir(set, name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s (the %s test binaries) is required in CI: %v", name, set, err)
		}
		t.Skipf("%s (the %s test binaries, make testbin): %v", name, set, err)
	}
	return filepath.Join(dir, name)
}
