//go:build tools

// Package mcs pins the mcs-api reference controller (the servicecontroller
// of sigs.k8s.io/mcs-api/controllers), which the interoperability tests run
// against a real API server.
package mcs

import _ "sigs.k8s.io/mcs-api/controllers/cmd/servicecontroller"
