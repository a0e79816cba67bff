package ociimage

import (
	"fmt"
	"slices"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Config is what an image says about how to run it.
type Config struct {
	// Platform is the OS and architecture of the binaries in the image.
	Platform   v1.Platform
	Entrypoint []string
	Cmd        []string
	// User is "UID" or "UID:GID".
	User       string
	WorkingDir string
	Env        []string
	// ExposedPorts are "53/udp", "53/tcp" and the like.
	ExposedPorts []string
	Labels       map[string]string
	// Created is the creation time recorded in the image; zero means Epoch.
	Created time.Time
}

// Image assembles an OCI image from layers, bottom first.
func Image(cfg Config, layers ...v1.Layer) (v1.Image, error) {
	if cfg.Platform.OS == "" || cfg.Platform.Architecture == "" {
		return nil, fmt.Errorf("image: platform %q needs an OS and an architecture", cfg.Platform.String())
	}
	created := cfg.Created
	if created.IsZero() {
		created = Epoch
	}
	var ports map[string]struct{}
	if len(cfg.ExposedPorts) > 0 {
		ports = make(map[string]struct{}, len(cfg.ExposedPorts))
		for _, p := range cfg.ExposedPorts {
			ports[p] = struct{}{}
		}
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: cfg.Platform.Architecture,
		OS:           cfg.Platform.OS,
		Variant:      cfg.Platform.Variant,
		Created:      v1.Time{Time: created},
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			Entrypoint:   slices.Clone(cfg.Entrypoint),
			Cmd:          slices.Clone(cfg.Cmd),
			User:         cfg.User,
			WorkingDir:   cfg.WorkingDir,
			Env:          slices.Clone(cfg.Env),
			ExposedPorts: ports,
			Labels:       cfg.Labels,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	adds := make([]mutate.Addendum, len(layers))
	for i, l := range layers {
		adds[i] = mutate.Addendum{
			Layer:     l,
			MediaType: types.OCILayer,
			History:   v1.History{Created: v1.Time{Time: created}, CreatedBy: "coredns-mcs ociimage"},
		}
	}
	img, err = mutate.Append(img, adds...)
	if err != nil {
		return nil, fmt.Errorf("image layers: %w", err)
	}
	return img, nil
}

// Index is a multi-platform image: one image per platform, each found by
// the platform of its config.
func Index(images ...v1.Image) (v1.ImageIndex, error) {
	adds := make([]mutate.IndexAddendum, len(images))
	for i, img := range images {
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("image index: %w", err)
		}
		p := cf.Platform()
		if p == nil {
			return nil, fmt.Errorf("image index: image %d has no platform", i)
		}
		adds[i] = mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}}
	}
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...), nil
}

// ParsePlatform parses "os/arch" or "os/arch/variant".
func ParsePlatform(s string) (v1.Platform, error) {
	p, err := v1.ParsePlatform(s)
	if err != nil {
		return v1.Platform{}, fmt.Errorf("platform %q: %w", s, err)
	}
	if p.OS == "" || p.Architecture == "" {
		return v1.Platform{}, fmt.Errorf("platform %q: want OS/ARCH", s)
	}
	return *p, nil
}
