//go:build tools

// Package helm pins the helm command (helm.sh/helm/v3), with which the tests
// lint, render, install, upgrade and uninstall charts/coredns-mcs.
package helm

import _ "helm.sh/helm/v3/cmd/helm"
