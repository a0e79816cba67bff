package testbin

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// SharedSets are the sets built with the main module's versions of every
// module they compile with it: the Kubernetes libraries, gRPC, x/net and
// the rest then compile once for make build, go vet, the tests and these
// sets, rather than once per module graph. A go.mod of theirs raises a
// module to the main module's version (go get MODULE@VERSION), never lowers
// one; where a set needs a newer version than the main module's, the main
// module is raised to it. mcs, karmada, the release tools and stock CoreDNS
// keep their own graphs: their Kubernetes libraries are of other minors.
var SharedSets = []string{"kube", "helm", "prometheus"}

// TestSharedSetsCompileTheMainModulesVersions checks that every module that
// both the main module (its packages and their tests) and a set of
// SharedSets compile is at the same version in both.
func TestSharedSetsCompileTheMainModulesVersions(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the packages of four module graphs")
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	main := compiledModules(t, root, "", "-test", "./...")
	for _, set := range SharedSets {
		dir := filepath.Join(root, "test", "testbin", set)
		// The recipe's main packages and build tags, as build.sh reads them.
		cmd := exec.Command("bash", "-c", `source ./recipe.sh; printf '%s\n' "$tags"; for e in "${binaries[@]}"; do printf '%s\n' "${e#* }"; done`)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s/recipe.sh: %v", set, err)
		}
		lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
		tags, packages := lines[0], lines[1:]
		for mod, v := range compiledModules(t, dir, tags, packages...) {
			if mv, ok := main[mod]; ok && mv != v {
				t.Errorf("%s: set %s compiles %s, the main module %s: raise the lower one (go get %s@VERSION in its directory)", mod, set, v, mv, mod)
			}
		}
	}
}

// compiledModules returns the version of every module whose packages the
// packages given depend on, in the module of dir.
func compiledModules(t *testing.T, dir, tags string, args ...string) map[string]string {
	t.Helper()
	list := []string{"list", "-deps", "-f", "{{with .Module}}{{.Path}} {{.Version}}{{end}}"}
	if tags != "" {
		list = append(list, "-tags", tags)
	}
	cmd := exec.Command("go", append(list, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list in %s: %v\n%s", dir, err, stderr.String())
	}
	mods := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 {
			mods[f[0]] = f[1]
		}
	}
	return mods
}
