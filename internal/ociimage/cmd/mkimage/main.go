// Command mkimage writes the coredns-mcs image as an archive, without a
// container engine or a registry (make image calls it):
//
//	mkimage -o build/coredns-mcs.tar -name ghcr.io/coredns-mcs/coredns-mcs:TAG \
//	  -binary linux/amd64=build/coredns [-binary linux/arm64=build/linux/arm64/coredns ...] \
//	  [-label org.opencontainers.image.version=TAG ...]
//
// With one -binary the archive holds one image, for `ctr images import`,
// `docker load`, `kind load image-archive`, `skopeo copy oci-archive:...`;
// with several, a multi-platform index (everything but docker load before
// Docker 25). Each image is the base layer (users, CA bundle, time zones,
// copied from this machine's Debian packages) and the binary at /coredns with
// the file capability cap_net_bind_service, run as 65532:65532.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/coredns-mcs/coredns-mcs/internal/ociimage"
)

// pairs collects repeated KEY=VALUE flags in order.
type pairs [][2]string

func (p *pairs) String() string { return fmt.Sprint(*p) }

func (p *pairs) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", s)
	}
	*p = append(*p, [2]string{k, v})
	return nil
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	out := fs.String("o", "", "the archive to write")
	ref := fs.String("name", "", "the image name, REGISTRY/REPOSITORY:TAG")
	caBundle := fs.String("ca-bundle", ociimage.DefaultCABundle, "the CA bundle to copy into the image")
	zoneinfo := fs.String("zoneinfo", ociimage.DefaultZoneinfo, "the time zone database to copy into the image")
	var binaries, labels pairs
	fs.Var(&binaries, "binary", "OS/ARCH=PATH of a static coredns binary (repeat for a multi-platform image)")
	fs.Var(&labels, "label", "KEY=VALUE image label (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || *ref == "" || len(binaries) == 0 || fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("-o, -name and at least one -binary are required")
	}
	labelMap := make(map[string]string, len(labels))
	for _, l := range labels {
		labelMap[l[0]] = l[1]
	}

	var images []v1.Image
	for _, b := range binaries {
		platform, err := ociimage.ParsePlatform(b[0])
		if err != nil {
			return err
		}
		img, err := ociimage.CoreDNS{
			Binary:   b[1],
			Platform: platform,
			Labels:   labelMap,
			Base:     ociimage.Base{CABundle: *caBundle, Zoneinfo: *zoneinfo},
		}.Image()
		if err != nil {
			return fmt.Errorf("%s: %w", b[0], err)
		}
		if err := describe(stdout, platform.String(), img); err != nil {
			return err
		}
		images = append(images, img)
	}

	if len(images) == 1 {
		if err := ociimage.WriteArchive(*out, *ref, images[0]); err != nil {
			return err
		}
	} else {
		idx, err := ociimage.Index(images...)
		if err != nil {
			return err
		}
		digest, err := idx.Digest()
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "index %s (%d platforms)\n", digest, len(images))
		if err := ociimage.WriteIndexArchive(*out, *ref, idx); err != nil {
			return err
		}
	}
	info, err := os.Stat(*out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s, %d bytes\n", *out, *ref, info.Size())
	return nil
}

// describe prints the image's digest and its layers' sizes.
func describe(w io.Writer, platform string, img v1.Image) error {
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %s, %d layers:", platform, digest, len(layers))
	for _, l := range layers {
		size, err := l.Size()
		if err != nil {
			return err
		}
		fmt.Fprintf(w, " %d", size)
	}
	fmt.Fprintln(w, " bytes (gzip)")
	return nil
}
