// Command mcsbench measures what the multicluster plugin costs and gives,
// against a real kube-apiserver and etcd (see test/internal/controlplane), and writes
// the results to BENCHMARKS.md. It backs `make bench`:
//
//	go build -o build/mcsbench ./test/cmd/mcsbench
//	build/mcsbench -coredns build/coredns -n 1000 -big 50000 -out BENCHMARKS.md
//
// In one run it measures, with build/coredns as a process:
//
//   - the toll on cluster.local: the same binary with and without the
//     multicluster block, queried for local Services, in interleaved dnsperf
//     rounds;
//   - clusterset.local answers of multicluster against cluster.local answers
//     of kubernetes, on the same server;
//   - clusterset.local answers of multicluster against those of its peers:
//     stock CoreDNS 1.15 with the kubernetes plugin's multicluster option
//     (-stock, the binary `make bench` builds from CoreDNS's own main
//     package), and the floor, a template plugin answering the same names;
//   - memory with 0, -mid and -big Services and ServiceImports, with and
//     without the plugin;
//   - the delay from an API write to the changed DNS answer;
//   - the start-up time to /ready with -big imports present;
//   - the Go benchmarks of the kubernetes plugin and of multicluster.
//
// It needs dnsperf, and taskset for pinning. Everything it starts is
// stopped when it ends, also on SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"
	"github.com/miekg/dns"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"
)

type config struct {
	coredns     string
	stock       string
	out         string
	n           int
	mid, big    int
	rounds      int
	round       time.Duration
	writes      int
	startupRuns int
	workers     int
	goBench     bool
	api         bool
	benchCount  int
	profile     bool
	profileDir  string
	pin         bool
	timeout     time.Duration
	hopOnly     bool
	hostile     bool
	hostileOnly bool
	hostileBase string
	outageOnly  bool
	scale       bool
	scaleOnly   bool
	scaleSize   string
	churnOnly   bool
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "mcsbench: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	var c config
	flag.StringVar(&c.coredns, "coredns", "build/coredns", "the coredns `binary` to measure")
	flag.StringVar(&c.stock, "stock", "build/coredns-stock", "stock CoreDNS 1.15 (`binary`), whose kubernetes plugin answers clusterset.local with its multicluster option; empty leaves that comparison out")
	flag.StringVar(&c.out, "out", "BENCHMARKS.md", "write the report to `FILE` (a failed run writes FILE.failed instead)")
	flag.IntVar(&c.n, "n", 1000, "Services and ServiceImports for the throughput and propagation measurements")
	flag.IntVar(&c.big, "big", 50000, "Services and ServiceImports for the largest memory and the start-up measurement")
	flag.IntVar(&c.mid, "mid", 0, "Services and ServiceImports for the middle memory measurement (default big/5)")
	flag.IntVar(&c.rounds, "rounds", 6, "measured dnsperf rounds per side of each A/B comparison")
	flag.DurationVar(&c.round, "round", 5*time.Second, "length of one dnsperf round (whole seconds)")
	flag.IntVar(&c.writes, "writes", 200, "API writes whose propagation is measured")
	flag.IntVar(&c.startupRuns, "startup-runs", 3, "start-ups of each server with -big objects")
	flag.IntVar(&c.workers, "workers", 32, "concurrent API writers when creating objects")
	flag.BoolVar(&c.goBench, "gobench", true, "run the Go benchmarks of the kubernetes and multicluster plugins")
	flag.BoolVar(&c.api, "api", true, "run the measurements against the API server; -api=false runs the Go benchmarks alone (write them to another -out)")
	flag.IntVar(&c.benchCount, "gobench-count", 3, "-count for the Go benchmarks")
	flag.BoolVar(&c.profile, "profile", true, "take CPU profiles of coredns under load")
	flag.StringVar(&c.profileDir, "profile-dir", "build/bench-profiles", "keep the CPU profiles in `DIR` (empty: discard them)")
	flag.BoolVar(&c.pin, "pin", true, "pin coredns to CPU 0 and dnsperf to CPU 1 during throughput rounds, and the Go benchmarks to CPU 1")
	flag.DurationVar(&c.timeout, "timeout", 45*time.Minute, "give up after this long")
	flag.BoolVar(&c.hostile, "hostile", true, "with the Go benchmarks, compare the hostile-object benchmarks with -hostile-base (the Hostile objects section)")
	flag.BoolVar(&c.hostileOnly, "hostile-only", false, "measure only the Hostile objects section, and write it into -out in place of that section there")
	flag.StringVar(&c.hostileBase, "hostile-base", "ddf250d", "the revision the hostile-object benchmarks are compared with")
	flag.BoolVar(&c.hopOnly, "hop-only", false, "measure only the extra hop of the standalone install (with -n objects), and no Go benchmarks")
	flag.BoolVar(&c.outageOnly, "outage-only", false, "measure only the cluster DNS with kubectl mcs front's configuration while the standalone server is away, and no Go benchmarks")
	flag.BoolVar(&c.scale, "scale", true, "measure the scale section (a synthetic ClusterSet on an API server of its own) after everything else")
	flag.BoolVar(&c.scaleOnly, "scale-only", false, "measure only the scale section, and write it into -out in place of the Scale section there")
	flag.BoolVar(&c.churnOnly, "scale-churn-only", false, "measure only the scale section's churn phase, on the last step's ClusterSet (or with -scale-size churn on the medium size's endpoints beside 10,000 imports), and write it into -out in place of its \"Churn at scale\" subsection")
	flag.StringVar(&c.scaleSize, "scale-size", "full", "the scale section's ClusterSet: full (10k, 100k imports; 100k, 1M endpoints), medium (10k, 100k imports; 20k, 100k endpoints) or small (a smoke test; its API server serves watches from etcd, without a watch cache)")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	if c.mid == 0 {
		c.mid = c.big / 5
	}
	if c.n < 1 || c.big < 1 || c.mid < 1 || c.mid > c.big || c.rounds < 1 || c.round < time.Second || c.writes < 1 || c.startupRuns < 1 || c.workers < 1 {
		return errors.New("-n, -mid, -big, -rounds, -writes, -startup-runs and -workers must be positive, -mid <= -big, -round >= 1s")
	}
	var err error
	if c.coredns, err = filepath.Abs(c.coredns); err != nil {
		return err
	}
	if c.stock != "" {
		if c.stock, err = filepath.Abs(c.stock); err != nil {
			return err
		}
		if _, err := os.Stat(c.stock); err != nil {
			return fmt.Errorf("stock coredns: %w (make bench builds it: go build -o build/coredns-stock github.com/coredns/coredns; -stock= leaves it out)", err)
		}
	}
	for _, tool := range []string{"dnsperf", "taskset"} {
		if c.scaleOnly || c.churnOnly || c.hostileOnly {
			break // the scale section asks with its own client; the hostile one asks nothing
		}
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is needed (apt-get install -y dnsperf util-linux): %w", tool, err)
		}
	}
	if _, err := os.Stat(c.coredns); err != nil {
		return fmt.Errorf("coredns binary: %w (run make build)", err)
	}
	if _, err := scaleSizesFor(c.scaleSize); err != nil && !c.churnOnly {
		return err
	} else if _, err := churnSizesFor(c.scaleSize); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	b := &bench{cfg: c, res: &results{started: time.Now(), args: os.Args, cfg: c}}
	// The flags that `make bench` passes through BENCH_FLAGS, for the
	// report's command line.
	flag.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "coredns", "stock", "out", "n", "big", "mid":
		default:
			b.res.extraFlags = append(b.res.extraFlags, "-"+f.Name+"="+f.Value.String())
		}
	})
	runErr := b.run(ctx)
	b.res.finished = time.Now()
	b.res.loads = b.loads.stop()
	out := c.out
	if runErr != nil {
		b.res.failure = runErr.Error()
		out += ".failed"
	}
	report := b.res.markdown()
	if c.churnOnly && runErr == nil {
		old, err := os.ReadFile(out)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		var sub strings.Builder
		b.res.writeScaleChurn(func(format string, args ...any) { fmt.Fprintf(&sub, format, args...) })
		if len(old) > 0 {
			report = withSummary(spliceSubsection(string(old), "Churn at scale", sub.String()))
		}
	} else if c.hostileOnly && runErr == nil {
		old, err := os.ReadFile(out)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		var section strings.Builder
		b.res.hostile.write(func(format string, args ...any) { fmt.Fprintf(&section, format, args...) })
		if len(old) > 0 {
			report = withSummary(spliceHeading(string(old), "Hostile objects", "Churn", section.String()))
		}
	} else if c.scaleOnly && runErr == nil {
		// The other sections stay as the last whole run wrote them.
		old, err := os.ReadFile(out)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		var section strings.Builder
		b.res.writeScale(func(format string, args ...any) { fmt.Fprintf(&section, format, args...) })
		if len(old) > 0 {
			report = withSummary(spliceSection(string(old), section.String()))
		}
	}
	if err := os.WriteFile(out, []byte(report), 0o644); err != nil {
		return errors.Join(runErr, fmt.Errorf("write report: %w", err))
	}
	status("report written to %s", out)
	return runErr
}

// bench is one run.
type bench struct {
	cfg   config
	res   *results
	dir   string // Corefiles, logs, query files, profiles
	root  string // the repository, for go test
	cp    *controlplane.ControlPlane
	c     *cluster
	loads *loadSampler
}

func (b *bench) run(ctx context.Context) error {
	var err error
	if b.root, err = os.Getwd(); err != nil {
		return err
	}
	if b.dir, err = os.MkdirTemp("", "mcsbench-"); err != nil {
		return err
	}
	defer os.RemoveAll(b.dir)
	b.loads = startLoadSampler(5 * time.Second)
	b.res.machine = readMachine(b.cfg.coredns, b.cfg.stock)
	if b.cfg.churnOnly {
		return b.scaleChurnOnly(ctx)
	}
	if b.cfg.scaleOnly {
		return b.scaleRun(ctx)
	}
	if b.cfg.hostileOnly {
		b.res.hostile = measureHostile(ctx, b.root, b.cfg.hostileBase, b.cfg.benchCount)
		return b.res.hostile.err
	}

	// The measurements against the API server come first, in order of
	// importance, so that an interrupted run still reports the main ones;
	// the Go benchmarks run once the API server has stopped.
	if b.cfg.api {
		if err := b.againstAPIServer(ctx); err != nil {
			return err
		}
	}
	if b.cfg.goBench && !b.cfg.hopOnly && !b.cfg.outageOnly {
		for _, pkg := range []string{"github.com/coredns/coredns/plugin/kubernetes", pluginPackage} {
			status("go benchmarks of %s", pkg)
			b.phase("Go benchmarks " + pkg)
			cpus := ""
			if b.cfg.pin {
				cpus = "1" // one quiet CPU, as dnsperf's
			}
			g := runGoBench(ctx, b.root, pkg, ".", b.cfg.benchCount, cpus)
			b.res.goBenches = append(b.res.goBenches, g)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
		// Lookups during churn need the lookups and the slice events in
		// parallel, on every CPU: pinned to one, that benchmark skips.
		status("go benchmarks of lookups during churn, on every CPU")
		b.phase("Go benchmarks, lookups during churn")
		b.res.goBenches = append(b.res.goBenches, runGoBench(ctx, b.root, pluginPackage, "LookupDuringChurn", b.cfg.benchCount, ""))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if b.cfg.hostile {
			b.phase("Go benchmarks, hostile objects against " + b.cfg.hostileBase)
			b.res.hostile = measureHostile(ctx, b.root, b.cfg.hostileBase, b.cfg.benchCount)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	if b.cfg.scale && b.cfg.api && !b.cfg.hopOnly && !b.cfg.outageOnly {
		// Last: the heaviest, on an API server of its own.
		return b.scaleRun(ctx)
	}
	return nil
}

// againstAPIServer runs everything that needs etcd and kube-apiserver, and
// stops them at the end.
func (b *bench) againstAPIServer(ctx context.Context) error {
	cp, c, stop, err := b.startControlPlane(ctx, "")
	if err != nil {
		return err
	}
	defer stop()
	b.cp, b.c = cp, c

	// Memory with an empty cluster first, then the small throughput set,
	// which is removed again before the large sets are created, so that
	// every memory figure counts exactly the objects it says.
	if b.cfg.hopOnly {
		return b.throughput(ctx)
	}
	if b.cfg.outageOnly {
		return b.outage(ctx, b.serverCPU())
	}
	if err := b.memory(ctx, 0, 1); err != nil {
		return err
	}
	if err := b.throughput(ctx); err != nil {
		return err
	}
	if err := b.objects(ctx, 0, b.cfg.mid); err != nil {
		return err
	}
	if err := b.memory(ctx, b.cfg.mid, 1); err != nil {
		return err
	}
	if err := b.objects(ctx, b.cfg.mid, b.cfg.big); err != nil {
		return err
	}
	return b.memory(ctx, b.cfg.big, b.cfg.startupRuns)
}

// startControlPlane starts etcd and kube-apiserver (what names them in the
// log; apiServerFlags are extra flags of kube-apiserver) and the clients
// that write the benchmark's objects; stop stops them.
func (b *bench) startControlPlane(ctx context.Context, what string, apiServerFlags ...string) (cp *controlplane.ControlPlane, c *cluster, stop func(), err error) {
	assets, err := controlplane.Assets()
	if err != nil {
		return nil, nil, nil, err
	}
	b.res.machine.apiserver = firstLine(filepath.Join(assets, "kube-apiserver"), "--version")
	b.res.machine.etcd = firstLine(filepath.Join(assets, "etcd"), "--version")
	status("%sstarting etcd and kube-apiserver %s", what, strings.Join(apiServerFlags, " "))
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	// Restarted under a large ClusterSet (the scale section), the API
	// server takes minutes to be ready again on a busy machine.
	cp, err = controlplane.Start(startCtx, controlplane.Options{InstallCRDs: true, AssetsDir: assets, StartTimeout: 10 * time.Minute, APIServerFlags: apiServerFlags})
	cancel()
	if err != nil {
		return nil, nil, nil, err
	}
	stop = func() {
		status("%sstopping etcd and kube-apiserver", what)
		if err := cp.Stop(); err != nil {
			status("stop control plane: %v", err)
		}
	}
	cfg := rest.CopyConfig(cp.Config)
	// Tens of thousands of creates: the client-side limit would be the
	// bottleneck, not the API server.
	cfg.QPS, cfg.Burst = 5000, 10000
	c = &cluster{workers: b.cfg.workers}
	if c.mcs, err = mcsclient.NewForConfig(cfg); err == nil {
		// Protobuf costs the API server less than JSON for built-in types
		// (custom resources such as ServiceImports only speak JSON).
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		c.kube, err = kubernetes.NewForConfig(cfg)
	}
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	return cp, c, stop, nil
}

// serverCPU is the CPU servers are pinned to, or "".
func (b *bench) serverCPU() string {
	if b.cfg.pin {
		return "0"
	}
	return ""
}

// phase records the load average as a phase begins.
func (b *bench) phase(name string) {
	b.res.phases = append(b.res.phases, phaseLoad{name: name, at: time.Now(), load: loadAverage()})
}

const (
	nsLocal   = "bench-local"   // Services without imports
	nsImports = "bench-imports" // imports without Services
	nsShadow  = "bench-shadow"  // Services with an import of the same name
	nsProp    = "bench-prop"    // imports created, changed and deleted
	nsBigSvc  = "big-services"
	nsBigImp  = "big-imports"
)

// throughput runs the A/B comparisons and the propagation measurement on N
// objects of each kind.
func (b *bench) throughput(ctx context.Context) error {
	n := b.cfg.n
	b.phase(fmt.Sprintf("create %d Services and imports", n))
	status("creating %d Services in %s, %d imports in %s, %d of each in %s", n, nsLocal, n, nsImports, n, nsShadow)
	for _, ns := range []string{nsLocal, nsImports, nsShadow, nsProp} {
		if err := b.c.namespace(ctx, ns); err != nil {
			return err
		}
	}
	if err := b.c.createServices(ctx, nsLocal, "svc", 0, n, false); err != nil {
		return err
	}
	if err := b.c.createImports(ctx, nsImports, "imp", 0, n); err != nil {
		return err
	}
	if err := b.c.createServices(ctx, nsShadow, "sh", 0, n, false); err != nil {
		return err
	}
	if err := b.c.createImports(ctx, nsShadow, "sh", 0, n); err != nil {
		return err
	}

	var local, clusterset, fallback, shadow []string
	for i := range n {
		local = append(local, objectName("svc", i)+"."+nsLocal+".svc.cluster.local.")
		clusterset = append(clusterset, objectName("imp", i)+"."+nsImports+".svc.clusterset.local.")
		fallback = append(fallback, objectName("imp", i)+"."+nsImports+".svc.cluster.local.")
		shadow = append(shadow, objectName("sh", i)+"."+nsShadow+".svc.cluster.local.")
	}
	files := map[string][]string{"local": local, "clusterset": clusterset, "fallback": fallback, "shadow": shadow}
	for name, names := range files {
		if err := writeQueries(filepath.Join(b.dir, name+".queries"), names); err != nil {
			return err
		}
	}
	q := func(name string) string { return filepath.Join(b.dir, name+".queries") }

	// Pinned, the server and the load generator do not take each other's
	// CPU, and both servers run on the same one.
	serverCPU, loadCPU := b.serverCPU(), ""
	if b.cfg.pin {
		loadCPU = "1"
	}
	if b.cfg.hopOnly {
		if err := b.extraHop(ctx, loadgen{cpus: loadCPU}, serverCPU, fallback, q("fallback")); err != nil {
			return err
		}
		return b.c.deleteAll(ctx, nsLocal, nsImports, nsShadow, nsProp)
	}
	start := func(name, corefile string) (*server, error) {
		return startServer(ctx, serverOptions{
			binary: b.cfg.coredns, dir: b.dir, name: name, corefile: corefile,
			kubeconfig: b.cp.Kubeconfig, cpus: serverCPU, readyTimeout: 2 * time.Minute,
		})
	}
	status("starting coredns without and with multicluster")
	without, err := start("without", corefileWithout)
	if err != nil {
		return err
	}
	defer without.stop()
	with, err := start("with", corefileWith)
	if err != nil {
		return err
	}
	defer with.stop()

	// The peers of the clusterset.local answers (server.go).
	status("starting the peers: a template plugin, and stock CoreDNS with the kubernetes plugin's multicluster option")
	floor, err := start("template", corefileTemplate)
	if err != nil {
		return err
	}
	defer floor.stop()
	peers := []*server{floor}
	var upstream *server
	if b.cfg.stock != "" {
		upstream, err = startServer(ctx, serverOptions{
			binary: b.cfg.stock, dir: b.dir, name: "stock", corefile: corefileUpstream,
			kubeconfig: b.cp.Kubeconfig, cpus: serverCPU, readyTimeout: 2 * time.Minute,
		})
		if err != nil {
			return err
		}
		defer upstream.stop()
		peers = append(peers, upstream)
	}

	// Every server must see every object and answer alike before anything
	// is measured.
	if err := b.checkAnswers(ctx, without, with, local, clusterset, fallback, shadow); err != nil {
		return err
	}
	if err := checkSameAnswers(ctx, with, peers, clusterset); err != nil {
		return err
	}

	g := loadgen{cpus: loadCPU}
	comparisons := []*comparison{
		{
			title: "Toll: cluster.local A of local Services",
			a:     target{"without multicluster", without, q("local")},
			b:     target{"with multicluster", with, q("local")},
		},
		{
			title: "Toll: cluster.local A of local Services that also have an import",
			a:     target{"without multicluster", without, q("shadow")},
			b:     target{"with multicluster", with, q("shadow")},
		},
		{
			title: "clusterset.local A (multicluster) vs cluster.local A (kubernetes), same server",
			a:     target{"cluster.local, kubernetes", with, q("local")},
			b:     target{"clusterset.local, multicluster", with, q("clusterset")},
		},
	}
	if upstream != nil {
		comparisons = append(comparisons, &comparison{
			title: "clusterset.local A: multicluster vs the kubernetes plugin's multicluster option (stock CoreDNS)",
			a:     target{"kubernetes multicluster option", upstream, q("clusterset")},
			b:     target{"multicluster", with, q("clusterset")},
		})
	}
	comparisons = append(comparisons,
		&comparison{
			title: "clusterset.local A: multicluster vs a template plugin (the floor)",
			a:     target{"template", floor, q("clusterset")},
			b:     target{"multicluster", with, q("clusterset")},
		},
		&comparison{
			title: "cluster.local A of imports without a local Service (multicluster fallback) vs cluster.local A (kubernetes), same server",
			a:     target{"cluster.local, kubernetes", with, q("local")},
			b:     target{"cluster.local fallback, multicluster", with, q("fallback")},
		})
	for _, c := range comparisons {
		c.target = throughputTargets[c.title]
		b.phase(c.title)
		status("%s: %d rounds of %s each side", c.title, b.cfg.rounds, b.cfg.round)
		if err := c.run(ctx, g, b.cfg.rounds, b.cfg.round); err != nil {
			return err
		}
		b.res.comparisons = append(b.res.comparisons, c)
	}

	b.phase("the standalone server away")
	if err := b.outage(ctx, serverCPU); err != nil {
		return err
	}
	b.phase("the extra hop of the standalone install")
	if err := b.extraHop(ctx, g, serverCPU, fallback, q("fallback")); err != nil {
		return err
	}

	if b.cfg.profile {
		type profiled struct {
			title string
			s     *server
			file  string
		}
		profiles := []profiled{
			{"without multicluster, cluster.local A of local Services", without, "local"},
			{"with multicluster, cluster.local A of local Services", with, "local"},
			{"with multicluster, cluster.local A of local Services that also have an import", with, "shadow"},
			{"with multicluster, clusterset.local A", with, "clusterset"},
			{"template plugin (the floor), clusterset.local A", floor, "clusterset"},
		}
		if upstream != nil {
			profiles = append(profiles, profiled{"stock CoreDNS, kubernetes multicluster option, clusterset.local A", upstream, "clusterset"})
		}
		for _, p := range profiles {
			b.phase("CPU profile " + p.title)
			status("CPU profile, %s", p.title)
			top, err := b.cpuProfile(ctx, g, p.s, q(p.file), p.title)
			if err != nil {
				return err
			}
			b.res.profiles = append(b.res.profiles, profileOut{title: p.title, top: top})
		}
	}

	b.phase(fmt.Sprintf("propagation, %d writes", b.cfg.writes))
	status("propagation: %d writes", b.cfg.writes)
	b.res.propagation, err = measurePropagation(ctx, b.c, with, nsProp, b.cfg.writes)
	if err != nil {
		return err
	}

	for _, s := range append([]*server{without, with}, peers...) {
		if err := s.stop(); err != nil {
			return err
		}
	}
	b.phase("delete the throughput objects")
	status("deleting the throughput objects")
	return b.c.deleteAll(ctx, nsLocal, nsImports, nsShadow, nsProp)
}

// checkAnswers queries a sample of every query set: local names must get
// the same single address from both servers, import names their import's
// address from the server with multicluster.
func (b *bench) checkAnswers(ctx context.Context, without, with *server, local, clusterset, fallback, shadow []string) error {
	dw, err := newDNSClient(without.addr)
	if err != nil {
		return err
	}
	defer dw.close()
	dm, err := newDNSClient(with.addr)
	if err != nil {
		return err
	}
	defer dm.close()
	step := max(1, len(local)/50)
	for i := 0; i < len(local); i += step {
		for _, name := range []string{local[i], shadow[i]} {
			if err := eventually(ctx, func() error {
				_, a, err := dw.a(name)
				if err != nil {
					return err
				}
				_, m, err := dm.a(name)
				if err != nil {
					return err
				}
				if len(a) != 1 || strings.Join(a, ",") != strings.Join(m, ",") {
					return fmt.Errorf("%s: %v without multicluster, %v with", name, a, m)
				}
				return nil
			}); err != nil {
				return err
			}
		}
		for _, name := range []string{clusterset[i], fallback[i]} {
			want := importIP(i)
			if err := eventually(ctx, func() error {
				_, m, err := dm.a(name)
				if err != nil {
					return err
				}
				if len(m) != 1 || m[0] != want {
					return fmt.Errorf("%s: %v, want %s", name, m, want)
				}
				return nil
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkSameAnswers queries a sample of names: every peer must give the
// answer ours gives (rcode, AA bit, answer records with their TTLs).
func checkSameAnswers(ctx context.Context, ours *server, peers []*server, names []string) error {
	do, err := newDNSClient(ours.addr)
	if err != nil {
		return err
	}
	defer do.close()
	for _, peer := range peers {
		dp, err := newDNSClient(peer.addr)
		if err != nil {
			return err
		}
		defer dp.close()
		step := max(1, len(names)/50)
		for i := 0; i < len(names); i += step {
			name := names[i]
			if err := eventually(ctx, func() error {
				a, err := do.exchangeA(name)
				if err != nil {
					return err
				}
				p, err := dp.exchangeA(name)
				if err != nil {
					return err
				}
				if a.Rcode != dns.RcodeSuccess || len(a.Answer) != 1 || answerOf(a) != answerOf(p) {
					return fmt.Errorf("%s: %s answers %q, %s answers %q", name, ours.name, answerOf(a), peer.name, answerOf(p))
				}
				return nil
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// eventually retries check for up to 30 seconds: the servers are ready once
// their caches synced, but a just-created object may still be on its way.
func eventually(ctx context.Context, check func() error) error {
	return eventuallyWithin(ctx, 30*time.Second, check)
}

// eventuallyWithin retries check every 100 ms until it passes or within
// has passed, and returns its last error.
func eventuallyWithin(ctx context.Context, within time.Duration, check func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := check()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// cpuProfile profiles s for ten seconds under dnsperf load and returns the
// top of `go tool pprof -top`.
func (b *bench) cpuProfile(ctx context.Context, g loadgen, s *server, queries, title string) (string, error) {
	const d = 10 * time.Second
	loadDone := make(chan error, 1)
	go func() {
		_, err := g.run(ctx, s.addr, queries, d+3*time.Second)
		loadDone <- err
	}()
	path := filepath.Join(b.dir, fmt.Sprintf("cpu-%d.pprof", len(b.res.profiles)+1))
	if b.cfg.profileDir != "" {
		if err := os.MkdirAll(b.cfg.profileDir, 0o755); err != nil {
			return "", err
		}
		path = filepath.Join(b.cfg.profileDir, fmt.Sprintf("cpu-%d.pprof", len(b.res.profiles)+1))
	}
	select {
	case <-ctx.Done():
	case <-time.After(time.Second):
	}
	perr := s.profile(ctx, d, path)
	if err := <-loadDone; err != nil {
		return "", fmt.Errorf("load for the profile of %s: %w", title, err)
	}
	if perr != nil {
		return "", fmt.Errorf("profile of %s: %w", title, perr)
	}
	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=25", s.binary, path).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go tool pprof: %v:\n%s", err, out)
	}
	top := strings.TrimSpace(string(out))
	// Cumulative shares of a few functions that tell where a toll goes:
	// the plugins themselves, and goroutine stack growth, which a deeper
	// plugin chain can cause in a server that starts a goroutine per query.
	out, err = exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-cum", "-nodecount=400", s.binary, path).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go tool pprof: %v:\n%s", err, out)
	}
	var cum []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 6 && slices.Contains(cumFunctions, f[5]) {
			cum = append(cum, f[5]+" "+f[4])
		}
	}
	if len(cum) > 0 {
		top += "\n\ncumulative: " + strings.Join(cum, ", ")
	}
	// Where the stack copies happen: the function whose call needed more
	// stack, with its share of the time spent growing stacks.
	out, err = exec.CommandContext(ctx, "go", "tool", "pprof", "-peek", `^runtime\.newstack$`, s.binary, path).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go tool pprof: %v:\n%s", err, out)
	}
	if growth := stackGrowthCallers(string(out)); len(growth) > 0 {
		top += "\nstack growth (runtime.newstack) by the function that needed more stack: " + strings.Join(growth, ", ")
	}
	return top, nil
}

// stackGrowthCallers reads `go tool pprof -peek runtime.newstack` output and
// returns its callers with their shares, as "function share".
func stackGrowthCallers(peek string) []string {
	var callers []string
	for _, line := range strings.Split(peek, "\n") {
		before, fn, ok := strings.Cut(line, "|")
		if !ok {
			continue
		}
		fn = strings.TrimSpace(fn)
		f := strings.Fields(before)
		switch {
		case fn == "runtime.newstack":
			return callers // the callers come before the function itself
		case len(f) == 2 && strings.HasSuffix(f[1], "%") && fn != "" && !strings.Contains(fn, " "):
			callers = append(callers, fn+" "+f[1])
		default:
			callers = nil // a header or another function's block
		}
	}
	return nil
}

// cumFunctions are the functions whose cumulative share of a CPU profile the
// report lists.
var cumFunctions = []string{
	"github.com/coredns/coredns/core/dnsserver.(*Server).ServeDNS",
	"github.com/coredns-mcs/coredns-mcs/plugin/multicluster.(*Multicluster).ServeDNS",
	"github.com/coredns/coredns/plugin/kubernetes.Kubernetes.ServeDNS",
	"github.com/coredns/coredns/plugin/template.Handler.ServeDNS",
	"runtime.newstack",
	"runtime.copystack",
	"runtime.gcBgMarkWorker",
	"runtime.mallocgc",
}

// objects grows the big sets from `from` to `to` Services and imports.
func (b *bench) objects(ctx context.Context, from, to int) error {
	if to <= from {
		return nil
	}
	b.phase(fmt.Sprintf("create Services and imports %d..%d", from, to))
	for _, ns := range []string{nsBigSvc, nsBigImp} {
		if err := b.c.namespace(ctx, ns); err != nil {
			return err
		}
	}
	began := time.Now()
	status("creating headless Services %d..%d in %s", from, to, nsBigSvc)
	if err := b.c.createServices(ctx, nsBigSvc, "svc", from, to, true); err != nil {
		return err
	}
	status("creating imports %d..%d in %s", from, to, nsBigImp)
	if err := b.c.createImports(ctx, nsBigImp, "imp", from, to); err != nil {
		return err
	}
	d := time.Since(began)
	status("created %d objects in %s (%.0f/s)", 2*(to-from), d.Round(time.Second), float64(2*(to-from))/d.Seconds())
	b.res.creates = append(b.res.creates, createRate{objects: 2 * (to - from), took: d})
	return nil
}

// memory starts each server runs times with size Services and imports
// present (alternating, one at a time, not pinned) and records start-up
// time and settled memory.
func (b *bench) memory(ctx context.Context, size, runs int) error {
	b.phase(fmt.Sprintf("memory and start-up, %d Services and imports", size))
	for r := range runs {
		for _, kind := range []struct {
			name, corefile string
			with           bool
		}{{"without", corefileWithout, false}, {"with", corefileWith, true}} {
			s, err := startServer(ctx, serverOptions{
				binary: b.cfg.coredns, dir: b.dir, name: fmt.Sprintf("mem-%s-%d-%d", kind.name, size, r), corefile: kind.corefile,
				kubeconfig: b.cp.Kubeconfig, readyTimeout: 5 * time.Minute,
			})
			if err != nil {
				return err
			}
			rss, heap, err := s.settledMemory(ctx, 30*time.Second)
			if err == nil && r == 0 && size == b.cfg.big && b.cfg.profileDir != "" {
				// What the memory is made of, for go tool pprof -sample_index=inuse_space.
				if err = os.MkdirAll(b.cfg.profileDir, 0o755); err == nil {
					err = s.heapProfile(ctx, filepath.Join(b.cfg.profileDir, fmt.Sprintf("heap-%s-%d.pprof", kind.name, size)))
				}
			}
			serr := s.stop()
			if err != nil {
				return err
			}
			if serr != nil {
				return serr
			}
			b.res.memory = append(b.res.memory, memRow{with: kind.with, size: size, rss: rss, heap: heap, startup: s.readyAfter})
			status("  %s multicluster, %d objects: ready after %s, VmRSS %.1f MiB, heap %.1f MiB",
				kind.name, size, s.readyAfter.Round(time.Millisecond), mib(rss), mib(heap))
		}
	}
	return nil
}

func status(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s mcsbench: %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
