package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coredns-mcs/coredns-mcs/test/internal/process"
)

// perfResult is one dnsperf round.
type perfResult struct {
	qps       float64
	sent      int
	lost      int
	noerror   int // responses with rcode NOERROR
	completed int
}

var (
	qpsLine       = regexp.MustCompile(`Queries per second:\s+([0-9.]+)`)
	sentLine      = regexp.MustCompile(`Queries sent:\s+(\d+)`)
	completedLine = regexp.MustCompile(`Queries completed:\s+(\d+)`)
	lostLine      = regexp.MustCompile(`Queries lost:\s+(\d+)`)
	noerrorField  = regexp.MustCompile(`Response codes:.*?NOERROR (\d+)`)
)

// parseDNSPerf reads the statistics dnsperf prints at the end of a run.
func parseDNSPerf(out string) (perfResult, error) {
	var r perfResult
	m := qpsLine.FindStringSubmatch(out)
	if m == nil {
		return r, errors.New("no \"Queries per second\" in dnsperf output")
	}
	var err error
	if r.qps, err = strconv.ParseFloat(m[1], 64); err != nil {
		return r, err
	}
	for _, f := range []struct {
		re  *regexp.Regexp
		dst *int
	}{{sentLine, &r.sent}, {completedLine, &r.completed}, {lostLine, &r.lost}, {noerrorField, &r.noerror}} {
		if m := f.re.FindStringSubmatch(out); m != nil {
			*f.dst, _ = strconv.Atoi(m[1])
		}
	}
	return r, nil
}

// loadgen runs dnsperf.
type loadgen struct {
	// cpus, when set, pins dnsperf with taskset.
	cpus string
}

// run sends the queries of file to addr for d and returns dnsperf's
// figures. Every answer must be NOERROR: a benchmark of error answers would
// measure the wrong path.
func (g loadgen) run(ctx context.Context, addr, file string, d time.Duration) (perfResult, error) {
	host, port, _ := strings.Cut(addr, ":")
	argv := []string{"dnsperf", "-s", host, "-p", port, "-d", file, "-l", strconv.Itoa(int(d.Seconds())), "-t", "2"}
	if g.cpus != "" {
		argv = append([]string{"taskset", "-c", g.cpus}, argv...)
	}
	var out bytes.Buffer
	p, err := process.Start(process.Spec{Name: "dnsperf", Path: argv[0], Args: argv[1:], Output: &out})
	if err != nil {
		return perfResult{}, err
	}
	select {
	case <-p.Done():
	case <-ctx.Done():
		_ = p.Stop(2 * time.Second)
		return perfResult{}, ctx.Err()
	case <-time.After(d + 30*time.Second):
		_ = p.Stop(2 * time.Second)
		return perfResult{}, fmt.Errorf("dnsperf ran far longer than %s", d)
	}
	if p.Err() != nil {
		return perfResult{}, fmt.Errorf("dnsperf: %v:\n%s", p.Err(), out.String())
	}
	r, err := parseDNSPerf(out.String())
	if err != nil {
		return r, fmt.Errorf("%w:\n%s", err, out.String())
	}
	if r.completed == 0 || r.noerror < r.completed {
		return r, fmt.Errorf("dnsperf against %s with %s: %d of %d answers were NOERROR:\n%s", addr, file, r.noerror, r.completed, out.String())
	}
	return r, nil
}

// writeQueries writes a dnsperf query file with an A query for each name, in
// a fixed random order; dnsperf then goes round it, so that every name is
// asked equally often without a pattern a cache could learn.
func writeQueries(path string, names []string) error {
	shuffled := slices.Clone(names)
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	var b strings.Builder
	for _, n := range shuffled {
		b.WriteString(n)
		b.WriteString(" A\n")
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

// target is a server and the queries sent to it.
type target struct {
	label   string
	s       *server
	queries string
}

// comparison is an interleaved A/B throughput measurement.
type comparison struct {
	title string
	a, b  target
	// target is the minimum acceptable ratio b/a; zero means none.
	target float64
	qa, qb []float64
	// ca, cb are the server's CPU time per answered query, in
	// microseconds. Unlike QPS they hardly depend on how much of its CPU
	// the server got from the rest of a shared machine.
	ca, cb []float64
}

// run measures a and b in rounds of d, in the order A B, B A, A B, ... so
// that drift of the machine's speed over the run (other load, thermal)
// weighs on both alike, after one unmeasured warm-up round of each.
func (c *comparison) run(ctx context.Context, g loadgen, rounds int, d time.Duration) error {
	for _, t := range []target{c.a, c.b} {
		if _, err := g.run(ctx, t.s.addr, t.queries, min(d, 2*time.Second)); err != nil {
			return fmt.Errorf("%s: warm-up of %s: %w", c.title, t.label, err)
		}
	}
	for r := range rounds {
		order := []bool{false, true}
		if r%2 == 1 {
			order = []bool{true, false}
		}
		for _, isB := range order {
			t := c.a
			if isB {
				t = c.b
			}
			cpu0, err := t.s.cpuTime()
			if err != nil {
				return err
			}
			res, err := g.run(ctx, t.s.addr, t.queries, d)
			if err != nil {
				return fmt.Errorf("%s: %s: %w", c.title, t.label, err)
			}
			cpu1, err := t.s.cpuTime()
			if err != nil {
				return err
			}
			perQuery := float64(cpu1-cpu0) / float64(time.Microsecond) / float64(res.completed)
			if isB {
				c.qb, c.cb = append(c.qb, res.qps), append(c.cb, perQuery)
			} else {
				c.qa, c.ca = append(c.qa, res.qps), append(c.ca, perQuery)
			}
			status("  %s, round %d, %s: %.0f qps, %.1f µs CPU per query", c.title, r+1, t.label, res.qps, perQuery)
		}
	}
	return nil
}

// cpuRatio is the median CPU time per query of B over that of A.
func (c *comparison) cpuRatio() float64 { return median(c.cb) / median(c.ca) }

// sumRatio is sum(B)/sum(A).
func (c *comparison) sumRatio() float64 { return sum(c.qb) / sum(c.qa) }

// medianRatio is the median of the per-round ratios B/A.
func (c *comparison) medianRatio() float64 {
	var r []float64
	for i := range min(len(c.qa), len(c.qb)) {
		r = append(r, c.qb[i]/c.qa[i])
	}
	return median(r)
}

func sum(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// percentile is the nearest-rank percentile p (0-100) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(rank, len(s)-1))]
}
