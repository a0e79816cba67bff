// Command coredns is CoreDNS with the multicluster plugin, which serves
// Kubernetes Multi-Cluster Services DNS.
package main

//go:generate go run gen.go

import (
	"github.com/coredns/caddy"
	"github.com/coredns/coredns/coremain"
)

// Set by the build (-ldflags -X main.version=...).
var version = "dev"

func main() {
	// coremain's init names the server CoreDNS; this distribution says what it is.
	caddy.AppName = "coredns-mcs"
	caddy.AppVersion = version + " (CoreDNS-" + coremain.CoreVersion + ")"
	coremain.Run()
}
