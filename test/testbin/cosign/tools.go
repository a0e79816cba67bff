//go:build tools

// Package cosign pins the cosign command, with which the release tests sign
// the image index, its SBOM attestation and verify both with a key pair,
// against a registry on loopback (test/release).
package cosign

import _ "github.com/sigstore/cosign/v2/cmd/cosign"
