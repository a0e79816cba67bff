//go:build tools

// Package conformance pins the main packages the set builds from the
// Kubernetes module (see recipe.sh), so that `go mod tidy` keeps their
// graph in go.mod and go.sum.
package conformance

import (
	_ "k8s.io/kubernetes/test/images/agnhost"
)
