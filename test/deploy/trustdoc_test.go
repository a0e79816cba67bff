package deploy

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTrustModelNamesRealTests: every test docs/trust.md names as holding a
// rule exists, and so does every subtest it names (by the name given to
// t.Run, spaces as go test prints them, underscores), so that the page
// cannot cite a test that was renamed or removed.
func TestTrustModelNamesRealTests(t *testing.T) {
	doc := string(readRepoFile(t, "docs/trust.md"))
	var sources strings.Builder
	root := repoRoot(t)
	for _, dir := range []string{"plugin", "test"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			sources.Write(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	src := sources.String()
	cited := regexp.MustCompile("`((?:Test|Fuzz)[A-Za-z0-9]+)((?:/[^`]+)?)`").FindAllStringSubmatch(doc, -1)
	if len(cited) < 30 {
		t.Fatalf("docs/trust.md cites %d tests: the pattern no longer finds them", len(cited))
	}
	for _, c := range cited {
		if !strings.Contains(src, "func "+c[1]+"(") {
			t.Errorf("docs/trust.md cites %s, which no test file defines", c[1])
			continue
		}
		for _, sub := range strings.Split(strings.TrimPrefix(c[2], "/"), "/") {
			if sub == "" {
				continue
			}
			// go test prints spaces as underscores; the source has either.
			if !strings.Contains(src, `"`+sub) && !strings.Contains(src, strings.ReplaceAll(sub, "_", " ")) {
				t.Errorf("docs/trust.md cites the subtest %s of %s, which no test file names", sub, c[1])
			}
		}
	}
}
