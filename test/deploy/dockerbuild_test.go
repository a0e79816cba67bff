//go:build linux

package deploy

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/coredns-mcs/coredns-mcs/internal/filecap"
	"github.com/coredns-mcs/coredns-mcs/internal/ociimage"
	"github.com/coredns-mcs/coredns-mcs/test/internal/buildcache"
	"github.com/coredns-mcs/coredns-mcs/test/internal/dockerd"
	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// Images the tests build from this machine's files and load into the
// engine, in place of the registry images the Dockerfile names by default.
const (
	goImage   = "coredns-mcs.test/golang:local"
	baseImage = "coredns-mcs.test/static:nonroot"
	// contentLabel holds a key of what went into goImage and baseImage, so
	// that a later run with the same files skips building and loading them.
	contentLabel = "coredns-mcs.test/content"
)

// startEngine starts the Docker engine of docker.io, or fails or skips t
// (see unavailable) when the machine cannot run it.
func startEngine(t *testing.T) *dockerd.Engine {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping: needs a Docker engine, which -short leaves out")
	}
	if err := dockerd.CheckPrerequisites(); err != nil {
		unavailable(t, "%v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	e, err := dockerd.Start(ctx)
	if err != nil {
		t.Fatalf("start docker engine: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("dockerd log (last 30 lines):\n%s", e.LogTail(30))
		}
		if err := e.Stop(); err != nil {
			t.Errorf("stop docker engine: %v", err)
		}
	})
	return e
}

// docker runs the docker client and fails t if it fails.
func docker(t *testing.T, ctx context.Context, e *dockerd.Engine, args ...string) string {
	t.Helper()
	start := time.Now()
	out, err := e.Docker(ctx, nil, args...)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second && args[0] != "build" {
		t.Logf("docker %s: %.1fs", args[0], d.Seconds())
	}
	return out
}

// TestDockerfileBuilds builds the Dockerfile with Debian's Docker engine
// (docker.io 20.10, BuildKit) offline: the engine's network namespace has
// only a loopback interface, the base images are images of this machine's
// Go toolchain and of the image builder's base layer, given as build
// arguments, and the modules come from this machine's module cache through
// a GOPROXY the test serves. The image then runs (see runAndQuery) and
// answers on port 53.
func TestDockerfileBuilds(t *testing.T) {
	e := startEngine(t)
	// The builder reads through to this machine's build cache
	// (serveBuildCache), where make build has compiled the same packages;
	// what it misses, it compiles while make test's other builds share
	// the cores.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Minute)
	defer cancel()
	root := repoRoot(t)
	loadBaseImages(t, ctx, e)

	proxy := serveModuleCache(t, e)
	cacheProg := serveBuildCache(t, e)
	const image = "coredns-mcs.test/dockerfile:test"
	started := time.Now()
	docker(t, ctx, e, "build", "--progress=plain", "--network=host",
		"--build-arg", "GO_IMAGE="+goImage,
		"--build-arg", "BASE_IMAGE="+baseImage,
		"--build-arg", "GOPROXY="+proxy,
		"--build-arg", "GOCACHEPROG="+cacheProg,
		"--build-arg", "VERSION=v0.0.0-dockerfile",
		"--build-arg", "COMMIT=0000000",
		"-t", image, root)
	t.Logf("docker build: %.1fs", time.Since(started).Seconds())

	var inspect []struct {
		Config struct {
			User       string
			Entrypoint []string
			Labels     map[string]string
		}
	}
	if err := json.Unmarshal([]byte(docker(t, ctx, e, "image", "inspect", image)), &inspect); err != nil || len(inspect) != 1 {
		t.Fatalf("docker image inspect: %v", err)
	}
	c := inspect[0].Config
	if c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/coredns"}) ||
		c.Labels["org.opencontainers.image.version"] != "v0.0.0-dockerfile" || c.Labels["org.opencontainers.image.revision"] != "0000000" {
		t.Errorf("image config: user %q, entrypoint %q, labels %v", c.User, c.Entrypoint, c.Labels)
	}
	checkSavedBinary(t, ctx, e, image)
	version := runAndQuery(t, ctx, e, image)
	if !strings.Contains(version, "v0.0.0-dockerfile") {
		t.Errorf("the built coredns says %q, want version v0.0.0-dockerfile", version)
	}

	// The engine's directory persists between runs: keep what the next
	// build reuses (the last day's build cache, the tagged images) and
	// drop the rest.
	docker(t, ctx, e, "builder", "prune", "--force", "--filter", "until=24h")
	docker(t, ctx, e, "image", "prune", "--force")
}

// TestImageArchiveLoads loads the archive that make image writes
// (internal/ociimage) with docker load and runs it like the Dockerfile's
// image.
func TestImageArchiveLoads(t *testing.T) {
	e := startEngine(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	const image = "coredns-mcs.test/archive:test"
	archive := filepath.Join(t.TempDir(), "coredns-mcs.tar")
	img, err := ociimage.CoreDNS{Binary: corednsBinary(t), Platform: hostPlatform()}.Image()
	if err != nil {
		t.Fatal(err)
	}
	if err := ociimage.WriteArchive(archive, image, img); err != nil {
		t.Fatal(err)
	}
	out := docker(t, ctx, e, "load", "-i", archive)
	if !strings.Contains(out, "Loaded image: "+image) {
		t.Fatalf("docker load: %s", out)
	}
	checkSavedBinary(t, ctx, e, image)
	runAndQuery(t, ctx, e, image)
}

func hostPlatform() v1.Platform {
	return v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
}

// runAndQuery runs image nearly as Kubernetes runs it from the manifests
// (uid 65532, all capabilities dropped but NET_BIND_SERVICE, read-only
// root), in the engine's network namespace, without a Corefile: CoreDNS then
// serves whoami on port 53. It asks over UDP and TCP and returns what
// `coredns -version` prints. Docker's --security-opt=no-new-privileges is
// left out: with it, Docker 20.10 does not let the nonroot user bind port 53
// (bind: permission denied), where Kubernetes' allowPrivilegeEscalation:
// false does (test/swap checks the pods).
func runAndQuery(t *testing.T, ctx context.Context, e *dockerd.Engine, image string) string {
	t.Helper()
	secure := []string{"--read-only", "--cap-drop=ALL", "--cap-add=NET_BIND_SERVICE"}
	version := docker(t, ctx, e, append(append([]string{"run", "--rm", "--network=none"}, secure...), image, "-version")...)
	name := "coredns-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	docker(t, ctx, e, append(append([]string{"run", "-d", "--name", name, "--network=host"}, secure...), image)...)
	defer func() {
		if t.Failed() {
			logs, _ := e.Docker(context.Background(), nil, "logs", name)
			t.Logf("container log:\n%s", logs)
		}
		_, _ = e.Docker(context.Background(), nil, "rm", "-f", name)
	}()
	for _, network := range []string{"udp", "tcp"} {
		poll.Eventually(t, 20*time.Second, "coredns in the container answers over "+network+" on port 53", func() (bool, string) {
			err := queryWhoami(ctx, e, network)
			return err == nil, fmt.Sprint(err)
		})
	}
	return version
}

// queryWhoami asks 127.0.0.1:53 in the engine's namespace for whoami's
// answer.
func queryWhoami(ctx context.Context, e *dockerd.Engine, network string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := e.NetNS.DialContext(ctx, network, "127.0.0.1:53")
	if err != nil {
		return err
	}
	m := new(dns.Msg)
	m.SetQuestion("whoami.example.", dns.TypeA)
	r, err := harness.Exchange(ctx, conn, m)
	if err != nil {
		return err
	}
	if r.Rcode != dns.RcodeSuccess || len(r.Extra) == 0 {
		return fmt.Errorf("answer %s with %d additional records, want whoami's", dns.RcodeToString[r.Rcode], len(r.Extra))
	}
	return nil
}

// checkSavedBinary reads the image back with docker save and checks that
// /coredns carries the file capability: BuildKit's COPY --from and docker
// load must both keep it.
func checkSavedBinary(t *testing.T, ctx context.Context, e *dockerd.Engine, image string) {
	t.Helper()
	saved := filepath.Join(t.TempDir(), "saved.tar")
	docker(t, ctx, e, "save", "-o", saved, image)
	files, err := readDockerSave(saved)
	if err != nil {
		t.Fatal(err)
	}
	hdr, ok := files["coredns"]
	if !ok {
		t.Fatalf("no /coredns in the saved image")
	}
	want := string(filecap.Value(filecap.NetBindService))
	if got := hdr.PAXRecords["SCHILY.xattr."+filecap.Xattr]; got != want {
		t.Errorf("/coredns in the image has capability xattr %x, want %x (cap_net_bind_service=+ep)", got, want)
	}
	if hdr.Mode&0o111 == 0 || hdr.Uid != 0 {
		t.Errorf("/coredns: mode %o, owner %d", hdr.Mode, hdr.Uid)
	}
}

// readDockerSave returns the tar headers of the files of the image in a
// `docker save` archive, upper layers over lower ones.
func readDockerSave(path string) (map[string]*tar.Header, error) {
	blobs := map[string][]byte{}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if hdr.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				return nil, err
			}
			blobs[hdr.Name] = data
		}
	}
	var manifest []struct{ Layers []string }
	if err := json.Unmarshal(blobs["manifest.json"], &manifest); err != nil || len(manifest) != 1 {
		return nil, fmt.Errorf("manifest.json of docker save: %v", err)
	}
	files := map[string]*tar.Header{}
	for _, layer := range manifest[0].Layers {
		data, ok := blobs[layer]
		if !ok {
			return nil, fmt.Errorf("docker save: no layer %s", layer)
		}
		var r io.Reader = strings.NewReader(string(data))
		if zr, err := gzip.NewReader(strings.NewReader(string(data))); err == nil {
			r = zr
		}
		lr := tar.NewReader(r)
		for {
			hdr, err := lr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("layer %s: %w", layer, err)
			}
			files[strings.TrimPrefix(hdr.Name, "./")] = hdr
		}
	}
	return files, nil
}

// serveModuleCache serves this machine's module cache as a GOPROXY inside
// the engine's network namespace (the module cache's download directory
// has the proxy protocol's layout) and returns its URL. The address is
// fixed, so that the build argument, which is part of BuildKit's cache key
// for the download step, is the same in every run; nothing else listens in
// that namespace.
func serveModuleCache(t *testing.T, e *dockerd.Engine) string {
	t.Helper()
	// What the Dockerfile's `go mod download` asks for must be in the
	// cache: the same command here fills it (a no-op once it is full).
	download := exec.Command("go", "mod", "download")
	download.Dir = repoRoot(t)
	if out, err := download.CombinedOutput(); err != nil {
		t.Fatalf("go mod download: %v\n%s", err, out)
	}
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "cache", "download")
	files := http.FileServer(http.Dir(dir))
	return serveCounted(t, e, "127.0.0.1:3000", "GOPROXY: served %d files of the module cache, %d requests not found", func(w http.ResponseWriter, r *http.Request) bool {
		rec := &statusRecorder{ResponseWriter: w}
		files.ServeHTTP(rec, r)
		return rec.status == http.StatusOK || rec.status == 0
	})
}

// serveCounted serves handle on addr inside the engine's network namespace
// until the test ends, and then logs with format how many requests handle
// served (it returned true) and how many it did not; it returns the URL.
func serveCounted(t *testing.T, e *dockerd.Engine, addr, format string, handle func(http.ResponseWriter, *http.Request) bool) string {
	t.Helper()
	l, err := e.NetNS.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu              sync.Mutex
		served, missing int
	)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok := handle(w, r)
		mu.Lock()
		defer mu.Unlock()
		if ok {
			served++
		} else {
			missing++
		}
	})}
	go srv.Serve(l)
	t.Cleanup(func() {
		srv.Close()
		mu.Lock()
		defer mu.Unlock()
		t.Logf(format, served, missing)
	})
	return "http://" + l.Addr().String()
}

// serveBuildCache serves this machine's Go build cache (go env GOCACHE)
// inside the engine's network namespace, read only, to test/cmd/gocacheprog
// in goImage, and returns the GOCACHEPROG that runs it. GET /ACTIONID (hex)
// answers with the action's output, its ID in the Go-Output-Id header, or
// 404. The build arguments are the same in every run, as serveModuleCache's.
func serveBuildCache(t *testing.T, e *dockerd.Engine) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	dir := strings.TrimSpace(string(out))
	url := serveCounted(t, e, "127.0.0.1:3001", "GOCACHEPROG: served %d entries of the build cache, %d misses", func(w http.ResponseWriter, r *http.Request) bool {
		return buildcache.Handle(dir, w, r)
	})
	return "gocacheprog " + url + " /tmp/gocacheprog"
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// loadBaseImages builds and loads goImage (this machine's Go toolchain,
// with make and bash, as the golang image has them, and
// test/cmd/gocacheprog) and baseImage (the
// base layer of internal/ociimage, as distroless static nonroot), unless
// the engine has them from an earlier run with the same content.
func loadBaseImages(t *testing.T, ctx context.Context, e *dockerd.Engine) {
	t.Helper()
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatal(err)
	}
	goFiles, err := ociimage.Tree(strings.TrimSpace(string(goroot)), "/usr/local/go")
	if err != nil {
		t.Fatal(err)
	}
	// Go's own test data is large and no build needs it.
	goFiles = slices.DeleteFunc(goFiles, func(f ociimage.File) bool {
		return f.Path == "/usr/local/go/test" || strings.HasPrefix(f.Path, "/usr/local/go/test/")
	})
	tools, err := ociimage.Programs("/bin/sh", "/bin/bash", "/usr/bin/make")
	if err != nil {
		t.Fatal(err)
	}
	goFiles = append(goFiles, tools...)
	cacheProg := filepath.Join(t.TempDir(), "gocacheprog")
	build := exec.Command("go", "build", "-trimpath", "-o", cacheProg, "./test/cmd/gocacheprog")
	build.Dir, build.Env = repoRoot(t), append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build gocacheprog: %v\n%s", err, out)
	}
	cacheProgData, err := os.ReadFile(cacheProg)
	if err != nil {
		t.Fatal(err)
	}
	goFiles = append(goFiles, ociimage.Regular("/usr/local/bin/gocacheprog", 0o755, cacheProgData))
	goFiles = append(goFiles,
		ociimage.Regular("/etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/bash\n")),
		ociimage.Regular("/etc/group", 0o644, []byte("root:x:0:\n")),
		ociimage.Dir("/tmp", 0o777|fs.ModeSticky, 0, 0),
		ociimage.Dir("/root", 0o700, 0, 0),
		ociimage.Dir("/go", 0o777, 0, 0),
	)
	baseFiles, err := ociimage.Base{}.Files()
	if err != nil {
		t.Fatal(err)
	}

	for _, im := range []struct {
		ref   string
		files []ociimage.File
		cfg   ociimage.Config
	}{
		{goImage, goFiles, ociimage.Config{
			Env: []string{
				"PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
				"GOPATH=/go",
				// Never fetch another toolchain.
				"GOTOOLCHAIN=local",
			},
			WorkingDir: "/go",
			Cmd:        []string{"bash"},
		}},
		{baseImage, baseFiles, ociimage.Config{
			User:       "65532:65532",
			WorkingDir: "/home/nonroot",
			Env:        ociimage.BaseEnv,
		}},
	} {
		key, err := contentKey(im.files)
		if err != nil {
			t.Fatal(err)
		}
		have, _ := e.Docker(ctx, nil, "image", "inspect", "--format", `{{index .Config.Labels "`+contentLabel+`"}}`, im.ref)
		if strings.TrimSpace(have) == key {
			continue
		}
		started := time.Now()
		layer, err := ociimage.Layer(im.files, ociimage.LayerOptions{Level: gzip.BestSpeed})
		if err != nil {
			t.Fatal(err)
		}
		im.cfg.Platform = hostPlatform()
		im.cfg.Labels = map[string]string{contentLabel: key}
		img, err := ociimage.Image(im.cfg, layer)
		if err != nil {
			t.Fatal(err)
		}
		archive := filepath.Join(t.TempDir(), "image.tar")
		if err := ociimage.WriteArchive(archive, im.ref, img); err != nil {
			t.Fatal(err)
		}
		docker(t, ctx, e, "load", "-i", archive)
		t.Logf("%s built and loaded in %.1fs", im.ref, time.Since(started).Seconds())
	}
}

// contentKey hashes the paths, modes, sizes and modification times of the
// files an image is made of.
func contentKey(files []ociimage.File) (string, error) {
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s %v %d %d %q %q\n", f.Path, f.Mode, f.UID, f.GID, f.Linkname, f.Data)
		if f.Source != "" {
			info, err := os.Stat(f.Source)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(h, "%s %d %d\n", f.Source, info.Size(), info.ModTime().UnixNano())
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}
