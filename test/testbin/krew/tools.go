//go:build tools

// Package krew pins krew and its manifest validator (cmd/validate-krew-manifest,
// the validation krew-index runs on every plugin manifest), with which the
// release tests check the manifest make release writes and install the
// plugin from it, offline.
package krew

import (
	_ "sigs.k8s.io/krew/cmd/krew"
	_ "sigs.k8s.io/krew/cmd/validate-krew-manifest"
)
