package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"
	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
)

// TestScaleSmall runs the scale section of make bench at its smoke size
// (-scale-size small) against a real API server: the ClusterSet grows in
// its steps, coredns and stock CoreDNS start on it, the API server restarts
// under them, their watches expire (410 Gone) while it stays up (at this
// size the API server serves watches from etcd, which the benchmark
// compacts: no wait for the watch cache's event freshness), and the
// section renders. It checks that the harness works, that no lookup got a
// wrong answer while the API server was away or the watches were down, that
// no changed answer went back, and that our coredns saw its ServiceImport
// watch expire; it times nothing (make bench does, at full size).
func TestScaleSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	if _, err := controlplane.Assets(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("kube-apiserver and etcd are required in CI: %v", err)
		}
		t.Skipf("needs kube-apiserver and etcd (make testbin): %v", err)
	}
	dir := t.TempDir()
	coredns, err := harness.CoreDNSBinary(dir)
	if err != nil {
		t.Fatal(err)
	}
	stock, err := harness.GoBuild(filepath.Join(dir, "coredns-stock"), "github.com/coredns/coredns")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	b := &bench{cfg: config{coredns: coredns, stock: stock, scaleSize: "small", workers: 8}, res: &results{}, dir: dir}
	if err := b.scaleRun(ctx); err != nil {
		t.Fatal(err)
	}
	s := b.res.scale
	if len(s.steps) != 4 || len(s.spike) != 3 || len(s.answers) != 4 || len(s.replicas) != 2 {
		t.Fatalf("%d steps, %d servers through the restart, %d big answers, %d replica counts; want 4, 3, 4, 2", len(s.steps), len(s.spike), len(s.answers), len(s.replicas))
	}
	if r := s.replicas[1]; r.watches <= r.watchesBefore || r.apiRSS == 0 {
		t.Errorf("3 replicas: WATCH requests %d -> %d, kube-apiserver VmRSS %d", r.watchesBefore, r.watches, r.apiRSS)
	}
	for _, st := range s.steps {
		if st.heap == 0 || st.rss == 0 || st.aloneHeap == 0 || st.stockHeap == 0 || st.lookups["clusterset"].p50 == 0 || st.lookups["local"].p50 == 0 {
			t.Errorf("step %+v measured nothing", st)
		}
	}
	if s.spikeQueries == 0 || s.spikeFailures != 0 {
		t.Errorf("during the API server's restart: %d lookups, %d wrong (first: %s)", s.spikeQueries, s.spikeFailures, s.spikeFirstFail)
	}
	if ch := s.churn; ch == nil || len(ch.windows) == 0 {
		t.Fatalf("churn: %+v, measured nothing", ch)
	} else if w := ch.windows[0]; w.updates == 0 || len(w.propagation) == 0 || w.idleN == 0 || w.churnN == 0 || w.churn["local"].p99 == 0 || w.churn["clusterset"].p99 == 0 {
		t.Errorf("churn window measured nothing: %d updates (%d errors, first %q), %d propagation probes, %d idle and %d churn lookups",
			w.updates, w.errors, w.firstErr, len(w.propagation), w.idleN, w.churnN)
	} else if w.serialSamples == 0 || w.serialAhead > 1 || w.serials > int(w.took.Seconds())+2 {
		// Coalesced: at most one serial a second, never ahead of the clock.
		t.Errorf("SOA serial: %d distinct in %d samples over %s of %d updates, at most %d s ahead of the clock", w.serials, w.serialSamples, w.took, w.updates, w.serialAhead)
	}
	if n := len(s.churn.windows); n != 2 || s.churn.windows[1].server != "without multicluster" || s.churn.windows[1].churn["local"].p99 == 0 {
		t.Errorf("churn: %d windows, want ours and the control's", n)
	}
	e := s.expiry
	if e == nil || len(e.rows) != 2 || len(e.rounds) != 1 {
		t.Fatalf("watch expiry: %+v; want 2 servers, 1 round", e)
	}
	if e.queries == 0 || e.failures != 0 || e.backwards != 0 {
		t.Errorf("while the watches expired: %d lookups, %d wrong, %d gone back (first: %s)", e.queries, e.failures, e.backwards, e.firstFail)
	}
	if r := e.rounds[0]; r.compactions == 0 {
		t.Errorf("the watches expired without a compaction of etcd: writes %v", r.writes)
	}
	if n := e.rounds[0].oursExpired["ServiceImport"]; n == 0 {
		t.Errorf("our coredns logged no expired ServiceImport watch: %v", e.rounds[0].oursExpired)
	}
	var out strings.Builder
	b.res.writeScale(func(format string, args ...any) { fmt.Fprintf(&out, format, args...) })
	for _, want := range []string{"## Scale", "### Relist spike", "| 1000 | 20 | 2000 ", "### The API server's side", "### Churn at scale", "stock CoreDNS, watches expired", "data going backwards): 0", "`--watch-cache=false`", "VmRSS is read every 100ms"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the section lacks %q:\n%s", want, out.String())
		}
	}
	t.Log(out.String())
}

func TestSpliceSection(t *testing.T) {
	doc := "# B\n\n## Memory\n\nm\n\n## Load average by phase\n\nl\n"
	once := spliceSection(doc, "## Scale\n\nfirst\n\n")
	if want := "# B\n\n## Memory\n\nm\n\n## Scale\n\nfirst\n\n## Load average by phase\n\nl\n"; once != want {
		t.Errorf("added:\n%s\nwant\n%s", once, want)
	}
	if twice := spliceSection(once, "## Scale\n\nsecond\n\n"); twice != strings.Replace(once, "first", "second", 1) {
		t.Errorf("replaced:\n%s", twice)
	}
}

func TestSpliceSubsection(t *testing.T) {
	doc := "# B\n\n## Scale\n\ns\n\n### Relist spike\n\nr\n\n## Load average by phase\n\nl\n"
	once := spliceSubsection(doc, "Churn at scale", "### Churn at scale\n\nfirst\n\n")
	if want := "# B\n\n## Scale\n\ns\n\n### Churn at scale\n\nfirst\n\n### Relist spike\n\nr\n\n## Load average by phase\n\nl\n"; once != want {
		t.Errorf("added:\n%s\nwant\n%s", once, want)
	}
	if twice := spliceSubsection(once, "Churn at scale", "### Churn at scale\n\nsecond\n\n"); twice != strings.Replace(once, "first", "second", 1) {
		t.Errorf("replaced:\n%s", twice)
	}
	last := "# B\n\n## Scale\n\ns\n\n### Churn at scale\n\nfirst\n"
	if got := spliceSubsection(last, "Churn at scale", "### Churn at scale\n\nsecond\n"); got != strings.Replace(last, "first", "second", 1) {
		t.Errorf("replaced at the end:\n%s", got)
	}
}

func TestCoprimeStride(t *testing.T) {
	for _, n := range []int{1, 2, 7, 50, 100, 2500, 25000} {
		s := coprimeStride(n)
		seen := make([]bool, n)
		for i := range n {
			seen[(i*s)%n] = true
		}
		for i, ok := range seen {
			if !ok {
				t.Fatalf("n=%d stride %d misses %d", n, s, i)
			}
		}
	}
}

func TestWriteSerialTick(t *testing.T) {
	g := &goBench{lines: []string{
		"BenchmarkSerialTick/coalesced/handed=every-100-2         	296734568	         4.159 ns/op",
		"BenchmarkSerialTick/per-change/handed=every-100-2        	14135378	        86.52 ns/op",
	}}
	var out strings.Builder
	(&results{}).writeSerialTick(func(format string, args ...any) { fmt.Fprintf(&out, format, args...) }, g)
	if want := "| handed out every 100 changes | 4.2 ns | 86.5 ns |\n"; !strings.Contains(out.String(), want) || strings.Contains(out.String(), "never") {
		t.Errorf("rendered:\n%s\nwant the row %q alone", out.String(), want)
	}
}
