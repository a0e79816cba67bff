//go:build linux

package node

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/coredns-mcs/coredns-mcs/internal/ociimage"
	"github.com/coredns-mcs/coredns-mcs/test/internal/cresolve"
)

// importImages builds the pause and dnsutils images and imports them, and
// the images of Options, into containerd.
func (n *Node) importImages(ctx context.Context) error {
	dir := n.Layout.imageDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pause, err := buildPauseImage(ctx, dir)
	if err != nil {
		return fmt.Errorf("pause image: %w", err)
	}
	dnsutils, err := buildDNSUtilsImage(ctx, dir)
	if err != nil {
		return fmt.Errorf("dnsutils image: %w", err)
	}
	for _, archive := range append([]string{pause, dnsutils}, n.opts.Images...) {
		if err := n.ImportImage(ctx, archive); err != nil {
			return err
		}
	}
	return nil
}

// platform is this machine's, which the images are built for.
func platform() v1.Platform {
	return v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
}

// kubernetesSource returns the directory of k8s.io/kubernetes v1.37.1 in
// the module cache, downloading it if needed (the kube set's build has).
func kubernetesSource(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", "k8s.io/kubernetes@v1.37.1")
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download k8s.io/kubernetes@v1.37.1: %w", err)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return "", err
	}
	if mod.Dir == "" {
		return "", fmt.Errorf("go mod download k8s.io/kubernetes@v1.37.1: %s", mod.Error)
	}
	return mod.Dir, nil
}

func cacheDir() (string, error) {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		base = filepath.Join(home, ".cache")
	}
	dir := filepath.Join(base, "coredns-mcs", "node")
	return dir, os.MkdirAll(dir, 0o755)
}

// buildPauseImage compiles the sandbox program of Kubernetes
// (build/pause/linux/pause.c) statically, as the pause image has it, and
// writes the image PauseImage. The binary is cached by the hash of the
// source and of the compiler's version.
func buildPauseImage(ctx context.Context, dir string) (string, error) {
	src, err := kubernetesSource(ctx)
	if err != nil {
		return "", err
	}
	source, err := os.ReadFile(filepath.Join(src, "build", "pause", "linux", "pause.c"))
	if err != nil {
		return "", err
	}
	gccVersion, err := exec.CommandContext(ctx, "gcc", "--version").Output()
	if err != nil {
		return "", fmt.Errorf("gcc: %w", err)
	}
	flags := []string{"-Os", "-static", "-Wall", "-Werror"}
	sum := sha256.Sum256([]byte(string(source) + "\x00" + string(gccVersion) + "\x00" + strings.Join(flags, " ")))
	cache, err := cacheDir()
	if err != nil {
		return "", err
	}
	binary := filepath.Join(cache, "pause-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(binary); err != nil {
		// Clusters that start side by side build it at the same time.
		f, err := os.CreateTemp(cache, "pause-*.tmp")
		if err != nil {
			return "", err
		}
		tmp := f.Name()
		f.Close()
		defer os.Remove(tmp)
		args := append(flags, "-o", tmp, filepath.Join(src, "build", "pause", "linux", "pause.c"))
		if out, err := exec.CommandContext(ctx, "gcc", args...).CombinedOutput(); err != nil {
			return "", fmt.Errorf("gcc %s: %w: %s", strings.Join(args, " "), err, out)
		}
		if err := os.Rename(tmp, binary); err != nil {
			return "", err
		}
	}
	layer, err := ociimage.Layer([]ociimage.File{ociimage.Copy("/pause", 0o755, binary)}, ociimage.LayerOptions{Level: gzip.BestSpeed})
	if err != nil {
		return "", err
	}
	img, err := ociimage.Image(ociimage.Config{Platform: platform(), Entrypoint: []string{"/pause"}, User: "65535:65535"}, layer)
	if err != nil {
		return "", err
	}
	archive := filepath.Join(dir, "pause.tar")
	return archive, ociimage.WriteArchive(archive, PauseImage, img)
}

// The resolvers of the dnsutils image: test/internal/cresolve/testdata/resolve.c, which prints
// what getaddrinfo returns for each name, built against each C library that
// pods' programs use (Alpine's and Debian's, for two), so that a test can
// look names up as applications do, through the pod's /etc/resolv.conf.
const (
	// MuslResolver is linked statically with musl (musl-gcc -static).
	MuslResolver = "/usr/bin/resolve-musl"
	// GlibcResolver is linked dynamically with this machine's glibc, which
	// the image holds with its loader. glibc 2.34 and later have the files
	// and dns NSS modules in libc itself: the image's /etc/nsswitch.conf
	// says "hosts: files dns", and no module is loaded.
	GlibcResolver = "/usr/bin/resolve-glibc"
)

// buildResolvers builds the resolvers (cresolve.Build) in the node cache.
func buildResolvers(ctx context.Context) (musl, glibc string, err error) {
	cache, err := cacheDir()
	if err != nil {
		return "", "", err
	}
	return cresolve.Build(ctx, cache)
}

// busyboxApplets are the commands of the dnsutils image besides dig (httpd
// serves the pages of HTTP tests: see ServeScript).
var busyboxApplets = []string{
	"sh", "sleep", "date", "echo", "cat", "sed", "awk", "grep", "printf", "seq",
	"nslookup", "wget", "httpd", "mkdir", "timeout", "ls", "ps", "env", "hostname", "cut", "tr", "head", "tail",
	"true", "false", "test", "[", "expr", "wc", "sort", "uniq", "id", "kill",
}

// buildDNSUtilsImage writes DNSUtilsImage: Debian's static busybox for a
// shell and its tools, this machine's dig with the shared libraries ldd
// lists for it, at its path here (/usr/bin/dig on Debian), and the
// resolvers MuslResolver and GlibcResolver (the latter with its libraries
// too).
func buildDNSUtilsImage(ctx context.Context, dir string) (string, error) {
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		return "", err
	}
	dig, err := exec.LookPath("dig")
	if err != nil {
		return "", err
	}
	musl, glibc, err := buildResolvers(ctx)
	if err != nil {
		return "", err
	}
	files, err := ociimage.Programs(dig, glibc)
	if err != nil {
		return "", err
	}
	for i := range files {
		if files[i].Source == glibc {
			files[i].Path = GlibcResolver
		}
	}
	files = append(files,
		ociimage.Copy(MuslResolver, 0o755, musl),
		ociimage.Regular("/etc/nsswitch.conf", 0o644, []byte("hosts: files dns\n")),
		ociimage.Copy("/bin/busybox", 0o755, busybox),
		ociimage.Regular("/etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")),
		ociimage.Regular("/etc/group", 0o644, []byte("root:x:0:\nnogroup:x:65534:\n")),
		ociimage.Dir("/tmp", 0o777|os.ModeSticky, 0, 0),
	)
	for _, applet := range busyboxApplets {
		files = append(files, ociimage.Symlink("/bin/"+applet, "busybox"))
	}
	layer, err := ociimage.Layer(files, ociimage.LayerOptions{Level: gzip.BestSpeed})
	if err != nil {
		return "", err
	}
	img, err := ociimage.Image(ociimage.Config{
		Platform: platform(),
		Cmd:      []string{"sh"},
		Env:      []string{"PATH=/usr/bin:/bin"},
	}, layer)
	if err != nil {
		return "", err
	}
	archive := filepath.Join(dir, "dnsutils.tar")
	return archive, ociimage.WriteArchive(archive, DNSUtilsImage, img)
}
