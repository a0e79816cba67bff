package deploy

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// machines is the ELF machine, class and byte order each Linux release
// architecture must have.
var machines = map[string]struct {
	machine elf.Machine
	class   elf.Class
	order   string
}{
	"amd64":   {elf.EM_X86_64, elf.ELFCLASS64, "LittleEndian"},
	"arm64":   {elf.EM_AARCH64, elf.ELFCLASS64, "LittleEndian"},
	"arm":     {elf.EM_ARM, elf.ELFCLASS32, "LittleEndian"},
	"ppc64le": {elf.EM_PPC64, elf.ELFCLASS64, "LittleEndian"},
	"s390x":   {elf.EM_S390, elf.ELFCLASS64, "BigEndian"},
	"riscv64": {elf.EM_RISCV, elf.ELFCLASS64, "LittleEndian"},
}

// TestReleaseArchives checks release archives: each has a matching
// sha256sum-format checksum file and holds two executables, coredns and
// kubectl-mcs, built for the archive's platform, statically linked and version stamped.
//
// make -f Makefile.release release-check runs it on RELEASE_DIR for
// RELEASE_PLATFORMS (all seven). Without RELEASE_DIR, as in make test, it runs
// Makefile.release itself for one platform into a temporary directory: the
// machine's own, whose compiled packages the preceding make build left in
// the Go build cache, so that make test does not spend minutes compiling the
// dependency tree for a second architecture. Set RELEASE_TEST_PLATFORM
// (e.g. linux/arm64) to cross-build another one.
func TestReleaseArchives(t *testing.T) {
	dir := os.Getenv("RELEASE_DIR")
	platforms := strings.Fields(os.Getenv("RELEASE_PLATFORMS"))
	version := ""
	if dir == "" {
		if testing.Short() {
			t.Skip("skipping: builds coredns, which -short leaves out")
		}
		platform := os.Getenv("RELEASE_TEST_PLATFORM")
		if platform == "" {
			platform = runtime.GOOS + "/" + runtime.GOARCH
		}
		platforms = []string{platform}
		version = fmt.Sprintf("v0.0.0-release-test-%d", time.Now().UnixNano())
		dir = buildRelease(t, platform, version)
	}
	if len(platforms) == 0 {
		t.Fatal("RELEASE_DIR is set but RELEASE_PLATFORMS is empty")
	}

	// Every archive belongs to a platform, and every platform has one.
	archives, err := filepath.Glob(filepath.Join(dir, "coredns-mcs_*.tgz"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range archives {
		if !slices.ContainsFunc(platforms, func(p string) bool { return strings.HasSuffix(a, "_"+strings.ReplaceAll(p, "/", "_")+".tgz") }) {
			t.Errorf("%s is not for any of %v", a, platforms)
		}
	}
	for _, p := range platforms {
		t.Run(strings.ReplaceAll(p, "/", "_"), func(t *testing.T) {
			goos, goarch, ok := strings.Cut(p, "/")
			if !ok {
				t.Fatalf("platform %q: want OS/ARCH", p)
			}
			suffix := "_" + goos + "_" + goarch + ".tgz"
			var found []string
			for _, a := range archives {
				if strings.HasSuffix(a, suffix) {
					found = append(found, a)
				}
			}
			if len(found) != 1 {
				t.Fatalf("want one archive coredns-mcs_VERSION%s in %s, found %v", suffix, dir, found)
			}
			checkArchive(t, found[0], goos, goarch, version)
		})
	}
}

// buildRelease runs Makefile.release for one platform into a temporary
// directory and returns the release directory.
func buildRelease(t *testing.T, platform, version string) string {
	t.Helper()
	mk := lookTool(t, "make", "apt-get install make")
	tmp := t.TempDir()
	releaseDir := filepath.Join(tmp, "release")
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	_, err := run(ctx, t, nil, mk, "--no-print-directory", "-f", "Makefile.release", "release",
		"PLATFORMS="+platform, "VERSION="+version, "COMMIT=releasetest",
		"BUILD_DIR="+filepath.Join(tmp, "build"), "RELEASE_DIR="+releaseDir)
	if err != nil {
		t.Fatal(err)
	}
	return releaseDir
}

func checkArchive(t *testing.T, archive, goos, goarch, version string) {
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d bytes", filepath.Base(archive), len(data))

	// The checksum file is what sha256sum -c reads: "HEX  NAME".
	sum, err := os.ReadFile(archive + ".sha256")
	if err != nil {
		t.Fatalf("checksum file: %v", err)
	}
	digest := sha256.Sum256(data)
	if want := hex.EncodeToString(digest[:]) + "  " + filepath.Base(archive) + "\n"; string(sum) != want {
		t.Errorf("%s.sha256 = %q, want %q", filepath.Base(archive), sum, want)
	}

	// The version is the archive name's, and the one given to the build
	// when this test ran it.
	name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(archive), "coredns-mcs_"), "_"+goos+"_"+goarch+".tgz")
	if version != "" && name != version {
		t.Errorf("archive %s is not named for version %s", filepath.Base(archive), version)
	}
	binaries := extractBinaries(t, data)
	license, err := os.ReadFile(filepath.Join(repoRoot(t), "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(binaries["LICENSE"], license) {
		t.Errorf("the archive's LICENSE is not the repository's (%d bytes)", len(binaries["LICENSE"]))
	}
	for _, exe := range []string{"coredns", "kubectl-mcs"} {
		binary := binaries[exe]
		if binary == nil {
			t.Errorf("the archive holds no %s", exe)
			continue
		}
		if !bytes.Contains(binary, []byte(name)) {
			t.Errorf("%s does not carry the version %s of its archive's name", exe, name)
		}
		checkExecutable(t, exe, binary, goos, goarch)
	}
}

// checkExecutable checks that binary is a static executable for goos/goarch.
func checkExecutable(t *testing.T, exe string, binary []byte, goos, goarch string) {
	t.Helper()
	switch goos {
	case "linux":
		want, ok := machines[goarch]
		if !ok {
			t.Fatalf("no expected ELF machine for linux/%s", goarch)
		}
		f, err := elf.NewFile(bytes.NewReader(binary))
		if err != nil {
			t.Fatalf("%s is not an ELF file: %v", exe, err)
		}
		defer f.Close()
		if f.Machine != want.machine || f.Class != want.class || fmt.Sprint(f.ByteOrder) != want.order {
			t.Errorf("%s is %v %v %v, want %v %v %s", exe, f.Machine, f.Class, f.ByteOrder, want.machine, want.class, want.order)
		}
		if f.Type != elf.ET_EXEC {
			t.Errorf("%s has ELF type %v, want %v (a static, non-PIE executable)", exe, f.Type, elf.ET_EXEC)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
				t.Errorf("%s has a %v program header: it is dynamically linked (CGO_ENABLED=0 lost?)", exe, p.Type)
			}
		}
	case "darwin":
		if goarch != "arm64" {
			t.Fatalf("no expected Mach-O CPU for darwin/%s", goarch)
		}
		f, err := macho.NewFile(bytes.NewReader(binary))
		if err != nil {
			t.Fatalf("%s is not a Mach-O file: %v", exe, err)
		}
		defer f.Close()
		if f.Cpu != macho.CpuArm64 || f.Type != macho.TypeExec {
			t.Errorf("%s is Mach-O %v %v, want %v %v", exe, f.Cpu, f.Type, macho.CpuArm64, macho.TypeExec)
		}
	default:
		t.Fatalf("no header check for %s", goos)
	}
}

// extractBinaries returns the archive's entries, which must be executable
// regular files named coredns and kubectl-mcs, by name.
func extractBinaries(t *testing.T, tgz []byte) map[string][]byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	tr := tar.NewReader(gz)
	out := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read tar: %v", err)
		}
		if (h.Name != "coredns" && h.Name != "kubectl-mcs" && h.Name != "LICENSE") || out[h.Name] != nil {
			t.Errorf("unexpected archive entry %q; want only coredns, kubectl-mcs and LICENSE", h.Name)
			continue
		}
		switch {
		case h.Typeflag != tar.TypeReg:
			t.Errorf("%s in the archive has type %q; want a file", h.Name, h.Typeflag)
		case h.Name == "LICENSE" && h.Mode != 0o644:
			t.Errorf("LICENSE in the archive has mode %o; want 644", h.Mode)
		case h.Name != "LICENSE" && h.Mode != 0o755:
			t.Errorf("%s in the archive has mode %o; want 755, an executable", h.Name, h.Mode)
		}
		if out[h.Name], err = io.ReadAll(tr); err != nil {
			t.Fatalf("read %s from the archive: %v", h.Name, err)
		}
	}
	return out
}
