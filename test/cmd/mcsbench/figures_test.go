package main

// The documents quote what BENCHMARKS.md measures and the Go release make
// builds with; these tests hold each quote to its source, so that neither
// can change without the other.

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var updateSummary = flag.Bool("update-summary", false, "write BENCHMARKS.md's summary again from its sections")

func repoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestBenchmarksSummary: BENCHMARKS.md opens with the summary its sections
// give (withSummary, as mcsbench writes it), with a row for each section
// the full run measures, so that a summary that cannot be read from them
// does not pass as an empty one. After a hand edit of a section:
// go test ./test/cmd/mcsbench/ -run TestBenchmarksSummary -update-summary.
func TestBenchmarksSummary(t *testing.T) {
	doc := repoFile(t, "BENCHMARKS.md")
	want := withSummary(doc)
	if *updateSummary {
		if err := os.WriteFile(filepath.Join("..", "..", "..", "BENCHMARKS.md"), []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		doc = want
	}
	if doc != want {
		t.Errorf("BENCHMARKS.md's summary is not what its sections give (-update-summary writes it):\n%s", section(want, "## Summary"))
	}
	if i, j := strings.Index(doc, "\n## Summary\n"), strings.Index(doc, "\n## "); i != j {
		t.Errorf("the summary is not BENCHMARKS.md's first section")
	}
	var got []string
	for _, r := range summaryRows(doc) {
		got = append(got, r.measurement)
	}
	for _, prefix := range []string{
		"Toll: cluster.local A of local Services: ", "clusterset.local A: multicluster vs the kubernetes plugin's multicluster option",
		"Toll in Go:", "The extra hop: import-only", "The standalone server hung", "Propagation,", "Start-up to /ready",
		"Cost per 1000 objects", "Scale: live heap per new ClusterSetIP import", "Scale: live heap per new endpoint",
		"Scale, the largest step", "Churn at scale: EndpointSlice updates/s", "Churn at scale: lookup p99",
		"Relist spike, coredns-mcs:", "The API server's side", "One EndpointSlice event", "Lookups beside a rolling update", "Hostile objects",
	} {
		if !slices.ContainsFunc(got, func(m string) bool { return strings.HasPrefix(m, prefix) }) {
			t.Errorf("the summary has no row %q...: its section is missing or no longer reads as summaryRows expects", prefix)
		}
	}
}

// quote is a figure a document states: source matches it in BENCHMARKS.md
// (or the Makefile, or go.mod), and say gives the words the document must
// use for what source captured.
type quote struct {
	source string
	say    func(m []string) string
}

// thousands writes 100000 as 100,000, as prose does.
func thousands(s string) string {
	if len(s) < 4 || strings.Trim(s, "0123456789") != "" {
		return s
	}
	var out []string
	for len(s) > 3 {
		out = append([]string{s[len(s)-3:]}, out...)
		s = s[:len(s)-3]
	}
	return strings.Join(append([]string{s}, out...), ",")
}

func words(s string) string { return strings.Join(strings.Fields(s), " ") }

// checkQuotes checks that text says each quote as its source gives it, and
// returns text without them.
func checkQuotes(t *testing.T, name, text, source string, quotes []quote) string {
	t.Helper()
	text = words(text)
	for _, q := range quotes {
		m := regexp.MustCompile(q.source).FindStringSubmatch(source)
		if m == nil {
			t.Errorf("%s: the source has no %q", name, q.source)
			continue
		}
		say := words(q.say(m))
		if !strings.Contains(text, say) {
			t.Errorf("%s does not say %q (from %q)", name, say, m[0])
			continue
		}
		text = strings.Replace(text, say, " ", 1)
	}
	return text
}

// figureRE is a figure left in prose once the quotes are taken out; p50,
// p99 and the like name percentiles, not figures.
var figureRE = regexp.MustCompile(`\b[0-9][0-9.,]*`)

func noFiguresLeft(t *testing.T, name, rest string) {
	t.Helper()
	rest = regexp.MustCompile(`\bp[0-9.]+\b`).ReplaceAllString(rest, "")
	if f := figureRE.FindAllString(rest, -1); len(f) > 0 {
		t.Errorf("%s states figures no test holds to BENCHMARKS.md: %q in\n%s", name, f, rest)
	}
}

// TestReadmePerformance: every figure of README's Performance section is
// BENCHMARKS.md's, quoted as its summary (or section) prints it.
func TestReadmePerformance(t *testing.T) {
	bench := repoFile(t, "BENCHMARKS.md")
	perf := section(repoFile(t, "README.md"), "## Performance")
	if perf == "" {
		t.Fatal("README.md has no Performance section")
	}
	rest := checkQuotes(t, "README.md, Performance", perf, bench, []quote{
		{`\| CPUs \(` + "`nproc`" + `\) \| ([0-9]+) \|`, func(m []string) string { return "on a " + m[1] + "-core machine" }},
		{`\| coredns \| \S+ \(CoreDNS-([0-9.]+)\) \|`, func(m []string) string { return "(CoreDNS " + m[1] }},
		{`\| Go \| go version (go[0-9.]+) `, func(m []string) string { return "built with " + m[1] }},
		{`\| Toll: cluster\.local A of local Services: QPS [^|]+\| ([0-9.]+) \(ratio of sums\)[^|]+\| >= ([0-9.]+): met \|`, func(m []string) string {
			return "the same QPS with the plugin as without (ratio " + m[1] + ", target " + strings.TrimRight(strings.TrimRight(m[2], "0"), ".") + ")"
		}},
		{`\| Toll in Go: [^|]+\| ([0-9.]+) ns, (no allocation);`, func(m []string) string { return "Passing a query on costs " + m[1] + " ns and " + m[2] }},
		{`\| clusterset\.local A \(multicluster\) vs cluster\.local A \(kubernetes\), same server: [^|]+\| ([0-9.]+) \(ratio of sums\)`, func(m []string) string {
			return m[1] + "x the QPS of the kubernetes plugin's cluster.local answers"
		}},
		{`\| clusterset\.local A: multicluster vs the kubernetes plugin's multicluster option [^|]+\| ([0-9.]+) \(ratio of sums\)`, func(m []string) string {
			return m[1] + "x stock CoreDNS's `multicluster` option"
		}},
		{`\| clusterset\.local A: multicluster vs a template plugin [^|]+\| ([0-9.]+) \(ratio of sums\)`, func(m []string) string { return m[1] + "x a *template* plugin" }},
		{`\| Cost per 1000 objects, 0 to ([0-9]+):[^|]+\| [0-9]+ KiB / ([0-9]+) KiB; [0-9]+ KiB / ([0-9]+) KiB \|[^\n]*\n\| Cost per 1000 objects, 0 to ([0-9]+):[^|]+\| [0-9]+ KiB / ([0-9]+) KiB; [0-9]+ KiB / ([0-9]+) KiB \|`, func(m []string) string {
			return m[3] + " and " + m[6] + " KiB of live heap per 1000 ServiceImports (from 0 to " + thousands(m[1]) + " and to " + thousands(m[4]) +
				" of each) in the Memory section's run, before the informers' stores became the plugin's own maps. The kubernetes plugin keeps " +
				m[2] + " and " + m[5] + " KiB per 1000 Services"
		}},
		{`\| Scale, the largest step \(([0-9]+) imports, ([0-9]+) headless, ([0-9]+) endpoints\)`, func(m []string) string {
			return thousands(m[1]) + " ClusterSetIP imports, " + thousands(m[2]) + " headless imports with " + thousands(m[3]) + " endpoints"
		}},
		{`come from up to ([0-9]+) source clusters`, func(m []string) string { return "from " + m[1] + " source clusters)" }},
		{`\| Scale: live heap per new ClusterSetIP import[^|]+\| ([0-9]+ B); ([0-9]+ B) \|`, func(m []string) string {
			return m[1] + " and " + m[2] + " of live heap per import for the whole server"
		}},
		{`\| Scale: live heap per new endpoint of headless imports[^|]+\| ([0-9]+ B); ([0-9]+ B) \|`, func(m []string) string {
			return m[2] + " per endpoint (" + m[1] + " with the headless imports themselves)"
		}},
		{`\| Scale, the largest step [^|]+\| ([0-9.]+ MiB);`, func(m []string) string { return "VmRSS " + m[1] + " at the largest step" }},
		{`\| Scale: the same, stock CoreDNS's [^|]+\| ([0-9]+ B); ([0-9]+ B) \|`, func(m []string) string {
			return "Stock CoreDNS's kubernetes plugin keeps " + m[1] + " and " + m[2] + " per endpoint"
		}},
		{`\| Propagation, API write to changed answer, [0-9]+ writes \| p50 ([0-9.]+ ms), p99 ([0-9.]+ ms) \|`, func(m []string) string {
			return "An API change reaches DNS in " + m[1] + " (p50) and " + m[2] + " (p99)"
		}},
		{`\| Start-up to /ready with ([0-9]+) Services and ([0-9]+) ServiceImports \| ([0-9]+ ms) \(median of ([0-9]+)\)`, func(m []string) string {
			return "Ready in " + m[3] + " (median of " + m[4] + ") with " + thousands(m[2]) + " imports and " + thousands(m[1]) + " Services"
		}},
		{`\| Churn at scale: EndpointSlice updates/s [^|]+\| .*; ([0-9]+) of ([0-9]+) \|`, func(m []string) string {
			return "acknowledged at most " + m[1] + " slice updates/s of the " + thousands(m[2]) + "/s asked"
		}},
		{`\| Churn at scale: kube-apiserver and etcd CPU per update [^|]+\| ([0-9]+)µs to ([0-9]+)µs \|`, func(m []string) string {
			return "(" + m[1] + " to " + m[2] + " µs of its and etcd's CPU per update)"
		}},
		{`\| Churn at scale: propagation p99, by rate acknowledged \| [^|]*?([0-9]+)/s: ([0-9.]+ ms); ([0-9]+)/s: ([0-9.]+ ms);`, func(m []string) string {
			return "Propagation p99 " + m[2] + " at " + m[1] + "/s and " + m[4] + " at " + m[3] + "/s"
		}},
		{`\| Churn at scale: lookup p99 during churn over idle, [^|]+\| ([0-9]+)/s: ([0-9.]+ / [0-9.]+); ([0-9]+)/s: ([0-9.]+ / [0-9.]+); ([0-9]+)/s: ([0-9.]+ / [0-9.]+) \|`, func(m []string) string {
			return m[2] + " at " + m[1] + "/s, " + m[4] + " at " + m[3] + "/s, " + m[6] + " at " + m[5] + "/s"
		}},
		{`\| Churn at scale: the same, cluster\.local, the control [^|]+\| [0-9]+/s: ([0-9.]+); [0-9]+/s: ([0-9.]+); [0-9]+/s: ([0-9.]+) \|`, func(m []string) string {
			return "cluster.local, " + m[1] + ", " + m[2] + " and " + m[3]
		}},
		{`\| Churn at scale: coredns CPU per 1,000 slice updates[^|]+\| [0-9]+/s: ([0-9]+)ms; [0-9]+/s: [0-9]+ms; [0-9]+/s: ([0-9]+)ms \|`, func(m []string) string {
			return "coredns spends " + m[2] + " to " + m[1] + " ms of CPU per 1,000 slice updates"
		}},
		{`\| One EndpointSlice event of a headless import[^|]+\| ([0-9]+): ([0-9.]+µs); [^|]*; ([0-9]+): ([0-9.]+µs) \|`, func(m []string) string {
			return "One EndpointSlice event of a headless import costs " + m[2] + " at " + thousands(m[1]) + " endpoints and " + m[4] + " at " + thousands(m[3])
		}},
		{`\| Hostile objects at the API server's limits [^|]+\| ([0-9.]+ ms) and ([0-9]+ KiB); ([0-9.]+ ms) \|`, func(m []string) string {
			return "at most " + m[1] + " and " + m[2] + " a query, " + m[3] + " an event"
		}},
		{`\| The extra hop: import-only [^|]+\| ([0-9]+)µs vs ([0-9]+)µs \(([0-9.]+)x\) \| <= ([0-9.]+)x: \*\*missed\*\* \|`, func(m []string) string {
			return "answers at p99 in " + m[3] + "x the swap's latency (" + m[1] + " µs against " + m[2] + " µs; target " + m[4] + "x, missed"
		}},
		{`\| The extra hop: p50 latency[^|]+\| ([0-9]+)µs vs ([0-9]+)µs \(([0-9.]+)x\) \|`, func(m []string) string {
			return "the p50 is " + m[3] + "x, " + m[1] + " against " + m[2] + " µs"
		}},
		{`\| The extra hop: search-path misses [^|]+\| ([0-9]+) \(first time [0-9]+\) \| 0: met \|`, func(m []string) string {
			return "after the first time (" + m[1] + " asked of the standalone server again)"
		}},
	})
	noFiguresLeft(t, "README.md, Performance", rest)

	// Ours below the control at every rate, as README says.
	rows := map[string]string{}
	for _, r := range summaryRows(bench) {
		rows[r.measurement] = r.result
	}
	var ours, control []float64
	for _, part := range strings.Split(rows["Churn at scale: lookup p99 during churn over idle, cluster.local / clusterset.local, median of rounds, by rate"], "; ") {
		_, v, _ := strings.Cut(part, ": ")
		for _, x := range strings.Split(v, " / ") {
			f, _ := parseNum(x)
			ours = append(ours, f)
		}
	}
	for _, part := range strings.Split(rows["Churn at scale: the same, cluster.local, the control without *multicluster* (stock CoreDNS's Corefile)"], "; ") {
		_, v, _ := strings.Cut(part, ": ")
		f, _ := parseNum(v)
		control = append(control, f)
	}
	if len(ours) != 2*len(control) || len(control) == 0 {
		t.Fatalf("churn at scale: %d ratios of ours, %d of the control", len(ours), len(control))
	}
	for i, c := range control {
		if ours[2*i] >= c || ours[2*i+1] >= c {
			t.Errorf("README says lookups during churn stay below the control's at every rate; at the rate %d ours read %v and %v, the control %v", i+1, ours[2*i], ours[2*i+1], c)
		}
	}
}

// TestDeployFigures: what docs/deploy.md quotes of BENCHMARKS.md's last
// run is the run's (its figures of earlier runs are history, not checked).
func TestDeployFigures(t *testing.T) {
	bench := repoFile(t, "BENCHMARKS.md")
	checkQuotes(t, "docs/deploy.md", repoFile(t, "docs/deploy.md"), bench, []quote{
		{`\| 10 \| ([0-9.]+) / ([0-9.]+) \| ([0-9.]+ MiB) \|[^\n]*\n\| 30 \| ([0-9.]+) / ([0-9.]+) \| ([0-9.]+ MiB) \|`, func(m []string) string {
			return "in the last run " + m[3] + " more per replica with 10 replicas and " + m[6] + " with 30 (" + m[1] + " to " + m[2] + " MiB and " + m[4] + " to " + m[5] + " MiB)"
		}},
		{`\| The API server's side: [^|]+\| [^|]*10: [^,]+, ([0-9]+ms), [^;]+; 30: [^,]+, ([0-9]+ms),`, func(m []string) string {
			return "kube-apiserver CPU: " + m[1] + " per replica (10) and " + m[2] + " per replica (30)"
		}},
		{`\| Scale: live heap per new endpoint of headless imports[^|]+\| ([0-9]+) B; ([0-9]+) B \|`, func(m []string) string {
			return "live heap, " + m[1] + " and " + m[2] + " B per endpoint"
		}},
		{`\| Scale: the same, stock CoreDNS's [^|]+\| ([0-9]+) B; ([0-9]+) B \|`, func(m []string) string {
			return "(stock CoreDNS kept " + m[1] + " to " + m[2] + " B of live heap per endpoint"
		}},
		{`\| Relist spike, coredns-mcs, GOMEMLIMIT ([0-9]+) MiB: [^|]+\| ([0-9.]+ MiB) \([^|]+; ([0-9.]+ MiB) \([^|]+\| [^|]*\(([0-9.]+) of it\); [^|]*\(([0-9.]+) of it\) \|`, func(m []string) string {
			return "GOMEMLIMIT " + m[1] + " MiB): the peak was " + m[2] + " after an API server restart and " + m[3] + " after the watches expired"
		}},
		{`\| Relist spike, coredns-mcs, GOMEMLIMIT [^|]+\| [^|]+\| [^|]*\(([0-9.]+) of it\); [^|]*\(([0-9.]+) of it\) \|`, func(m []string) string {
			return m[1] + " and " + m[2] + " of the limit"
		}},
	})
}

// TestGoVersionOfDocs: the Go release README says make builds with is the
// Makefile's GO_TOOLCHAIN and go.mod's toolchain line, and the oldest Go it
// says works is go.mod's go line.
func TestGoVersionOfDocs(t *testing.T) {
	mk := regexp.MustCompile(`(?m)^GO_TOOLCHAIN \?= go([0-9.]+)$`).FindStringSubmatch(repoFile(t, "Makefile"))
	gomod := repoFile(t, "go.mod")
	tc := regexp.MustCompile(`(?m)^toolchain go([0-9.]+)$`).FindStringSubmatch(gomod)
	goLine := regexp.MustCompile(`(?m)^go ([0-9]+\.[0-9]+)(\.[0-9]+)?$`).FindStringSubmatch(gomod)
	if mk == nil || tc == nil || goLine == nil {
		t.Fatalf("Makefile GO_TOOLCHAIN %q, go.mod toolchain %q, go %q", mk, tc, goLine)
	}
	if mk[1] != tc[1] {
		t.Errorf("the Makefile's GO_TOOLCHAIN is go%s, go.mod's toolchain line go%s", mk[1], tc[1])
	}
	readme := words(repoFile(t, "README.md"))
	for _, say := range []string{
		"with Go " + goLine[1] + " or newer",
		"make builds with Go " + mk[1] + ",",
		"`export GOTOOLCHAIN=go" + mk[1] + "`",
	} {
		if !strings.Contains(readme, say) {
			t.Errorf("README.md does not say %q", say)
		}
	}
	// Any other Go release README or docs/ name is the toolchain's, but
	// the benchmark's (README's Performance section, checked above) and
	// the releases docs/release.md names as the ones with vulnerabilities.
	older := strings.NewReplacer("go1.26.8 has 12 called ones, fixed in go1.26.9 and go1.26.10", "")
	docs, _ := filepath.Glob(filepath.Join("..", "..", "..", "docs", "*.md"))
	for _, d := range append(docs, filepath.Join("..", "..", "..", "README.md")) {
		b, err := os.ReadFile(d)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if strings.HasSuffix(d, "README.md") {
			text = strings.Replace(text, section(text, "## Performance"), "", 1)
		}
		for _, m := range regexp.MustCompile(`(?i)\bgo ?(1\.[0-9]+\.[0-9]+)`).FindAllStringSubmatch(older.Replace(words(text)), -1) {
			if m[1] != mk[1] {
				t.Errorf("%s names Go %s; make builds with go%s", filepath.Base(d), m[1], mk[1])
			}
		}
	}
}

// TestReadmeNamesEverySuite: README's Testing section names every package
// under test/ that holds tests (or a parent of it, as test/internal/...),
// and every other directory with tests (plugin/multicluster, internal/...,
// coredns/...), so that a suite is not added without a newcomer learning
// of it.
func TestReadmeNamesEverySuite(t *testing.T) {
	list := words(section(repoFile(t, "README.md"), "## Testing"))
	root := filepath.Join("..", "..", "..")
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "build" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), "_test.go") {
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			if !slices.Contains(dirs, filepath.ToSlash(rel)) {
				dirs = append(dirs, filepath.ToSlash(rel))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 10 {
		t.Fatalf("only %d directories with tests found: %q", len(dirs), dirs)
	}
	for _, d := range dirs {
		named := strings.Contains(list, "`"+d+"`") || strings.Contains(list, "`"+d+"/")
		for p := d; !named && strings.Contains(p, "/"); {
			p = p[:strings.LastIndex(p, "/")]
			named = strings.Contains(list, "`"+p+"/...`") || strings.Contains(list, "`./"+p+"/...`")
		}
		if !named && !strings.Contains(list, "`./"+d+"/...`") && !strings.Contains(list, "`"+d+"/...`") {
			t.Errorf("README.md's Testing section does not name %s (nor a parent as `%s/...`)", d, d)
		}
	}
}
