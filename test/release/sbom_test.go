package release

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestSBOM: make release writes a CycloneDX SBOM for each binary of each
// archive, which names the binary by its hashes and the release version, and
// lists every module the binary records having been built from (go version
// -m), at its version, and the standard library of the Go that built it.
func TestSBOM(t *testing.T) {
	b := release(t)
	for _, p := range platforms {
		for _, exe := range []string{"coredns", "kubectl-mcs"} {
			t.Run(strings.ReplaceAll(p, "/", "_")+"_"+exe, func(t *testing.T) {
				path := b.file("coredns-mcs_" + version + "_" + strings.ReplaceAll(p, "/", "_") + "_" + exe + ".cdx.json")
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				var bom cycloneDX
				if err := json.Unmarshal(data, &bom); err != nil {
					t.Fatal(err)
				}
				var raw map[string]any
				_ = json.Unmarshal(data, &raw)
				if _, ok := raw["serialNumber"]; ok {
					t.Error("the SBOM has a serial number, which differs between two builds")
				}
				if m, _ := raw["metadata"].(map[string]any); m["timestamp"] != nil {
					t.Error("the SBOM has a timestamp, which differs between two builds")
				}
				if bom.BOMFormat != "CycloneDX" || bom.SpecVersion == "" {
					t.Errorf("bomFormat %q specVersion %q", bom.BOMFormat, bom.SpecVersion)
				}
				goos, goarch, _ := strings.Cut(p, "/")
				if bom.Metadata.Component.Name != "github.com/coredns-mcs/coredns-mcs" || bom.Metadata.Component.Version != version ||
					!strings.Contains(bom.Metadata.Component.PURL, "goos="+goos) || !strings.Contains(bom.Metadata.Component.PURL, "goarch="+goarch) {
					t.Errorf("the SBOM describes %+v, want github.com/coredns-mcs/coredns-mcs %s for %s", bom.Metadata.Component, version, p)
				}
				binary := archiveFile(t, b.file("coredns-mcs_"+version+"_"+strings.ReplaceAll(p, "/", "_")+".tgz"), exe)
				sum := sha256.Sum256(binary)
				if got := bom.property("cdx:gomod:binary:hash:SHA-256"); got != hex.EncodeToString(sum[:]) {
					t.Errorf("the SBOM's binary sha256 is %s, the archive's %s is %x", got, exe, sum)
				}
				if got := bom.property("cdx:gomod:binary:name"); got != exe {
					t.Errorf("cdx:gomod:binary:name %q", got)
				}

				// Every module the binary was built from, at its version.
				listed := map[string]string{}
				for _, c := range bom.Components {
					listed[c.Name] = c.Version
				}
				tmp := filepath.Join(t.TempDir(), exe)
				if err := os.WriteFile(tmp, binary, 0o755); err != nil {
					t.Fatal(err)
				}
				out, err := exec.Command("go", "version", "-m", tmp).Output()
				if err != nil {
					t.Fatalf("go version -m: %v", err)
				}
				// A module built from a directory of this repository (the
				// plugin's: go.mod's replace) is listed at the release
				// version, not at the v0.0.0 its requirement names.
				n, local := 0, 0
				var lines [][]string
				sc := bufio.NewScanner(strings.NewReader(string(out)))
				for sc.Scan() {
					lines = append(lines, strings.Fields(sc.Text()))
				}
				for i, f := range lines {
					if len(f) < 3 || f[0] != "dep" {
						continue
					}
					n++
					want := f[2]
					if i+1 < len(lines) && len(lines[i+1]) >= 2 && lines[i+1][0] == "=>" && strings.HasPrefix(lines[i+1][1], "./") {
						want = version
						local++
					}
					if listed[f[1]] != want {
						t.Errorf("module %s %s of the binary is %q in the SBOM, want %s", f[1], f[2], listed[f[1]], want)
					}
				}
				if exe == "coredns" && local == 0 {
					t.Errorf("go version -m lists no module built from a directory of this repository; the plugin's is")
				}
				if n < 10 {
					t.Errorf("go version -m lists %d modules of %s", n, exe)
				}
				if listed["std"] != runtime.Version() {
					t.Errorf("the SBOM lists the standard library at %q, want %s, the Go that built it", listed["std"], runtime.Version())
				}
				t.Logf("%s: %d components, every one of the %d modules of go version -m", filepath.Base(path), len(bom.Components), n)
			})
		}
	}
}
