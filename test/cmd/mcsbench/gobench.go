package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/coredns-mcs/coredns-mcs/test/internal/process"
)

// goBench is the output of one `go test -bench` run.
type goBench struct {
	pkg   string
	cmd   string
	lines []string // the header (goos, cpu...) and Benchmark lines
	err   error
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([0-9.]+) ns/op`)

// nsPerOp returns the median ns/op of the named benchmark over all counts.
func (g goBench) nsPerOp(name string) (float64, bool) {
	var xs []float64
	for _, l := range g.lines {
		m := benchLine.FindStringSubmatch(l)
		if m == nil || m[1] != name {
			continue
		}
		if v, err := strconv.ParseFloat(m[2], 64); err == nil {
			xs = append(xs, v)
		}
	}
	return median(xs), len(xs) > 0
}

// runGoBench runs the Go benchmarks of pkg that match pattern from the
// repository root, pinned to cpus with taskset when cpus is set (then
// GOMAXPROCS is 1).
// pluginPackage is the plugin's import path. It is a module of its own that
// this module replaces with its directory, so a relative path would name no
// package of this module.
const pluginPackage = "github.com/coredns-mcs/coredns-mcs/plugin/multicluster"

func runGoBench(ctx context.Context, root, pkg, pattern string, count int, cpus string) goBench {
	argv := []string{"go", "test", "-run", "^$", "-bench", pattern, "-benchmem", "-count", strconv.Itoa(count), pkg}
	if cpus != "" {
		argv = append([]string{"taskset", "-c", cpus}, argv...)
	}
	g := goBench{pkg: pkg, cmd: strings.Join(quoteArgs(argv), " ")}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	var out bytes.Buffer
	p, err := process.Start(process.Spec{Name: "go test " + pkg, Path: argv[0], Args: argv[1:], Dir: root, Output: &out})
	if err != nil {
		g.err = err
		g.lines = []string{err.Error()}
		return g
	}
	select {
	case <-p.Done():
		err = p.Err()
	case <-ctx.Done():
		_ = p.Stop(5 * time.Second)
		err = ctx.Err()
	}
	g.err = err
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "Benchmark") || strings.HasPrefix(l, "goos:") || strings.HasPrefix(l, "goarch:") ||
			strings.HasPrefix(l, "pkg:") || strings.HasPrefix(l, "cpu:") {
			g.lines = append(g.lines, strings.TrimRight(l, " \t"))
		}
	}
	if err != nil && len(g.lines) == 0 {
		g.lines = append(g.lines, strings.Split(strings.TrimSpace(out.String()), "\n")...)
	}
	return g
}

// quoteArgs single-quotes the arguments a shell would mangle.
func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, "^$*? ") {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return out
}
