package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The targets of the churn measurements: lookups of cluster.local names
// during a rolling update of a 10k-endpoint headless import stay within 10%
// of the same lookups without it, at p99 and p99.9, and none takes 1 ms.
const (
	churnRatioTarget = 1.10
	churnMaxTarget   = time.Millisecond
)

// metricOf returns the median of a benchmark's reported metric (unit, as
// "ns/op" or "p99-ns") over all counts.
func (g goBench) metricOf(name, unit string) (float64, bool) {
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `(?:-\d+)?\s+\d+\s+(.*)$`)
	var xs []float64
	for _, l := range g.lines {
		m := re.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		fields := strings.Fields(m[1])
		for i := 1; i < len(fields); i += 2 {
			if fields[i] != unit {
				continue
			}
			if v, err := strconv.ParseFloat(fields[i-1], 64); err == nil {
				xs = append(xs, v)
			}
		}
	}
	return median(xs), len(xs) > 0
}

// writeChurn reports BenchmarkSliceUpdate and BenchmarkLookupDuringChurn of
// the multicluster plugin against their targets.
func (r *results) writeChurn(p func(string, ...any)) {
	// The plugin's benchmarks, from every run of them.
	var ours *goBench
	for _, g := range r.goBenches {
		if strings.HasSuffix(strings.TrimSuffix(g.pkg, "/"), "plugin/multicluster") {
			if ours == nil {
				ours = &goBench{pkg: g.pkg}
			}
			ours.lines = append(ours.lines, g.lines...)
		}
	}
	if ours == nil {
		return
	}
	p("## Churn\n\n")
	p("One EndpointSlice event of a headless import (a rolling update changes one endpoint of one slice of 100), from the converted slice to the published answers (`BenchmarkSliceUpdate`, median of the counts):\n\n")
	p("| endpoints in the import | slices | per event | allocations |\n|---|---|---|---|\n")
	for _, n := range []int{1_000, 10_000, 100_000} {
		name := fmt.Sprintf("BenchmarkSliceUpdate/endpoints=%d", n)
		ns, ok := ours.metricOf(name, "ns/op")
		allocs, _ := ours.metricOf(name, "allocs/op")
		if ok {
			p("| %d | %d | %s | %.0f |\n", n, n/100, time.Duration(ns).Round(100*time.Nanosecond), allocs)
		}
	}
	r.writeSerialTick(p, ours)
	p("\nLookups of a cluster.local name of a local Service (passed on, as nearly every query of a cluster is), one after the other, with and without a rolling update of a 10k-endpoint import in 100 slices beside them, one slice event a millisecond, on every CPU (`BenchmarkLookupDuringChurn`, 200 000 lookups per op, median of the counts):\n\n")
	p("| | p99 | p99.9 | max | slice events during the lookups |\n|---|---|---|---|---|\n")
	get := func(churn bool, unit string) (float64, bool) {
		return ours.metricOf(fmt.Sprintf("BenchmarkLookupDuringChurn/churn=%v", churn), unit)
	}
	var ok = true
	row := func(churn bool) (p99, p999, mx float64) {
		var ok1, ok2, ok3 bool
		p99, ok1 = get(churn, "p99-ns")
		p999, ok2 = get(churn, "p99.9-ns")
		mx, ok3 = get(churn, "max-ns")
		ev, _ := get(churn, "slice-events/op")
		ok = ok && ok1 && ok2 && ok3
		label := "no churn"
		if churn {
			label = "rolling update"
		}
		p("| %s | %s | %s | %s | %.0f |\n", label, time.Duration(p99), time.Duration(p999), time.Duration(mx), ev)
		return p99, p999, mx
	}
	a99, a999, _ := row(false)
	b99, b999, bmax := row(true)
	if ok && a99 > 0 && a999 > 0 {
		p("\nTargets: p99 and p99.9 under churn within %.0f%% of those without (ratios %.2f and %.2f: %s, %s); no lookup over %s (max %s: %s). ",
			(churnRatioTarget-1)*100, b99/a99, b999/a999, verdict(churnRatioTarget, b99/a99), verdict(churnRatioTarget, b999/a999),
			churnMaxTarget, time.Duration(bmax), verdict(float64(churnMaxTarget), bmax))
		p("A maximum on a shared machine includes the scheduler's and the garbage collector's pauses, which no lock of the plugin causes; the Load average section says how busy the machine was.\n\n")
	}
}

// writeSerialTick reports BenchmarkSerialTick: the SOA serial's share of
// one change, coalesced, against the former serial that moved on every
// change.
func (r *results) writeSerialTick(p func(string, ...any), ours *goBench) {
	rows := []struct{ name, label string }{
		{"handed=every-1", "handed out after every change"},
		{"handed=every-100", "handed out every 100 changes"},
		{"handed=never", "never handed out"},
	}
	var lines []string
	for _, row := range rows {
		c, ok1 := ours.metricOf("BenchmarkSerialTick/coalesced/"+row.name, "ns/op")
		o, ok2 := ours.metricOf("BenchmarkSerialTick/per-change/"+row.name, "ns/op")
		if ok1 && ok2 {
			lines = append(lines, fmt.Sprintf("| %s | %.1f ns | %.1f ns |\n", row.label, c, o))
		}
	}
	if len(lines) == 0 {
		return
	}
	p("\nThe SOA serial's share of one change (`BenchmarkSerialTick`, median of the counts): coalesced, a change the serial was not handed out before costs one atomic load; the former serial read the clock and moved on every change:\n\n")
	p("| serial | coalesced | moved on every change (before) |\n|---|---|---|\n")
	for _, l := range lines {
		p("%s", l)
	}
}
