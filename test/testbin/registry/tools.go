//go:build tools

// Package registry pins the registry of distribution/v3 (the CNCF
// Distribution project, Docker's registry), which the release tests run on
// loopback to push the image index, its signatures and SBOM, and the chart to.
package registry

import _ "github.com/distribution/distribution/v3/cmd/registry"
