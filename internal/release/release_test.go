package release

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var day = time.Date(2027, 3, 4, 12, 0, 0, 0, time.UTC)

const changelog = `# Changelog

Intro.

## Unreleased

- Added a thing: with a colon
  that continues.
- Fixed "another".

## v0.1.0

- First.
`

func TestChangelog(t *testing.T) {
	out, err := Changelog([]byte(changelog), "v0.2.0", day)
	if err != nil {
		t.Fatal(err)
	}
	want := `# Changelog

Intro.

## Unreleased

## v0.2.0 - 2027-03-04

- Added a thing: with a colon
  that continues.
- Fixed "another".

## v0.1.0

- First.
`
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	if got := Released(out); !slices.Equal(got, []string{"v0.2.0", "v0.1.0"}) {
		t.Errorf("Released: %q", got)
	}
	if got := Notes(out, "v0.2.0"); !slices.Equal(got, []string{"Added a thing: with a colon that continues.", `Fixed "another".`}) {
		t.Errorf("Notes: %q", got)
	}

	// Again: the section is there, nothing changes.
	again, err := Changelog(out, "v0.2.0", day.Add(48*time.Hour))
	if err != nil || string(again) != string(out) {
		t.Errorf("a second Changelog for the same version changed it (%v):\n%s", err, again)
	}
	// No notes for the next one.
	if _, err := Changelog(out, "v0.3.0", day); err == nil || !strings.Contains(err.Error(), "no release notes") {
		t.Errorf("a version without notes: %v", err)
	}
	// Not newer.
	if _, err := Changelog([]byte(changelog), "v0.0.9", day); err == nil || !strings.Contains(err.Error(), "not newer") {
		t.Errorf("an older version: %v", err)
	}
	if _, err := Changelog([]byte("# Changelog\n"), "v1.0.0", day); err == nil {
		t.Error("a changelog without Unreleased: no error")
	}
}

func TestChartChanges(t *testing.T) {
	chart := "name: x\nannotations:\n  a: b\n" + changesAnnotation + "    - \"old\"\n"
	out, err := ChartChanges([]byte(chart), []string{`one: "two"`, "three"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "name: x\nannotations:\n  a: b\n" + changesAnnotation + "    - \"one: \\\"two\\\"\"\n    - \"three\"\n"; string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	if _, err := ChartChanges([]byte(chart+"other: 1\n"), nil); err == nil {
		t.Error("changes not last: no error")
	}
}

func TestChartSignKey(t *testing.T) {
	const fpr = "0123456789ABCDEF0123456789ABCDEF01234567"
	chart := "name: x\nannotations:\n  a: b\n" + changesAnnotation + "    - \"old\"\n"
	want := "name: x\nannotations:\n  a: b\n" + signKeyAnnotation + "    fingerprint: " + fpr + "\n    url: https://example.org/k.asc\n" + changesAnnotation + "    - \"old\"\n"
	out, err := ChartSignKey([]byte(chart), fpr, "https://example.org/k.asc")
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	// Again, with another key: the annotation is replaced, not added.
	const other = "FEDCBA9876543210FEDCBA9876543210FEDCBA98"
	again, err := ChartSignKey(out, other, "https://example.org/k.asc")
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(want, fpr, other, 1); string(again) != want {
		t.Errorf("again: got\n%s\nwant\n%s", again, want)
	}
	for _, c := range []struct{ fpr, url string }{
		{"0123456789abcdef0123456789abcdef01234567", "https://example.org/k.asc"},
		{"0123", "https://example.org/k.asc"},
		{fpr, "k.asc"},
	} {
		if _, err := ChartSignKey([]byte(chart), c.fpr, c.url); err == nil {
			t.Errorf("fingerprint %q url %q: no error", c.fpr, c.url)
		}
	}
	if _, err := ChartSignKey([]byte("name: x\n"), fpr, "https://example.org/k.asc"); err == nil {
		t.Error("no changes annotation: no error")
	}
}

// TestSetCheck: Set on a small tree rewrites every place, and Check then
// finds nothing; a place changed by hand is found.
func TestSetCheck(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"VERSION":                                "v0.1.0\n",
		"CHANGELOG.md":                           changelog,
		"README.md":                              "Run ghcr.io/coredns-mcs/coredns-mcs:v0.1.0, download coredns-mcs_v0.1.0_linux_amd64.tgz.\nCoreDNS v1.12.0 is another thing.\n",
		"docs/deploy.md":                         "check says version v0.1.0\n",
		"charts/coredns-mcs/templates/NOTES.txt": "nothing\n",
		"charts/coredns-mcs/Chart.yaml":          "version: 0.1.0\nappVersion: v0.1.0\nannotations:\n  artifacthub.io/images: |\n    - image: ghcr.io/coredns-mcs/coredns-mcs:v0.1.0\n" + changesAnnotation,
		"manifests/kustomization.yaml":           "images:\n  - name: ghcr.io/coredns-mcs/coredns-mcs\n    newTag: v0.1.0\n# kustomize edit set image ghcr.io/coredns-mcs/coredns-mcs:v0.0.1\n",
		"manifests/install/deployment.yaml":      "        image: ghcr.io/coredns-mcs/coredns-mcs:v0.1.0\n",
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	changed, err := Set(root, "v0.2.0", day)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(changed)
	if want := []string{"CHANGELOG.md", "README.md", "VERSION", "charts/coredns-mcs/Chart.yaml", "docs/deploy.md", "manifests/install/deployment.yaml", "manifests/kustomization.yaml"}; !slices.Equal(changed, want) {
		t.Errorf("changed %q, want %q", changed, want)
	}
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	for name, want := range map[string]string{
		"VERSION":                           "v0.2.0\n",
		"README.md":                         "Run ghcr.io/coredns-mcs/coredns-mcs:v0.2.0, download coredns-mcs_v0.2.0_linux_amd64.tgz.\nCoreDNS v1.12.0 is another thing.\n",
		"docs/deploy.md":                    "check says version v0.2.0\n",
		"manifests/kustomization.yaml":      "images:\n  - name: ghcr.io/coredns-mcs/coredns-mcs\n    newTag: v0.2.0\n# kustomize edit set image ghcr.io/coredns-mcs/coredns-mcs:v0.0.1\n",
		"manifests/install/deployment.yaml": "        image: ghcr.io/coredns-mcs/coredns-mcs:v0.2.0\n",
		"charts/coredns-mcs/Chart.yaml":     "version: 0.2.0\nappVersion: v0.2.0\nannotations:\n  artifacthub.io/images: |\n    - image: ghcr.io/coredns-mcs/coredns-mcs:v0.2.0\n" + changesAnnotation + "    - \"Added a thing: with a colon that continues.\"\n    - \"Fixed \\\"another\\\".\"\n",
	} {
		if got := read(name); got != want {
			t.Errorf("%s:\n%s\nwant\n%s", name, got, want)
		}
	}
	if problems, err := Check(root); err != nil || len(problems) > 0 {
		t.Errorf("Check after Set: %v %q", err, problems)
	}

	// One place by hand.
	if err := os.WriteFile(filepath.Join(root, "manifests/install/deployment.yaml"), []byte("image: ghcr.io/coredns-mcs/coredns-mcs:v0.1.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	problems, err := Check(root)
	if err != nil || len(problems) != 1 || !strings.Contains(problems[0], "manifests/install/deployment.yaml") {
		t.Errorf("Check after a change by hand: %v %q", err, problems)
	}

	// A version without notes changes nothing.
	before := read("VERSION")
	if _, err := Set(root, "v0.3.0", day); err == nil {
		t.Error("Set of a version without release notes: no error")
	}
	if read("VERSION") != before {
		t.Error("a refused Set changed VERSION")
	}
}

func TestKrewManifestAndChecksums(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"coredns-mcs_v1.2.3_linux_amd64.tgz", "coredns-mcs_v1.2.3_linux_s390x.tgz", "coredns-mcs_v1.2.3_darwin_arm64.tgz", "coredns-mcs_v1.2.2_linux_arm64.tgz"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := KrewManifest(dir, "v1.2.3", "https://example.org/dl/v1.2.3/")
	if err != nil {
		t.Fatal(err)
	}
	m := string(out)
	for _, want := range []string{"name: mcs\n", "version: v1.2.3\n", "os: darwin\n        arch: arm64", "os: linux\n        arch: amd64", "uri: https://example.org/dl/v1.2.3/coredns-mcs_v1.2.3_linux_amd64.tgz\n", "bin: kubectl-mcs\n"} {
		if !strings.Contains(m, want) {
			t.Errorf("manifest lacks %q:\n%s", want, m)
		}
	}
	if strings.Contains(m, "s390x") || strings.Contains(m, "v1.2.2") {
		t.Errorf("manifest has a platform krew does not install, or another version:\n%s", m)
	}
	if _, err := KrewManifest(dir, "v9.9.9", "https://example.org"); err == nil {
		t.Error("no archive of the version: no error")
	}
	if err := os.WriteFile(filepath.Join(dir, "x.tgz.sha256"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sums, err := Checksums(dir)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(sums)), "\n")
	if len(lines) != 4 || !strings.HasSuffix(lines[0], "  coredns-mcs_v1.2.2_linux_arm64.tgz") {
		t.Errorf("SHA256SUMS:\n%s", sums)
	}
}
