// Command stockcoredns builds, into the cache test/e2e reads, stock CoreDNS
// at every version a platform of internal/front's table ships
// (harness.StockCoreDNS), one after the other: make test starts it in the
// background, so that TestFrontAtShippedVersions finds them built, or
// waits on the build under way.
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
	for _, v := range front.ShippedCoreDNS() {
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
