package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coredns-mcs/coredns-mcs/test/internal/process"
)

// startSideBySide starts our coredns and, with -stock, stock CoreDNS on its
// own objects beside it, both against kubeconfig, their names ending in
// suffix; objects says what each one holds. The caller stops the servers.
func (b *bench) startSideBySide(ctx context.Context, kubeconfig, suffix string, imports, endpoints int) (servers []*server, objects []string, err error) {
	start := func(name, binary, corefile string) (*server, error) {
		return startServer(ctx, serverOptions{binary: binary, dir: b.dir, name: name + suffix, corefile: corefile,
			kubeconfig: kubeconfig, readyTimeout: 10 * time.Minute, settleEvery: b.res.scale.sizes.settleEvery})
	}
	ours, err := start("coredns-mcs", b.cfg.coredns, corefileShipped)
	if err != nil {
		return nil, nil, err
	}
	servers = []*server{ours}
	objects = []string{fmt.Sprintf("%d imports, %d endpoints, %d + %d Services", imports, endpoints, imports, scaleLocal)}
	if b.cfg.stock != "" {
		stock, err := start("stock CoreDNS", b.cfg.stock, corefileWithout)
		if err != nil {
			_ = ours.stop()
			return nil, nil, err
		}
		servers = append(servers, stock)
		// Its kubernetes plugin caches every EndpointSlice, those of
		// imports included.
		objects = append(objects, fmt.Sprintf("%d + %d Services, the %d endpoints' slices", imports, scaleLocal, endpoints))
	}
	return servers, objects, nil
}

// startLimited starts our coredns against kubeconfig with the GOMEMLIMIT it
// would set itself (memlimit.Fraction, 90%) in a container whose memory
// limit is what docs/deploy.md's rule gives the relist rounds' objects
// (ruleLimit); it returns the server, that GOMEMLIMIT and that limit.
func (b *bench) startLimited(ctx context.Context, kubeconfig, name string, imports, endpoints int) (s *server, soft, limit uint64, err error) {
	limit = ruleLimit(b.relistObjects(imports), endpoints)
	soft = uint64(0.9 * float64(limit))
	s, err = startServer(ctx, serverOptions{binary: b.cfg.coredns, dir: b.dir, name: name, corefile: corefileShipped,
		kubeconfig: kubeconfig, readyTimeout: 10 * time.Minute, env: []string{fmt.Sprintf("GOMEMLIMIT=%d", soft)},
		settleEvery: b.res.scale.sizes.settleEvery})
	return s, soft, limit, err
}

// The memory rule of docs/deploy.md (Memory), for the shipped Corefile:
// steady MiB = ruleBaseMiB + (Services + ServiceImports) / 1000 x
// rulePerThousandObjects + endpoints of imports / 1000 x
// rulePerThousandEndpoints, limit ruleLimitFactor x steady.
// TestMemoryRuleOfDocs holds them to the document.
const (
	ruleBaseMiB              = 75
	rulePerThousandObjects   = 1.4
	rulePerThousandEndpoints = 0.3
	ruleLimitFactor          = 1.3
)

// ruleSteady is the steady VmRSS, in bytes, the rule gives a server with
// objects Services and ServiceImports and endpoints endpoints of imports.
func ruleSteady(objects, endpoints int) uint64 {
	mib := ruleBaseMiB + float64(objects)/1000*rulePerThousandObjects + float64(endpoints)/1000*rulePerThousandEndpoints
	return uint64(mib * (1 << 20))
}

// ruleLimit is the container memory limit the rule gives the same server.
func ruleLimit(objects, endpoints int) uint64 {
	return uint64(ruleLimitFactor * float64(ruleSteady(objects, endpoints)))
}

// relistObjects is how many Services and ServiceImports the relist rounds'
// servers hold: the imports, ClusterSetIP and headless, the Services of
// bench-scale-stock (one per import) and the local ones.
func (b *bench) relistObjects(imports int) int {
	return imports + b.res.scale.sizes.headless + imports + scaleLocal
}

// relistMeter reads the servers' steady VmRSS, then samples it every 20 ms
// for their peak, until stop; the round's other goroutines (the lookup
// client) join its group and its stop.
type relistMeter struct {
	servers []*server
	steady  []uint64
	peaks   []atomic.Uint64
	stopped chan struct{}
	wg      sync.WaitGroup
}

func newRelistMeter(ctx context.Context, servers []*server) (*relistMeter, error) {
	m := &relistMeter{servers: servers, steady: make([]uint64, len(servers)), peaks: make([]atomic.Uint64, len(servers)), stopped: make(chan struct{})}
	for i, s := range servers {
		var err error
		if m.steady[i], _, err = s.settledMemory(ctx, 60*time.Second); err != nil {
			return nil, err
		}
	}
	for i, s := range servers {
		m.wg.Go(func() {
			for {
				if v, err := s.rss(); err == nil && v > m.peaks[i].Load() {
					m.peaks[i].Store(v)
				}
				select {
				case <-m.stopped:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		})
	}
	return m, nil
}

// stop ends the sampling and the goroutines of the round.
func (m *relistMeter) stop() {
	close(m.stopped)
	m.wg.Wait()
}

// settle waits until every server's VmRSS has settled after the relist
// (what names the event in an error).
func (m *relistMeter) settle(ctx context.Context, after string) error {
	for _, s := range m.servers {
		if _, _, err := s.settledMemory(ctx, 90*time.Second); err != nil {
			return fmt.Errorf("%s after %s: %w (exited: %v %v); its log ends with:\n%s", s.name, after, err, s.proc.Exited(), s.proc.Err(), process.LogTail(s.logPath, 40))
		}
	}
	return nil
}

// rows are the round's rows, one a server, with what each holds and how
// long until the API answered again.
func (m *relistMeter) rows(objects []string, back time.Duration) []spikeRow {
	var rows []spikeRow
	for i, s := range m.servers {
		peak := max(m.peaks[i].Load(), m.steady[i])
		rows = append(rows, spikeRow{server: s.name, objects: objects[i], steady: m.steady[i], peak: peak, relistDuration: back})
		status("  %s: steady VmRSS %.1f MiB, peak %.1f MiB (%.2fx)", s.name, mib(m.steady[i]), mib(m.peaks[i].Load()), float64(m.peaks[i].Load())/float64(m.steady[i]))
	}
	return rows
}
