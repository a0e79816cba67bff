package ociimage

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Annotations of the image in index.json. containerd (`ctr images import`,
// and so `kind load image-archive`) names the image after the first, the OCI
// image layout specification defines the second (skopeo's oci-archive:NAME).
const (
	AnnotationContainerdName = "io.containerd.image.name"
	AnnotationRefName        = "org.opencontainers.image.ref.name"
)

// WriteArchive writes img as an image archive named ref (such as
// "ghcr.io/coredns-mcs/coredns-mcs:v0.1.0") to the file path.
//
// The archive is an OCI image layout in a tar file (oci-layout, index.json,
// blobs/sha256/...), which `ctr images import`, `skopeo copy oci-archive:`
// and `crane push` read, plus the manifest.json of `docker save`, which
// `docker load` reads; both point at the same blobs, as the archives of
// `docker save` since Docker 25 do.
func WriteArchive(path, ref string, img v1.Image) error {
	return writeArchive(path, ref, img, true)
}

// WriteIndexArchive writes a multi-platform image as an OCI image layout in a
// tar file named ref. `docker load` before Docker 25 cannot read it (its
// format has no multi-platform images); containerd and skopeo can.
func WriteIndexArchive(path, ref string, idx v1.ImageIndex) error {
	return writeArchive(path, ref, idx, false)
}

// ArchiveAnnotations returns the index.json annotations that name an image
// ref.
func ArchiveAnnotations(ref string) (map[string]string, error) {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return nil, fmt.Errorf("image name %q: want REGISTRY/REPOSITORY:TAG: %w", ref, err)
	}
	return map[string]string{
		AnnotationContainerdName: tag.Name(),
		AnnotationRefName:        tag.TagStr(),
	}, nil
}

func writeArchive(path, ref string, image mutate.Appendable, dockerManifest bool) error {
	annotations, err := ArchiveAnnotations(ref)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp(filepath.Dir(path), ".ociimage-")
	if err != nil {
		return fmt.Errorf("write image archive: %w", err)
	}
	defer os.RemoveAll(dir)

	top := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: image, Descriptor: v1.Descriptor{Annotations: annotations}})
	layoutDir := filepath.Join(dir, "layout")
	if _, err := layout.Write(layoutDir, top); err != nil {
		return fmt.Errorf("write image layout: %w", err)
	}
	if dockerManifest {
		img, ok := image.(v1.Image)
		if !ok {
			return fmt.Errorf("write image archive: a docker manifest needs an image, not %T", image)
		}
		data, err := dockerManifestJSON(annotations[AnnotationContainerdName], img)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(layoutDir, "manifest.json"), data, 0o644); err != nil {
			return fmt.Errorf("write manifest.json: %w", err)
		}
	}

	tmp := filepath.Join(dir, "archive.tar")
	if err := tarDir(tmp, layoutDir); err != nil {
		return fmt.Errorf("write image archive: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write image archive: %w", err)
	}
	return nil
}

// dockerManifestJSON is the manifest.json of `docker save`: the config and
// the layers of img, as paths in the archive, and its name. Docker
// decompresses the gzip layers as it loads them.
func dockerManifestJSON(ref string, img v1.Image) ([]byte, error) {
	cfg, err := img.ConfigName()
	if err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	}
	desc := tarball.Descriptor{Config: blobPath(cfg), RepoTags: []string{ref}}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return nil, fmt.Errorf("manifest.json: %w", err)
		}
		desc.Layers = append(desc.Layers, blobPath(d))
	}
	data, err := json.Marshal(tarball.Manifest{desc})
	if err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	}
	return data, nil
}

func blobPath(h v1.Hash) string {
	return "blobs/" + h.Algorithm + "/" + h.Hex
}

// tarDir writes the files under dir to a tar file at path, sorted, with
// fixed times and owners, so the archive depends only on its content.
func tarDir(path, dir string) (err error) {
	var names []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.Sort(names)

	out, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	tw := tar.NewWriter(out)
	for _, n := range names {
		p := filepath.Join(dir, filepath.FromSlash(n))
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: n, ModTime: Epoch, Format: tar.FormatPAX}
		if info.IsDir() {
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, n+"/", 0o755
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			continue
		}
		hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, 0o644, info.Size()
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		_, err = io.Copy(tw, f)
		f.Close()
		if err != nil {
			return err
		}
	}
	return tw.Close()
}
