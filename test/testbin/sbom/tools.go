//go:build tools

// Package sbom pins cyclonedx-gomod, which writes the CycloneDX SBOM of the
// coredns binary for a release (make sbom, make release) from this module's
// graph, offline.
package sbom

import _ "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod"
