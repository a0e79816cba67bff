package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// results is everything a run measured.
type results struct {
	cfg               config
	hostile           *hostileResult
	args              []string
	extraFlags        []string
	started, finished time.Time
	failure           string
	machine           machine
	loads             []float64
	phases            []phaseLoad
	goBenches         []goBench
	comparisons       []*comparison
	profiles          []profileOut
	propagation       []propagation
	memory            []memRow
	creates           []createRate
	hop               *hopResults
	outage            *outageResults
	scale             *scaleResults
}

type phaseLoad struct {
	name string
	at   time.Time
	load float64
}

type profileOut struct{ title, top string }

type memRow struct {
	with      bool
	size      int // Services, and as many imports
	rss, heap uint64
	startup   time.Duration
}

type createRate struct {
	objects int
	took    time.Duration
}

// memFor returns the rows of one server kind and size.
func (r *results) memFor(with bool, size int) []memRow {
	var rows []memRow
	for _, m := range r.memory {
		if m.with == with && m.size == size {
			rows = append(rows, m)
		}
	}
	return rows
}

// medianMem is the median RSS, heap and start-up of rows.
func medianMem(rows []memRow) (rss, heap float64, startup time.Duration, ok bool) {
	if len(rows) == 0 {
		return 0, 0, 0, false
	}
	var rs, hs, ss []float64
	for _, m := range rows {
		rs = append(rs, float64(m.rss))
		hs = append(hs, float64(m.heap))
		ss = append(ss, float64(m.startup))
	}
	return median(rs), median(hs), time.Duration(median(ss)), true
}

func serverName(with bool) string {
	if with {
		return "multicluster + kubernetes"
	}
	return "kubernetes only"
}

// The targets that are not ratios.
const (
	propagationTarget    = 200 * time.Millisecond // p99, API write to changed answer
	startupTarget        = 30 * time.Second       // to /ready, with startupTargetImports
	startupTargetImports = 50000
)

// verdict says whether got reaches target (got >= target); pass the
// operands the other way round for an upper bound.
func verdict(got, target float64) string {
	if got >= target {
		return "met"
	}
	return "**missed**"
}

func (r *results) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	c := r.cfg

	p("# Benchmarks\n\n")
	p("Written by `make bench` (`test/cmd/mcsbench`); do not edit by hand, run it again.\n\n")
	if r.failure != "" {
		p("**This run failed and is incomplete:** %s\n\n", r.failure)
	}
	p("Run on %s, from %s to %s UTC (%s).\n\n", r.started.UTC().Format("2006-01-02"), r.started.UTC().Format("15:04:05"),
		r.finished.UTC().Format("15:04:05"), r.finished.Sub(r.started).Round(time.Second))

	p("## Machine\n\n| | |\n|---|---|\n")
	m := r.machine
	p("| CPUs (`nproc`) | %d |\n| CPU model | %s |\n| memory | %s |\n| kernel | %s |\n| Go | %s |\n", m.nproc, m.model, m.memory, m.kernel, m.goVersion)
	p("| coredns | %s |\n", m.coredns)
	if m.stock != "" {
		p("| stock CoreDNS (the peer with the kubernetes plugin's multicluster option) | %s |\n", m.stock)
	}
	p("| kube-apiserver | %s |\n| etcd | %s |\n| dnsperf | %s |\n", m.apiserver, m.etcd, m.dnsperf)
	if len(r.loads) > 0 {
		p("| 1-minute load average | %.2f at the start; during the run min %.2f, median %.2f, max %.2f (sampled every 5 s) |\n",
			r.loads[0], slices.Min(r.loads), median(r.loads), slices.Max(r.loads))
	}
	p("\n")

	p("## Reproduce\n\n```sh\n")
	p("make bench N=%d BENCH_BIG=%d BENCH_MID=%d", c.n, c.big, c.mid)
	if len(r.extraFlags) > 0 {
		p(" BENCH_FLAGS='%s'", strings.Join(r.extraFlags, " "))
	}
	p("\n")
	p("# which runs\n%s\n", strings.Join(quoteArgs(r.args), " "))
	p("```\n\n")
	p("`make bench` builds `build/coredns`, `build/coredns-stock` (stock CoreDNS, see Throughput) and `build/mcsbench`, and uses the kube-apiserver and etcd of `test/testbin/build.sh`. ")
	p("It needs `dnsperf` (`apt-get install -y dnsperf`) and `taskset`. Further flags go in `BENCH_FLAGS` (`build/mcsbench -h` lists them); ")
	p("`make bench N=100 BENCH_BIG=2000 BENCH_FLAGS='-rounds 2 -writes 30 -gobench=false'` is a quick check of the harness.\n\n")

	r.writeThroughput(p)
	r.writeHop(p)
	r.writeOutage(p)
	r.writeMemory(p)
	r.writePropagation(p)
	r.writeGoBench(p)
	if r.hostile != nil {
		r.hostile.write(p)
	}
	r.writeChurn(p)
	r.writeProfiles(p)
	r.writeScale(p)

	p("## Load average by phase\n\n| phase | started (UTC) | 1-minute load |\n|---|---|---|\n")
	for _, ph := range r.phases {
		p("| %s | %s | %.2f |\n", ph.name, ph.at.UTC().Format("15:04:05"), ph.load)
	}
	p("\n")
	return withSummary(b.String())
}

func (r *results) writeThroughput(p func(string, ...any)) {
	c := r.cfg
	p("## Throughput\n\n")
	p("%d Services in `%s` (no imports), %d ClusterSetIP ServiceImports in `%s` (no Services), and %d Services with an import of the same name each in `%s`. ",
		c.n, nsLocal, c.n, nsImports, c.n, nsShadow)
	p("Two servers of the same `build/coredns` run side by side, one with each Corefile below, with the peers described after them")
	if c.pin {
		p(", all pinned to CPU 0 with `taskset -c 0` (so GOMAXPROCS is 1); dnsperf runs on CPU 1 (`taskset -c 1`)")
	}
	p(". Each query file holds an A query for every name of a set, in a fixed shuffled order; dnsperf goes round it ")
	p("(`dnsperf -s 127.0.0.1 -p PORT -d FILE -l %d -t 2`, 1 client, up to 100 queries outstanding), and every answer must be NOERROR. ", int(c.round.Seconds()))
	p("Each comparison runs one unmeasured 2 s warm-up per side, then %d measured rounds of %s per side in the order A B, B A, A B, ..., ", c.rounds, c.round)
	p("so that drift of the shared machine weighs on both sides alike. Ratios are B/A. ")
	p("\"CPU µs/query\" is the server's user+system CPU time over the round (`/proc/PID/stat`, 10 ms ticks) divided by the queries it answered: ")
	p("on a shared machine QPS also measures how much CPU the server was given, CPU per query much less so.\n\n")
	p("The Corefiles (`{{.Port}}`, `{{.ReadyPort}}` and `{{.PprofPort}}` are free loopback ports picked at run time, `{{.Kubeconfig}}` the control plane's admin kubeconfig; ")
	p("*pprof* is not in the query path and serves the forced GCs and CPU profiles below). Without multicluster:\n\n```\n%s```\n\nWith multicluster:\n\n```\n%s```\n\n", corefileWithout, corefileWith)
	p("The clusterset.local answers are also measured against peers, on the same API server and query file; ")
	p("before any round, a sample of 50 names must get the same answer (rcode, AA bit, answer records with their TTLs) from each peer as from the server with multicluster.\n\n")
	if c.stock != "" {
		p("Stock CoreDNS answering clusterset.local with its kubernetes plugin's `multicluster` option (which reads ServiceImports of `multicluster.x-k8s.io/v1alpha1`, the same objects the API server also serves as v1beta1). ")
		p("The binary is CoreDNS v1.15.0's own main package (`github.com/coredns/coredns`, its own plugin.cfg), built by `make bench` from this module's graph with the flags of `make build` ")
		p("(`CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o build/coredns-stock github.com/coredns/coredns`), with the dependency versions this module selects ")
		p("(those CoreDNS v1.15.0 requires, or newer where this module requires newer). Its Corefile:\n\n```\n%s```\n\n", corefileUpstream)
	}
	p("The floor: the server without multicluster plus a stock *template* plugin answering each import's name with that import's address, computed from the number in its name (`var`, in CoreDNS's expression language). ")
	p("It reads nothing from the API server: per query it matches a regular expression, evaluates the variables, and parses the record from its text:\n\n```\n%s```\n\n", corefileTemplate)
	for _, cmp := range r.comparisons {
		p("### %s\n\n", cmp.title)
		p("| round | A: %s, QPS | B: %s, QPS | QPS B/A | A: CPU µs/query | B: CPU µs/query |\n|---|---|---|---|---|---|\n", cmp.a.label, cmp.b.label)
		for i := range min(len(cmp.qa), len(cmp.qb)) {
			p("| %d | %.0f | %.0f | %.3f | %.1f | %.1f |\n", i+1, cmp.qa[i], cmp.qb[i], cmp.qb[i]/cmp.qa[i], cmp.ca[i], cmp.cb[i])
		}
		p("| sum / median | %.0f / %.0f | %.0f / %.0f | **%.3f** (sums) / **%.3f** (median ratio) | %.1f (median) | %.1f (median): B/A %.3f |\n\n",
			sum(cmp.qa), median(cmp.qa), sum(cmp.qb), median(cmp.qb), cmp.sumRatio(), cmp.medianRatio(), median(cmp.ca), median(cmp.cb), cmp.cpuRatio())
	}
}

func (r *results) writeMemory(p func(string, ...any)) {
	c := r.cfg
	p("## Memory and start-up\n\n")
	p("Headless Services in `%s` (clusterIP None, no selector) and as many ClusterSetIP ServiceImports in `%s`. ", nsBigSvc, nsBigImp)
	p("The Services are headless because the API server cannot create tens of thousands of ClusterIP Services in reasonable time: ")
	p("after each address it allocates it counts all allocated addresses again (for its metrics), so creation slowed to about 23 Services/s at 15,000 here. ")
	p("To the kubernetes plugin a headless Service is the same object, with \"None\" for its address. ")
	p("Each server starts alone, not pinned, with the Corefile of the throughput section (\"without\" has only *kubernetes*, \"with\" adds *multicluster*). ")
	p("Start-up is the time from the fork to the first 200 of `/ready` (polled every 5 ms). ")
	p("Then a GC is forced (`/debug/pprof/heap?gc=1`), VmRSS (`/proc/PID/status`) is polled every 500 ms until it stays within 1%% for 3 s (at most 30 s), ")
	p("and \"live heap\" is `HeapAlloc` right after a second forced GC. ")
	p("With %d objects each server starts %d times, alternating; the summary uses medians.", c.big, c.startupRuns)
	if c.profileDir != "" {
		p(" The heap profiles of the first of those runs are kept as `%s/heap-without-%d.pprof` and `heap-with-%d.pprof`.", c.profileDir, c.big, c.big)
	}
	p("\n\n")
	p("| Services + imports | server | start-up | VmRSS (MiB) | live heap (MiB) |\n|---|---|---|---|---|\n")
	for _, m := range r.memory {
		p("| %d + %d | %s | %s | %.1f | %.1f |\n", m.size, m.size, serverName(m.with), ms(m.startup), mib(m.rss), mib(m.heap))
	}
	p("\n")
	k0, kh0, _, ok0 := medianMem(r.memFor(false, 0))
	m0, mh0, _, ok1 := medianMem(r.memFor(true, 0))
	if ok0 && ok1 {
		p("Cost per 1000 objects, from the medians, against the same server kind with 0 objects (RSS / live heap):\n\n")
		p("| size | kubernetes only: per 1000 Services | with multicluster: per 1000 Services + 1000 imports | multicluster's extra per 1000 imports |\n|---|---|---|---|\n")
		for _, size := range []int{c.mid, c.big} {
			k, kh, _, ok2 := medianMem(r.memFor(false, size))
			mm, mh, _, ok3 := medianMem(r.memFor(true, size))
			if !ok2 || !ok3 || size == 0 {
				continue
			}
			per := float64(size) / 1000 * 1024
			p("| %d | %.0f KiB / %.0f KiB | %.0f KiB / %.0f KiB | %.0f KiB / %.0f KiB |\n", size,
				(k-k0)/per, (kh-kh0)/per, (mm-m0)/per, (mh-mh0)/per, ((mm-k)-(m0-k0))/per, ((mh-kh)-(mh0-kh0))/per)
		}
		p("\n")
	}
	if len(r.creates) > 0 {
		p("Creating the objects (%d concurrent writers):", c.workers)
		for _, cr := range r.creates {
			p(" %d objects in %s (%.0f/s);", cr.objects, cr.took.Round(time.Second), float64(cr.objects)/cr.took.Seconds())
		}
		p(" not part of any figure above.\n\n")
	}
}

func (r *results) writePropagation(p func(string, ...any)) {
	if len(r.propagation) == 0 {
		return
	}
	p("## Propagation\n\n")
	p("ServiceImports in `%s` are created, given a new address, and deleted, in turn, %d writes in all, on the \"with\" server of the throughput section ", nsProp, len(r.propagation))
	p("(with its %d Services and %d imports of each set present). A goroutine queries the clusterset.local A record over UDP every %s from just before the write request is sent; ", r.cfg.n, r.cfg.n, pollEvery)
	p("the delay ends at the first answer that shows the change (the new address, or NXDOMAIN). It includes the write request itself, whose own duration is in the last column.\n\n")
	p("| write | count | p50 | p99 | max | write request p50 |\n|---|---|---|---|---|---|\n")
	for _, kind := range []string{"create", "update", "delete", ""} {
		var d, api []time.Duration
		for _, x := range r.propagation {
			if kind == "" || x.kind == kind {
				d = append(d, x.delay)
				api = append(api, x.api)
			}
		}
		if len(d) == 0 {
			continue
		}
		label := kind
		if kind == "" {
			label = "**all**"
		} else if kind == "update" {
			label = "update (address change)"
		}
		p("| %s | %d | %s | %s | %s | %s |\n", label, len(d), ms(percentile(d, 50)), ms(percentile(d, 99)), ms(slices.Max(d)), ms(percentile(api, 50)))
	}
	p("\n")
}

func (r *results) writeGoBench(p func(string, ...any)) {
	if len(r.goBenches) == 0 {
		return
	}
	p("## Go benchmarks\n\n")
	p("Run last, after the API server and every coredns have stopped, pinned to one CPU when the throughput rounds are (the commands below say). The kubernetes plugin's are CoreDNS v1.15.0's own, from the module cache.\n\n")
	var kube, ours *goBench
	for i := range r.goBenches {
		g := &r.goBenches[i]
		if strings.Contains(g.pkg, "coredns/plugin/kubernetes") {
			kube = g
		} else if ours == nil {
			ours = g // the run of every benchmark
		}
		p("`%s`", g.cmd)
		if g.err != nil {
			p(" **failed: %v**", g.err)
		}
		p("\n\n```\n%s\n```\n\n", strings.Join(g.lines, "\n"))
	}
	if kube == nil || ours == nil {
		return
	}
	p("Comparable pairs (median ns/op over the counts):\n\n| multicluster | ns/op | kubernetes | ns/op | what is compared |\n|---|---|---|---|---|\n")
	pair := func(a, b, what string) {
		x, ok1 := ours.nsPerOp(a)
		y, ok2 := kube.nsPerOp(b)
		if ok1 && ok2 {
			p("| %s | %.1f | %s | %.1f | %s |\n", a, x, b, y, what)
		}
	}
	pair("BenchmarkClustersetA", "BenchmarkServices",
		"an A query for a Service with one virtual IP: ours is a whole ServeDNS of a ClusterSetIP import (lookup, message built and written); "+
			"BenchmarkServices is the kubernetes plugin's ClusterIP A lookup (`svc1.testns`, ClusterIP 10.0.0.1) through `Services()` only, without building or writing the reply. "+
			"This is the pair asked for: their only ClusterIP A lookup benchmark")
	pair("BenchmarkClustersetA", "BenchmarkController",
		"a whole ServeDNS on both sides; theirs runs through real informers over a fake clientset, but its `svc1` is a headless Service with one endpoint (fixture \"all\"), so it is not a ClusterIP lookup")
	pair("BenchmarkPassThroughLocalService", "BenchmarkController",
		"the toll against the work it sits in front of: ours is multicluster alone passing a local Service's query on (to a next plugin that does nothing; BenchmarkHandOff is the floor of any plugin that passes a query on), theirs a whole kubernetes ServeDNS")
	p("\n")
}

func (r *results) writeProfiles(p func(string, ...any)) {
	if len(r.profiles) == 0 {
		return
	}
	p("## CPU profiles under load\n\n")
	p("10 s CPU profiles (`/debug/pprof/profile?seconds=10` of the *pprof* plugin) of the throughput servers while dnsperf loads them, `go tool pprof -top -nodecount=25`, ")
	p("followed by the cumulative shares of a few functions (from `-top -cum`). ")
	p("CoreDNS serves every UDP query on a new goroutine, whose stack starts small and is copied to a larger one when a call chain needs more (`runtime.newstack`, `runtime.copystack`). ")
	p("One more plugin frame on the path of every query can cost one more such copy per query; the Go benchmarks cannot show that, as their goroutine keeps its grown stack. ")
	p("So *multicluster* grows the stack itself before it passes a query on (`multicluster.reserveStack`), near the top of the stack where a copy walks few frames, to the size the rest of the chain needs. ")
	p("The \"stack growth\" line under each profile (from `-peek runtime.newstack`) names the functions whose calls made the stack grow.\n\n")
	if r.cfg.profileDir != "" {
		p("The profiles are kept as `%s/cpu-1.pprof` ... `cpu-%d.pprof` (in this order) for `go tool pprof`.\n\n", r.cfg.profileDir, len(r.profiles))
	}
	for _, pr := range r.profiles {
		p("### %s\n\n```\n%s\n```\n\n", pr.title, pr.top)
	}
}

// ms formats a duration in milliseconds with sensible precision.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	case v >= 10:
		return fmt.Sprintf("%.1f ms", v)
	default:
		return fmt.Sprintf("%.2f ms", v)
	}
}
