// Package release keeps the one release version of coredns-mcs in every
// place that names it, and writes what make release publishes beside the
// archives and the image: the krew plugin manifest and the checksum list.
//
// The release version lives in the file VERSION. These places repeat it, and
// Set rewrites them all (make release VERSION=vX.Y.Z calls it first):
//
//   - manifests/**/*.yaml: every image reference ghcr.io/coredns-mcs/coredns-mcs:TAG
//     outside comments, and every kustomization's newTag;
//   - charts/coredns-mcs/Chart.yaml: version (X.Y.Z), appVersion (vX.Y.Z),
//     which the image tag defaults to, the image of the ArtifactHub
//     annotation artifacthub.io/images, and artifacthub.io/changes, the
//     items of the version's section of CHANGELOG.md;
//   - README.md, docs/*.md and the chart's NOTES.txt: every version of
//     coredns-mcs they print (coredns-mcs:vX.Y.Z, coredns-mcs_vX.Y.Z,
//     "version vX.Y.Z");
//   - CHANGELOG.md: the notes under "## Unreleased" become those of the
//     version, under "## vX.Y.Z - DATE", below a new empty "## Unreleased".
//
// test/deploy's TestOneVersion reads the same places on its own and fails
// when one disagrees with VERSION; test/release checks that a Set leaves it
// passing.
package release

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// ImageRepository is the repository the manifests and the chart pull.
const ImageRepository = "ghcr.io/coredns-mcs/coredns-mcs"

var (
	// SemVer is the form of a release version: vMAJOR.MINOR.PATCH.
	SemVer = regexp.MustCompile(`^v(\d+)\.(\d+)\.(\d+)$`)

	imageRef   = regexp.MustCompile(`(\b` + regexp.QuoteMeta(ImageRepository) + `:)(v\d+\.\d+\.\d+)\b`)
	newTag     = regexp.MustCompile(`(?m)^(\s*newTag:\s*)(\S+)(\s*)$`)
	comment    = regexp.MustCompile(`^\s*#`)
	chartVer   = regexp.MustCompile(`(?m)^(version:\s*)(\S+)(\s*)$`)
	chartApp   = regexp.MustCompile(`(?m)^(appVersion:\s*)(\S+)(\s*)$`)
	docVersion = regexp.MustCompile(`((?:coredns-mcs:|coredns-mcs_|version )v)(\d+\.\d+\.\d+)([^\d]|$)`)
)

// ReadVersion returns the release version in root/VERSION.
func ReadVersion(root string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(data))
	if !SemVer.MatchString(v) {
		return "", fmt.Errorf("VERSION holds %q, want vMAJOR.MINOR.PATCH", v)
	}
	return v, nil
}

// Set makes version the release version everywhere under root and returns
// the files it changed, relative to root. date dates the CHANGELOG.md
// section; a version the changelog already has a section for keeps it.
func Set(root, version string, date time.Time) ([]string, error) {
	if !SemVer.MatchString(version) {
		return nil, fmt.Errorf("version %q: want vMAJOR.MINOR.PATCH", version)
	}
	bare := strings.TrimPrefix(version, "v")
	var changed []string
	edit := func(rel string, f func([]byte) ([]byte, error)) error {
		path := filepath.Join(root, filepath.FromSlash(rel))
		old, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		data, err := f(old)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		if bytes.Equal(old, data) {
			return nil
		}
		info, err := os.Stat(path)
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, data, info.Mode().Perm()); err != nil {
			return err
		}
		changed = append(changed, rel)
		return nil
	}

	// The changelog first: a version without release notes is refused
	// before anything else changes.
	if err := edit("CHANGELOG.md", func(b []byte) ([]byte, error) { return Changelog(b, version, date) }); err != nil {
		return nil, err
	}
	if err := edit("VERSION", func([]byte) ([]byte, error) { return []byte(version + "\n"), nil }); err != nil {
		return changed, err
	}

	var manifests []string
	err := filepath.WalkDir(filepath.Join(root, "manifests"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		rel, err := filepath.Rel(root, path)
		manifests = append(manifests, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		return changed, err
	}
	for _, rel := range manifests {
		err := edit(rel, func(b []byte) ([]byte, error) {
			return eachLine(b, func(line string) string {
				if comment.MatchString(line) {
					return line
				}
				line = imageRef.ReplaceAllString(line, "${1}"+version)
				return newTag.ReplaceAllString(line, "${1}"+version+"${3}")
			}), nil
		})
		if err != nil {
			return changed, err
		}
	}

	changelog, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		return changed, err
	}
	err = edit("charts/coredns-mcs/Chart.yaml", func(b []byte) ([]byte, error) {
		if !chartVer.Match(b) || !chartApp.Match(b) {
			return nil, fmt.Errorf("no version: or appVersion: line")
		}
		b = chartVer.ReplaceAll(b, []byte("${1}"+bare+"${3}"))
		b = chartApp.ReplaceAll(b, []byte("${1}"+version+"${3}"))
		// The ArtifactHub annotations name the image, and carry the
		// version's release notes.
		b = imageRef.ReplaceAll(b, []byte("${1}"+version))
		return ChartChanges(b, Notes(changelog, version))
	})
	if err != nil {
		return changed, err
	}

	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return changed, err
	}
	for i, d := range docs {
		docs[i], _ = filepath.Rel(root, d)
	}
	docs = append(docs, "README.md", "charts/coredns-mcs/templates/NOTES.txt")
	for _, rel := range docs {
		err := edit(filepath.ToSlash(rel), func(b []byte) ([]byte, error) {
			return docVersion.ReplaceAll(b, []byte("${1}"+bare+"${3}")), nil
		})
		if err != nil {
			return changed, err
		}
	}
	return changed, nil
}

func eachLine(b []byte, f func(string) string) []byte {
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		lines[i] = f(l)
	}
	return []byte(strings.Join(lines, "\n"))
}

// Check reports every place under root whose version is not the one in
// VERSION, as Set would have written it. It is what make release runs
// before it builds anything; TestOneVersion checks the same on its own.
func Check(root string) ([]string, error) {
	version, err := ReadVersion(root)
	if err != nil {
		return nil, err
	}
	// Set into a scratch copy of the files it edits, and compare.
	tmp, err := os.MkdirTemp("", "coredns-mcs-version-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var files []string
	for _, pattern := range []string{"VERSION", "CHANGELOG.md", "README.md", "docs/*.md", "charts/coredns-mcs/Chart.yaml", "charts/coredns-mcs/templates/NOTES.txt"} {
		m, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(pattern)))
		if err != nil {
			return nil, err
		}
		files = append(files, m...)
	}
	err = filepath.WalkDir(filepath.Join(root, "manifests"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".yaml") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		dst := filepath.Join(tmp, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return nil, err
		}
	}
	changed, err := Set(tmp, version, time.Time{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, rel := range changed {
		out = append(out, fmt.Sprintf("%s does not say %s everywhere it names the release version", rel, version))
	}
	return out, nil
}

// changesAnnotation is the last annotation of Chart.yaml: its items follow
// it, indented by four spaces, to the end of the file.
const changesAnnotation = "  artifacthub.io/changes: |\n"

// ChartChanges returns Chart.yaml with the items of artifacthub.io/changes
// replaced by notes, each a double-quoted YAML string.
func ChartChanges(chart []byte, notes []string) ([]byte, error) {
	i := bytes.Index(chart, []byte(changesAnnotation))
	if i < 0 {
		return nil, fmt.Errorf("no annotation %q", strings.TrimSpace(changesAnnotation))
	}
	start := i + len(changesAnnotation)
	if blockEnd(chart, start) != len(chart) {
		return nil, fmt.Errorf("artifacthub.io/changes must be the last annotation, at the end of the file")
	}
	var b bytes.Buffer
	b.Write(chart[:start])
	for _, n := range notes {
		q, err := json.Marshal(n)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "    - %s\n", q)
	}
	return b.Bytes(), nil
}

// blockEnd returns where the lines indented by four spaces from start on
// (an annotation's block) end.
func blockEnd(chart []byte, start int) int {
	end := start
	for end < len(chart) && bytes.HasPrefix(chart[end:], []byte("    ")) {
		nl := bytes.IndexByte(chart[end:], '\n')
		if nl < 0 {
			return len(chart)
		}
		end += nl + 1
	}
	return end
}

// signKeyAnnotation is ArtifactHub's annotation of the key that signs the
// chart (artifacthub.io/docs/topics/annotations/helm: its fingerprint and
// the address of the public key).
const signKeyAnnotation = "  artifacthub.io/signKey: |\n"

var fingerprintRE = regexp.MustCompile(`^[0-9A-F]{40}$`)

// ChartSignKey returns Chart.yaml with artifacthub.io/signKey naming the
// OpenPGP key of fingerprint (40 upper-case hex digits) published at url,
// in place of the one there, if any; it goes right before
// artifacthub.io/changes, which stays the last annotation.
func ChartSignKey(chart []byte, fingerprint, url string) ([]byte, error) {
	if !fingerprintRE.MatchString(fingerprint) {
		return nil, fmt.Errorf("signing key fingerprint %q: want 40 upper-case hex digits", fingerprint)
	}
	if !strings.HasPrefix(url, "https://") && !strings.HasPrefix(url, "http://") {
		return nil, fmt.Errorf("signing key address %q: want an http(s) URL", url)
	}
	if i := bytes.Index(chart, []byte(signKeyAnnotation)); i >= 0 {
		chart = append(chart[:i:i], chart[blockEnd(chart, i+len(signKeyAnnotation)):]...)
	}
	i := bytes.Index(chart, []byte(changesAnnotation))
	if i < 0 {
		return nil, fmt.Errorf("no annotation %q", strings.TrimSpace(changesAnnotation))
	}
	var b bytes.Buffer
	b.Write(chart[:i])
	fmt.Fprintf(&b, "%s    fingerprint: %s\n    url: %s\n", signKeyAnnotation, fingerprint, url)
	b.Write(chart[i:])
	return b.Bytes(), nil
}
