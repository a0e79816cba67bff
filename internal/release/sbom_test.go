package release

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sbomWithLocalModule is the shape cyclonedx-gomod v1.10.0 bin writes for
// a binary built with a directory replace (the plugin's module here):
// its name is the directory, its version "(devel)".
const sbomWithLocalModule = `{
  "bomFormat": "CycloneDX",
  "specVersion": "1.6",
  "version": 1,
  "metadata": {"component": {"bom-ref": "pkg:golang/example.com/dist@v1.2.3?type=module#coredns", "name": "example.com/dist", "version": "v1.2.3"}},
  "components": [
    {"bom-ref": "pkg:golang/./plugin/x@(devel)?type=module", "type": "library", "name": "./plugin/x", "version": "(devel)", "scope": "required", "purl": "pkg:golang/./plugin/x@(devel)?goarch=amd64&goos=linux&type=module"},
    {"bom-ref": "pkg:golang/k8s.io/api@v0.37.1?type=module", "type": "library", "name": "k8s.io/api", "version": "v0.37.1", "purl": "pkg:golang/k8s.io/api@v0.37.1?goarch=amd64&goos=linux&type=module"}
  ],
  "dependencies": [
    {"ref": "pkg:golang/example.com/dist@v1.2.3?type=module#coredns", "dependsOn": ["pkg:golang/./plugin/x@(devel)?type=module", "pkg:golang/k8s.io/api@v0.37.1?type=module"]},
    {"ref": "pkg:golang/./plugin/x@(devel)?type=module"}
  ]
}`

func TestNameLocalModules(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "plugin", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "plugin", "x", "go.mod"), []byte("module example.com/dist/plugin/x\n\ngo 1.26.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := NameLocalModules([]byte(sbomWithLocalModule), root, "v1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "./plugin/x") || strings.Contains(string(out), "(devel)") {
		t.Errorf("the local module is still named by its directory:\n%s", out)
	}
	var bom struct {
		Components []struct {
			Ref     string `json:"bom-ref"`
			Name    string `json:"name"`
			Version string `json:"version"`
			PURL    string `json:"purl"`
		} `json:"components"`
		Dependencies []struct {
			Ref       string   `json:"ref"`
			DependsOn []string `json:"dependsOn"`
		} `json:"dependencies"`
	}
	if err := json.Unmarshal(out, &bom); err != nil {
		t.Fatal(err)
	}
	c := bom.Components[0]
	if c.Name != "example.com/dist/plugin/x" || c.Version != "v1.2.3" ||
		c.Ref != "pkg:golang/example.com/dist/plugin/x@v1.2.3?type=module" ||
		c.PURL != "pkg:golang/example.com/dist/plugin/x@v1.2.3?goarch=amd64&goos=linux&type=module" {
		t.Errorf("the local module's component is %+v", c)
	}
	if k := bom.Components[1]; k.Name != "k8s.io/api" || k.Version != "v0.37.1" {
		t.Errorf("another module's component changed: %+v", k)
	}
	if d := bom.Dependencies; d[0].DependsOn[0] != c.Ref || d[1].Ref != c.Ref || d[0].DependsOn[1] != bom.Components[1].Ref {
		t.Errorf("the dependency graph does not follow the new bom-ref: %+v", d)
	}

	// An SBOM without local modules is left as it was, byte for byte.
	plain := strings.Replace(sbomWithLocalModule, "./plugin/x", "example.com/dist/plugin/x", -1)
	if out, err := NameLocalModules([]byte(plain), root, "v1.2.3"); err != nil || string(out) != plain {
		t.Errorf("an SBOM without local modules changed (%v)", err)
	}
	// A local module whose directory has no go.mod is an error, not a guess.
	if _, err := NameLocalModules([]byte(strings.Replace(sbomWithLocalModule, "./plugin/x", "./plugin/y", -1)), root, "v1.2.3"); err == nil {
		t.Error("a local module without a go.mod was accepted")
	}
}
