package release

import (
	"os"
	"strings"
	"testing"
)

// TestReproducible builds the release a second time, from a fresh copy of
// the repository at another path, with another umask, time zone, locale and
// temporary directory, and compares it with the first: every archive, the
// image index (its digest), every SBOM and the krew manifest must be the same
// bytes. The chart's archive is left out: helm package stamps the time of
// packaging on its files, and its provenance is a signature made then.
//
// The second build shares the Go build cache with the first (compiled
// packages), but links every binary and writes every file anew. With
// RELEASE_REPRO_COLD=1 it gets an empty Go build cache of its own, and
// compiles everything from source (minutes more).
func TestReproducible(t *testing.T) {
	a := release(t)
	dir := tempDir(t, "coredns-mcs-release-b-")
	env := []string{"TZ=Pacific/Kiritimati", "LC_ALL=C", "TMPDIR=" + t.TempDir(), "SOURCE_DATE_EPOCH="}
	if os.Getenv("RELEASE_REPRO_COLD") == "1" {
		env = append(env, "GOCACHE="+t.TempDir())
	}
	// umask 077: files the second build writes are private, unlike the
	// first's; nothing of it may reach the artifacts.
	old := umask(0o077)
	b, err := buildRelease(t, dir, env)
	umask(old)
	if err != nil {
		t.Fatalf("the second make release: %v", err)
	}

	sumsA, sumsB := readSums(t, a.file("SHA256SUMS")), readSums(t, b.file("SHA256SUMS"))
	chart := "coredns-mcs-" + strings.TrimPrefix(version, "v") + ".tgz"
	n := 0
	for name, sum := range sumsA {
		// The chart carries helm package's time; the signing key (and so
		// the provenance and the chart's signKey) is made anew for each
		// build of this test.
		if name == chart || name == chart+".prov" || name == "coredns-mcs-chart-key.asc" {
			continue
		}
		n++
		if sumsB[name] != sum {
			t.Errorf("%s differs between two builds: %s, then %s", name, sum, sumsB[name])
		} else {
			t.Logf("%s  %s: the same in both builds", sum[:16], name)
		}
	}
	for name := range sumsB {
		if _, ok := sumsA[name]; !ok {
			t.Errorf("the second build wrote %s, the first did not", name)
		}
	}
	if n < 2+1+4+1 { // two archives, the image, four SBOMs, mcs.yaml
		t.Errorf("SHA256SUMS lists %d files besides the chart: %v", n, sumsA)
	}
	idxA, _ := imageIndex(t, a).Digest()
	idxB, _ := imageIndex(t, b).Digest()
	if idxA != idxB {
		t.Errorf("the image index is %s, then %s", idxA, idxB)
	} else {
		t.Logf("image index %s in both builds", idxA)
	}
}

// readSums reads a SHA256SUMS file: name -> sum.
func readSums(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok || len(sum) != 64 {
			t.Fatalf("%s: line %q is not sha256sum's", path, line)
		}
		sums[name] = sum
	}
	return sums
}
