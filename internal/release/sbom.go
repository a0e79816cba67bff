package release

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"
)

// NameLocalModules rewrites, in a CycloneDX SBOM of cyclonedx-gomod bin,
// the components of modules the binary was built from a directory of root
// (a go.mod replace such as ./plugin/multicluster): the binary records
// them by that path at "(devel)", which names no module a reader can look
// up. They are this repository's own modules, released with it, so each
// becomes the module path its go.mod declares at version, in its name,
// version, purl and bom-ref, and in every reference to that bom-ref.
func NameLocalModules(sbom []byte, root, version string) ([]byte, error) {
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(sbom))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("the SBOM: %w", err)
	}
	components, _ := doc["components"].([]any)
	refs := map[string]string{}
	for _, c := range components {
		comp, _ := c.(map[string]any)
		name, _ := comp["name"].(string)
		if !strings.HasPrefix(name, "./") && !strings.HasPrefix(name, "../") {
			continue
		}
		gomod := filepath.Join(root, filepath.FromSlash(name), "go.mod")
		data, err := os.ReadFile(gomod)
		if err != nil {
			return nil, fmt.Errorf("the SBOM names the local module %s: %w", name, err)
		}
		path := modfile.ModulePath(data)
		if path == "" {
			return nil, fmt.Errorf("%s declares no module", gomod)
		}
		old := "pkg:golang/" + name + "@" + fmt.Sprint(comp["version"])
		now := "pkg:golang/" + path + "@" + version
		for _, key := range []string{"purl", "bom-ref"} {
			if s, ok := comp[key].(string); ok {
				if !strings.HasPrefix(s, old) {
					return nil, fmt.Errorf("the SBOM's %s of %s is %q, not under %q", key, name, s, old)
				}
				comp[key] = now + strings.TrimPrefix(s, old)
				if key == "bom-ref" {
					refs[s] = comp[key].(string)
				}
			}
		}
		comp["name"], comp["version"] = path, version
	}
	if len(refs) == 0 {
		return sbom, nil
	}
	renameRefs(doc, refs)
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// renameRefs replaces every string of v that refs maps, at any depth: the
// dependency graph's ref and dependsOn entries.
func renameRefs(v any, refs map[string]string) {
	rename := func(e any, set func(string)) {
		if s, ok := e.(string); ok {
			if r, ok := refs[s]; ok {
				set(r)
			}
			return
		}
		renameRefs(e, refs)
	}
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			rename(e, func(r string) { v[k] = r })
		}
	case []any:
		for i, e := range v {
			rename(e, func(r string) { v[i] = r })
		}
	}
}
