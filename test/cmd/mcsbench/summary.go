package main

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The report opens with a summary of the headline figures of its sections.
// It is made from the sections' own text, not from a run's results, so that
// it is the same whichever run wrote a section: -scale-only, -hostile-only
// and -scale-churn-only replace one section of an earlier report, and the
// summary is made again from the report they leave. A test holds the
// committed BENCHMARKS.md to it (withSummary of the file is the file).

// throughputTargets are the least QPS ratios B/A the throughput comparisons
// must reach, by title; a comparison not named has none.
var throughputTargets = map[string]float64{
	"Toll: cluster.local A of local Services":                                                         0.97,
	"clusterset.local A (multicluster) vs cluster.local A (kubernetes), same server":                  1.0,
	"clusterset.local A: multicluster vs the kubernetes plugin's multicluster option (stock CoreDNS)": 1.3,
	"clusterset.local A: multicluster vs a template plugin (the floor)":                               0.9,
}

// summaryRow is one line of the summary table.
type summaryRow struct{ measurement, result, target string }

// withSummary returns doc with its "## Summary" section made again from
// its other sections, before the first section after the title.
func withSummary(doc string) string {
	if i := strings.Index(doc, "\n## Summary\n"); i >= 0 {
		rest := doc[i+1+len("## Summary\n"):]
		if j := strings.Index(rest, "\n## "); j >= 0 {
			doc = doc[:i+1] + rest[j+1:]
		} else {
			doc = doc[:i+1]
		}
	}
	s := summary(summaryRows(doc))
	if i := strings.Index(doc, "\n## "); i >= 0 {
		return doc[:i+1] + s + doc[i+1:]
	}
	return doc + s
}

func summary(rows []summaryRow) string {
	var b strings.Builder
	b.WriteString("## Summary\n\n")
	b.WriteString("The headline figures of the sections below, taken from them (a section replaced by a run of its own, as Scale and Hostile objects may be, is that run's): ")
	b.WriteString("throughput ratios are B/A, B the server or plugin named first.\n\n")
	b.WriteString("| measurement | result | target |\n|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.measurement, r.result, r.target)
	}
	b.WriteString("\n")
	return b.String()
}

// summaryRows reads the headline figures of doc's sections; a section
// that is missing, or whose figures are not there, gives no row.
func summaryRows(doc string) []summaryRow {
	var rows []summaryRow
	for _, f := range []func(string) []summaryRow{
		throughputRows, goBenchRows, hopRows, outageRows, propagationRows, memoryRows,
		scaleRows, scaleChurnRows, relistRows, replicaRows, churnRows, hostileRows,
	} {
		rows = append(rows, f(doc)...)
	}
	return rows
}

// section returns the text under heading ("## X" or "### X") up to the
// next heading of its level or above.
func section(doc, heading string) string {
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		return ""
	}
	rest := doc[i+2+len(heading):]
	ends := []string{"\n## "}
	if strings.HasPrefix(heading, "### ") {
		ends = append(ends, "\n### ")
	}
	end := len(rest)
	for _, e := range ends {
		if j := strings.Index(rest, e); j >= 0 {
			end = min(end, j)
		}
	}
	return rest[:end]
}

// table returns the cells of the rows of the first table in text whose
// header row starts with header, keyed by the header's cells.
func table(text, header string) []map[string]string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, header) || i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "|---") {
			continue
		}
		names := cells(l)
		var rows []map[string]string
		for _, r := range lines[i+2:] {
			if !strings.HasPrefix(r, "|") {
				break
			}
			row := map[string]string{}
			for k, c := range cells(r) {
				if k < len(names) {
					row[names[k]] = c
				}
			}
			rows = append(rows, row)
		}
		return rows
	}
	return nil
}

func cells(line string) []string {
	parts := strings.Split(strings.Trim(line, "|"), "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// parseDur reads a duration as the report prints it: "4.01 ms", "206µs",
// "1m58s".
func parseDur(s string) (time.Duration, bool) {
	s = strings.ReplaceAll(strings.TrimSpace(s), " ", "")
	d, err := time.ParseDuration(s)
	return d, err == nil
}

func parseNum(s string) (float64, bool) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return v, err == nil
}

func medianOf(vs []float64) float64 { return median(slices.Clone(vs)) }

var sumRowRE = regexp.MustCompile(`\*\*([0-9.]+)\*\* \(sums\) / \*\*([0-9.]+)\*\* \(median ratio\) \| [^|]+ \| .*B/A ([0-9.]+) \|`)
var abLabelRE = regexp.MustCompile(`^[AB]: (.+), QPS$`)

func throughputRows(doc string) []summaryRow {
	sec := section(doc, "## Throughput")
	var rows []summaryRow
	for _, part := range strings.Split(sec, "\n### ")[1:] {
		title, body, _ := strings.Cut(part, "\n")
		m := sumRowRE.FindStringSubmatch(body)
		hdr := ""
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, "| round |") {
				hdr = l
				break
			}
		}
		h := cells(hdr)
		if m == nil || len(h) < 3 {
			continue
		}
		a, b := abLabelRE.FindStringSubmatch(h[1]), abLabelRE.FindStringSubmatch(h[2])
		if a == nil || b == nil {
			continue
		}
		t := "(for information)"
		if target, ok := throughputTargets[title]; ok {
			s, _ := parseNum(m[1])
			md, _ := parseNum(m[2])
			t = fmt.Sprintf(">= %.2f: %s", target, verdict(min(s, md), target))
		}
		rows = append(rows, summaryRow{
			fmt.Sprintf("%s: QPS %s / %s", title, b[1], a[1]),
			fmt.Sprintf("%s (ratio of sums), %s (median of round ratios); CPU time per query B/A %s", m[1], m[2], m[3]), t})
	}
	return rows
}

var passThroughRE = regexp.MustCompile(`\| BenchmarkPassThroughLocalService \| ([0-9.]+) \| BenchmarkController \| ([0-9.]+) \|`)
var passThroughAllocsRE = regexp.MustCompile(`(?m)^BenchmarkPassThroughLocalService\S*\s.* ([0-9]+) allocs/op`)

func goBenchRows(doc string) []summaryRow {
	sec := section(doc, "## Go benchmarks")
	m := passThroughRE.FindStringSubmatch(sec)
	if m == nil {
		return nil
	}
	allocs := "no allocation"
	for _, a := range passThroughAllocsRE.FindAllStringSubmatch(sec, -1) {
		if a[1] != "0" {
			allocs = a[1] + " allocations"
		}
	}
	return []summaryRow{{
		"Toll in Go: *multicluster* passing a local Service's query on (BenchmarkPassThroughLocalService), median; a whole ServeDNS of the kubernetes plugin (BenchmarkController)",
		fmt.Sprintf("%s ns, %s; %s ns", m[1], allocs, m[2]), "(for information)"}}
}

var (
	hopTargetRE = regexp.MustCompile(`Target: p99 through the forward within 1\.5x the swap's: ([0-9.]+)x, ([^.]+)\.`)
	hopP50RE    = regexp.MustCompile(`the p50 is ([0-9.]+)x the swap's \((\S+) against (\S+)\)`)
	hopQPSRE    = regexp.MustCompile(`Median QPS ratio B/A: ([0-9.]+)\.`)
	hopMissRE   = regexp.MustCompile(`Requests the standalone server got: ([0-9]+) during the first lookups .*?, ([0-9]+) during the second: target, misses answered from the upstream's cache after the first time: ([^.]+)\.`)
)

func hopRows(doc string) []summaryRow {
	sec := section(doc, "## The extra hop of the standalone install")
	lat := table(sec, "| | p50 | p99 |")
	m := hopTargetRE.FindStringSubmatch(sec)
	var rows []summaryRow
	if len(lat) == 2 && m != nil {
		rows = append(rows, summaryRow{
			"The extra hop: import-only cluster.local names through stock CoreDNS and the forward to coredns-mcs standalone vs coredns-mcs swapped in, p99 latency",
			fmt.Sprintf("%s vs %s (%sx)", lat[1]["p99"], lat[0]["p99"], m[1]), "<= 1.5x: " + m[2]})
	}
	if m := hopP50RE.FindStringSubmatch(sec); m != nil {
		rows = append(rows, summaryRow{"The extra hop: p50 latency, through the forward vs swapped in", fmt.Sprintf("%s vs %s (%sx)", m[2], m[3], m[1]), "(for information)"})
	}
	if m := hopQPSRE.FindStringSubmatch(sec); m != nil {
		rows = append(rows, summaryRow{"The extra hop: QPS through the forward / swap", m[1] + " (median of round ratios)", "(for information)"})
	}
	if m := hopMissRE.FindStringSubmatch(sec); m != nil {
		rows = append(rows, summaryRow{"The extra hop: search-path misses asked of the standalone server the second time", fmt.Sprintf("%s (first time %s)", m[2], m[1]), "0: " + m[3]})
	}
	return rows
}

var outageRE = regexp.MustCompile(`Failures in all: ([0-9]+) \(target 0: ([^)]+)\)\. Largest p99 an external lookup adds while the standalone server is hung or down: ([0-9.]+ ms) \(target <= 50 ms: ([^)]+)\)`)

func outageRows(doc string) []summaryRow {
	m := outageRE.FindStringSubmatch(section(doc, "## The standalone server away"))
	if m == nil {
		return nil
	}
	return []summaryRow{{
		"The standalone server hung, killed and restarted behind stock CoreDNS: failed lookups; most p99 an external lookup gains while it is hung or down",
		m[1] + "; " + m[3], "0: " + m[2] + "; <= 50 ms: " + m[4]}}
}

func propagationRows(doc string) []summaryRow {
	for _, r := range table(section(doc, "## Propagation"), "| write |") {
		if r["write"] != "**all**" {
			continue
		}
		p99, ok := parseDur(r["p99"])
		if !ok {
			return nil
		}
		return []summaryRow{{
			fmt.Sprintf("Propagation, API write to changed answer, %s writes", r["count"]),
			fmt.Sprintf("p50 %s, p99 %s", r["p50"], r["p99"]),
			"p99 < 200 ms: " + verdict(float64(propagationTarget), float64(p99))}}
	}
	return nil
}

func memoryRows(doc string) []summaryRow {
	sec := section(doc, "## Memory and start-up")
	type key struct {
		size   int
		server string
	}
	var sizes []int
	rss, heap, startup := map[key][]float64{}, map[key][]float64{}, map[key][]float64{}
	for _, r := range table(sec, "| Services + imports |") {
		n, _, _ := strings.Cut(r["Services + imports"], " ")
		size, err := strconv.Atoi(n)
		v, ok1 := parseNum(r["VmRSS (MiB)"])
		h, ok2 := parseNum(r["live heap (MiB)"])
		d, ok3 := parseDur(r["start-up"])
		if err != nil || !ok1 || !ok2 || !ok3 {
			continue
		}
		if !slices.Contains(sizes, size) {
			sizes = append(sizes, size)
		}
		k := key{size, r["server"]}
		rss[k], heap[k], startup[k] = append(rss[k], v), append(heap[k], h), append(startup[k], float64(d))
	}
	var rows []summaryRow
	if len(sizes) > 0 {
		big := slices.Max(sizes)
		if su := startup[key{big, serverName(true)}]; len(su) > 0 {
			t := fmt.Sprintf("< 30 s with %d imports: this run has fewer", startupTargetImports)
			if big >= startupTargetImports {
				t = "< 30 s: " + verdict(float64(startupTarget), medianOf(su))
			}
			rows = append(rows, summaryRow{fmt.Sprintf("Start-up to /ready with %d Services and %d ServiceImports", big, big),
				fmt.Sprintf("%s (median of %d)", ms(time.Duration(medianOf(su))), len(su)), t})
		}
	}
	for _, with := range []bool{false, true} {
		var parts []string
		for _, size := range sizes {
			k := key{size, serverName(with)}
			if len(rss[k]) > 0 {
				parts = append(parts, fmt.Sprintf("%d: %.1f MiB (live heap %.1f MiB)", size, medianOf(rss[k]), medianOf(heap[k])))
			}
		}
		if len(parts) > 0 {
			rows = append(rows, summaryRow{fmt.Sprintf("VmRSS after a GC, %s, by number of Services + ServiceImports", serverName(with)), strings.Join(parts, "; "), ""})
		}
	}
	for _, r := range table(sec, "| size |") {
		k := strings.Split(r["kubernetes only: per 1000 Services"], " / ")
		m := strings.Split(r["multicluster's extra per 1000 imports"], " / ")
		if len(k) != 2 || len(m) != 2 {
			continue
		}
		kh, ok1 := parseNum(strings.TrimSuffix(k[1], " KiB"))
		mh, ok2 := parseNum(strings.TrimSuffix(m[1], " KiB"))
		if !ok1 || !ok2 {
			continue
		}
		rows = append(rows, summaryRow{
			fmt.Sprintf("Cost per 1000 objects, 0 to %s: kubernetes plugin per 1000 Services; multicluster's extra per 1000 ServiceImports (VmRSS / live heap)", r["size"]),
			fmt.Sprintf("%s / %s; %s / %s", k[0], k[1], m[0], m[1]),
			"live heap per 1000 imports <= per 1000 Services: " + verdict(kh, mh)})
	}
	return rows
}

var cellTargetRE = regexp.MustCompile(`^(.+) \(target (.+): (.+)\)$`)

func scaleRows(doc string) []summaryRow {
	rows := table(section(doc, "## Scale"), "| imports | headless |")
	if len(rows) == 0 {
		return nil
	}
	var out []summaryRow
	// collect gives a row of the values of one column, with the steps
	// that have one and their targets.
	collect := func(measurement, col, step string, stepOf func(map[string]string) string) {
		var vals, steps, verdicts []string
		target := ""
		for _, r := range rows {
			c := r[col]
			if c == "" {
				continue
			}
			if m := cellTargetRE.FindStringSubmatch(c); m != nil {
				c, target = m[1], "<= "+m[2]
				verdicts = append(verdicts, m[3])
			}
			vals, steps = append(vals, c), append(steps, stepOf(r))
		}
		if len(vals) == 0 {
			return
		}
		t := "(for information)"
		if target != "" {
			t = target + ": " + strings.Join(verdicts, "; ")
		}
		out = append(out, summaryRow{fmt.Sprintf("%s, %s %s", measurement, step, strings.Join(steps, "; ")), strings.Join(vals, "; "), t})
	}
	imports := func(r map[string]string) string { return r["imports"] }
	endpoints := func(r map[string]string) string { e, _, _ := strings.Cut(r["endpoints (slices)"], " "); return e }
	collect("Scale: live heap per new ClusterSetIP import, the whole server as deployed", "heap per new import (as deployed)", "at imports", imports)
	collect("Scale: live heap per new endpoint of headless imports, *multicluster* alone (the first step's figure counts the headless imports too)", "heap per new endpoint (multicluster alone)", "at endpoints", endpoints)
	collect("Scale: the same, stock CoreDNS's kubernetes plugin caching the same EndpointSlices", "heap per new endpoint (stock CoreDNS)", "at endpoints", endpoints)
	last := rows[len(rows)-1]
	out = append(out, summaryRow{
		fmt.Sprintf("Scale, the largest step (%s imports, %s headless, %s endpoints): VmRSS; live heap; ready after", last["imports"], last["headless"], endpoints(last)),
		fmt.Sprintf("%s MiB; %s MiB; %s", last["VmRSS (MiB)"], last["live heap (MiB)"], last["ready after"]), "(for information)"})
	return out
}

func scaleChurnRows(doc string) []summaryRow {
	sec := section(doc, "### Churn at scale")
	rows := table(sec, "| server | asked / s |")
	var acked, prop, ratio, cpu, control []string
	var propOK, ratioOK []string
	var apiCPU []float64
	var asked, ack float64
	for _, r := range rows {
		if d, ok := parseDur(r["kube-apiserver + etcd CPU per update"]); ok {
			apiCPU = append(apiCPU, float64(d))
		}
		rate := r["acknowledged / s"] + "/s"
		// "1.02 / 1.03; 0.96 / 1.16": pooled; median of rounds.
		_, rounds, _ := strings.Cut(r["p99 ratio local / clusterset (pooled; median of rounds)"], "; ")
		if r["server"] != "coredns-mcs" {
			local, _, _ := strings.Cut(rounds, " / ")
			control = append(control, rate+": "+local)
			continue
		}
		acked = append(acked, fmt.Sprintf("%s of %s", r["acknowledged / s"], r["asked / s"]))
		if a, ok := parseNum(r["asked / s"]); ok && a >= asked {
			asked = a
			ack, _ = parseNum(r["acknowledged / s"])
		}
		p := strings.Split(r["propagation p50 / p99 / max (probes)"], " / ")
		if len(p) >= 2 {
			prop = append(prop, rate+": "+p[1])
			d, _ := parseDur(p[1])
			propOK = append(propOK, verdict(float64(propagationTarget), float64(d)))
		}
		ratio = append(ratio, rate+": "+rounds)
		worst := 0.0
		for _, x := range strings.Split(rounds, " / ") {
			v, _ := parseNum(x)
			worst = max(worst, v)
		}
		ratioOK = append(ratioOK, verdict(1.10, worst))
		c, _, _ := strings.Cut(r["coredns CPU per 1,000 updates (net)"], " (")
		if _, net, ok := strings.Cut(r["coredns CPU per 1,000 updates (net)"], "("); ok {
			c = strings.TrimSuffix(net, ")")
		}
		cpu = append(cpu, rate+": "+c)
	}
	if len(acked) == 0 {
		return nil
	}
	out := []summaryRow{
		{"Churn at scale: EndpointSlice updates/s the API server acknowledged, of those asked (coredns-mcs's rounds)", strings.Join(acked, "; "), fmt.Sprintf("%.0f/s sustained: %s", asked, verdict(ack, asked))},
		{"Churn at scale: propagation p99, by rate acknowledged", strings.Join(prop, "; "), "<= 200 ms: " + strings.Join(propOK, "; ")},
		{"Churn at scale: lookup p99 during churn over idle, cluster.local / clusterset.local, median of rounds, by rate", strings.Join(ratio, "; "), "<= 1.10: " + strings.Join(ratioOK, "; ")},
		{"Churn at scale: the same, cluster.local, the control without *multicluster* (stock CoreDNS's Corefile)", strings.Join(control, "; "), "(for information)"},
		{"Churn at scale: coredns CPU per 1,000 slice updates, net of the queries it answered, by rate", strings.Join(cpu, "; "), "(for information)"},
	}
	if len(apiCPU) > 0 {
		out = append(out, summaryRow{"Churn at scale: kube-apiserver and etcd CPU per update acknowledged, both servers' rounds",
			fmt.Sprintf("%s to %s", us(time.Duration(slices.Min(apiCPU))), us(time.Duration(slices.Max(apiCPU)))), "(for information)"})
	}
	return out
}

var relistLookupsRE = regexp.MustCompile(`Lookups during the restarts: ([0-9]+); SERVFAIL, NXDOMAIN or a wrong address: ([0-9]+); no reply within 500 ms: ([0-9]+)\.`)

func relistRows(doc string) []summaryRow {
	sec := section(doc, "### Relist spike")
	var order []string
	vals, targets := map[string][]string{}, map[string][]string{}
	for _, r := range table(sec, "| server | objects |") {
		base := strings.Replace(r["server"], ", watches expired", "", 1)
		if _, ok := vals[base]; !ok {
			order = append(order, base)
		}
		vals[base] = append(vals[base], fmt.Sprintf("%s MiB (%s)", r["peak VmRSS (MiB)"], r["peak / steady"]))
		targets[base] = append(targets[base], r["target"])
	}
	var out []summaryRow
	for _, s := range order {
		out = append(out, summaryRow{"Relist spike, " + s + ": peak VmRSS (over steady), API server restarted; watches expired",
			strings.Join(vals[s], "; "), strings.Join(targets[s], "; ")})
	}
	if m := relistLookupsRE.FindStringSubmatch(sec); m != nil {
		out = append(out, summaryRow{"Relist spike: lookups during the restarts that failed, answered wrong or not at all", fmt.Sprintf("%s and %s of %s", m[2], m[3], m[1]), "(for information)"})
	}
	return out
}

func replicaRows(doc string) []summaryRow {
	// Three columns are named "per replica": read the rows by position.
	var parts []string
	for _, l := range strings.Split(section(doc, "### The API server's side"), "\n") {
		c := cells(l)
		if !strings.HasPrefix(l, "| ") || len(c) != 8 {
			continue
		}
		if _, err := strconv.Atoi(c[0]); err != nil {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: %s, %s, %s", c[0], c[2], c[4], c[6]))
	}
	if len(parts) == 0 {
		return nil
	}
	return []summaryRow{{"The API server's side: kube-apiserver VmRSS, CPU until ready and WATCH requests per coredns replica, by replicas started at once", strings.Join(parts, "; "), "(for information)"}}
}

var lookupChurnRE = regexp.MustCompile(`Targets: p99 and p99\.9 under churn within 10% of those without \(ratios ([0-9.]+) and ([0-9.]+): ([^,]+), ([^)]+)\); no lookup over 1ms \(max ([^:]+): ([^)]+)\)`)

func churnRows(doc string) []summaryRow {
	sec := section(doc, "## Churn")
	var out []summaryRow
	var parts []string
	for _, r := range table(sec, "| endpoints in the import |") {
		parts = append(parts, r["endpoints in the import"]+": "+r["per event"])
	}
	if len(parts) > 0 {
		out = append(out, summaryRow{"One EndpointSlice event of a headless import, from converted slice to published answers (BenchmarkSliceUpdate), by endpoints in the import",
			strings.Join(parts, "; "), "(for information)"})
	}
	if m := lookupChurnRE.FindStringSubmatch(sec); m != nil {
		out = append(out, summaryRow{"Lookups beside a rolling update of a 10k-endpoint import (BenchmarkLookupDuringChurn): p99 and p99.9 over those without; slowest lookup",
			fmt.Sprintf("%s and %s; %s", m[1], m[2], m[5]), fmt.Sprintf("<= 1.10: %s, %s; < 1ms: %s", m[3], m[4], m[6])})
	}
	return out
}

var hostileRE = regexp.MustCompile(`The worst query of this tree: (.+?) \(targets (.+?): ([^)]+)\); the worst event: (.+?) \(target (.+?): ([^)]+)\)`)

func hostileRows(doc string) []summaryRow {
	m := hostileRE.FindStringSubmatch(section(doc, "## Hostile objects"))
	if m == nil {
		return nil
	}
	return []summaryRow{{"Hostile objects at the API server's limits (docs/trust.md): the worst query (time, allocated); the worst event",
		m[1] + "; " + m[4], fmt.Sprintf("%s: %s; %s: %s", m[2], m[3], m[5], m[6])}}
}
