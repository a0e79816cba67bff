package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
)

// The cost of the extra hop of the standalone install (docs/platforms.md):
// stock CoreDNS with the recipe in front of coredns-mcs standalone, against
// coredns-mcs swapped in as the cluster DNS, both with kubeadm's cache
// stanza, both forwarding the rest to the same upstream.

const (
	// corefileSwap is coredns-mcs as the cluster DNS: the shipped swap
	// Corefile's plugins, with kubeadm's cache stanza (which caches no
	// cluster.local answer) and the bench's upstream.
	corefileSwap = `.:{{.Port}} {
    ready 127.0.0.1:{{.ReadyPort}}
    pprof 127.0.0.1:{{.PprofPort}}
    multicluster clusterset.local in-addr.arpa ip6.arpa {
        kubeconfig {{.Kubeconfig}}
        fallback cluster.local
    }
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig {{.Kubeconfig}}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    forward . {{.Upstream}}
    cache 30 {
        disable success cluster.local
        disable denial cluster.local
    }
}
`
	// corefileStandalone is manifests/standalone's Corefile.
	corefileStandalone = `.:{{.Port}} {
    ready 127.0.0.1:{{.ReadyPort}}
    pprof 127.0.0.1:{{.PprofPort}}
    prometheus 127.0.0.1:{{.MetricsPort}}
    multicluster clusterset.local in-addr.arpa ip6.arpa {
        kubeconfig {{.Kubeconfig}}
        fallback cluster.local
        standalone
    }
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig {{.Kubeconfig}}
        pods insecure
        ttl 30
    }
    cache 5
}
`
)

// fakeUpstream is the resolver beyond the cluster: A 192.0.2.1 for every
// name under example.org, NXDOMAIN for the rest.
func fakeUpstream() (addr string, stop func(), err error) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		name := q.Question[0].Name
		if strings.HasSuffix(name, ".example.org.") && q.Question[0].Qtype == dns.TypeA {
			m.SetReply(q)
			rr, _ := dns.NewRR(name + " 300 IN A 192.0.2.1")
			m.Answer = []dns.RR{rr}
		} else {
			m.SetRcode(q, dns.RcodeNameError)
		}
		_ = w.WriteMsg(m)
	})}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	return pc.LocalAddr().String(), func() { _ = srv.Shutdown() }, nil
}

// hopResults are the extra hop's figures.
type hopResults struct {
	names                int
	swapLat, frontLat    []time.Duration // sequential A queries of import-only cluster.local names
	missFirst, missAgain map[string][]time.Duration
	standaloneAsked      [2]float64 // requests the standalone server got during the first and the second pass of misses
	comparison           *comparison
}

// latencies asks each name once, one query at a time, rounds times over,
// and returns every round trip.
func latencies(addr string, names []string, rounds int) ([]time.Duration, error) {
	c, err := newDNSClient(addr)
	if err != nil {
		return nil, err
	}
	defer c.close()
	var out []time.Duration
	for range rounds {
		for _, n := range names {
			start := time.Now()
			rcode, ips, err := c.a(n)
			d := time.Since(start)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", n, err)
			}
			if rcode != dns.RcodeSuccess || len(ips) != 1 {
				return nil, fmt.Errorf("%s: rcode %s, %v", n, dns.RcodeToString[rcode], ips)
			}
			out = append(out, d)
		}
	}
	return out, nil
}

// searchMisses looks each external name up as a pod with ndots:5 in
// namespace ns does: the search list first (three NXDOMAINs in
// cluster.local), then the name itself; it returns the time of each whole
// lookup.
func searchMisses(addr, ns string, names []string) ([]time.Duration, error) {
	c, err := newDNSClient(addr)
	if err != nil {
		return nil, err
	}
	defer c.close()
	var out []time.Duration
	for _, n := range names {
		start := time.Now()
		for _, suffix := range []string{ns + ".svc.cluster.local.", "svc.cluster.local.", "cluster.local."} {
			r, err := c.exchangeA(n + "." + suffix)
			if err != nil {
				return nil, err
			}
			if r.Rcode != dns.RcodeNameError {
				return nil, fmt.Errorf("%s.%s: %s, want NXDOMAIN", n, suffix, dns.RcodeToString[r.Rcode])
			}
		}
		rcode, ips, err := c.a(n + ".")
		if err != nil {
			return nil, err
		}
		if rcode != dns.RcodeSuccess || len(ips) != 1 {
			return nil, fmt.Errorf("%s: %s %v", n, dns.RcodeToString[rcode], ips)
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}

// extraHop measures the standalone install against the swap on the
// throughput set's import-only names (fallback).
func (b *bench) extraHop(ctx context.Context, g loadgen, serverCPU string, fallback []string, fallbackQueries string) error {
	if b.cfg.stock == "" {
		status("no stock CoreDNS (-stock): the extra hop is not measured")
		return nil
	}
	upstream, stopUpstream, err := fakeUpstream()
	if err != nil {
		return err
	}
	defer stopUpstream()
	start := func(name, binary, corefile string, extra map[string]string) (*server, error) {
		for k, v := range extra {
			corefile = strings.ReplaceAll(corefile, k, v)
		}
		return startServer(ctx, serverOptions{binary: binary, dir: b.dir, name: name, corefile: corefile,
			kubeconfig: b.cp.Kubeconfig, cpus: serverCPU, readyTimeout: 2 * time.Minute})
	}
	status("the extra hop: coredns-mcs swapped in, and stock CoreDNS in front of coredns-mcs standalone")
	swap, err := start("swap", b.cfg.coredns, corefileSwap, map[string]string{"{{.Upstream}}": upstream})
	if err != nil {
		return err
	}
	defer swap.stop()
	standalone, err := start("standalone", b.cfg.coredns, corefileStandalone, nil)
	if err != nil {
		return err
	}
	defer standalone.stop()
	// The front: what kubectl mcs front writes for kubeadm.
	standIn, err := harness.FreePorts(1)
	if err != nil {
		return err
	}
	corefileFront, _, err := frontCorefiles(standalone.addr, upstream, 0, standIn[0]) // 0: the default read timeout
	if err != nil {
		return err
	}
	front, err := start("front", b.cfg.stock, corefileFront, nil)
	if err != nil {
		return err
	}
	defer front.stop()
	if err := checkSameAnswers(ctx, swap, []*server{front}, fallback); err != nil {
		return err
	}

	h := &hopResults{names: len(fallback), missFirst: map[string][]time.Duration{}, missAgain: map[string][]time.Duration{}}
	b.phase("extra hop: latency")
	for _, s := range []struct {
		srv *server
		out *[]time.Duration
	}{{swap, &h.swapLat}, {front, &h.frontLat}, {swap, &h.swapLat}, {front, &h.frontLat}} {
		lat, err := latencies(s.srv.addr, fallback, 2)
		if err != nil {
			return fmt.Errorf("latency via %s: %w", s.srv.name, err)
		}
		*s.out = append(*s.out, lat...)
	}
	status("  latency of import-only names: swap p50 %s p99 %s; through the forward p50 %s p99 %s",
		us(percentile(h.swapLat, 50)), us(percentile(h.swapLat, 99)), us(percentile(h.frontLat, 50)), us(percentile(h.frontLat, 99)))

	b.phase("extra hop: search-path misses")
	requests := func() float64 { return standalone.metricSum(ctx, "coredns_dns_requests_total") }
	for i, s := range []*server{swap, front} {
		var ext []string
		for j := range 200 {
			ext = append(ext, fmt.Sprintf("ext-%d-%d.example.org", i, j))
		}
		before := requests()
		first, err := searchMisses(s.addr, nsImports, ext)
		if err != nil {
			return fmt.Errorf("search-path misses via %s: %w", s.name, err)
		}
		mid := requests()
		again, err := searchMisses(s.addr, nsImports, ext)
		if err != nil {
			return fmt.Errorf("search-path misses via %s, again: %w", s.name, err)
		}
		h.missFirst[s.name], h.missAgain[s.name] = first, again
		if s == front {
			h.standaloneAsked = [2]float64{mid - before, requests() - mid}
		}
	}

	b.phase("extra hop: QPS")
	h.comparison = &comparison{
		title: "cluster.local A of import-only names: through stock CoreDNS and the forward vs coredns-mcs swapped in",
		a:     target{"swap", swap, fallbackQueries},
		b:     target{"forward to standalone", front, fallbackQueries},
	}
	if err := h.comparison.run(ctx, g, b.cfg.rounds, b.cfg.round); err != nil {
		return err
	}
	b.res.hop = h
	return nil
}

func us(d time.Duration) string { return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond)) }

// writeHop reports the extra hop.
func (r *results) writeHop(p func(string, ...any)) {
	h := r.hop
	if h == nil {
		return
	}
	p("## The extra hop of the standalone install\n\n")
	p("coredns-mcs standalone (manifests/standalone's Corefile) behind stock CoreDNS with kubeadm's Corefile and what kubectl mcs front adds to it (docs/platforms.md), against coredns-mcs swapped in as the cluster DNS; ")
	p("both with kubeadm's cache stanza (no cache of cluster.local answers in its server block; the added cluster.local block caches negative answers), both forwarding other names to the same upstream (a resolver in the benchmark's process). ")
	p("The names are the throughput set's %d import-only names under cluster.local (`imp-N.%s.svc.cluster.local`): ", h.names, nsImports)
	p("through the forward, stock CoreDNS's kubernetes plugin does not know them and forwards them to the standalone server. All servers run on CPU 0 when pinned.\n\n")
	sp99, fp99 := percentile(h.swapLat, 99), percentile(h.frontLat, 99)
	p("Latency, one query at a time, %d queries each (four passes over the names, alternating):\n\n| | p50 | p99 | p99.9 |\n|---|---|---|---|\n", len(h.swapLat))
	p("| swap | %s | %s | %s |\n", us(percentile(h.swapLat, 50)), us(sp99), us(percentile(h.swapLat, 99.9)))
	p("| through the forward | %s | %s | %s |\n\n", us(percentile(h.frontLat, 50)), us(fp99), us(percentile(h.frontLat, 99.9)))
	p("Target: p99 through the forward within 1.5x the swap's: %.2fx, %s.", float64(fp99)/float64(sp99), verdict(1.5, float64(fp99)/float64(sp99)))
	sp50, fp50 := percentile(h.swapLat, 50), percentile(h.frontLat, 50)
	p(" Through the forward a query is a whole lookup in the front (its view expression, its *kubernetes* plugin's miss, forward's exchange) and then one in coredns-mcs, on the same CPU: the p50 is %.2fx the swap's (%s against %s). ", float64(fp50)/float64(sp50), us(fp50), us(sp50))
	p("1.5x at p99 needs the front's share to cost under half of a coredns-mcs lookup.\n\n")
	if c := h.comparison; c != nil {
		p("QPS (dnsperf, as in the Throughput section; CPU per query is the front server's alone):\n\n")
		p("| round | A: %s, QPS | B: %s, QPS | QPS B/A | A: CPU µs/query | B: CPU µs/query |\n|---|---|---|---|---|---|\n", c.a.label, c.b.label)
		for i := range min(len(c.qa), len(c.qb)) {
			p("| %d | %.0f | %.0f | %.3f | %.1f | %.1f |\n", i+1, c.qa[i], c.qb[i], c.qb[i]/c.qa[i], c.ca[i], c.cb[i])
		}
		p("\nMedian QPS ratio B/A: %.3f.\n\n", c.medianRatio())
	}
	p("Search-path misses: a pod with `ndots:5` in `%s` looking up an external name asks three cluster.local names first (NXDOMAIN each), then the name. ", nsImports)
	p("200 distinct names, each looked up twice; the time of each whole lookup:\n\n| | first time p50 | first time p99 | again p50 | again p99 |\n|---|---|---|---|---|\n")
	for _, name := range []string{"swap", "front"} {
		label := map[string]string{"swap": "swap", "front": "through the forward"}[name]
		f, a := h.missFirst[name], h.missAgain[name]
		p("| %s | %s | %s | %s | %s |\n", label, us(percentile(f, 50)), us(percentile(f, 99)), us(percentile(a, 50)), us(percentile(a, 99)))
	}
	p("\nRequests the standalone server got: %.0f during the first lookups (2 per name: the view keeps NAME.cluster.local in the front's own block), %.0f during the second: ", h.standaloneAsked[0], h.standaloneAsked[1])
	p("target, misses answered from the upstream's cache after the first time: %s.\n\n", map[bool]string{true: "met", false: "**missed**"}[h.standaloneAsked[1] == 0])
}

// metricSum returns the sum of every sample of a metric of the server's
// prometheus plugin, or -1.
func (s *server) metricSum(ctx context.Context, name string) float64 {
	body, err := httpGet(ctx, s.metricsURL, 5*time.Second)
	if err != nil {
		return -1
	}
	total := 0.0
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &v); err == nil {
			total += v
		}
	}
	return total
}
