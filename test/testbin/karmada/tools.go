//go:build tools

// Package karmada pins the Karmada control-plane main packages the Karmada
// tests run (test/internal/karmada), so that `go mod tidy` keeps their whole module
// graph in go.mod and go.sum and ../build.sh can build them offline from the
// module cache.
package karmada

import (
	_ "github.com/karmada-io/karmada/cmd/aggregated-apiserver"
	_ "github.com/karmada-io/karmada/cmd/controller-manager"
	_ "github.com/karmada-io/karmada/cmd/scheduler"
	_ "github.com/karmada-io/karmada/cmd/webhook"
)
