// Package release tests what make release publishes, as a user receives and
// checks it: one version everywhere (make release VERSION=... and
// TestOneVersion), the multi-platform image index (its arm64 coredns run
// under qemu-user-static, answering dig), reproducibility (two clean builds,
// the same digests), the SBOMs, cosign signatures and attestations and the
// signed chart pushed to a distribution registry on loopback and installed
// from it into a real API server, the krew manifest (krew's own validation,
// and an offline install), the ArtifactHub metadata and govulncheck against
// the offline vulnerability database.
//
// The release is built once (release), from a copy of the repository at
// version v9.8.7 for linux/amd64 and linux/arm64; every test reads it.
package release

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/testbin"
)

// version is the release the tests build: above any real one, so that the
// changelog takes it.
const version = "v9.8.7"

// platforms are the release's platforms in the tests: the machine's own and
// arm64, which qemu runs.
var platforms = []string{"linux/amd64", "linux/arm64"}

var tmpDirs struct {
	sync.Mutex
	dirs []string
}

func TestMain(m *testing.M) {
	yieldCPU()
	code := m.Run()
	tmpDirs.Lock()
	for _, d := range tmpDirs.dirs {
		os.RemoveAll(d)
	}
	tmpDirs.Unlock()
	os.Exit(code)
}

// yieldCPU lowers this process's scheduling priority (nice 10), and so that
// of every process its tests start: links, compression, signing, emulation
// and vulnerability analysis take whole cores for minutes, while `make test`
// runs packages side by side whose servers must answer within milliseconds
// (the standalone front's 20 ms read timeout). Linux keeps a nice value per
// thread, and a new thread or child takes its creator's: every thread is
// set. It only ever lowers priority, which needs no privilege.
func yieldCPU() {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return
	}
	for _, task := range tasks {
		if tid, err := strconv.Atoi(task.Name()); err == nil {
			_ = syscall.Setpriority(syscall.PRIO_PROCESS, tid, 10)
		}
	}
}

// tempDir is a directory that outlives one test, for what several tests
// share; TestMain removes it.
func tempDir(t testing.TB, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	tmpDirs.Lock()
	tmpDirs.dirs = append(tmpDirs.dirs, dir)
	tmpDirs.Unlock()
	return dir
}

// ci and unavailable: a missing tool fails a test under CI=true, and
// skips it otherwise.
var ci, unavailable = harness.CI, harness.Unavailable

func lookTool(t testing.TB, name, hint string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		unavailable(t, "%s not found (%s): %v", name, hint, err)
	}
	return path
}

func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := testbin.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// cleanEnv is the environment without what would change a make or go run
// inside a copy: make's own variables, VERSION, and the test's GOFLAGS.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "MAKEFLAGS", "MAKELEVEL", "MFLAGS", "VERSION", "IMAGE", "IMAGE_TAG", "RELEASE_DIR", "PLATFORMS":
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// run runs a command in dir and returns its combined output.
func run(ctx context.Context, t testing.TB, dir string, env []string, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	if cmd.Env == nil {
		cmd.Env = cleanEnv()
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s %s (%s)", filepath.Base(name), strings.Join(args, " "), time.Since(start).Round(10*time.Millisecond))
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

func mustRun(t testing.TB, dir string, env []string, name string, args ...string) string {
	t.Helper()
	out, err := run(t.Context(), t, dir, env, name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// copyRepo copies the repository's files (tracked, and untracked but not
// ignored: the working tree as it is) to dst, without .git, build/ or
// release/.
func copyRepo(t testing.TB, dst string) {
	t.Helper()
	root := repoRoot(t)
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		unavailable(t, "git ls-files in %s (the tests copy the repository's files): %v", root, err)
	}
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, rel)
		info, err := os.Lstat(src)
		if err != nil {
			if os.IsNotExist(err) { // deleted in the working tree
				continue
			}
			t.Fatal(err)
		}
		if !info.Mode().IsRegular() {
			continue
		}
		if err := copyFile(src, filepath.Join(dst, rel), info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

func copyFile(src, dst string, perm fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// addReleaseNotes writes a note under "## Unreleased" of the copy's
// changelog, as a release engineer does before make release.
func addReleaseNotes(t testing.TB, root string) {
	editUnreleased(t, root, func(notes []byte) []byte {
		return append([]byte("\n- The release the tests build: every artifact, signed and checked.\n"), notes...)
	})
}

// clearReleaseNotes empties the "## Unreleased" section of the copy's
// changelog: a version with nothing written for it yet.
func clearReleaseNotes(t testing.TB, root string) {
	editUnreleased(t, root, func([]byte) []byte { return nil })
}

// editUnreleased replaces what the copy's changelog holds between
// "## Unreleased" and the next section by edit of it.
func editUnreleased(t testing.TB, root string, edit func(notes []byte) []byte) {
	t.Helper()
	path := filepath.Join(root, "CHANGELOG.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const heading = "## Unreleased\n"
	i := bytes.Index(data, []byte(heading))
	if i < 0 {
		t.Fatalf("CHANGELOG.md has no %q", heading)
	}
	start := i + len(heading)
	end := bytes.Index(data[start:], []byte("\n## "))
	if end < 0 {
		t.Fatal("CHANGELOG.md has no section after Unreleased")
	}
	out := append(append(append([]byte{}, data[:start]...), edit(bytes.Clone(data[start:start+end]))...), data[start+end:]...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// built is a release made by make release in a copy of the repository.
type built struct {
	root string // the copy
	dir  string // its release directory
	// gnupg is the GNUPGHOME with the key that signed the chart; keyring
	// and pubring are its secret and public keyrings in the format helm
	// reads.
	gnupg, keyring, pubring string
	log                     string
}

// file returns the path of a file of the release.
func (b *built) file(name string) string { return filepath.Join(b.dir, name) }

var (
	releaseOnce sync.Once
	releaseA    *built
	releaseErr  error
)

// release builds the release once, for every test: make release
// VERSION=v9.8.7 for linux/amd64 and linux/arm64 in a copy of the
// repository, the chart signed with a key made for the test.
func release(t testing.TB) *built {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping: builds the release, which -short leaves out")
	}
	lookTool(t, "make", "apt-get install make")
	lookTool(t, "gpg", "apt-get install gnupg")
	releaseOnce.Do(func() {
		releaseA, releaseErr = buildRelease(t, tempDir(t, "coredns-mcs-release-a-"), nil)
	})
	if releaseErr != nil {
		t.Fatalf("make release: %v", releaseErr)
	}
	return releaseA
}

// buildRelease copies the repository into dir/src and runs make release
// there with env added.
func buildRelease(t testing.TB, dir string, env []string) (*built, error) {
	b := &built{root: filepath.Join(dir, "src")}
	b.dir = filepath.Join(b.root, "release")
	copyRepo(t, b.root)
	addReleaseNotes(t, b.root)
	var err error
	if b.gnupg, b.keyring, b.pubring, err = chartKey(t, dir); err != nil {
		return nil, err
	}
	// A machine's first run compiles CoreDNS and kubectl-mcs for arm64 from
	// nothing, while make test's other builds share the cores.
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	out, err := run(ctx, t, b.root, cleanEnv(env...), "make", "--no-print-directory", "release",
		"VERSION="+version, "COMMIT=releasetest",
		"PLATFORMS="+strings.Join(platforms, " "),
		"RELEASE_IMAGE_PLATFORMS="+strings.Join(platforms, " "),
		"CHART_SIGN_KEY="+chartSigner, "CHART_KEYRING="+b.keyring)
	b.log = out
	if err != nil {
		return nil, err
	}
	return b, nil
}

// chartSigner is the name of the test's chart signing key.
const chartSigner = "coredns-mcs release test <release-test@coredns-mcs.invalid>"

// chartKey makes an OpenPGP key pair without a passphrase in dir/gnupg and
// exports its secret and public keyrings, which helm package --sign and helm
// verify read.
func chartKey(t testing.TB, dir string) (home, secring, pubring string, err error) {
	gpg, err := exec.LookPath("gpg")
	if err != nil {
		return "", "", "", err
	}
	home = filepath.Join(dir, "gnupg")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return "", "", "", err
	}
	env := cleanEnv("GNUPGHOME=" + home)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := run(ctx, t, dir, env, gpg, "--batch", "--pinentry-mode", "loopback", "--passphrase", "",
		"--quick-generate-key", chartSigner, "rsa3072", "sign", "never"); err != nil {
		return "", "", "", err
	}
	secring, pubring = filepath.Join(dir, "secring.gpg"), filepath.Join(dir, "pubring.gpg")
	for _, e := range []struct{ arg, path string }{{"--export-secret-keys", secring}, {"--export", pubring}} {
		cmd := exec.CommandContext(ctx, gpg, "--batch", "--pinentry-mode", "loopback", "--passphrase", "", e.arg, chartSigner)
		cmd.Env = env
		data, err := cmd.Output()
		if err != nil || len(data) == 0 {
			return "", "", "", fmt.Errorf("gpg %s: %v", e.arg, err)
		}
		if err := os.WriteFile(e.path, data, 0o600); err != nil {
			return "", "", "", err
		}
	}
	return home, secring, pubring, nil
}
