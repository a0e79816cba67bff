package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// The Hostile objects section: the Go benchmarks of objects at the API
// server's own limits (plugin/multicluster/hostile_bench_test.go), run on
// this tree and on a base revision, the same benchmark file copied into
// it, one after the other on this machine.

const hostileBenchFile = "plugin/multicluster/hostile_bench_test.go"

// hostileBenchFiles are the files copied into the base revision: the
// hostile benchmarks, and what a small UDP query makes the server send
// (BenchmarkHostileWire).
var hostileBenchFiles = []string{hostileBenchFile, "plugin/multicluster/wire_bench_test.go"}

// hostileResult is the two runs.
type hostileResult struct {
	base        string // the base revision, as given
	baseCommit  string
	after, prev goBench
	err         error
}

// measureHostile runs the hostile benchmarks of the tree at root, then of
// base, checked out in a worktree under build/.
func measureHostile(ctx context.Context, root, base string, count int) *hostileResult {
	h := &hostileResult{base: base}
	status("hostile-object benchmarks of this tree")
	h.after = runGoBench(ctx, root, pluginPackage, "Hostile", count, "")
	out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--short", base).Output()
	if err != nil {
		h.err = fmt.Errorf("base revision %s: %w", base, err)
		return h
	}
	h.baseCommit = strings.TrimSpace(string(out))
	dir := filepath.Join(root, "build", "hostile-base")
	_ = exec.Command("git", "-C", root, "worktree", "remove", "--force", dir).Run()
	if out, err := exec.CommandContext(ctx, "git", "-C", root, "worktree", "add", "--detach", "--force", dir, h.baseCommit).CombinedOutput(); err != nil {
		h.err = fmt.Errorf("worktree of %s: %v: %s", base, err, out)
		return h
	}
	defer func() { _ = exec.Command("git", "-C", root, "worktree", "remove", "--force", dir).Run() }()
	for _, f := range hostileBenchFiles {
		bench, err := os.ReadFile(filepath.Join(root, f))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, f), bench, 0o644)
		}
		if err != nil {
			h.err = err
			return h
		}
	}
	status("hostile-object benchmarks of %s (%s)", base, h.baseCommit)
	// Once: at the base, some take seconds an operation.
	h.prev = runGoBench(ctx, dir, pluginPackage, "Hostile", 1, "")
	return h
}

// benchMem reads a benchmark's line: its name, ns/op and B/op, with the
// metrics it reports of its own (b.ReportMetric) between the two.
var benchMem = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([0-9.]+) ns/op((?:\s+[0-9.e+]+ [A-Za-z-]+)*?)\s+([0-9.]+) B/op`)

// benchMetric is one metric of benchMem's third group.
var benchMetric = regexp.MustCompile(`([0-9.e+]+) ([A-Za-z-]+)`)

// metric returns the median of the metric unit (b.ReportMetric) of the
// benchmark name, and whether it reported one.
func (g goBench) metric(name, unit string) (float64, bool) {
	var all []float64
	for _, l := range g.lines {
		m := benchMem.FindStringSubmatch(l)
		if m == nil || m[1] != name {
			continue
		}
		for _, mm := range benchMetric.FindAllStringSubmatch(m[3], -1) {
			if mm[2] == unit {
				v, _ := strconv.ParseFloat(mm[1], 64)
				all = append(all, v)
			}
		}
	}
	if len(all) == 0 {
		return 0, false
	}
	return median(all), true
}

// medians returns the median ns/op and B/op of each benchmark, by name, in
// the order they ran.
func (g goBench) medians() (names []string, ns, bytes map[string]float64) {
	nsAll, bAll := map[string][]float64{}, map[string][]float64{}
	for _, l := range g.lines {
		m := benchMem.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if _, seen := nsAll[m[1]]; !seen {
			names = append(names, m[1])
		}
		n, _ := strconv.ParseFloat(m[2], 64)
		b, _ := strconv.ParseFloat(m[4], 64)
		nsAll[m[1]] = append(nsAll[m[1]], n)
		bAll[m[1]] = append(bAll[m[1]], b)
	}
	ns, bytes = map[string]float64{}, map[string]float64{}
	for name := range nsAll {
		ns[name], bytes[name] = median(nsAll[name]), median(bAll[name])
	}
	return names, ns, bytes
}

// writeHostile writes the section.
func (h *hostileResult) write(p func(string, ...any)) {
	p("## Hostile objects\n\n")
	p("What one namespace's objects at the API server's own limits cost a query and an event: an EndpointSlice of 1,000 named endpoints and 2,000 or 20,000 ports, a ServiceImport of 30,000 ports, a slice of one endpoint beside three of 20,000 distinct ports, a zone transfer of them (`%s`). ", hostileBenchFile)
	p("The same benchmarks ran on this tree and on %s (`%s`, the file copied into it), one after the other; each query over UDP (a 1,232-octet buffer) and over TCP. Targets (docs/trust.md): at most 4 MiB and 5 ms of CPU a query, 50 ms of CPU an event.\n\n", h.base, h.baseCommit)
	if h.err != nil {
		p("**Not measured:** %v\n\n", h.err)
		return
	}
	names, afterNs, afterB := h.after.medians()
	_, prevNs, prevB := h.prev.medians()
	p("| benchmark | %s: time | allocated | this tree: time | allocated | time, before/after |\n|---|---|---|---|---|---|\n", h.baseCommit)
	for _, name := range names {
		before, ok := prevNs[name]
		ratio := "-"
		if ok && afterNs[name] > 0 {
			ratio = fmt.Sprintf("%.0fx", before/afterNs[name])
		}
		p("| `%s` | %s | %s | %s | %s | %s |\n", strings.TrimPrefix(name, "Benchmark"), fmtNs(before, ok), fmtBytes(prevB[name], ok), fmtNs(afterNs[name], true), fmtBytes(afterB[name], true), ratio)
	}
	// The targets, against this tree's worst query and event.
	var queryNs, queryB, eventNs float64
	for _, name := range names {
		switch {
		case strings.HasPrefix(name, "BenchmarkHostileQuery/"):
			queryNs, queryB = max(queryNs, afterNs[name]), max(queryB, afterB[name])
		case strings.HasPrefix(name, "BenchmarkHostileEvent/"):
			eventNs = max(eventNs, afterNs[name])
		}
	}
	met := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**missed**"
	}
	// The wire: what a small UDP query makes the server send.
	var wire []string
	for _, name := range names {
		if strings.HasPrefix(name, "BenchmarkHostileWire/") {
			wire = append(wire, name)
		}
	}
	if len(wire) > 0 {
		p("\nThe wire: a query over UDP that advertises a 65,535-octet buffer, the reply as CoreDNS's server sends it (`plugin/multicluster/wire_bench_test.go`; the plugin's `max_udp_size`, default 1232):\n\n")
		p("| benchmark | %s: reply | amplification | this tree: reply | amplification |\n|---|---|---|---|---|\n", h.baseCommit)
		for _, name := range wire {
			cell := func(g goBench, unit, format string) string {
				if v, ok := g.metric(name, unit); ok {
					return fmt.Sprintf(format, v)
				}
				return "-"
			}
			p("| `%s` | %s | %s | %s | %s |\n", strings.TrimPrefix(name, "Benchmark"),
				cell(h.prev, "reply-octets", "%.0f octets"), cell(h.prev, "amplification", "%.0fx"),
				cell(h.after, "reply-octets", "%.0f octets"), cell(h.after, "amplification", "%.0fx"))
		}
	}
	p("\nThe worst query of this tree: %s and %s (targets 5 ms and 4 MiB: %s); the worst event: %s (target 50 ms: %s). Times are the wall time of one goroutine on a quiet machine: near its CPU time, and never below it.\n", fmtNs(queryNs, true), fmtBytes(queryB, true), met(queryNs <= 5e6 && queryB <= 4<<20), fmtNs(eventNs, true), met(eventNs <= 50e6))
	p("\n`%s` (this tree), and once at %s:\n\n```\n%s\n```\n\n```\n%s\n```\n\n", h.after.cmd, h.baseCommit, strings.Join(h.after.lines, "\n"), strings.Join(h.prev.lines, "\n"))
}

func fmtNs(ns float64, ok bool) string {
	switch {
	case !ok:
		return "-"
	case ns >= 1e9:
		return fmt.Sprintf("%.2f s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	}
	return fmt.Sprintf("%.1f µs", ns/1e3)
}

func fmtBytes(b float64, ok bool) string {
	switch {
	case !ok:
		return "-"
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.0f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}

// spliceHeading puts section in place of the section headed "## heading"
// in doc, or, without one, before the section headed "## before" (or at
// the end).
func spliceHeading(doc, heading, before, section string) string {
	head := "## " + heading + "\n"
	if i := strings.Index(doc, head); i >= 0 {
		rest := doc[i+len(head):]
		j := strings.Index(rest, "\n## ")
		if j < 0 {
			return doc[:i] + section
		}
		return doc[:i] + section + rest[j+1:]
	}
	if i := strings.Index(doc, "## "+before+"\n"); i >= 0 {
		return doc[:i] + section + doc[i:]
	}
	return doc + "\n" + section
}
