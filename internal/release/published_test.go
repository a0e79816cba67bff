package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

func TestPublishedChartChanges(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("skipping: no git")
	}
	root := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", root, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(rel, data string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func(version string, wantTagged bool, want ...string) {
		t.Helper()
		tagged, changed, err := PublishedChartChanges(root, version, ChartDir)
		if err != nil {
			t.Fatal(err)
		}
		if tagged != wantTagged || !slices.Equal(changed, want) {
			t.Errorf("%s: tagged %v, changed %q; want %v, %q", version, tagged, changed, wantTagged, want)
		}
	}

	check("v1.0.0", false) // not a git checkout
	git("init", "-q")
	write(ChartDir+"/Chart.yaml", "version: 1.0.0\n")
	write(ChartDir+"/values.yaml", "a: 1\n")
	write("README.md", "x\n")
	git("add", ".")
	git("commit", "-q", "-m", "one")
	check("v1.0.0", false) // no such tag
	git("tag", "v1.0.0")
	check("v1.0.0", true) // the released chart

	write("README.md", "y\n") // not the chart
	check("v1.0.0", true)
	write(ChartDir+"/values.yaml", "a: 2\n") // uncommitted
	check("v1.0.0", true, ChartDir+"/values.yaml")
	git("commit", "-q", "-am", "two")
	write(ChartDir+"/templates/new.yaml", "b: 1\n") // untracked
	check("v1.0.0", true, ChartDir+"/templates/new.yaml", ChartDir+"/values.yaml")
	check("v1.1.0", false) // the next version is not released yet
}
