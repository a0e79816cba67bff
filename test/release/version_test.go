package release

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOneVersionAfterRelease: make release VERSION=v9.8.7 made v9.8.7 the
// version of every place test/deploy's TestOneVersion reads, which passes in
// the released copy; and TestOneVersion, like make release's own check
// (make release-version), fails when any one of those places is changed by
// hand.
func TestOneVersionAfterRelease(t *testing.T) {
	b := release(t)
	data, err := os.ReadFile(filepath.Join(b.root, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(data)); got != version {
		t.Fatalf("make release VERSION=%s left VERSION at %s", version, got)
	}
	changelog, err := os.ReadFile(filepath.Join(b.root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(changelog, []byte("## Unreleased\n\n## "+version+" - ")) {
		t.Errorf("CHANGELOG.md: the notes under Unreleased did not become %s's, dated, under a new Unreleased:\n%s", version, changelog[:min(len(changelog), 800)])
	}

	oneVersion := func() (string, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
		defer cancel()
		return run(ctx, t, b.root, nil, "go", "test", "-count=1", "-run", "^TestOneVersion$", "./test/deploy/")
	}
	check := func() (string, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		return run(ctx, t, b.root, nil, "make", "--no-print-directory", "release-version")
	}
	if out, err := oneVersion(); err != nil {
		t.Fatalf("TestOneVersion fails after make release VERSION=%s: %v\n%s", version, err, out)
	}
	if out, err := check(); err != nil {
		t.Fatalf("make release-version fails after make release VERSION=%s: %v\n%s", version, err, out)
	}

	for _, c := range []struct{ name, file, old, new string }{
		{"VERSION", "VERSION", version, "v9.8.8"},
		{"newTag", "manifests/install/kustomization.yaml", "newTag: " + version, "newTag: v9.8.6"},
		{"image", "manifests/standalone/deployment.yaml", "coredns-mcs:" + version, "coredns-mcs:v9.8.6"},
		{"appVersion", "charts/coredns-mcs/Chart.yaml", "appVersion: " + version, "appVersion: v9.8.6"},
		{"chart-version", "charts/coredns-mcs/Chart.yaml", "version: 9.8.7", "version: 9.8.6"},
		{"artifacthub-changes", "charts/coredns-mcs/Chart.yaml", "    - \"The release the tests build", "    - \"Something else"},
		{"docs", "docs/kubectl-mcs.md", "version " + version, "version v9.8.6"},
		{"changelog", "CHANGELOG.md", "## " + version, "## v9.8.6"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(b.root, c.file)
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(orig, []byte(c.old)) {
				t.Fatalf("%s does not hold %q", c.file, c.old)
			}
			if err := os.WriteFile(path, bytes.Replace(orig, []byte(c.old), []byte(c.new), 1), 0o644); err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := os.WriteFile(path, orig, 0o644); err != nil {
					t.Fatal(err)
				}
			}()
			out, err := oneVersion()
			if err == nil {
				t.Errorf("TestOneVersion passes with %q in %s instead of %q:\n%s", c.new, c.file, c.old, out)
			} else if !strings.Contains(out, "--- FAIL: TestOneVersion") {
				t.Errorf("TestOneVersion did not run to a failure:\n%s", out)
			} else {
				t.Logf("TestOneVersion fails, as it must:\n%s", firstLines(out, "version_test.go", 3))
			}
			if out, err := check(); err == nil {
				t.Errorf("make release-version passes with %q in %s instead of %q:\n%s", c.new, c.file, c.old, out)
			}
		})
	}
}

// firstLines returns the first n lines of out that contain substr.
func firstLines(out, substr string, n int) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, substr) && len(lines) < n {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	return strings.Join(lines, "\n")
}

// TestReleaseRefusesWithoutNotes: make release VERSION=... of a version
// whose notes are not written (the copy's Unreleased section emptied) stops
// before it changes or builds anything.
func TestReleaseRefusesWithoutNotes(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: runs make release")
	}
	lookTool(t, "make", "apt-get install make")
	root := filepath.Join(t.TempDir(), "src")
	copyRepo(t, root)
	clearReleaseNotes(t, root)
	before, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	out, err := run(ctx, t, root, nil, "make", "--no-print-directory", "release", "VERSION=v9.9.9", "PLATFORMS=linux/amd64")
	if err == nil {
		t.Fatalf("make release of a version without notes passed:\n%s", out)
	}
	if !strings.Contains(out, "no release notes for v9.9.9") {
		t.Errorf("make release did not say why:\n%s", out)
	}
	after, _ := os.ReadFile(filepath.Join(root, "VERSION"))
	if !bytes.Equal(before, after) {
		t.Errorf("the refused make release changed VERSION to %s", after)
	}
	if _, err := os.Stat(filepath.Join(root, "release")); err == nil {
		t.Error("the refused make release wrote release/")
	}
}
