package release

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coredns-mcs/coredns-mcs/test/internal/testbin"
)

// shipped returns the packages whose code a release ships (the coredns
// binary, kubectl-mcs and what they import): the Makefile's
// VULNCHECK_PACKAGES, which make vulncheck checks.
func shipped(t *testing.T) []string {
	t.Helper()
	makefile, err := os.ReadFile(filepath.Join(repoRoot(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^VULNCHECK_PACKAGES := (.+)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile sets no VULNCHECK_PACKAGES")
	}
	return strings.Fields(string(m[1]))
}

// TestVulncheck runs govulncheck on what a release ships, against the
// offline copy of the Go vulnerability database (the vuln testbin set: the
// reports of golang.org/x/vulndb at the revision its go.mod pins, indexed by
// vulndb's own cmd/indexdb), with the module proxy off: no network.
//
// It fails on a vulnerability the code calls in a module this repository
// requires, which go get ...@FIXED fixes here, and on one of the standard
// library, which the Go release that builds the binaries fixes: the
// Makefile's GO_TOOLCHAIN, which also built this test (govulncheck reads the
// standard library of the toolchain this test runs it with).
func TestVulncheck(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: govulncheck analyses every package (a minute, GBs of memory)")
	}
	dir, err := testbin.Dir("vuln", "govulncheck")
	if err != nil {
		unavailable(t, "the vuln testbin set: %v", err)
	}
	db := filepath.Join(dir, "vulndb")
	source, err := os.ReadFile(filepath.Join(db, "SOURCE"))
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := filepath.Glob(filepath.Join(db, "ID", "GO-*.json"))
	if len(ids) < 1000 {
		t.Fatalf("the offline database %s holds %d reports", db, len(ids))
	}

	pkgs := shipped(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "govulncheck"), append([]string{"-db", "file://" + db, "-format", "json"}, pkgs...)...)
	cmd.Dir = repoRoot(t)
	cmd.Env = cleanEnv("GOPROXY=off", "GOFLAGS=-mod=readonly", "GOTOOLCHAIN="+runtime.Version())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("govulncheck: %v\n%s", err, stderr.String())
	}
	t.Logf("govulncheck %s with %s (%d reports), offline: %s", strings.Join(pkgs, " "), strings.TrimSpace(string(source)), len(ids), time.Since(start).Round(time.Second))

	type frame struct {
		Module   string `json:"module"`
		Version  string `json:"version"`
		Package  string `json:"package"`
		Function string `json:"function"`
		Receiver string `json:"receiver"`
	}
	type message struct {
		Config *struct {
			DB string `json:"db"`
		} `json:"config"`
		Finding *struct {
			OSV          string  `json:"osv"`
			FixedVersion string  `json:"fixed_version"`
			Trace        []frame `json:"trace"`
		} `json:"finding"`
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	called := map[string]string{} // OSV -> "module@version, fixed in ..."
	var stdlib, modules []string
	sawDB := false
	for {
		var m message
		if err := dec.Decode(&m); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("govulncheck's JSON: %v", err)
			}
			break
		}
		if m.Config != nil {
			sawDB = strings.HasPrefix(m.Config.DB, "file://")
		}
		f := m.Finding
		if f == nil || len(f.Trace) == 0 || f.Trace[0].Function == "" {
			continue // imported or required, not called
		}
		if _, ok := called[f.OSV]; ok {
			continue
		}
		top := f.Trace[0]
		called[f.OSV] = fmt.Sprintf("%s %s@%s, fixed in %s", f.OSV, top.Package, top.Version, f.FixedVersion)
		if top.Module == "stdlib" {
			stdlib = append(stdlib, called[f.OSV])
		} else {
			modules = append(modules, called[f.OSV])
		}
	}
	if !sawDB {
		t.Error("govulncheck did not report using the file:// database")
	}
	slices.Sort(stdlib)
	slices.Sort(modules)
	for _, v := range modules {
		t.Errorf("called vulnerability in a required module (go get MODULE@FIXED): %s", v)
	}
	for _, v := range stdlib {
		t.Errorf("called vulnerability in the standard library of %s (set GO_TOOLCHAIN in the Makefile to a Go release that fixes it): %s", runtime.Version(), v)
	}
	t.Logf("%d called vulnerabilities in required modules, %d in the standard library", len(modules), len(stdlib))
}
