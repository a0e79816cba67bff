//go:build tools

// Package testbin pins the kube-apiserver and etcd main packages that the
// integration tests run, so that `go mod tidy` keeps their whole module graph
// in go.mod and go.sum and build.sh can build them offline from the module
// cache.
package testbin

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
