package ociimage

import (
	"fmt"
	"os"
	"strconv"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/coredns-mcs/coredns-mcs/internal/filecap"
)

// CoreDNS describes a CoreDNS image: the static binary on the base layer,
// run as nonroot, as the Dockerfile builds it.
type CoreDNS struct {
	// Binary is the static coredns executable on this machine, built for
	// Platform.
	Binary   string
	Platform v1.Platform
	// Labels are the image labels, such as org.opencontainers.image.version.
	Labels map[string]string
	// Base locates the base layer's files on this machine.
	Base Base
	// Level is the gzip level of the layers (see LayerOptions).
	Level int
}

// CoreDNSEntrypoint is where the binary is and how the image runs it.
const CoreDNSEntrypoint = "/coredns"

// Image builds the image: the base layer, then a layer with the binary at
// /coredns carrying the file capability CAP_NET_BIND_SERVICE, so that
// nonroot can bind port 53 (where a container keeps NET_BIND_SERVICE in its
// bounding set, as the manifests ask); user 65532:65532; ports 53/udp,
// 53/tcp.
func (c CoreDNS) Image() (v1.Image, error) {
	info, err := os.Stat(c.Binary)
	if err != nil {
		return nil, fmt.Errorf("coredns image: %w", err)
	}
	if !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
		return nil, fmt.Errorf("coredns image: %s is not an executable file", c.Binary)
	}
	baseFiles, err := c.Base.Files()
	if err != nil {
		return nil, err
	}
	opts := LayerOptions{Level: c.Level}
	base, err := Layer(baseFiles, opts)
	if err != nil {
		return nil, fmt.Errorf("coredns image: %w", err)
	}
	bin := Copy(CoreDNSEntrypoint, 0o755, c.Binary)
	bin.Xattrs = map[string][]byte{filecap.Xattr: filecap.Value(filecap.NetBindService)}
	binLayer, err := Layer([]File{bin}, opts)
	if err != nil {
		return nil, fmt.Errorf("coredns image: %w", err)
	}
	user := strconv.Itoa(NonRoot) + ":" + strconv.Itoa(NonRoot)
	return Image(Config{
		Platform:     c.Platform,
		Entrypoint:   []string{CoreDNSEntrypoint},
		User:         user,
		WorkingDir:   "/home/nonroot",
		Env:          BaseEnv,
		ExposedPorts: []string{"53/tcp", "53/udp"},
		Labels:       c.Labels,
	}, base, binLayer)
}
