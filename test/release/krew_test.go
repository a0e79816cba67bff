package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/coredns-mcs/coredns-mcs/test/internal/testbin"
)

// TestKrewManifest: the krew manifest make release writes (mcs.yaml) passes
// the validation krew-index runs on every plugin (sigs.k8s.io/krew's
// validate-krew-manifest: structure, platforms, no overlap), names each
// archive by its checksum, and installs offline with krew (--archive): krew
// checks the archive against the manifest's sha256 and puts kubectl-mcs, of
// the release version, on its PATH. An archive whose checksum is not the
// manifest's does not install.
func TestKrewManifest(t *testing.T) {
	b := release(t)
	manifest := b.file("mcs.yaml")
	validate := testbin.Binary(t, "krew", "validate-krew-manifest")
	// -skip-install: its install step downloads each uri; the offline
	// install below is the machine's own platform.
	out := mustRun(t, b.dir, nil, validate, "-manifest", manifest, "-skip-install")
	if !strings.Contains(out, "structural validation OK") || !strings.Contains(out, "no overlapping spec.platform[].selector") {
		t.Errorf("validate-krew-manifest said:\n%s", out)
	}

	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range platforms {
		archive := "coredns-mcs_" + version + "_" + strings.ReplaceAll(p, "/", "_") + ".tgz"
		sum, err := os.ReadFile(b.file(archive + ".sha256"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "sha256: "+strings.Fields(string(sum))[0]+"\n") ||
			!strings.Contains(string(data), "/releases/download/"+version+"/"+archive+"\n") {
			t.Errorf("mcs.yaml does not name %s by its address and checksum:\n%s", archive, data)
		}
	}

	krew := testbin.Binary(t, "krew", "krew")
	root := t.TempDir()
	env := cleanEnv("KREW_ROOT="+root, "HOME="+t.TempDir(), "KREW_NO_UPGRADE_CHECK=1", "KREW_OS="+runtime.GOOS, "KREW_ARCH="+runtime.GOARCH)
	own := b.file("coredns-mcs_" + version + "_" + runtime.GOOS + "_" + runtime.GOARCH + ".tgz")

	// The other platform's archive is not the one the manifest names for
	// this machine.
	var wrong string
	for _, p := range platforms {
		if p != runtime.GOOS+"/"+runtime.GOARCH {
			wrong = b.file("coredns-mcs_" + version + "_" + strings.ReplaceAll(p, "/", "_") + ".tgz")
		}
	}
	if out, err := run(t.Context(), t, b.dir, env, krew, "install", "--manifest="+manifest, "--archive="+wrong); err == nil {
		t.Errorf("krew installed from an archive whose checksum is not the manifest's:\n%s", out)
	}

	mustRun(t, b.dir, env, krew, "install", "--manifest="+manifest, "--archive="+own)
	bin := filepath.Join(root, "bin", "kubectl-mcs")
	said, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || strings.TrimSpace(string(said)) != "kubectl-mcs "+version {
		t.Errorf("kubectl-mcs installed by krew says %q (%v), want kubectl-mcs %s", said, err, version)
	}
	// krew list wants the plugin index (a git clone krew update makes);
	// the receipt is what it would read.
	receipt, err := os.ReadFile(filepath.Join(root, "receipts", "mcs.yaml"))
	if err != nil || !strings.Contains(string(receipt), "version: "+version) {
		t.Errorf("krew's receipt of mcs (%v):\n%s", err, receipt)
	}
	t.Logf("krew installed %s: %s", bin, strings.TrimSpace(string(said)))
}
