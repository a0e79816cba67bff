package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"

	"github.com/coredns-mcs/coredns-mcs/test/internal/process"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// The churn phase of the scale section: under the last step's ClusterSet,
// source "clusters" roll the endpoints of headless imports' EndpointSlices
// at a target rate, one endpoint of one slice per update, spread over every
// slice (so over imports and clusters), while one client times lookups of
// cluster.local and clusterset.local names. Each rate has an idle window
// and a churn window of the same length, on the same coredns process, one
// after the other; ratios are churn over idle.
//
// Pinned (-pin), coredns runs on CPU 0 and everything else this command
// starts (etcd, kube-apiserver, the writers and the lookup client) on
// CPU 1, so that what the churn costs coredns shows in its answers, not the
// API server's share of its CPU. The lookup client's round trips end at the
// kernel's receive timestamp of each answer (SO_TIMESTAMPNS), so that the
// time the client waits for CPU 1 after an answer arrived is not counted.

// churnPlan is the churn phase at one scale size.
type churnPlan struct {
	rates   []int         // slice updates per second asked
	rounds  int           // idle and churn windows of each rate
	window  time.Duration // each idle and each churn window
	probes  int           // propagation probes per churn window, at most
	workers int           // concurrent writers
}

// churnSizesFor returns the ClusterSet of -scale-churn-only: a scale size,
// or "churn": the medium size's headless imports and endpoints (1,000
// headless imports, 100,000 endpoints in 2,500 slices from up to 255
// clusters, the biggest import 10,000) beside 10,000 ClusterSetIP imports,
// about 14,000 API objects, for machines where the medium size's 100,000
// imports cannot be created beside other work.
func churnSizesFor(name string) (scaleSizes, error) {
	if name != "churn" {
		return scaleSizesFor(name)
	}
	z, err := scaleSizesFor("medium")
	z.name, z.imports, z.endpoints = name, z.imports[:1], z.endpoints[len(z.endpoints)-1:]
	return z, err
}

func churnPlanFor(size string) churnPlan {
	if size == "small" {
		return churnPlan{rates: []int{100}, rounds: 1, window: 4 * time.Second, probes: 20, workers: 8}
	}
	return churnPlan{rates: []int{250, 500, 1000}, rounds: 3, window: 10 * time.Second, probes: 100, workers: 96}
}

// churnWindow is one rate: its idle window and its churn window.
type churnWindow struct {
	server   string        // coredns-mcs, or the control without multicluster
	rate     int           // updates per second asked
	updates  int           // acknowledged within the window
	took     time.Duration // the churn window
	dropped  int           // updates due when no writer was free
	errors   int           // failed writes (conflicts included, retried with the object read again)
	firstErr string
	write    latencyStats // the API server's round trip of an update
	// lookups by kind ("local", "clusterset"), idle and during churn.
	idle, churn         map[string]latencyStats
	idleN, churnN       int // lookups timed
	idleLost, churnLost int // no answer within 500 ms
	propagation         []time.Duration
	// watchLag: from a probed update's acknowledgement to its event on
	// this command's own watch
	watchLag    []time.Duration
	probeMisses int // changes not seen within propagationTimeout
	// coredns CPU in each window, and the queries it answered meanwhile
	// (lookups and probes).
	cpuIdle, cpuChurn time.Duration
	// kube-apiserver's and etcd's CPU in the churn windows
	apiCPU time.Duration
	// the time coredns's threads waited on a run queue in each window
	waitIdle, waitChurn       time.Duration
	queriesIdle, queriesChurn int
	// the clusterset zone's SOA serial, asked every serialEvery during
	// churn: the distinct serials seen, the samples, and the most it was
	// ahead of the wall clock (seconds; 0 or less: never ahead)
	serials, serialSamples int
	serialAhead            int64
	// each round's round trips by kind, for the per-round ratios
	idleRounds, churnRounds []map[string][]time.Duration
}

func (w churnWindow) achieved() float64 { return float64(w.updates) / w.took.Seconds() }

// cpuPer1000 is coredns's CPU per 1,000 updates, net of the queries it
// answered meanwhile (at the idle window's CPU per query).
func (w churnWindow) cpuPer1000() (raw, net time.Duration) {
	if w.updates == 0 {
		return 0, 0
	}
	perQuery := float64(0)
	if w.queriesIdle > 0 {
		perQuery = float64(w.cpuIdle) / float64(w.queriesIdle)
	}
	netCPU := float64(w.cpuChurn) - perQuery*float64(w.queriesChurn)
	return time.Duration(float64(w.cpuChurn) * 1000 / float64(w.updates)), time.Duration(max(0, netCPU) * 1000 / float64(w.updates))
}

type scaleChurn struct {
	plan                      churnPlan
	size                      string
	imports, headless, slices int
	endpoints, clusters       int
	pinned, kernelTimestamps  bool
	raised                    string // how coredns and the client were raised: raisePriority
	windows                   []churnWindow
	profileTop, profileRate   string
}

// churnSlot is one EndpointSlice as the writers last wrote it.
type churnSlot struct {
	mu  sync.Mutex
	es  *discovery.EndpointSlice
	gen int
	// stale: a write was cut off at the end of a window, and may have
	// been applied: read the slice again before the next.
	stale bool
}

// scaleChurnRun runs the churn phase against the ClusterSet as the steps
// left it: imports ClusterSetIP imports and the headless imports' slices in
// nsScaleHeadless.
func (b *bench) scaleChurnRun(ctx context.Context, kubeconfig string, c *cluster, imports, endpoints int) error {
	sizes := b.res.scale.sizes
	plan := churnPlanFor(sizes.name)
	list, err := c.kube.DiscoveryV1().EndpointSlices(nsScaleHeadless).List(ctx, meta.ListOptions{})
	if err != nil {
		return err
	}
	if len(list.Items) == 0 {
		return errors.New("churn: no EndpointSlices to roll")
	}
	res := &scaleChurn{plan: plan, size: sizes.name, imports: imports, headless: sizes.headless, slices: len(list.Items), endpoints: endpoints}
	b.res.scale.churn = res
	clusters := map[string]bool{}
	// A stride through the list spreads consecutive updates over imports
	// and clusters (the list is in name order: import by import).
	slots := make([]*churnSlot, len(list.Items))
	stride := coprimeStride(len(list.Items))
	for i := range list.Items {
		es := &list.Items[(i*stride)%len(list.Items)]
		clusters[es.Labels[mcsv1beta1.LabelSourceCluster]] = true
		slots[i] = &churnSlot{es: es}
	}
	res.clusters = len(clusters)

	cpus := ""
	if b.cfg.pin {
		cpus = "0"
		restore, err := pinLoad("1")
		if err != nil {
			return err
		}
		defer restore()
		res.pinned = true
	}
	var addrs atomic.Uint32
	for _, srv := range []churnServer{
		{name: "coredns-mcs", corefile: corefileShipped, multicluster: true},
		// The control: the same binary without multicluster, its kubernetes
		// plugin alone, under the same churn (it caches every EndpointSlice,
		// those of imports included: one informer of the EndpointSlices of
		// every namespace, plugin/kubernetes/controller.go in CoreDNS
		// v1.15.0).
		{name: "without multicluster", corefile: corefileWithout},
	} {
		if err := b.churnServer(ctx, c, res, srv, kubeconfig, cpus, slots, list.Items[len(list.Items)-1], imports, &addrs); err != nil {
			return err
		}
	}
	return nil
}

// churnServer names a server of the churn phase.
type churnServer struct {
	name, corefile string
	multicluster   bool // clusterset names and propagation probes
}

// churnServer measures one server through the churn phase's rates.
func (b *bench) churnServer(ctx context.Context, c *cluster, res *scaleChurn, srv churnServer, kubeconfig, cpus string, slots []*churnSlot, last discovery.EndpointSlice, imports int, addrs *atomic.Uint32) error {
	sizes, plan := b.res.scale.sizes, res.plan
	s, err := startServer(ctx, serverOptions{binary: b.cfg.coredns, dir: b.dir, name: "scale-churn-" + strings.ReplaceAll(srv.name, " ", "-"), corefile: srv.corefile,
		kubeconfig: kubeconfig, cpus: cpus, readyTimeout: 10 * time.Minute})
	if err != nil {
		return err
	}
	defer s.stop()
	if b.cfg.pin {
		// Threads coredns starts later inherit the nice value of the
		// thread that starts them.
		res.raised = raiseProcess(s.proc.Pid)
	}
	// Every slice is served before the clock starts (by the kubernetes
	// plugin: once a local Service answers, its caches have synced).
	if err := eventually(ctx, func() error {
		if srv.multicluster {
			if err := expectEndpoint(s, &last, last.Endpoints[len(last.Endpoints)-1].Addresses[0]); err != nil {
				return err
			}
		}
		return expectOneA(s, objectName("local", scaleLocal-1)+"."+nsScaleLocal+".svc.cluster.local.")
	}); err != nil {
		return err
	}
	names := map[string][]string{}
	for i := range sizes.lookups {
		names["local"] = append(names["local"], objectName("local", (i*7919)%scaleLocal)+"."+nsScaleLocal+".svc.cluster.local.")
		if srv.multicluster {
			names["clusterset"] = append(names["clusterset"], scaleImportName((i*7919)%imports, "clusterset"))
		}
	}
	poll := objectName("local", 1) + "." + nsScaleLocal + ".svc.cluster.local."
	if srv.multicluster {
		poll = scaleImportName(1, "clusterset")
	}
	for wi, rate := range plan.rates {
		w := churnWindow{server: srv.name, rate: rate, idle: map[string]latencyStats{}, churn: map[string]latencyStats{}}
		b.phase(fmt.Sprintf("scale: churn at %d slice updates/s", rate))
		status("scale: %d rounds of an idle window and a window of %d slice updates/s, %s each", plan.rounds, rate, plan.window)
		idleTimes, churnTimes := map[string][]time.Duration{}, map[string][]time.Duration{}
		var writes []time.Duration
		for round := range plan.rounds {
			// Idle and churn in turn, the order alternating, so that drift
			// of the machine's load weighs on both alike.
			for _, churning := range []bool{round%2 == 1, round%2 == 0} {
				if !churning {
					cpu0, wait0 := s.cpuTime0(), runDelay(s.proc.Pid)
					idle, queries, kts, err := timeLookups(ctx, s.addr, names, plan.window, func(stop <-chan struct{}) int {
						return pollName(s.addr, poll, stop)
					})
					if err != nil {
						return fmt.Errorf("%s: %w (exited: %v); its log ends with:\n%s", srv.name, err, s.proc.Exited(), process.LogTail(s.logPath, 20))
					}
					w.cpuIdle += s.cpuTime0() - cpu0
					w.waitIdle += runDelay(s.proc.Pid) - wait0
					w.queriesIdle += queries
					w.idleN, w.idleLost = w.idleN+idle.timed, w.idleLost+idle.lost
					res.kernelTimestamps = kts
					w.idleRounds = append(w.idleRounds, idle.byKind)
					for k, ds := range idle.byKind {
						idleTimes[k] = append(idleTimes[k], ds...)
					}
					continue
				}
				var serialDone chan serialSeen
				stopSerial := make(chan struct{})
				if srv.multicluster {
					serialDone = make(chan serialSeen, 1)
					go func() { serialDone <- sampleSerial(s.addr, stopSerial) }()
				}
				var profileDone chan error
				profilePath := ""
				if b.cfg.profile && srv.multicluster && wi == len(plan.rates)-1 && round == 0 {
					profilePath = filepath.Join(b.dir, "cpu-churn.pprof")
					if b.cfg.profileDir != "" {
						if err := os.MkdirAll(b.cfg.profileDir, 0o755); err == nil {
							profilePath = filepath.Join(b.cfg.profileDir, "cpu-churn.pprof")
						}
					}
					profileDone = make(chan error, 1)
					go func() { profileDone <- s.profile(ctx, max(time.Second, plan.window-2*time.Second), profilePath) }()
				}
				cpu0, wait0 := s.cpuTime0(), runDelay(s.proc.Pid)
				api0 := controlPlaneCPU()
				roll := startRolling(ctx, c, slots, rate, plan.workers, addrs)
				probes, watchLags := make(chan []time.Duration, 1), make(chan []time.Duration, 1)
				var events *eventClock
				if srv.multicluster {
					if events, err = watchEvents(ctx, c, nsScaleHeadless); err != nil {
						return err
					}
				}
				var probeMisses atomic.Int64
				churned, queries, _, err := timeLookups(ctx, s.addr, names, plan.window, func(stop <-chan struct{}) int {
					if !srv.multicluster {
						probes <- nil
						watchLags <- nil
						return pollName(s.addr, poll, stop)
					}
					ds, lags, queries, misses := probePropagation(s.addr, roll, events, plan.probes, stop)
					probes <- ds
					watchLags <- lags
					probeMisses.Store(int64(misses))
					return queries
				})
				w.cpuChurn += s.cpuTime0() - cpu0
				w.waitChurn += runDelay(s.proc.Pid) - wait0
				rolled := roll.stop()
				w.apiCPU += controlPlaneCPU() - api0
				w.queriesChurn += queries
				w.updates, w.dropped, w.errors, w.took = w.updates+rolled.updates, w.dropped+rolled.dropped, w.errors+rolled.errors, w.took+rolled.took
				if w.firstErr == "" {
					w.firstErr = rolled.firstErr
				}
				writes = append(writes, rolled.writes...)
				w.propagation = append(w.propagation, <-probes...)
				w.watchLag = append(w.watchLag, <-watchLags...)
				if events != nil {
					events.stop()
				}
				w.probeMisses += int(probeMisses.Load())
				close(stopSerial)
				if serialDone != nil {
					seen := <-serialDone
					w.serials, w.serialSamples = w.serials+len(seen.distinct), w.serialSamples+seen.samples
					if seen.samples > 0 && (w.serialSamples == seen.samples || seen.ahead > w.serialAhead) {
						w.serialAhead = seen.ahead
					}
				}
				if err != nil {
					return err
				}
				w.churnN, w.churnLost = w.churnN+churned.timed, w.churnLost+churned.lost
				w.churnRounds = append(w.churnRounds, churned.byKind)
				for k, ds := range churned.byKind {
					churnTimes[k] = append(churnTimes[k], ds...)
				}
				if profileDone != nil {
					if err := <-profileDone; err != nil {
						return fmt.Errorf("churn profile: %w", err)
					}
					out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=25", s.binary, profilePath).CombinedOutput()
					if err != nil {
						return fmt.Errorf("go tool pprof: %v:\n%s", err, out)
					}
					res.profileTop, res.profileRate = strings.TrimSpace(string(out)), strconv.Itoa(rate)
				}
			}
		}
		for k, ds := range idleTimes {
			w.idle[k] = latencyStats{percentile(ds, 50), percentile(ds, 99), percentile(ds, 99.9)}
		}
		for k, ds := range churnTimes {
			w.churn[k] = latencyStats{percentile(ds, 50), percentile(ds, 99), percentile(ds, 99.9)}
		}
		w.write = latencyStats{percentile(writes, 50), percentile(writes, 99), percentile(writes, 99.9)}
		res.windows = append(res.windows, w)
		status("  %s: %d/s asked, %.0f/s acknowledged (%d dropped, %d errors); propagation p50 %s p99 %s (%d probes); local p99 %s -> %s, clusterset p99 %s -> %s (median round ratios %.2f, %.2f); %d distinct SOA serials in %d samples, at most %+d s ahead of the clock",
			srv.name, rate, w.achieved(), w.dropped, w.errors, ms(percentile(w.propagation, 50)), ms(percentile(w.propagation, 99)), len(w.propagation),
			us(w.idle["local"].p99), us(w.churn["local"].p99), us(w.idle["clusterset"].p99), us(w.churn["clusterset"].p99),
			w.roundRatio("local"), w.roundRatio("clusterset"), w.serials, w.serialSamples, w.serialAhead)
	}
	return nil
}

// cpuTime0 is the server's CPU time, or 0 when /proc cannot tell.
func (s *server) cpuTime0() time.Duration {
	d, _ := s.cpuTime()
	return d
}

// roundRatio is the median over rounds of the p99 of kind's lookups during
// churn over that of the round's idle window.
func (w churnWindow) roundRatio(kind string) float64 {
	var rs []float64
	for i := range min(len(w.idleRounds), len(w.churnRounds)) {
		if idle := percentile(w.idleRounds[i][kind], 99); idle > 0 {
			rs = append(rs, float64(percentile(w.churnRounds[i][kind], 99))/float64(idle))
		}
	}
	return median(rs)
}

// coprimeStride returns a step near n/phi that is coprime with n, so that
// i*stride mod n visits every index once, far apart from the one before.
func coprimeStride(n int) int {
	gcd := func(a, b int) int {
		for b != 0 {
			a, b = b, a%b
		}
		return a
	}
	for s := max(1, n*618/1000); s < 2*n+2; s++ {
		if gcd(s, n) == 1 {
			return s
		}
	}
	return 1
}

// pinLoad pins this process and the etcd and kube-apiserver it started, all
// their threads, to cpus, and returns what undoes it.
func pinLoad(cpus string) (restore func(), err error) {
	all := fmt.Sprintf("0-%d", runtime.NumCPU()-1)
	pids := append([]int{os.Getpid()}, childrenNamed(os.Getpid(), "etcd", "kube-apiserver")...)
	if len(pids) < 3 {
		return nil, fmt.Errorf("pinning the load: etcd and kube-apiserver not found among the processes %d started", os.Getpid())
	}
	set := func(to string, pids []int) error {
		for _, pid := range pids {
			if out, err := exec.Command("taskset", "-a", "-p", "-c", to, strconv.Itoa(pid)).CombinedOutput(); err != nil {
				return fmt.Errorf("taskset -a -p -c %s %d: %v: %s", to, pid, err, out)
			}
		}
		return nil
	}
	if err := set(cpus, pids); err != nil {
		return nil, err
	}
	return func() {
		// The API server may have been restarted meanwhile: its new
		// process inherited nothing from here.
		_ = set(all, append([]int{os.Getpid()}, childrenNamed(os.Getpid(), "etcd", "kube-apiserver")...))
	}, nil
}

// raisedPriority is the SCHED_FIFO priority of coredns and of the lookup
// client's thread in the churn phase: ahead of every ordinary process on
// their CPUs, the machine's other work included (the kernel still keeps 5%
// of each CPU for those, sched_rt_runtime_us). Where that is not allowed,
// they run at nice raisedNice instead.
const (
	raisedPriority = 10
	raisedNice     = -10
)

// raisePriority raises one thread (or a process's first thread), and says
// how: "SCHED_FIFO", "nice" or "" when neither was allowed.
func raisePriority(tid int) string {
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: raisedPriority}
	if unix.SchedSetAttr(tid, &attr, 0) == nil {
		return "SCHED_FIFO"
	}
	if syscall.Setpriority(syscall.PRIO_PROCESS, tid, raisedNice) == nil {
		return "nice"
	}
	return ""
}

// raiseProcess raises every thread of process pid (threads it starts later
// inherit the policy of the thread that starts them), and says how.
func raiseProcess(pid int) string {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	how := ""
	for _, t := range tasks {
		if tid, err := strconv.Atoi(filepath.Base(t)); err == nil {
			if h := raisePriority(tid); how == "" || h != how {
				how = h
			}
		}
	}
	return how
}

// runDelay is the time the threads of process pid have waited on a run
// queue (the second field of /proc/PID/task/TID/schedstat), over all its
// threads, living ones.
func runDelay(pid int) time.Duration {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var total int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) >= 2 {
			if v, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				total += v
			}
		}
	}
	return time.Duration(total)
}

// controlPlaneCPU is the CPU time the etcd and kube-apiserver this process
// started have used.
func controlPlaneCPU() time.Duration {
	var total time.Duration
	for _, pid := range childrenNamed(os.Getpid(), "etcd", "kube-apiserver") {
		if d, err := procCPU(pid); err == nil {
			total += d
		}
	}
	return total
}

// childrenNamed returns the descendants of pid whose command is one of
// names (the control plane's processes may be started through a wrapper).
func childrenNamed(pid int, names ...string) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			child, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", child))
			if err == nil && slices.Contains(names, strings.TrimSpace(string(comm))) {
				out = append(out, child)
			}
			out = append(out, childrenNamed(child, names...)...)
		}
	}
	return out
}

// rolling is the writers of one churn window.
type rolling struct {
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	began    time.Time
	end      atomic.Int64 // UnixNano the window ended; 0 while it runs
	mu       sync.Mutex
	updates  int
	dropped  atomic.Int64
	errors   int
	firstErr string
	writes   []time.Duration
	// wantProbe asks the next acknowledged write to be handed to probe.
	wantProbe atomic.Bool
	probe     chan probeTarget
}

type probeTarget struct {
	name, ip, rv string
	acked        time.Time
}

type rolled struct {
	updates, errors int
	dropped         int
	firstErr        string
	took            time.Duration
	writes          []time.Duration
}

// startRolling updates slots at rate a second with workers writers: each
// update moves one endpoint of one slice (the next in the slice, in turn)
// to a new address, as a rolling update replaces one pod at a time. Slices
// are taken in turn. An update due while every writer is busy is dropped
// and counted: the rate achieved is what the API server took.
func startRolling(ctx context.Context, c *cluster, slots []*churnSlot, rate, workers int, addrs *atomic.Uint32) *rolling {
	// Only the pacer stops at the end of the window: writes under way
	// finish (an update cut off might or might not be applied), and
	// count when acknowledged within the window.
	pacing, cancel := context.WithCancel(ctx)
	r := &rolling{cancel: cancel, began: time.Now(), probe: make(chan probeTarget, 1)}
	due := make(chan struct{}, workers)
	var next atomic.Int64
	for range workers {
		r.wg.Go(func() {
			for range due {
				if r.end.Load() != 0 {
					continue // due within the window, not sent in it
				}
				slot := slots[int(next.Add(1)-1)%len(slots)]
				r.update(ctx, c, slot, addrs)
			}
		})
	}
	r.wg.Go(func() {
		defer close(due)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		sent := 0
		for {
			select {
			case <-pacing.Done():
				return
			case now := <-t.C:
				for want := int(now.Sub(r.began).Seconds() * float64(rate)); sent < want; sent++ {
					select {
					case due <- struct{}{}:
					default:
						r.dropped.Add(1)
					}
				}
			}
		}
	})
	return r
}

func (r *rolling) update(ctx context.Context, c *cluster, slot *churnSlot, addrs *atomic.Uint32) {
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if slot.stale {
		fresh, err := c.kube.DiscoveryV1().EndpointSlices(slot.es.Namespace).Get(ctx, slot.es.Name, meta.GetOptions{})
		if err != nil {
			return
		}
		slot.es, slot.stale = fresh, false
	}
	es := slot.es
	j := slot.gen % len(es.Endpoints)
	slot.gen++
	a := addrs.Add(1) // a new address in 10.128.0.0/9, apart from the steps' 10.0.0.0/9
	ip := fmt.Sprintf("10.%d.%d.%d", 128+(a>>16)&127, (a>>8)&255, a&255)
	es.Endpoints[j].Addresses = []string{ip}
	start := time.Now()
	got, err := c.kube.DiscoveryV1().EndpointSlices(es.Namespace).Update(ctx, es, meta.UpdateOptions{})
	acked := time.Now()
	if ctx.Err() != nil {
		slot.stale = true
		return
	}
	ended := r.end.Load()
	r.mu.Lock()
	if err != nil {
		r.errors++
		if r.firstErr == "" {
			r.firstErr = err.Error()
		}
	} else if ended == 0 || acked.UnixNano() <= ended {
		r.updates++
		r.writes = append(r.writes, acked.Sub(start))
	}
	r.mu.Unlock()
	if err != nil {
		slot.stale = true
		return
	}
	slot.es = got
	if r.wantProbe.CompareAndSwap(true, false) {
		r.probe <- probeTarget{name: hostNameOf(got, ip), ip: ip, rv: got.ResourceVersion, acked: acked}
	}
}

// stop ends the window and returns what the writers did in it.
func (r *rolling) stop() rolled {
	took := time.Since(r.began)
	r.end.Store(time.Now().UnixNano())
	r.cancel()
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return rolled{updates: r.updates, errors: r.errors, dropped: int(r.dropped.Load()), firstErr: r.firstErr, took: took, writes: r.writes}
}

// hostNameOf is the clusterset name of the endpoint with address ip, which
// has no hostname, in slice es.
func hostNameOf(es *discovery.EndpointSlice, ip string) string {
	return strings.ReplaceAll(ip, ".", "-") + "." + es.Labels[mcsv1beta1.LabelSourceCluster] + "." +
		es.Labels[mcsv1beta1.LabelServiceName] + "." + es.Namespace + ".svc.clusterset.local."
}

// expectEndpoint checks that the endpoint ip of es answers.
func expectEndpoint(s *server, es *discovery.EndpointSlice, ip string) error {
	c, err := newDNSClient(s.addr)
	if err != nil {
		return err
	}
	defer c.close()
	name := hostNameOf(es, ip)
	rcode, ips, err := c.a(name)
	if err != nil {
		return err
	}
	if rcode != dns.RcodeSuccess || !slices.Equal(ips, []string{ip}) {
		return fmt.Errorf("%s: %s %v, want %s", name, dns.RcodeToString[rcode], ips, ip)
	}
	return nil
}

// expectOneA checks that name answers one address.
func expectOneA(s *server, name string) error {
	c, err := newDNSClient(s.addr)
	if err != nil {
		return err
	}
	defer c.close()
	rcode, ips, err := c.a(name)
	if err != nil {
		return err
	}
	if rcode != dns.RcodeSuccess || len(ips) != 1 {
		return fmt.Errorf("%s: %s %v, want one address", name, dns.RcodeToString[rcode], ips)
	}
	return nil
}

// probePropagation asks for one acknowledged write at a time, at most n,
// and polls its endpoint's name every pollEvery until coredns answers the
// new address: the delay from the acknowledgement to that answer. It
// returns the delays, the queries it sent and the changes not seen within
// propagationTimeout.
func probePropagation(addr string, r *rolling, events *eventClock, n int, stop <-chan struct{}) (ds, lags []time.Duration, queries, misses int) {
	c, err := newDNSClient(addr)
	if err != nil {
		return nil, nil, 0, 0
	}
	defer c.close()
	for len(ds)+misses < n {
		r.wantProbe.Store(true)
		var t probeTarget
		select {
		case <-stop:
			return ds, lags, queries, misses
		case t = <-r.probe:
		}
		seen := false
		for time.Since(t.acked) < propagationTimeout {
			rcode, ips, err := c.a(t.name)
			queries++
			if err == nil && rcode == dns.RcodeSuccess && slices.Equal(ips, []string{t.ip}) {
				ds = append(ds, time.Since(t.acked))
				seen = true
				break
			}
			time.Sleep(pollEvery)
		}
		if !seen {
			misses++
			continue
		}
		if at, ok := events.wait(t.rv, t.acked.Add(propagationTimeout)); ok {
			lags = append(lags, max(0, at.Sub(t.acked)))
		}
	}
	return ds, lags, queries, misses
}

// eventClock records when this command's own watch of EndpointSlices
// receives each resourceVersion: the API server's share of propagation.
type eventClock struct {
	mu   sync.Mutex
	at   map[string]time.Time
	stop func()
}

// watchEvents watches the EndpointSlices of ns from now on.
func watchEvents(ctx context.Context, c *cluster, ns string) (*eventClock, error) {
	list, err := c.kube.DiscoveryV1().EndpointSlices(ns).List(ctx, meta.ListOptions{Limit: 1})
	if err != nil {
		return nil, err
	}
	w, err := c.kube.DiscoveryV1().EndpointSlices(ns).Watch(ctx, meta.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		return nil, err
	}
	e := &eventClock{at: map[string]time.Time{}, stop: w.Stop}
	go func() {
		for ev := range w.ResultChan() {
			if es, ok := ev.Object.(*discovery.EndpointSlice); ok {
				now := time.Now()
				e.mu.Lock()
				e.at[es.ResourceVersion] = now
				e.mu.Unlock()
			}
		}
	}()
	return e, nil
}

// wait returns when resourceVersion rv arrived, waiting for it until
// deadline.
func (e *eventClock) wait(rv string, deadline time.Time) (time.Time, bool) {
	for {
		e.mu.Lock()
		at, ok := e.at[rv]
		e.mu.Unlock()
		if ok || time.Now().After(deadline) {
			return at, ok
		}
		time.Sleep(pollEvery)
	}
}

// pollName asks name every pollEvery until stop: the idle window's stand-in
// for the probes.
func pollName(addr, name string, stop <-chan struct{}) int {
	c, err := newDNSClient(addr)
	if err != nil {
		return 0
	}
	defer c.close()
	queries := 0
	for {
		select {
		case <-stop:
			return queries
		default:
		}
		_, _, _ = c.a(name)
		queries++
		time.Sleep(pollEvery)
	}
}

// churnLookupRate is the pace of the lookup client, queries a second (at
// most: one waits for the answer before the next).
const churnLookupRate = 2000

// lookupTimes are the round trips of one window's lookups, by kind.
type lookupTimes struct {
	byKind      map[string][]time.Duration
	timed, lost int
}

// timeLookups asks names, the kinds in turn, one query at a time, for d,
// while beside runs (until its stop channel closes); it returns the round
// trips by kind, and the queries sent by both. Every answer must be one
// address.
func timeLookups(ctx context.Context, addr string, names map[string][]string, d time.Duration, beside func(stop <-chan struct{}) int) (lookupTimes, int, bool, error) {
	stop := make(chan struct{})
	besideQueries := make(chan int, 1)
	go func() { besideQueries <- beside(stop) }()
	type loopOut struct {
		lt  lookupTimes
		kts bool
		err error
	}
	done := make(chan loopOut, 1)
	go func() {
		// A thread of its own, ahead of the load on its CPU: a query sent
		// late would count as a slow answer. The goroutine ends locked,
		// so the thread ends with it.
		runtime.LockOSThread()
		raisePriority(syscall.Gettid())
		lt, kts, err := lookupLoop(ctx, addr, names, d)
		done <- loopOut{lt, kts, err}
	}()
	out := <-done
	lt, kts, err := out.lt, out.kts, out.err
	close(stop)
	q := <-besideQueries
	return lt, q + lt.timed + lt.lost, kts, err
}

func lookupLoop(ctx context.Context, addr string, names map[string][]string, d time.Duration) (lookupTimes, bool, error) {
	lt := lookupTimes{byKind: map[string][]time.Duration{}}
	c, err := newStampedClient(addr)
	if err != nil {
		return lt, false, err
	}
	defer c.close()
	kinds := slices.Sorted(func(yield func(string) bool) {
		for k := range names {
			if !yield(k) {
				return
			}
		}
	})
	start := time.Now()
	end := start.Add(d)
	for i := 0; time.Now().Before(end) && ctx.Err() == nil; i++ {
		// Paced: the client must not take the CPU the API server needs.
		if next := start.Add(time.Duration(i) * time.Second / churnLookupRate); time.Until(next) > 0 {
			time.Sleep(time.Until(next))
		}
		kind := kinds[i%len(kinds)]
		list := names[kind]
		name := list[(i/len(kinds))%len(list)]
		rtt, r, err := c.exchange(name)
		var netErr net.Error
		if errors.As(err, &netErr) && netErr.Timeout() {
			lt.lost++
			continue
		}
		if err != nil {
			return lt, c.kernel, fmt.Errorf("%s: %w", name, err)
		}
		if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
			return lt, c.kernel, fmt.Errorf("%s: rcode %s, %d answers", name, dns.RcodeToString[r.Rcode], len(r.Answer))
		}
		lt.byKind[kind] = append(lt.byKind[kind], rtt)
		lt.timed++
	}
	return lt, c.kernel, ctx.Err()
}

// stampedClient asks single A queries over UDP and times each from just
// before the send to the kernel's receive timestamp of the answer, when the
// kernel gives one (kernel true).
type stampedClient struct {
	conn   *net.UDPConn
	kernel bool
	id     uint16
	buf    []byte
	oob    []byte
}

func newStampedClient(addr string) (*stampedClient, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	conn, err := net.DialUDP("udp", nil, ua)
	if err != nil {
		return nil, err
	}
	c := &stampedClient{conn: conn, buf: make([]byte, 65535), oob: make([]byte, 128)}
	if rc, err := conn.SyscallConn(); err == nil {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
		}); err == nil && serr == nil {
			c.kernel = true
		}
	}
	return c, nil
}

func (c *stampedClient) close() { c.conn.Close() }

func (c *stampedClient) exchange(name string) (time.Duration, *dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	c.id++
	m.Id = c.id
	q, err := m.Pack()
	if err != nil {
		return 0, nil, err
	}
	if err := c.conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond)); err != nil {
		return 0, nil, err
	}
	start := time.Now()
	if _, err := c.conn.Write(q); err != nil {
		return 0, nil, err
	}
	for {
		n, oobn, _, _, err := c.conn.ReadMsgUDP(c.buf, c.oob)
		got := time.Now()
		if err != nil {
			return 0, nil, err
		}
		r := new(dns.Msg)
		if err := r.Unpack(c.buf[:n]); err != nil || r.Id != m.Id {
			continue // a late answer to a query that timed out
		}
		if at, ok := kernelStamp(c.oob[:oobn]); ok {
			got = at
		}
		return got.Sub(start), r, nil
	}
}

// kernelStamp returns the SCM_TIMESTAMPNS of a received datagram.
func kernelStamp(oob []byte) (time.Time, bool) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}, false
	}
	for _, m := range msgs {
		if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
			sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))   // #nosec G115 -- a timespec
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16])) // #nosec G115 -- a timespec
			return time.Unix(sec, nsec), true
		}
	}
	return time.Time{}, false
}

// serialEvery is how often the SOA serial is asked during churn.
const serialEvery = 100 * time.Millisecond

type serialSeen struct {
	distinct map[uint32]bool
	samples  int
	ahead    int64 // the most the serial was ahead of the wall clock, in seconds
}

// sampleSerial asks the clusterset zone's SOA serial every serialEvery
// until stop.
func sampleSerial(addr string, stop <-chan struct{}) serialSeen {
	seen := serialSeen{distinct: map[uint32]bool{}, ahead: math.MinInt64}
	t := time.NewTicker(serialEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return seen
		case <-t.C:
		}
		serial, err := soaSerial(addr)
		now := time.Now().Unix()
		if err != nil {
			continue
		}
		seen.distinct[serial] = true
		seen.samples++
		seen.ahead = max(seen.ahead, int64(serial)-now)
	}
}

// soaSerial returns the serial of the clusterset zone's SOA.
func soaSerial(addr string) (uint32, error) {
	m := new(dns.Msg)
	m.SetQuestion("clusterset.local.", dns.TypeSOA)
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, addr)
	if err != nil {
		return 0, err
	}
	for _, rr := range r.Answer {
		if soa, ok := rr.(*dns.SOA); ok {
			return soa.Serial, nil
		}
	}
	return 0, errors.New("no SOA in the answer")
}

// The targets of the churn phase.
const (
	churnScaleRate        = 1000                   // slice updates per second, sustained
	churnPropagationP99   = 200 * time.Millisecond // from acknowledgement to answer
	churnScaleRatioTarget = 1.10                   // lookup p99 during churn over idle
)

// writeScaleChurn writes the "Churn at scale" subsection.
func (r *results) writeScaleChurn(p func(string, ...any)) {
	if r.scale == nil || r.scale.churn == nil || len(r.scale.churn.windows) == 0 {
		return
	}
	c := r.scale.churn
	p("### Churn at scale\n\n")
	p("Under the last step's ClusterSet (`-scale-size %s`: %d ClusterSetIP imports, %d headless imports with %d endpoints in %d EndpointSlices from %d source clusters), ",
		c.size, c.imports, c.headless, c.endpoints, c.slices, c.clusters)
	p("source clusters roll the endpoints of the headless imports: each update moves one endpoint of one slice to a new address (the slice's next endpoint in turn, as a rolling update replaces one pod at a time), ")
	p("the slices taken in turn in an order that spreads consecutive updates over imports and clusters, by %d concurrent writers paced to the rate asked (an update due while every writer waits for the API server is dropped and counted: the rate acknowledged is what the API server took). ", c.plan.workers)
	p("One coredns process (the scale steps' Corefile: the kubernetes plugin leaves the imports' slices to *multicluster*) serves the whole phase; the control, the same binary without *multicluster*, has stock CoreDNS's Corefile, whose kubernetes plugin handles every slice update. Each rate gets %d rounds of an idle window and a churn window of %s each, the order alternating (idle first, then churn first, ...) so that drift of the machine's load weighs on both alike; ", c.plan.rounds, c.plan.window)
	p("in both, one client asks A of cluster.local names of local Services (answered by *kubernetes*, passed on by *multicluster*) and clusterset.local names of ClusterSetIP imports, in turn, one query at a time, at most %d a second, %d names of each kind. ", churnLookupRate, r.scale.sizes.lookups)
	if c.kernelTimestamps {
		p("A round trip runs from just before the query is sent to the kernel's receive timestamp of the answer (`SO_TIMESTAMPNS`), so time the client waits for its CPU after the answer arrived is not counted. ")
	}
	if c.pinned {
		p("coredns runs on CPU 0 alone (taskset); etcd, kube-apiserver, the writers and the client run on CPU 1, so that the ratio measures what the churn costs coredns, not the API server's share of coredns's CPU (the machine's other work is on both). ")
		switch c.raised {
		case "SCHED_FIFO":
			p("coredns (every thread) and the client's thread run under SCHED_FIFO (priority %d), ahead of the machine's other work, which the scheduler otherwise moves onto CPU 0 when CPU 1 is busy with the API server (the kernel keeps 5%% of each CPU for ordinary processes). ", raisedPriority)
		case "nice":
			p("coredns (every thread) and the client's thread run at nice %d, ahead of the machine's other work, which the scheduler otherwise moves onto CPU 0 when CPU 1 is busy with the API server. ", raisedNice)
		}
	} else {
		p("Nothing is pinned (-pin=false): coredns shares the CPUs with etcd, kube-apiserver and the writers. ")
	}
	p("The run-queue wait is the time coredns's threads were ready to run but waited for a CPU (`/proc/PID/task/*/schedstat`): it tells a slower answer for want of CPU from one the plugin's own work delays. ")
	p("Propagation: during churn, one acknowledged update at a time (at most %d a window) is probed by asking its new endpoint's `host.cluster` name every %s until coredns answers the new address, from the update's acknowledgement; beside it, a watch of this command's own on the slices (from the window's start, on CPU 1 with the API server, not raised) times the update's event from the same acknowledgement: the API server's share, which coredns cannot shorten; ", c.plan.probes, pollEvery)
	p("in the idle window a poller asks an import's name at the same pace, so both windows carry the same extra queries. ")
	p("coredns CPU per 1,000 updates is its CPU time in the churn window over the updates acknowledged, and net of the queries it answered meanwhile at the idle window's CPU per query.\n\n")

	p("| server | asked / s | acknowledged / s | dropped | write errors | API update p50 / p99 | propagation p50 / p99 / max (probes) | of which to this command's watch p50 / p99 | local p50 / p99 / p99.9, idle -> churn | clusterset p50 / p99 / p99.9, idle -> churn | p99 ratio local / clusterset (pooled; median of rounds) | coredns CPU per 1,000 updates (net) | kube-apiserver + etcd CPU per update | coredns run-queue wait per second, idle -> churn | SOA serial during churn: distinct values (samples); most ahead of the clock |\n")
	p("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, w := range c.windows {
		raw, netCPU := w.cpuPer1000()
		prop := "none"
		if len(w.propagation) > 0 {
			prop = fmt.Sprintf("%s / %s / %s (%d", ms(percentile(w.propagation, 50)), ms(percentile(w.propagation, 99)), ms(slices.Max(w.propagation)), len(w.propagation))
			if w.probeMisses > 0 {
				prop += fmt.Sprintf(", %d not seen in %s", w.probeMisses, propagationTimeout)
			}
			prop += ")"
		}
		errs := strconv.Itoa(w.errors)
		if w.firstErr != "" {
			errs += " (first: " + w.firstErr + ")"
		}
		serial := ""
		if w.serialSamples > 0 {
			serial = fmt.Sprintf("%d (%d, every %s, over %s); %+d s", w.serials, w.serialSamples, serialEvery, w.took.Round(time.Second), w.serialAhead)
		}
		lag := ""
		if len(w.watchLag) > 0 {
			lag = ms(percentile(w.watchLag, 50)) + " / " + ms(percentile(w.watchLag, 99))
		}
		p("| %s | %d | %.0f | %d | %s | %s / %s | %s | %s | %s -> %s | %s -> %s | %.2f / %.2f; %.2f / %.2f | %s (%s) | %s | %s -> %s | %s |\n",
			w.server, w.rate, w.achieved(), w.dropped, errs, ms(w.write.p50), ms(w.write.p99), prop, lag,
			lat(w.idle["local"]), lat(w.churn["local"]), lat(w.idle["clusterset"]), lat(w.churn["clusterset"]),
			ratio(w.churn["local"].p99, w.idle["local"].p99), ratio(w.churn["clusterset"].p99, w.idle["clusterset"].p99), w.roundRatio("local"), w.roundRatio("clusterset"),
			raw.Round(time.Millisecond), netCPU.Round(time.Millisecond), us(perUpdate(w.apiCPU, w.updates)),
			ms(perSecond(w.waitIdle, time.Duration(c.plan.rounds)*c.plan.window)), ms(perSecond(w.waitChurn, w.took)), serial)
	}
	p("\n")
	// The verdicts, at the highest rate measured.
	var ours, control []churnWindow
	for _, x := range c.windows {
		if x.server == "coredns-mcs" {
			ours = append(ours, x)
		} else {
			control = append(control, x)
		}
	}
	if len(ours) == 0 {
		return
	}
	w := ours[len(ours)-1]
	best := w
	for _, x := range c.windows {
		if x.achieved() > best.achieved() {
			best = x
		}
	}
	p("Targets (coredns-mcs at the highest rate asked, %d/s): a sustained %d slice updates/s: %.0f/s acknowledged (%s); ", w.rate, churnScaleRate, w.achieved(), verdict(w.achieved(), churnScaleRate))
	if len(w.propagation) > 0 {
		p99 := percentile(w.propagation, 99)
		p("propagation p99 <= %s: %s (%s); ", ms(churnPropagationP99), ms(p99), verdict(float64(churnPropagationP99), float64(p99)))
	}
	lr, cr := ratio(w.churn["local"].p99, w.idle["local"].p99), ratio(w.churn["clusterset"].p99, w.idle["clusterset"].p99)
	p("lookup p99 during churn within %.2fx idle: cluster.local %.2f (%s), clusterset.local %.2f (%s). ", churnScaleRatioTarget, lr, verdict(churnScaleRatioTarget, lr), cr, verdict(churnScaleRatioTarget, cr))
	if len(control) == len(ours) {
		cw := control[len(control)-1]
		p("The control without multicluster, under the same churn: cluster.local p99 %.2fx its idle one; coredns-mcs's ratio over the control's: %.2f. ",
			ratio(cw.churn["local"].p99, cw.idle["local"].p99), lr/max(ratio(cw.churn["local"].p99, cw.idle["local"].p99), 1e-9))
	}
	p("The largest rate acknowledged was %.0f/s (asked %d/s, %s).\n\n", best.achieved(), best.rate, best.server)
	// What 1,000 updates a second would take, from the costs measured.
	if best.updates > 0 && best.apiCPU > 0 {
		apiPer := best.apiCPU / time.Duration(best.updates)
		p("Extrapolation: kube-apiserver and etcd used %s of CPU per acknowledged update (at %.0f/s), so %d updates/s take %.1f CPUs for them alone; ",
			us(apiPer), best.achieved(), churnScaleRate, float64(apiPer*churnScaleRate)/float64(time.Second))
		if c.pinned {
			p("pinned, they have one CPU, shared with the writers, the lookup client and the machine's other work, ")
		} else {
			p("unpinned, they share the machine's CPUs with coredns, the writers, the lookup client and the machine's other work, ")
		}
		p("which is why the rate acknowledged stops where it does, and why propagation, which includes the API server's delivery of the watch event, grows once updates queue there. ")
		_, ourNet := w.cpuPer1000()
		p("coredns used %s of CPU per 1,000 updates net of the queries it answered (%s at %.0f/s)", ourNet.Round(time.Millisecond), w.server, w.achieved())
		if len(control) == len(ours) {
			_, ctlNet := control[len(control)-1].cpuPer1000()
			p(", the control without multicluster %s: the difference (ours, where *multicluster* handles the imports' slices instead of *kubernetes*, less the control, where *kubernetes* handles them) is %s per 1,000 updates, %.0f%% of a CPU at %d updates/s",
				ctlNet.Round(time.Millisecond), (ourNet - ctlNet).Round(time.Millisecond), 100*float64(ourNet-ctlNet)/float64(time.Second), churnScaleRate)
		}
		p("; coredns as a whole would use %.0f%% of a CPU at %d updates/s.\n\n", 100*float64(ourNet)/float64(time.Second), churnScaleRate)
	}
	if w.serialSamples > 0 {
		p("The SOA serial, asked every %s during churn, took %d distinct values in %s of churn at %.0f updates/s (changes coalesce: at most one a second), and was never more than %d s ahead of the clock (%s).\n\n",
			serialEvery, w.serials, w.took.Round(time.Second), w.achieved(), max(0, w.serialAhead), verdict(1, float64(w.serialAhead)))
	}
	if c.profileTop != "" {
		p("CPU profile of coredns during the %s/s churn window (lookups and probes beside it):\n\n```\n%s\n```\n\n", c.profileRate, c.profileTop)
	}
}

// perUpdate is d per update.
func perUpdate(d time.Duration, updates int) time.Duration {
	if updates == 0 {
		return 0
	}
	return d / time.Duration(updates)
}

// perSecond is d per second of window.
func perSecond(d, window time.Duration) time.Duration {
	if window <= 0 {
		return 0
	}
	return time.Duration(float64(d) / window.Seconds())
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// scaleChurnOnly builds the last step's ClusterSet on an API server of its
// own, with no measurement of the steps, and runs the churn phase alone
// (-scale-churn-only).
func (b *bench) scaleChurnOnly(ctx context.Context) error {
	sizes, err := churnSizesFor(b.cfg.scaleSize)
	if err != nil {
		return err
	}
	b.res.scale = &scaleResults{sizes: sizes}
	b.phase("scale churn: control plane")
	cp, c, stop, err := b.startControlPlane(ctx, "scale churn ("+sizes.name+"): ")
	if err != nil {
		return err
	}
	defer stop()
	for _, ns := range []string{nsScaleImports, nsScaleHeadless, nsScaleLocal} {
		if err := c.namespace(ctx, ns); err != nil {
			return err
		}
	}
	imports, endpoints := sizes.imports[len(sizes.imports)-1], sizes.endpoints[len(sizes.endpoints)-1]
	b.phase(fmt.Sprintf("scale churn: create %d imports, %d endpoints", imports, endpoints))
	status("scale churn: creating %d local Services, %d imports, %d headless imports, %d endpoints", scaleLocal, imports, sizes.headless, endpoints)
	if err := c.createServices(ctx, nsScaleLocal, "local", 0, scaleLocal, false); err != nil {
		return err
	}
	if err := c.createImports(ctx, nsScaleImports, "imp", 0, imports); err != nil {
		return err
	}
	if err := c.createHeadlessImports(ctx, sizes.headless); err != nil {
		return err
	}
	if _, err := c.createSlices(ctx, newEndpointPlan(sizes), 0, endpoints); err != nil {
		return err
	}
	return b.scaleChurnRun(ctx, cp.Kubeconfig, c, imports, endpoints)
}

// spliceSubsection returns doc with the subsection "### title" of its
// "## Scale" section replaced by sub (or added before the section's
// "### Relist spike", or at its end).
func spliceSubsection(doc, title, sub string) string {
	const scale = "## Scale\n"
	i := strings.Index(doc, scale)
	if i < 0 {
		return spliceSection(doc, scale+"\n"+sub)
	}
	end := len(doc)
	if j := strings.Index(doc[i+len(scale):], "\n## "); j >= 0 {
		end = i + len(scale) + j + 1
	}
	section := doc[i:end]
	head := "### " + title + "\n"
	switch k := strings.Index(section, head); {
	case k >= 0:
		rest := section[k+len(head):]
		if n := strings.Index(rest, "\n### "); n >= 0 {
			section = section[:k] + sub + rest[n+1:]
		} else {
			section = section[:k] + sub
		}
	case strings.Contains(section, "### Relist spike\n"):
		k := strings.Index(section, "### Relist spike\n")
		section = section[:k] + sub + section[k:]
	default:
		section += sub
	}
	return doc[:i] + section + doc[end:]
}
