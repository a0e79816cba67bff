package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// imageRepository is the repository the manifests and the chart pull from.
const imageRepository = "ghcr.io/coredns-mcs/coredns-mcs"

// image is the image reference the kustomizations ship with: the release
// version of the file VERSION.
var image = imageRepository + ":" + releaseVersion()

// releaseVersion returns the content of the file VERSION at the root of the
// repository, the one release version.
func releaseVersion() string {
	data, err := os.ReadFile("../../VERSION")
	if err != nil {
		panic(err)
	}
	return strings.TrimSpace(string(data))
}

// TestOneVersion: the release version of the file VERSION is the tag of
// every image the manifests pull, every kustomization's newTag, the chart's
// appVersion (its default image tag) and version, the image of its
// ArtifactHub annotations, the newest section of CHANGELOG.md (whose items
// are the chart's artifacthub.io/changes), the tag make image gives by
// default, and every version the docs print, so that the image a newcomer
// builds with make image is the one the manifests pull. make release
// VERSION=vX.Y.Z writes them all (internal/release); test/release checks that
// this test passes after it, and fails when one place disagrees.
func TestOneVersion(t *testing.T) {
	version := releaseVersion()
	if !regexp.MustCompile(`^v\d+\.\d+\.\d+$`).MatchString(version) {
		t.Fatalf("VERSION holds %q, want vMAJOR.MINOR.PATCH", version)
	}
	root := repoRoot(t)

	// The manifests: image: references and newTag.
	imageRef := regexp.MustCompile(`(?m)\b` + regexp.QuoteMeta(imageRepository) + `:(\S+)`)
	newTag := regexp.MustCompile(`(?m)^\s*newTag:\s*(\S+)\s*$`)
	var images, tags []string
	err := filepath.WalkDir(filepath.Join(root, "manifests"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		// Comments may show other tags (kustomize edit set image ...:vX.Y.Z).
		data = regexp.MustCompile(`(?m)^\s*#.*$`).ReplaceAll(data, nil)
		for _, m := range imageRef.FindAllStringSubmatch(string(data), -1) {
			images = append(images, rel)
			if m[1] != version {
				t.Errorf("%s pulls %s:%s, want %s (VERSION)", rel, imageRepository, m[1], version)
			}
		}
		for _, m := range newTag.FindAllStringSubmatch(string(data), -1) {
			tags = append(tags, rel)
			if m[1] != version {
				t.Errorf("%s: newTag %s, want %s (VERSION)", rel, m[1], version)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"manifests/coredns-image.yaml", "manifests/install/deployment.yaml", "manifests/standalone/deployment.yaml"} {
		if !slices.Contains(images, want) {
			t.Errorf("%s names no image %s:...: the file is not what this test expects", want, imageRepository)
		}
	}
	for _, want := range []string{"manifests/kustomization.yaml", "manifests/install/kustomization.yaml", "manifests/standalone/kustomization.yaml"} {
		if !slices.Contains(tags, want) {
			t.Errorf("%s has no newTag: the file is not what this test expects", want)
		}
	}

	// The chart: appVersion, which image.tag defaults to, its own version
	// (the same without the v), and the ArtifactHub annotations' image.
	var chart struct {
		Version     string            `json:"version"`
		AppVersion  string            `json:"appVersion"`
		Annotations map[string]string `json:"annotations"`
	}
	chartYAML := readRepoFile(t, "charts/coredns-mcs/Chart.yaml")
	if err := yaml.Unmarshal(chartYAML, &chart); err != nil {
		t.Fatal(err)
	}
	if chart.AppVersion != version {
		t.Errorf("charts/coredns-mcs/Chart.yaml appVersion %q, want %s (VERSION)", chart.AppVersion, version)
	}
	if chart.Version != strings.TrimPrefix(version, "v") {
		t.Errorf("charts/coredns-mcs/Chart.yaml version %q, want %s (VERSION without the v)", chart.Version, strings.TrimPrefix(version, "v"))
	}
	var hubImages []struct {
		Image string `json:"image"`
	}
	if err := yaml.Unmarshal([]byte(chart.Annotations["artifacthub.io/images"]), &hubImages); err != nil || len(hubImages) == 0 {
		t.Errorf("charts/coredns-mcs/Chart.yaml: annotation artifacthub.io/images lists no image (%v)", err)
	}
	for _, img := range hubImages {
		if img.Image != image {
			t.Errorf("charts/coredns-mcs/Chart.yaml: annotation artifacthub.io/images names %s, want %s", img.Image, image)
		}
	}

	// The changelog: its newest section is the version's, and the chart's
	// artifacthub.io/changes are that section's items.
	changelog := string(readRepoFile(t, "CHANGELOG.md"))
	heading := regexp.MustCompile(`(?m)^## (v\d+\.\d+\.\d+)\b.*$`)
	sections := heading.FindAllStringSubmatchIndex(changelog, -1)
	if len(sections) == 0 {
		t.Errorf("CHANGELOG.md has no section \"## vX.Y.Z\"")
	} else if newest := changelog[sections[0][2]:sections[0][3]]; newest != version {
		t.Errorf("CHANGELOG.md: the newest section is %s's, want %s's (VERSION): make release VERSION=%s makes the notes under Unreleased its own", newest, version, version)
	} else {
		body := changelog[sections[0][1]:]
		if next := strings.Index(body, "\n## "); next >= 0 {
			body = body[:next]
		}
		var notes []string
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "- ") {
				notes = append(notes, strings.TrimSpace(line[2:]))
			} else if len(notes) > 0 && strings.TrimSpace(line) != "" && strings.HasPrefix(line, " ") {
				notes[len(notes)-1] += " " + strings.TrimSpace(line)
			}
		}
		var changes []string
		if err := yaml.Unmarshal([]byte(chart.Annotations["artifacthub.io/changes"]), &changes); err != nil {
			t.Errorf("charts/coredns-mcs/Chart.yaml: annotation artifacthub.io/changes: %v", err)
		}
		if !slices.Equal(changes, notes) {
			t.Errorf("charts/coredns-mcs/Chart.yaml: annotation artifacthub.io/changes has %d items, want the %d of CHANGELOG.md's %s section:\n got %q\nwant %q", len(changes), len(notes), version, changes, notes)
		}
	}
	var values struct {
		Image struct {
			Repository string `json:"repository"`
			Tag        string `json:"tag"`
		} `json:"image"`
	}
	if err := yaml.Unmarshal(readRepoFile(t, "charts/coredns-mcs/values.yaml"), &values); err != nil {
		t.Fatal(err)
	}
	if values.Image.Repository != imageRepository || (values.Image.Tag != "" && values.Image.Tag != version) {
		t.Errorf("charts/coredns-mcs/values.yaml image %s:%s, want %s with the tag empty (appVersion) or %s", values.Image.Repository, values.Image.Tag, imageRepository, version)
	}

	// The Makefile: make image's default reference, and VERSION given on
	// the command line still choosing the tag (make release VERSION=...).
	makeImage := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("make", append([]string{"-s", "--no-print-directory", "image-name"}, args...)...)
		cmd.Dir = root
		for _, kv := range os.Environ() {
			if name, _, _ := strings.Cut(kv, "="); name != "VERSION" && name != "IMAGE" && name != "IMAGE_TAG" && name != "MAKEFLAGS" && name != "MAKELEVEL" {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make image-name %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := makeImage(); got != image {
		t.Errorf("make image tags %s by default, want %s", got, image)
	}
	if got := makeImage("VERSION=v9.9.9"); got != imageRepository+":v9.9.9" {
		t.Errorf("make image VERSION=v9.9.9 tags %s, want %s:v9.9.9", got, imageRepository)
	}

	// The docs: every version of coredns-mcs they print (image references,
	// kubectl mcs check's "version ..."); other versions are written vX.Y.Z.
	printed := regexp.MustCompile(`(?:coredns-mcs:|coredns-mcs_|version )(v\d+\.\d+\.\d+)(?:[^\d]|$)`)
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	docs = append(docs, filepath.Join(root, "README.md"), filepath.Join(root, "charts", "coredns-mcs", "templates", "NOTES.txt"))
	n := 0
	for _, path := range docs {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, path)
		for i, line := range strings.Split(string(data), "\n") {
			for _, m := range printed.FindAllStringSubmatch(line, -1) {
				n++
				if m[1] != version {
					t.Errorf("%s:%d prints %s, want %s (VERSION) or a placeholder vX.Y.Z: %s", rel, i+1, m[1], version, strings.TrimSpace(line))
				}
			}
		}
	}
	if n == 0 {
		t.Error("the docs print no version of coredns-mcs: the pattern is not what this test expects")
	}
	t.Logf("VERSION %s: %d image references and %d newTags in manifests/, appVersion, make image, %d versions printed in the docs agree", version, len(images), len(tags), n)
}
