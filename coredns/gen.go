//go:build ignore

// gen writes zplugin.go and zdirectives.go from ../plugin.cfg. Run it with
// `go generate ./coredns` (or `make gen`).
package main

import (
	"log"
	"os"
	"path/filepath"

	"github.com/coredns-mcs/coredns-mcs/internal/plugincfg"
)

func main() {
	cfg, err := os.ReadFile(filepath.Join("..", "plugin.cfg"))
	if err != nil {
		log.Fatal(err)
	}
	plugins, err := plugincfg.Parse(cfg, plugincfg.Module, plugincfg.LocalIn(".."))
	if err != nil {
		log.Fatal(err)
	}
	imports, err := plugincfg.Imports("main", plugins)
	if err != nil {
		log.Fatal(err)
	}
	directives, err := plugincfg.Directives("main", plugins)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("zplugin.go", imports, 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("zdirectives.go", directives, 0o644); err != nil {
		log.Fatal(err)
	}
}
