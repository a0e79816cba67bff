// Command coredns is CoreDNS with the multicluster plugin, which serves
// Kubernetes Multi-Cluster Services DNS.
package main

//go:generate go run gen.go

import (
	"os"
	"sync"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/coremain"
	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/coredns-mcs/coredns-mcs/internal/memlimit"
)

// Set by the build (-ldflags -X main.version=...).
var version = "dev"

func main() {
	// coremain's init names the server CoreDNS; this distribution says what it is.
	caddy.AppName = "coredns-mcs"
	caddy.AppVersion = version + " (CoreDNS-" + coremain.CoreVersion + ")"
	// The soft memory limit from the container's, so that the collector
	// keeps a relist's garbage under it (internal/memlimit); said in the
	// log once the server starts (not for -version or -plugins).
	applied := memlimit.System.Apply(os.Getenv)
	var once sync.Once
	caddy.RegisterEventHook("memlimit", func(e caddy.EventName, _ any) error {
		if e == caddy.InstanceStartupEvent { // each start and reload: said once
			once.Do(func() { clog.Info(applied) })
		}
		return nil
	})
	coremain.Run()
}
