package deploy

import (
	"strings"
	"testing"
)

// TestDocsCorefile keeps the Corefile shown in docs/deploy.md equal to the
// one manifests/ deploys.
func TestDocsCorefile(t *testing.T) {
	doc := string(readRepoFile(t, "docs/deploy.md"))
	_, after, ok := strings.Cut(doc, "The Corefile (`manifests/corefile/configmap.yaml`)")
	if !ok {
		t.Fatal("docs/deploy.md no longer introduces the Corefile of manifests/corefile")
	}
	_, block, ok := strings.Cut(after, "```\n")
	if ok {
		block, _, ok = strings.Cut(block, "```\n")
	}
	if !ok {
		t.Fatal("no code block after the Corefile's introduction in docs/deploy.md")
	}
	if want := shippedCorefile(t); block != want {
		t.Errorf("docs/deploy.md shows the Corefile\n%s\nbut manifests/corefile/configmap.yaml has\n%s", block, want)
	}
}
