package testbin

import "testing"

// TestSharedSetsCompileTheMainModulesVersions checks that every module that
// both the main module (its packages and their tests) and a set of
// SharedSets compile is at the same version in both.
func TestSharedSetsCompileTheMainModulesVersions(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the packages of several module graphs")
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range SharedSets {
		ms, err := Mismatches(root, set)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			t.Error(m)
		}
		if len(ms) > 0 {
			t.Errorf("set %s: go run ./test/cmd/sharedeps %s", set, set)
		}
	}
}
