// Command sharedeps gives test/testbin's shared sets (testbin.SharedSets)
// the main module's version of every module they compile with it:
//
//	go run ./test/cmd/sharedeps [-n] [SET...]   (default: every shared set)
//
// -n prints what differs and changes nothing.
//
// A set whose version is lower is raised (go get MODULE@VERSION, then go
// mod tidy, in its directory); where a set's is higher, the main module is
// raised, and the sets are looked at again, until nothing differs. Run it
// after changing the main module's requirements or a set's release.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"golang.org/x/mod/semver"

	"github.com/coredns-mcs/coredns-mcs/test/internal/testbin"
)

func main() {
	dryRun := flag.Bool("n", false, "print what differs, change nothing")
	flag.Parse()
	sets := flag.Args()
	if len(sets) == 0 {
		sets = testbin.SharedSets
	}
	root, err := testbin.RepoRoot()
	if err != nil {
		fail(err)
	}
	for round := 1; ; round++ {
		changed := false
		for _, set := range sets {
			ms, err := testbin.Mismatches(root, set)
			if err != nil {
				fail(err)
			}
			var raiseSet, raiseMain []string
			for _, m := range ms {
				fmt.Println(m)
				if semver.Major(m.SetVersion) != semver.Major(m.MainVersion) {
					// Another major version is another API, not a raise.
					fmt.Println("  (another major version: left as it is)")
					continue
				}
				if m.SetLower() {
					raiseSet = append(raiseSet, m.Module+"@"+m.MainVersion)
				} else {
					raiseMain = append(raiseMain, m.Module+"@"+m.SetVersion)
				}
			}
			if *dryRun {
				continue
			}
			if len(raiseMain) > 0 {
				goGet(root, raiseMain)
				changed = true
			}
			if len(raiseSet) > 0 {
				goGet(filepath.Join(root, "test", "testbin", set), raiseSet)
				changed = true
			}
		}
		if *dryRun {
			return
		}
		if !changed {
			fmt.Println("the shared sets compile the main module's versions")
			return
		}
		if round == 5 {
			fail(fmt.Errorf("still differing after %d rounds", round))
		}
	}
}

func goGet(dir string, mods []string) {
	for _, args := range [][]string{append([]string{"get"}, mods...), {"mod", "tidy"}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		fmt.Fprintf(os.Stderr, "%s: go %v\n", dir, args)
		if err := cmd.Run(); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "sharedeps:", err)
	os.Exit(1)
}
