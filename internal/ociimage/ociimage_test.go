package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"log"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/coredns-mcs/coredns-mcs/internal/filecap"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// entry is what a test checks of a tar entry.
type entry struct {
	hdr  *tar.Header
	data []byte
}

func readLayer(t *testing.T, l v1.Layer) ([]string, map[string]entry) {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	return readTar(t, rc)
}

func readTar(t *testing.T, r io.Reader) ([]string, map[string]entry) {
	t.Helper()
	tr := tar.NewReader(r)
	var names []string
	entries := map[string]entry{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return names, entries
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
		entries[hdr.Name] = entry{hdr, data}
	}
}

func TestLayer(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	if err := os.WriteFile(src, []byte("from disk"), 0o600); err != nil {
		t.Fatal(err)
	}
	withCap := Copy("/usr/bin/tool", 0o755, src)
	withCap.Xattrs = map[string][]byte{filecap.Xattr: filecap.Value(filecap.NetBindService)}
	files := []File{
		withCap,
		Regular("/etc/motd", 0o644, []byte("hello")),
		Symlink("/bin", "usr/bin"),
		Dir("/tmp", 0o777|fs.ModeSticky, 0, 0),
		Dir("/home/nonroot", 0o700, NonRoot, NonRoot),
		Regular("/a-b", 0o600, []byte{}),
	}
	layer, err := Layer(files, LayerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mt, _ := layer.MediaType(); mt != types.OCILayer {
		t.Errorf("media type %s, want %s", mt, types.OCILayer)
	}
	names, entries := readLayer(t, layer)
	// Parents first and added when missing; "/a-b" after the whole /a...
	// tree would matter only with an /a directory, so check the order of
	// what is there: sorted by path components.
	want := []string{"a-b", "bin", "etc/", "etc/motd", "home/", "home/nonroot/", "tmp/", "usr/", "usr/bin/", "usr/bin/tool"}
	if !slices.Equal(names, want) {
		t.Errorf("entries %q, want %q", names, want)
	}
	check := func(name string, typ byte, mode int64, uid int) entry {
		t.Helper()
		e, ok := entries[name]
		if !ok {
			t.Fatalf("no entry %s", name)
		}
		if e.hdr.Typeflag != typ || e.hdr.Mode != mode || e.hdr.Uid != uid || e.hdr.Gid != uid {
			t.Errorf("%s: type %c mode %o owner %d:%d, want type %c mode %o owner %d:%d",
				name, e.hdr.Typeflag, e.hdr.Mode, e.hdr.Uid, e.hdr.Gid, typ, mode, uid, uid)
		}
		if !e.hdr.ModTime.Equal(Epoch) {
			t.Errorf("%s: modification time %s, want %s", name, e.hdr.ModTime, Epoch)
		}
		return e
	}
	if e := check("usr/bin/tool", tar.TypeReg, 0o755, 0); string(e.data) != "from disk" ||
		e.hdr.PAXRecords["SCHILY.xattr."+filecap.Xattr] != string(filecap.Value(filecap.NetBindService)) {
		t.Errorf("usr/bin/tool: content %q, PAX records %q", e.data, e.hdr.PAXRecords)
	}
	if e := check("etc/motd", tar.TypeReg, 0o644, 0); string(e.data) != "hello" {
		t.Errorf("etc/motd: content %q", e.data)
	}
	if e := check("bin", tar.TypeSymlink, 0o777, 0); e.hdr.Linkname != "usr/bin" {
		t.Errorf("bin: link to %q", e.hdr.Linkname)
	}
	check("tmp/", tar.TypeDir, 0o1777, 0)
	check("home/nonroot/", tar.TypeDir, 0o700, NonRoot)
	check("usr/", tar.TypeDir, 0o755, 0)

	// The same files in another order give the same layer.
	slices.Reverse(files)
	again, err := Layer(files, LayerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := layer.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("layer digest depends on the order of files: %s vs %s", d1, d2)
	}
}

func TestLayerErrors(t *testing.T) {
	for name, files := range map[string][]File{
		"relative path": {Regular("etc/passwd", 0o644, nil)},
		"twice":         {Regular("/x", 0o644, []byte("1")), Regular("/x/", 0o644, []byte("2"))},
		"no content":    {{Path: "/x", Mode: 0o644}},
		"missing file":  {Copy("/x", 0o644, "/nonexistent/file")},
	} {
		if _, err := Layer(files, LayerOptions{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// fakeBinary writes an executable file that stands in for coredns: the
// image builder only copies it.
func fakeBinary(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "coredns")
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func coreDNSImage(t *testing.T, platform, content string) v1.Image {
	t.Helper()
	p, err := ParsePlatform(platform)
	if err != nil {
		t.Fatal(err)
	}
	img, err := CoreDNS{
		Binary:   fakeBinary(t, content),
		Platform: p,
		Labels:   map[string]string{"org.opencontainers.image.version": "v9.9.9"},
		// Fast, so that the race detector's slowdown stays small.
		Level: gzip.BestSpeed,
	}.Image()
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestCoreDNSImage(t *testing.T) {
	img := coreDNSImage(t, "linux/arm64", "binary")
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s", mt)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != "arm64" {
		t.Errorf("platform %s/%s, want linux/arm64", cf.OS, cf.Architecture)
	}
	c := cf.Config
	if c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/coredns"}) || c.WorkingDir != "/home/nonroot" {
		t.Errorf("config: user %q entrypoint %q workdir %q", c.User, c.Entrypoint, c.WorkingDir)
	}
	if _, ok := c.ExposedPorts["53/udp"]; !ok {
		t.Errorf("53/udp not exposed: %v", c.ExposedPorts)
	}
	if _, ok := c.ExposedPorts["53/tcp"]; !ok {
		t.Errorf("53/tcp not exposed: %v", c.ExposedPorts)
	}
	if !slices.Contains(c.Env, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt") {
		t.Errorf("env %q", c.Env)
	}
	if c.Labels["org.opencontainers.image.version"] != "v9.9.9" {
		t.Errorf("labels %v", c.Labels)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 2 {
		t.Fatalf("%d layers (%v), want base and binary", len(layers), err)
	}

	_, base := readLayer(t, layers[0])
	for name, want := range map[string]string{
		"etc/passwd": "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
		"etc/group":  "nonroot:x:65532:\n",
	} {
		if !strings.Contains(string(base[name].data), want) {
			t.Errorf("%s lacks %q:\n%s", name, want, base[name].data)
		}
	}
	ca, err := os.ReadFile(DefaultCABundle)
	if err != nil {
		t.Fatalf("this machine's CA bundle: %v", err)
	}
	if !bytes.Equal(base["etc/ssl/certs/ca-certificates.crt"].data, ca) {
		t.Error("the CA bundle in the image differs from " + DefaultCABundle)
	}
	if e := base["usr/share/zoneinfo/Etc/UTC"]; !bytes.HasPrefix(e.data, []byte("TZif")) {
		t.Error("no time zone database: usr/share/zoneinfo/Etc/UTC is missing or not a TZif file")
	}
	if e := base["tmp/"]; e.hdr == nil || e.hdr.Mode != 0o1777 {
		t.Error("no /tmp with mode 1777")
	}

	names, bin := readLayer(t, layers[1])
	if !slices.Equal(names, []string{"coredns"}) {
		t.Errorf("binary layer holds %q, want just coredns", names)
	}
	e := bin["coredns"]
	if string(e.data) != "binary" || e.hdr.Mode != 0o755 || e.hdr.Uid != 0 {
		t.Errorf("coredns: %q mode %o uid %d", e.data, e.hdr.Mode, e.hdr.Uid)
	}
	if got := e.hdr.PAXRecords["SCHILY.xattr.security.capability"]; got != string(filecap.Value(filecap.NetBindService)) {
		t.Errorf("coredns capability xattr %x, want %x", got, filecap.Value(filecap.NetBindService))
	}

	// Reproducible: the same inputs give the same image.
	d1, _ := img.Digest()
	d2, _ := coreDNSImage(t, "linux/arm64", "binary").Digest()
	if d1 != d2 {
		t.Errorf("two builds of the same image differ: %s, %s", d1, d2)
	}
}

func TestCoreDNSImageErrors(t *testing.T) {
	notExec := filepath.Join(t.TempDir(), "coredns")
	if err := os.WriteFile(notExec, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	linux := v1.Platform{OS: "linux", Architecture: "amd64"}
	for name, c := range map[string]CoreDNS{
		"missing binary":    {Binary: "/nonexistent/coredns", Platform: linux},
		"not executable":    {Binary: notExec, Platform: linux},
		"no platform":       {Binary: fakeBinary(t, "x")},
		"missing CA bundle": {Binary: fakeBinary(t, "x"), Platform: linux, Base: Base{CABundle: "/nonexistent/ca.crt"}},
	} {
		if _, err := c.Image(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// extract unpacks the archive at path into a new directory.
func extract(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := t.TempDir()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return dir
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		if hdr.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
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

func TestWriteArchive(t *testing.T) {
	img := coreDNSImage(t, "linux/amd64", "binary")
	want, _ := img.Digest()
	path := filepath.Join(t.TempDir(), "image.tar")
	const ref = "ghcr.io/coredns-mcs/coredns-mcs:v9.9.9"
	if err := WriteArchive(path, ref, img); err != nil {
		t.Fatal(err)
	}

	// The docker save half: manifest.json, as docker load and crane read it.
	loaded, err := crane.Load(path)
	if err != nil {
		t.Fatalf("crane load (manifest.json): %v", err)
	}
	loadedLayers, _ := loaded.Layers()
	wantLayers, _ := img.Layers()
	for i := range wantLayers {
		got, _ := loadedLayers[i].DiffID()
		want, _ := wantLayers[i].DiffID()
		if got != want {
			t.Errorf("manifest.json layer %d: diff ID %s, want %s", i, got, want)
		}
	}
	gotCfg, _ := loaded.ConfigName()
	wantCfg, _ := img.ConfigName()
	if gotCfg != wantCfg {
		t.Errorf("manifest.json config %s, want %s", gotCfg, wantCfg)
	}

	// The OCI layout half: index.json names the image for containerd and
	// for the OCI image layout.
	lp, err := layout.FromPath(extract(t, path))
	if err != nil {
		t.Fatal(err)
	}
	idx, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("index.json has %d manifests, want 1", len(im.Manifests))
	}
	d := im.Manifests[0]
	if d.Digest != want || d.Annotations[AnnotationContainerdName] != ref || d.Annotations[AnnotationRefName] != "v9.9.9" {
		t.Errorf("index.json: %s %v, want %s named %s", d.Digest, d.Annotations, want, ref)
	}
	fromLayout, err := idx.Image(d.Digest)
	if err != nil {
		t.Fatal(err)
	}

	// Pushing what was read back gives the registry the same image.
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	u, _ := url.Parse(reg.URL)
	pushed := u.Host + "/coredns-mcs/coredns-mcs:v9.9.9"
	if err := crane.Push(fromLayout, pushed); err != nil {
		t.Fatalf("crane push: %v", err)
	}
	got, err := crane.Digest(pushed)
	if err != nil {
		t.Fatal(err)
	}
	if got != want.String() {
		t.Errorf("registry has %s, want %s", got, want)
	}

	// `crane push ARCHIVE` reads manifest.json (crane.Load), as docker load
	// does: it pushes the same config and layers under a manifest of its
	// own.
	viaTarball := u.Host + "/coredns-mcs/coredns-mcs:tarball"
	if err := crane.Push(loaded, viaTarball); err != nil {
		t.Fatalf("crane push of the archive: %v", err)
	}
	pulled, err := crane.Pull(viaTarball)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := pulled.ConfigName(); got != wantCfg {
		t.Errorf("crane push of the archive: config %s, want %s", got, wantCfg)
	}
	pulledLayers, _ := pulled.Layers()
	for i := range wantLayers {
		got, _ := pulledLayers[i].DiffID()
		want, _ := wantLayers[i].DiffID()
		if got != want {
			t.Errorf("crane push of the archive: layer %d diff ID %s, want %s", i, got, want)
		}
	}
}

func TestWriteIndexArchive(t *testing.T) {
	amd, arm := coreDNSImage(t, "linux/amd64", "amd64 binary"), coreDNSImage(t, "linux/arm64", "arm64 binary")
	idx, err := Index(amd, arm)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "image.tar")
	const ref = "ghcr.io/coredns-mcs/coredns-mcs:v9.9.9"
	if err := WriteIndexArchive(path, ref, idx); err != nil {
		t.Fatal(err)
	}
	_, entries := readTar(t, mustOpen(t, path))
	if _, ok := entries["manifest.json"]; ok {
		t.Error("a multi-platform archive has a docker manifest.json, which cannot describe it")
	}
	lp, err := layout.FromPath(extract(t, path))
	if err != nil {
		t.Fatal(err)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	tm, _ := top.IndexManifest()
	if len(tm.Manifests) != 1 || tm.Manifests[0].MediaType != types.OCIImageIndex || tm.Manifests[0].Annotations[AnnotationContainerdName] != ref {
		t.Fatalf("index.json %+v, want one image index named %s", tm.Manifests, ref)
	}
	inner, err := top.ImageIndex(tm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := inner.IndexManifest()
	var platforms []string
	for _, d := range m.Manifests {
		platforms = append(platforms, d.Platform.String())
	}
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("platforms %q", platforms)
	}

	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	u, _ := url.Parse(reg.URL)
	pushed := u.Host + "/coredns-mcs/coredns-mcs:v9.9.9"
	tag, err := name.NewTag(pushed)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(tag, inner); err != nil {
		t.Fatalf("push the index: %v", err)
	}
	arm64, err := crane.Pull(pushed, crane.WithPlatform(&v1.Platform{OS: "linux", Architecture: "arm64"}))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := arm64.Digest()
	want, _ := arm.Digest()
	if got != want {
		t.Errorf("linux/arm64 from the registry is %s, want %s", got, want)
	}
}

func mustOpen(t *testing.T, path string) io.Reader {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(data)
}

func TestArchiveAnnotationsNeedTag(t *testing.T) {
	for _, ref := range []string{"ghcr.io/coredns-mcs/coredns-mcs", "Upper/case:tag", ""} {
		if _, err := ArchiveAnnotations(ref); err == nil {
			t.Errorf("ArchiveAnnotations(%q): no error", ref)
		}
	}
}
