package testbin

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/mod/semver"
)

// SharedSets are the sets built with the main module's versions of every
// module they compile with it: the Kubernetes libraries, gRPC, x/net and
// the rest then compile once in a cold build, for make build, go vet, the
// tests and these sets, rather than once per module graph. A set's go.mod
// raises a module to the main module's version, never lowers one; where a
// set needs a newer version than the main module's, the main module is
// raised to it. test/cmd/sharedeps does both. Left out: karmada, whose
// v1.18.2 does not compile with the Kubernetes libraries of v0.37 (its
// registry strategies and generated OpenAPI are v0.35's), krew, which
// compiles client-go v11, and stock CoreDNS, built from each release's own
// graph.
var SharedSets = []string{"kube", "mcs", "prometheus", "helm", "sbom", "cosign", "registry", "vuln", "conformance"}

// Mismatch is a module that the main module and a set compile at different
// versions.
type Mismatch struct {
	Set, Module, SetVersion, MainVersion string
}

func (m Mismatch) String() string {
	return fmt.Sprintf("%s: set %s compiles %s, the main module %s", m.Module, m.Set, m.SetVersion, m.MainVersion)
}

// SetLower reports whether the set's version is the lower one.
func (m Mismatch) SetLower() bool { return semver.Compare(m.SetVersion, m.MainVersion) < 0 }

// Mismatches lists the modules that set (a directory of test/testbin) and
// the main module (its packages and their tests) both compile, at different
// versions; root is the repository's root.
func Mismatches(root, set string) ([]Mismatch, error) {
	main, err := compiledModules(root, "", "-test", "./...")
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, "test", "testbin", set)
	// The recipe's main packages and build tags, as build.sh reads them.
	cmd := exec.Command("bash", "-c", `source ./recipe.sh; printf '%s\n' "$tags"; for e in "${binaries[@]}"; do printf '%s\n' "${e#* }"; done`)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s/recipe.sh: %w", set, err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	setMods, err := compiledModules(dir, lines[0], lines[1:]...)
	if err != nil {
		return nil, err
	}
	var ms []Mismatch
	for mod, v := range setMods {
		if mv, ok := main[mod]; ok && mv != v {
			ms = append(ms, Mismatch{Set: set, Module: mod, SetVersion: v, MainVersion: mv})
		}
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Module < ms[j].Module })
	return ms, nil
}

// compiledModules returns the version of every module whose packages the
// packages given depend on, in the module of dir.
func compiledModules(dir, tags string, args ...string) (map[string]string, error) {
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
		return nil, fmt.Errorf("go list in %s: %w\n%s", dir, err, stderr.String())
	}
	mods := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 {
			mods[f[0]] = f[1]
		}
	}
	return mods, nil
}
