package deploy

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/coredns-mcs/coredns-mcs/internal/ociimage"
)

// TestImageArchivePushes pushes the archive that make image writes with
// skopeo (as `skopeo copy oci-archive:... docker://...`) to a registry on
// 127.0.0.1, and reads back the same image.
func TestImageArchivePushes(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: builds the coredns binary, which -short leaves out")
	}
	skopeo := lookTool(t, "skopeo", "apt-get install skopeo")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const ref = "ghcr.io/coredns-mcs/coredns-mcs:v9.9.9"
	archive := filepath.Join(t.TempDir(), "coredns-mcs.tar")
	img, err := ociimage.CoreDNS{Binary: corednsBinary(t), Platform: v1.Platform{OS: "linux", Architecture: runtime.GOARCH}}.Image()
	if err != nil {
		t.Fatal(err)
	}
	if err := ociimage.WriteArchive(archive, ref, img); err != nil {
		t.Fatal(err)
	}
	want, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}

	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	u, err := url.Parse(reg.URL)
	if err != nil {
		t.Fatal(err)
	}
	dest := u.Host + "/coredns-mcs/coredns-mcs:v9.9.9"
	if _, err := run(ctx, t, nil, skopeo, "copy", "--dest-tls-verify=false", "--preserve-digests",
		"oci-archive:"+archive, "docker://"+dest); err != nil {
		t.Fatal(err)
	}
	got, err := crane.Digest(dest)
	if err != nil {
		t.Fatal(err)
	}
	if got != want.String() {
		t.Errorf("the registry has %s, want the archive's %s", got, want)
	}
}
