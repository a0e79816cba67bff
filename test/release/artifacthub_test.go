package release

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

// TestArtifactHub: the chart's ArtifactHub annotations say what the chart
// ships: the image at the release version with the platforms make release
// builds, the CRDs of crds/ (name, kind, stored version), links, the release
// notes; and artifacthub-repo.yml holds only the keys ArtifactHub reads.
// (TestOneVersion checks that the image and the notes are the version's.)
func TestArtifactHub(t *testing.T) {
	root := repoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "charts", "coredns-mcs", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		AppVersion  string            `json:"appVersion"`
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.UnmarshalStrict(data, &chart); err != nil {
		// Other keys of Chart.yaml are not this test's; read leniently.
		if err := yaml.Unmarshal(data, &chart); err != nil {
			t.Fatal(err)
		}
	}
	ann := chart.Annotations
	for key := range ann {
		if !strings.HasPrefix(key, "artifacthub.io/") {
			t.Errorf("annotation %s is not ArtifactHub's", key)
		}
	}
	if ann["artifacthub.io/category"] != "networking" || ann["artifacthub.io/operator"] != "false" {
		t.Errorf("category %q operator %q", ann["artifacthub.io/category"], ann["artifacthub.io/operator"])
	}

	// The licence: the SPDX id of LICENSE at the root.
	license, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(license), "Apache License\n                           Version 2.0, January 2004") || ann["artifacthub.io/license"] != "Apache-2.0" {
		t.Errorf("artifacthub.io/license %q; LICENSE is not the Apache License 2.0 it names", ann["artifacthub.io/license"])
	}

	// The image, with the platforms of make release.
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^RELEASE_IMAGE_PLATFORMS \?= (.+)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile sets no RELEASE_IMAGE_PLATFORMS")
	}
	wantPlatforms := strings.Fields(string(m[1]))
	var images []struct {
		Name      string   `json:"name"`
		Image     string   `json:"image"`
		Platforms []string `json:"platforms"`
	}
	if err := yaml.UnmarshalStrict([]byte(ann["artifacthub.io/images"]), &images); err != nil || len(images) != 1 {
		t.Fatalf("artifacthub.io/images: %v %+v", err, images)
	}
	if images[0].Image != "ghcr.io/coredns-mcs/coredns-mcs:"+chart.AppVersion || !slices.Equal(images[0].Platforms, wantPlatforms) {
		t.Errorf("artifacthub.io/images: %+v, want ghcr.io/coredns-mcs/coredns-mcs:%s for %q", images[0], chart.AppVersion, wantPlatforms)
	}

	// The CRDs of crds/.
	var hubCRDs []struct {
		Kind, Version, Name, DisplayName, Description string
	}
	if err := yaml.UnmarshalStrict([]byte(ann["artifacthub.io/crds"]), &hubCRDs); err != nil {
		t.Fatalf("artifacthub.io/crds: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "charts", "coredns-mcs", "crds", "*.yaml"))
	if len(files) == 0 || len(hubCRDs) != len(files) {
		t.Errorf("artifacthub.io/crds lists %d CRDs, crds/ holds %d", len(hubCRDs), len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd struct {
			Metadata struct{ Name string }
			Spec     struct {
				Names    struct{ Kind string }
				Versions []struct {
					Name    string
					Storage bool
				}
			}
		}
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatal(err)
		}
		stored := ""
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				stored = v.Name
			}
		}
		i := slices.IndexFunc(hubCRDs, func(c struct{ Kind, Version, Name, DisplayName, Description string }) bool {
			return c.Name == crd.Metadata.Name
		})
		if i < 0 {
			t.Errorf("artifacthub.io/crds does not list %s (%s)", crd.Metadata.Name, filepath.Base(f))
			continue
		}
		c := hubCRDs[i]
		if c.Kind != crd.Spec.Names.Kind || c.Version != stored || c.DisplayName == "" || c.Description == "" {
			t.Errorf("artifacthub.io/crds: %+v, want kind %s, version %s (stored), a display name and a description", c, crd.Spec.Names.Kind, stored)
		}
	}

	var links []struct{ Name, URL string }
	if err := yaml.UnmarshalStrict([]byte(ann["artifacthub.io/links"]), &links); err != nil || len(links) == 0 {
		t.Errorf("artifacthub.io/links: %v %+v", err, links)
	}
	for _, l := range links {
		if l.Name == "" || !strings.HasPrefix(l.URL, "https://github.com/coredns-mcs/coredns-mcs") {
			t.Errorf("link %+v", l)
		}
		// Links into the repository name files that exist.
		if rel, ok := strings.CutPrefix(l.URL, "https://github.com/coredns-mcs/coredns-mcs/blob/main/"); ok {
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
				t.Errorf("link %s: %v", l.URL, err)
			}
		}
	}
	var changes []string
	if err := yaml.UnmarshalStrict([]byte(ann["artifacthub.io/changes"]), &changes); err != nil || len(changes) == 0 {
		t.Errorf("artifacthub.io/changes: %v %q", err, changes)
	}

	// artifacthub-repo.yml: ArtifactHub's keys only.
	data, err = os.ReadFile(filepath.Join(root, "charts", "artifacthub-repo.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var repo struct {
		RepositoryID string `json:"repositoryID,omitempty"`
		Owners       []struct {
			Name  string `json:"name"`
			Email string `json:"email"`
		} `json:"owners,omitempty"`
		Ignore []struct {
			Name    string `json:"name"`
			Version string `json:"version,omitempty"`
		} `json:"ignore"`
	}
	if err := yaml.UnmarshalStrict(data, &repo); err != nil {
		t.Errorf("charts/artifacthub-repo.yml: %v", err)
	}
	t.Logf("ArtifactHub: image %s for %d platforms, %d CRDs, %d links, %d changes", images[0].Image, len(wantPlatforms), len(hubCRDs), len(links), len(changes))
}

// TestChartSignKey: with a signing key, make release publishes its public
// half (coredns-mcs-chart-key.asc, listed in SHA256SUMS) and the chart it
// packages names it for ArtifactHub (artifacthub.io/signKey): the key's
// fingerprint and that file's address under the release's download URL.
// The published key alone verifies the chart (helm verify with a keyring
// made from it).
func TestChartSignKey(t *testing.T) {
	b := release(t)
	gpg := lookTool(t, "gpg", "apt-get install gnupg")
	chart := b.file("coredns-mcs-" + strings.TrimPrefix(version, "v") + ".tgz")
	var meta struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(archiveFile(t, chart, "coredns-mcs/Chart.yaml"), &meta); err != nil {
		t.Fatal(err)
	}
	var signKey struct{ Fingerprint, URL string }
	if err := yaml.UnmarshalStrict([]byte(meta.Annotations["artifacthub.io/signKey"]), &signKey); err != nil {
		t.Fatalf("artifacthub.io/signKey %q: %v", meta.Annotations["artifacthub.io/signKey"], err)
	}

	home := t.TempDir()
	env := cleanEnv("GNUPGHOME=" + home)
	t.Cleanup(func() { exec.Command("gpgconf", "--homedir", home, "--kill", "all").Run() })
	fingerprint := func(args ...string) string {
		out := mustRun(t, "", env, gpg, append([]string{"--batch", "--with-colons"}, args...)...)
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Split(line, ":"); f[0] == "fpr" && len(f) > 9 {
				return f[9]
			}
		}
		t.Fatalf("gpg %s printed no fingerprint:\n%s", strings.Join(args, " "), out)
		return ""
	}
	want := fingerprint("--homedir", b.gnupg, "--fingerprint", chartSigner)
	published := b.file("coredns-mcs-chart-key.asc")
	if got := fingerprint("--show-keys", published); got != want {
		t.Errorf("coredns-mcs-chart-key.asc holds the key %s, want the signer's %s", got, want)
	}
	if signKey.Fingerprint != want {
		t.Errorf("artifacthub.io/signKey fingerprint %q, want the signer's %s", signKey.Fingerprint, want)
	}
	if u := "https://github.com/coredns-mcs/coredns-mcs/releases/download/" + version + "/coredns-mcs-chart-key.asc"; signKey.URL != u {
		t.Errorf("artifacthub.io/signKey url %q, want %q", signKey.URL, u)
	}
	if sums := readSums(t, b.file("SHA256SUMS")); sums["coredns-mcs-chart-key.asc"] == "" {
		t.Error("SHA256SUMS does not list coredns-mcs-chart-key.asc")
	}
	if data, err := os.ReadFile(filepath.Join(repoRoot(t), "charts", "coredns-mcs", "Chart.yaml")); err != nil || strings.Contains(string(data), "signKey") {
		t.Errorf("make release changed the repository's Chart.yaml (err %v)", err)
	}

	keyring := filepath.Join(t.TempDir(), "published.gpg")
	mustRun(t, "", env, gpg, "--batch", "--yes", "--output", keyring, "--dearmor", published)
	helm := newTool(t, "helm", "helm")
	helm.must(b.dir, "verify", chart, "--keyring", keyring)
}
