package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"
	"github.com/coredns-mcs/coredns-mcs/test/internal/process"
)

// The API server's side: N replicas of coredns (processes of the plugin's
// informers and the kubernetes plugin's) against one API server, at the
// scale section's first state.

// replicaRow is the API server with n replicas watching.
type replicaRow struct {
	n int
	// apiRSS is kube-apiserver's VmRSS once every replica is ready, and
	// apiRSSBefore before the first started.
	apiRSS, apiRSSBefore uint64
	// apiCPU is the CPU time kube-apiserver spent from the first start to
	// the last replica's Ready.
	apiCPU time.Duration
	// watches is the API server's count of open WATCH requests, with the
	// replicas and without.
	watches, watchesBefore int
	ready                  time.Duration // the slowest replica's start-up
	// notReady counts the replicas not ready after replicaReadyTimeout,
	// and why the first was not.
	notReady int
	why      string
}

// replicaReadyTimeout bounds the wait for each replica's /ready.
const replicaReadyTimeout = 3 * time.Minute

var watchGauge = regexp.MustCompile(`(?m)^apiserver_longrunning_requests\{[^}]*verb="WATCH"[^}]*\} (\d+)`)

// apiWatches sums the API server's open WATCH requests.
func apiWatches(ctx context.Context, c *cluster) (int, error) {
	body, err := c.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, m := range watchGauge.FindAllSubmatch(body, -1) {
		v, _ := strconv.Atoi(string(m[1]))
		n += v
	}
	return n, nil
}

// replicas starts counts[i] coredns processes at once, for each i, and
// reads what the API server spends on them.
func (b *bench) replicas(ctx context.Context, cp *controlplane.ControlPlane, c *cluster, counts []int) error {
	for _, n := range counts {
		b.phase(fmt.Sprintf("scale: %d replicas", n))
		pid := cp.APIServerPID()
		row := replicaRow{n: n}
		var err error
		if row.watchesBefore, err = apiWatches(ctx, c); err != nil {
			return err
		}
		if row.apiRSSBefore, err = procRSS(pid); err != nil {
			return err
		}
		cpu0, err := procCPU(pid)
		if err != nil {
			return err
		}
		servers := make([]*server, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				servers[i], errs[i] = startServer(ctx, serverOptions{binary: b.cfg.coredns, dir: b.dir, name: fmt.Sprintf("replica-%d-%d", n, i),
					corefile: corefileShipped, kubeconfig: cp.Kubeconfig, readyTimeout: replicaReadyTimeout, keepUnready: true})
			})
		}
		wg.Wait()
		stopAll := func() {
			for _, s := range servers {
				if s != nil {
					_ = s.stop()
				}
			}
		}
		for i, err := range errs {
			if err == nil {
				row.ready = max(row.ready, servers[i].readyAfter)
				continue
			}
			if servers[i] == nil || ctx.Err() != nil {
				stopAll()
				return err
			}
			// Running but not ready: counted, and the others measured.
			if row.notReady++; row.why == "" {
				row.why = fmt.Sprintf("/ready answered %s; its log ended with `%s`", servers[i].notReady, lastLine(process.LogTail(servers[i].logPath, 3)))
			}
		}
		cpu1, err := procCPU(pid)
		if err == nil {
			row.apiCPU = cpu1 - cpu0
			row.apiRSS, err = procRSS(pid)
		}
		if err == nil {
			row.watches, err = apiWatches(ctx, c)
		}
		stopAll()
		if err != nil {
			return err
		}
		b.res.scale.replicas = append(b.res.scale.replicas, row)
		status("  %d replicas (%d not ready): kube-apiserver VmRSS %.1f -> %.1f MiB, CPU %s until all ready, WATCH requests %d -> %d",
			n, row.notReady, mib(row.apiRSSBefore), mib(row.apiRSS), row.apiCPU.Round(time.Millisecond), row.watchesBefore, row.watches)
	}
	return nil
}

func (r *results) writeReplicas(p func(string, ...any)) {
	s := r.scale
	if len(s.replicas) == 0 {
		return
	}
	p("### The API server's side\n\n")
	p("At the first state above (%d imports, no endpoints), N replicas of coredns (the same Corefile) start at once against the one API server. ", s.steps[0].imports)
	p("kube-apiserver's VmRSS is read before the first starts and once the last is ready; its CPU time is what it used between; ")
	p("WATCH requests are the API server's own gauge (`apiserver_longrunning_requests{verb=\"WATCH\"}`, summed), before and with the replicas.\n\n")
	p("| replicas | kube-apiserver VmRSS before / with (MiB) | per replica | kube-apiserver CPU until all ready | per replica | WATCH requests before / with | per replica | slowest replica ready after |\n|---|---|---|---|---|---|---|---|\n")
	for _, row := range s.replicas {
		p("| %d | %.1f / %.1f | %.1f MiB | %s | %s | %d / %d | %.1f | %s |\n", row.n, mib(row.apiRSSBefore), mib(row.apiRSS),
			(mib(row.apiRSS)-mib(row.apiRSSBefore))/float64(row.n), row.apiCPU.Round(time.Millisecond), (row.apiCPU / time.Duration(row.n)).Round(time.Millisecond),
			row.watchesBefore, row.watches, float64(row.watches-row.watchesBefore)/float64(row.n), ms(row.ready))
	}
	for _, row := range s.replicas {
		if row.notReady > 0 {
			p("With %d replicas, %d were not ready after %s (the figures are those at that moment); of the first, %s.\n\n", row.n, row.notReady, replicaReadyTimeout, row.why)
		}
	}
	p("\n")
}

// lastLine is the last line of s.
func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}
