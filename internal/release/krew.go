package release

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// KrewPlugin is the plugin's name in krew's index: kubectl mcs, whose
// binary is kubectl-mcs.
const KrewPlugin = "mcs"

// krewPlatforms are the OS/ARCH pairs krew installs for (sigs.k8s.io/krew's
// validate-krew-manifest refuses a platform selector that matches none of
// them): the release's ppc64le, s390x and riscv64 archives have no place in
// the manifest.
var krewPlatforms = []string{
	"darwin/amd64", "darwin/arm64",
	"linux/386", "linux/amd64", "linux/arm", "linux/arm64",
	"windows/386", "windows/amd64", "windows/arm64",
}

var archiveName = regexp.MustCompile(`^coredns-mcs_(v\d+\.\d+\.\d+[^_]*)_([a-z0-9]+)_([a-z0-9]+)\.tgz$`)

// KrewManifest returns the krew plugin manifest (mcs.yaml) of the release
// version whose archives, coredns-mcs_VERSION_OS_ARCH.tgz, are in dir: one
// platform for each archive krew can install, with its sha256 and its
// address under urlBase (the release's download URL). The plugin is
// kubectl-mcs, which every archive holds beside coredns.
func KrewManifest(dir, version, urlBase string) ([]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var platforms []string
	sums := map[string]string{}
	names := map[string]string{}
	for _, e := range entries {
		m := archiveName.FindStringSubmatch(e.Name())
		if m == nil || m[1] != version {
			continue
		}
		p := m[2] + "/" + m[3]
		if !slices.Contains(krewPlatforms, p) {
			continue
		}
		sum, err := fileSHA256(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		platforms = append(platforms, p)
		sums[p], names[p] = sum, e.Name()
	}
	if len(platforms) == 0 {
		return nil, fmt.Errorf("no archive coredns-mcs_%s_OS_ARCH.tgz in %s for a platform krew installs (%s)", version, dir, strings.Join(krewPlatforms, " "))
	}
	slices.Sort(platforms)

	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: %s
spec:
  version: %s
  homepage: https://github.com/coredns-mcs/coredns-mcs
  shortDescription: Explain and check multi-cluster DNS (coredns-mcs)
  description: |
    kubectl mcs explains why a name under clusterset.local or cluster.local
    answers what it does (the ServiceImport, its EndpointSlices, the
    Corefile's order and policy, step by step), checks a cluster's
    coredns-mcs setup (image, Corefile, RBAC, CRDs, the front that
    forwards to a standalone server) and writes the cluster DNS
    configuration that forwards to it (kubectl mcs front).
  platforms:
`, KrewPlugin, version)
	for _, p := range platforms {
		goos, goarch, _ := strings.Cut(p, "/")
		fmt.Fprintf(&b, `  - selector:
      matchLabels:
        os: %s
        arch: %s
    uri: %s/%s
    sha256: %s
    files:
      - from: kubectl-mcs
        to: .
      - from: LICENSE
        to: .
    bin: kubectl-mcs
`, goos, goarch, strings.TrimSuffix(urlBase, "/"), names[p], sums[p])
	}
	return []byte(b.String()), nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Checksums returns the SHA256SUMS of the files in dir, in sha256sum's
// format ("HEX  NAME", sorted by name), leaving out the per-archive .sha256
// files, SHA256SUMS itself and its signatures.
func Checksums(dir string) ([]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, e := range entries {
		n := e.Name()
		if !e.Type().IsRegular() || strings.HasSuffix(n, ".sha256") || strings.HasPrefix(n, "SHA256SUMS") {
			continue
		}
		sum, err := fileSHA256(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, n)
	}
	return []byte(b.String()), nil
}
