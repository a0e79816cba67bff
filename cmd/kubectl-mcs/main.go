// Command kubectl-mcs is a kubectl plugin for coredns-mcs:
//
//	kubectl mcs explain NAME [TYPE]   why a name answers what it does
//	kubectl mcs check                 is this cluster set up for coredns-mcs
//
// Copy it onto PATH; kubectl finds it by its name. See docs/kubectl-mcs.md.
package main

import (
	"context"
	"os"

	"github.com/coredns-mcs/coredns-mcs/internal/mcsctl"
)

// version is stamped by make, as coredns's is.
var version = "dev"

func main() {
	mcsctl.Version = version
	os.Exit(mcsctl.Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
