// Command setcap gives files the capability to bind ports below 1024, as
// `setcap cap_net_bind_service=+ep FILE...` of libcap does, without needing
// libcap's tools in the image that builds them (see the Dockerfile).
//
//	go run ./internal/filecap/cmd/setcap FILE...
package main

import (
	"fmt"
	"os"

	"github.com/coredns-mcs/coredns-mcs/internal/filecap"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: setcap FILE...  (sets cap_net_bind_service=+ep)")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		if err := filecap.Set(path, filecap.NetBindService); err != nil {
			fmt.Fprintln(os.Stderr, "setcap:", err)
			os.Exit(1)
		}
	}
}
