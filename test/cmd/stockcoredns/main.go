// Command stockcoredns builds, into the cache test/e2e reads, stock CoreDNS
// at every version a platform of internal/front's table ships
// (harness.StockCoreDNS), one after the other, or only the versions given
// as arguments ("1.14.4"): make test starts it in the background, so that
// TestFrontAtShippedVersions and test/swap find them built, or wait on the
// build under way.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/coredns-mcs/coredns-mcs/internal/front"
	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
)

func main() {
	failed := false
	versions := front.ShippedCoreDNS()
	if len(os.Args) > 1 {
		versions = os.Args[1:]
	}
	for _, v := range versions {
		start := time.Now()
		bin, err := harness.StockCoreDNS("v" + v)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			failed = true
			continue
		}
		fmt.Fprintf(os.Stderr, "CoreDNS %s: %s (%.0fs)\n", v, bin, time.Since(start).Seconds())
	}
	if failed {
		os.Exit(1)
	}
}
