//go:build ignore

// gen writes zplugin.go and zdirectives.go from ../plugin.cfg. Run it with
// `go generate ./coredns` (or `make gen`).
package main

import (
	"log"
	"os"

	"github.com/coredns-mcs/coredns-mcs/internal/plugincfg"
)

func main() {
	files, err := plugincfg.Generate("..")
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("zplugin.go", files.Imports, 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("zdirectives.go", files.Directives, 0o644); err != nil {
		log.Fatal(err)
	}
}
