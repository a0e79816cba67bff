package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coredns-mcs/coredns-mcs/test/controlplane"
	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
)

// TestScaleSmall runs the scale section of make bench at its smoke size
// (-scale-size small) against a real API server: the ClusterSet grows in
// its steps, coredns and stock CoreDNS start on it, the API server restarts
// under them, and the section renders. It checks that the harness works and
// that no lookup got a wrong answer while the API server was away; it times
// nothing (make bench does, at full size).
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
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
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
	var out strings.Builder
	b.res.writeScale(func(format string, args ...any) { fmt.Fprintf(&out, format, args...) })
	for _, want := range []string{"## Scale", "### Relist spike", "| 1000 | 20 | 2000 ", "### The API server's side"} {
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
