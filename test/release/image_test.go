package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/coredns-mcs/coredns-mcs/internal/ociimage"
	"github.com/coredns-mcs/coredns-mcs/test/internal/apply"
	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"
	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
)

const imageRef = "ghcr.io/coredns-mcs/coredns-mcs:" + version

// imageIndex opens the release's image archive: the OCI layout's index.json
// must name one multi-platform index, imageRef.
func imageIndex(t testing.TB, b *built) v1.ImageIndex {
	t.Helper()
	dir := t.TempDir()
	untar(t, b.file("coredns-mcs_"+version+"_image.tar"), dir)
	lp, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].MediaType != types.OCIImageIndex {
		t.Fatalf("index.json holds %+v, want one image index", m.Manifests)
	}
	if got := m.Manifests[0].Annotations[ociimage.AnnotationContainerdName]; got != imageRef {
		t.Errorf("index.json names the image %q, want %q", got, imageRef)
	}
	idx, err := top.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// platformImage returns the image of idx for platform (os/arch).
func platformImage(t testing.TB, idx v1.ImageIndex, platform string) (v1.Image, v1.Hash) {
	t.Helper()
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.String() == platform {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			return img, d.Digest
		}
	}
	t.Fatalf("the image index has no %s image", platform)
	return nil, v1.Hash{}
}

func untar(t testing.TB, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			t.Fatalf("archive entry %q leaves the directory", h.Name)
		}
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// imageFile returns a file of the image's flattened file system.
func imageFile(t testing.TB, img v1.Image, name string) []byte {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			t.Fatalf("the image has no %s", name)
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimPrefix(h.Name, "/") == name {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return data
		}
	}
}

// archiveFile returns a file of a release archive (.tgz).
func archiveFile(t testing.TB, archive, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			t.Fatalf("%s has no %s", filepath.Base(archive), name)
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == name {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return data
		}
	}
}

// TestImageIndex: make release writes a multi-platform image index by
// default, one image per platform, each with the coredns of that platform's
// archive, labelled with the release version.
func TestImageIndex(t *testing.T) {
	b := release(t)
	idx := imageIndex(t, b)
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range m.Manifests {
		got = append(got, d.Platform.String())
	}
	if !slices.Equal(got, platforms) {
		t.Fatalf("the index's platforms are %q, want %q", got, platforms)
	}
	for _, p := range platforms {
		img, digest := platformImage(t, idx, p)
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS+"/"+cf.Architecture != p {
			t.Errorf("%s: the config says %s/%s", p, cf.OS, cf.Architecture)
		}
		if v := cf.Config.Labels["org.opencontainers.image.version"]; v != version {
			t.Errorf("%s: label org.opencontainers.image.version %q, want %s", p, v, version)
		}
		bin := imageFile(t, img, "coredns")
		want := archiveFile(t, b.file("coredns-mcs_"+version+"_"+strings.ReplaceAll(p, "/", "_")+".tgz"), "coredns")
		if !bytes.Equal(bin, want) {
			t.Errorf("%s: /coredns of the image is not the coredns of the release archive", p)
		}
		t.Logf("%s: %s, /coredns %d bytes, the archive's", p, digest, len(bin))
	}
}

// TestArm64ImageUnderQemu runs the linux/arm64 image's /coredns, as a node
// of that architecture would, under qemu-user-static: against a real API
// server with the example objects of make run, it must answer dig with the
// import's address and its version must be the release's.
func TestArm64ImageUnderQemu(t *testing.T) {
	b := release(t)
	qemu := lookTool(t, "qemu-aarch64-static", "apt-get install qemu-user-static")
	dig := lookTool(t, "dig", "apt-get install dnsutils")
	img, _ := platformImage(t, imageIndex(t, b), "linux/arm64")
	bin := filepath.Join(t.TempDir(), "coredns")
	if err := os.WriteFile(bin, imageFile(t, img, "coredns"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	if f.Machine != elf.EM_AARCH64 {
		t.Fatalf("the linux/arm64 image's /coredns is for %v", f.Machine)
	}
	f.Close()

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	out := mustRun(t, "", nil, qemu, bin, "-version")
	if !strings.Contains(out, "coredns-mcs-"+version) || !strings.Contains(out, "linux/arm64") {
		t.Errorf("coredns -version under qemu says %q, want coredns-mcs-%s on linux/arm64", out, version)
	}

	cp := controlplane.ForTest(t, controlplane.Options{InstallCRDs: true, ServiceClusterIPRange: controlplane.ExamplesServiceClusterIPRange})
	manifests, err := apply.ReadDir(filepath.Join(repoRoot(t), "manifests", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	if err := apply.Apply(ctx, cp.Config, manifests); err != nil {
		t.Fatal(err)
	}
	port := harness.FreePort(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	health := harness.FreePort(t)
	corefile := filepath.Join(t.TempDir(), "Corefile")
	if err := os.WriteFile(corefile, []byte(fmt.Sprintf(`.:%d {
    bind 127.0.0.1
    errors
    ready 127.0.0.1:%d
    multicluster clusterset.local {
        kubeconfig %s
        fallback cluster.local
    }
    kubernetes cluster.local {
        kubeconfig %s
    }
}
`, port, health, cp.Kubeconfig, cp.Kubeconfig)), 0o644); err != nil {
		t.Fatal(err)
	}
	logs, exited := harness.StartProcess(t, "coredns (arm64, qemu)", qemu, bin, "-conf", corefile)
	ready := fmt.Sprintf("http://127.0.0.1:%d/ready", health)
	// Ready says the plugins are; the DNS listeners may open a moment
	// later, which emulation stretches: wait for both. Emulated, a start
	// takes seconds.
	harness.WaitFor(t, "coredns under qemu", exited, logs, 2*time.Minute, func() bool {
		return harness.HTTPOK(ready) && harness.Serving(addr)
	})
	for _, c := range []struct{ name, qtype, want string }{
		{"frontend.demo.svc.clusterset.local", "A", "10.42.0.20"},
		{"checkout.demo.svc.cluster.local", "A", ""},
	} {
		cmd := exec.CommandContext(ctx, dig, "@127.0.0.1", "-p", strconv.Itoa(port), "+tries=3", "+time=5", c.name, c.qtype)
		res, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("dig %s: %v\n%s", c.name, err, res)
		}
		answer := digAnswer(string(res))
		if !strings.Contains(string(res), "status: NOERROR") || len(answer) == 0 || (c.want != "" && !slices.Contains(answer, c.want)) {
			t.Errorf("dig %s %s against the arm64 coredns: answer %q, want NOERROR with %q:\n%s", c.name, c.qtype, answer, c.want, res)
			continue
		}
		t.Logf("dig @%s %s %s (arm64 coredns under qemu): %s", addr, c.name, c.qtype, strings.Join(answer, " "))
	}
}

// digAnswer returns the data of the answer section's records.
func digAnswer(out string) []string {
	var data []string
	in := false
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, ";; ANSWER SECTION:"):
			in = true
		case in && strings.TrimSpace(l) == "":
			in = false
		case in && !strings.HasPrefix(l, ";"):
			if f := strings.Fields(l); len(f) >= 5 {
				data = append(data, f[len(f)-1])
			}
		}
	}
	return data
}
