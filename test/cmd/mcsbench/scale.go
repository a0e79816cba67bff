package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"
	"github.com/coredns-mcs/coredns-mcs/test/internal/corefiles"
	"github.com/coredns-mcs/coredns-mcs/test/internal/process"
)

// The scale section: a synthetic ClusterSet on its own API server, grown in
// steps (ClusterSetIP imports, then the EndpointSlices of headless imports
// from up to scaleSizes.clusters source clusters), with coredns started
// afresh at each step; then the relist spike, our coredns and stock CoreDNS
// side by side while their watches expire (watchexpiry.go) and while the
// API server restarts.

const (
	nsScaleImports  = "bench-scale-imports"  // ClusterSetIP imports (bench-* is in the Corefile's fallback scope)
	nsScaleHeadless = "bench-scale-headless" // headless imports and their slices
	nsScaleLocal    = "bench-scale-local"    // ClusterIP Services, for local lookups
	nsScaleStock    = "bench-scale-stock"    // headless Services: stock CoreDNS's objects
	scaleLocal      = 200                    // ClusterIP Services in nsScaleLocal
	scalePerSlice   = 40                     // endpoints per EndpointSlice, at most
)

// scaleSizes is what the section builds.
type scaleSizes struct {
	name      string
	imports   []int // ClusterSetIP imports at each step
	endpoints []int // endpoints of headless imports at each step
	headless  int   // headless imports, all steps
	clusters  int   // source clusters, at most, of one headless import
	biggest   int   // endpoints of the biggest headless import
	lookups   int   // names of each kind timed, per round
	rounds    int   // lookup rounds
	replicas  []int // coredns processes against one API server
	// etcdWatches: the scale run's kube-apiserver has its watch cache off
	// (--watch-cache=false) and serves every list and watch from etcd, so
	// that the watch expiry compacts etcd instead of outwaiting the watch
	// cache's event freshness (watchexpiry.go). The smoke size only: the
	// field's API servers, and the full and medium sizes, keep the cache.
	etcdWatches bool
	// settleEvery is how often the section's servers read VmRSS until it
	// settles (server.settledMemory); 0 means settleInterval, as in the
	// Memory section. The smoke size reads it more often: it checks that
	// memory is measured, not what it is.
	settleEvery time.Duration
}

// scaleSizesFor returns the sizes of "full", the ClusterSet the section is
// meant for, or "small", the smoke test's.
func scaleSizesFor(name string) (scaleSizes, error) {
	switch name {
	case "full":
		return scaleSizes{name: name, imports: []int{10000, 100000}, endpoints: []int{100000, 1000000}, headless: 5000, clusters: 255, biggest: 10000, lookups: 2000, rounds: 5, replicas: []int{1, 10, 30}}, nil
	case "medium":
		return scaleSizes{name: name, imports: []int{10000, 100000}, endpoints: []int{20000, 100000}, headless: 1000, clusters: 255, biggest: 10000, lookups: 2000, rounds: 5, replicas: []int{1, 10, 30}}, nil
	case "small":
		return scaleSizes{name: name, imports: []int{200, 1000}, endpoints: []int{500, 2000}, headless: 20, clusters: 8, biggest: 400, lookups: 100, rounds: 2, replicas: []int{1, 3}, etcdWatches: true, settleEvery: 100 * time.Millisecond}, nil
	}
	return scaleSizes{}, fmt.Errorf("scale size %q: want full, medium or small", name)
}

// scaleStep is one measured state of the ClusterSet.
type scaleStep struct {
	imports, headless, endpoints, slices int
	ready                                time.Duration
	rss, heap                            uint64
	// perImport and perEndpoint are the live heap the objects added since
	// the state before cost, each.
	perImport, perEndpoint float64
	// The same of coredns with the multicluster plugin alone, and of stock
	// CoreDNS (no figures without -stock).
	aloneHeap, stockHeap             uint64
	perImportAlone, perEndpointAlone float64
	perImportStock, perEndpointStock float64
	lookups                          map[string]latencyStats
	create                           time.Duration
}

type latencyStats struct{ p50, p99, p999 time.Duration }

// answerSize is an answer about the biggest headless import.
type answerSize struct {
	qtype, proto string
	records      int
	octets       int
	truncated    bool
	rcode        string
}

// spikeRow is one server through the API server's restart.
type spikeRow struct {
	server         string
	objects        string
	steady, peak   uint64
	relistDuration time.Duration
	// limit is the container memory limit the server's GOMEMLIMIT stands
	// for; 0 without one.
	limit uint64
}

type scaleResults struct {
	sizes             scaleSizes
	baseRSS, baseHeap uint64
	// The empty ClusterSet's live heap of coredns with multicluster alone,
	// and of stock CoreDNS.
	baseAloneHeap, baseStockHeap uint64
	steps                        []scaleStep
	answers                      []answerSize
	spike                        []spikeRow
	spikeQueries                 int
	spikeFailures                int
	spikeTimeouts                int
	spikeGoMemLimit              uint64
	// The Services and ServiceImports, and the endpoints of imports, the
	// relist rounds' servers hold: what the memory rule sizes.
	spikeObjects, spikeEndpoints int
	replicas                     []replicaRow
	spikeFirstFail               string
	expiry                       *expiryResults
	note                         string
	churn                        *scaleChurn // scalechurn.go
}

// scaleRun builds the ClusterSet on an API server of its own, measures, and
// stops it.
func (b *bench) scaleRun(ctx context.Context) error {
	sizes, err := scaleSizesFor(b.cfg.scaleSize)
	if err != nil {
		return err
	}
	res := &scaleResults{sizes: sizes}
	b.res.scale = res
	b.phase("scale: control plane")
	var flags []string
	if sizes.etcdWatches {
		flags = append(flags, "--watch-cache=false")
	}
	cp, c, stop, err := b.startControlPlane(ctx, "scale ("+sizes.name+"): ", flags...)
	if err != nil {
		return err
	}
	defer stop()
	for _, ns := range []string{nsScaleImports, nsScaleHeadless, nsScaleLocal, nsScaleStock} {
		if err := c.namespace(ctx, ns); err != nil {
			return err
		}
	}
	if err := c.createServices(ctx, nsScaleLocal, "local", 0, scaleLocal, false); err != nil {
		return err
	}
	start := func(name string) (*server, error) {
		return startServer(ctx, serverOptions{binary: b.cfg.coredns, dir: b.dir, name: name, corefile: corefileShipped,
			kubeconfig: cp.Kubeconfig, readyTimeout: 10 * time.Minute, settleEvery: sizes.settleEvery})
	}

	// The empty ClusterSet.
	s, err := start("scale-0")
	if err != nil {
		return err
	}
	res.baseRSS, res.baseHeap, err = s.settledMemory(ctx, 30*time.Second)
	_ = s.stop()
	if err != nil {
		return err
	}
	status("  no imports: VmRSS %.1f MiB, live heap %.1f MiB", mib(res.baseRSS), mib(res.baseHeap))
	if res.baseAloneHeap, res.baseStockHeap, err = b.scaleShares(ctx, cp.Kubeconfig, "scale-0", 0); err != nil {
		return err
	}

	headlessMade, imports, endpoints, slicesMade := false, 0, 0, 0
	lastHeap, lastAlone, lastStock := res.baseHeap, res.baseAloneHeap, res.baseStockHeap
	// per is the heap each object added since the last step cost.
	per := func(heap, last uint64, n int) float64 { return float64(int64(heap)-int64(last)) / float64(n) }
	plan := newEndpointPlan(sizes)
	for i := range sizes.imports {
		// ClusterSetIP imports.
		b.phase(fmt.Sprintf("scale: %d imports", sizes.imports[i]))
		status("scale: creating imports %d..%d", imports, sizes.imports[i])
		t0 := time.Now()
		if err := c.createImports(ctx, nsScaleImports, "imp", imports, sizes.imports[i]); err != nil {
			return err
		}
		step := scaleStep{imports: sizes.imports[i], endpoints: endpoints, slices: slicesMade, create: time.Since(t0)}
		if headlessMade {
			step.headless = sizes.headless
		}
		if err := b.scaleMeasure(ctx, start, cp.Kubeconfig, &step, fmt.Sprintf("scale-%d-imports", i), false); err != nil {
			return err
		}
		n := sizes.imports[i] - imports
		step.perImport, step.perImportAlone, step.perImportStock = per(step.heap, lastHeap, n), per(step.aloneHeap, lastAlone, n), per(step.stockHeap, lastStock, n)
		lastHeap, lastAlone, lastStock, imports = step.heap, step.aloneHeap, step.stockHeap, sizes.imports[i]
		res.steps = append(res.steps, step)
		if i == 0 {
			if err := b.replicas(ctx, cp, c, sizes.replicas); err != nil {
				return err
			}
		}

		// Endpoints of headless imports.
		b.phase(fmt.Sprintf("scale: %d endpoints", sizes.endpoints[i]))
		status("scale: creating endpoints %d..%d", endpoints, sizes.endpoints[i])
		t0 = time.Now()
		if !headlessMade {
			if err := c.createHeadlessImports(ctx, sizes.headless); err != nil {
				return err
			}
			headlessMade = true
		}
		made, err := c.createSlices(ctx, plan, endpoints, sizes.endpoints[i])
		if err != nil {
			return err
		}
		slicesMade += made
		step = scaleStep{imports: imports, headless: sizes.headless, endpoints: sizes.endpoints[i], slices: slicesMade, create: time.Since(t0)}
		last := i == len(sizes.imports)-1
		if err := b.scaleMeasure(ctx, start, cp.Kubeconfig, &step, fmt.Sprintf("scale-%d-endpoints", i), last); err != nil {
			return err
		}
		n = sizes.endpoints[i] - endpoints
		step.perEndpoint, step.perEndpointAlone, step.perEndpointStock = per(step.heap, lastHeap, n), per(step.aloneHeap, lastAlone, n), per(step.stockHeap, lastStock, n)
		lastHeap, lastAlone, lastStock, endpoints = step.heap, step.aloneHeap, step.stockHeap, sizes.endpoints[i]
		res.steps = append(res.steps, step)
	}

	// Churn (scalechurn.go).
	if err := b.scaleChurnRun(ctx, cp.Kubeconfig, c, imports, endpoints); err != nil {
		return err
	}

	// The relist spike, with stock CoreDNS beside ours on its own objects:
	// as many Services as there are imports.
	b.phase("scale: relist spike")
	status("scale: creating %d headless Services for stock CoreDNS", imports)
	if err := c.createServices(ctx, nsScaleStock, "svc", 0, imports, true); err != nil {
		return err
	}
	// The watches expire first: the restarts after them need not go right
	// for their rows to be written.
	if err := b.scaleExpiry(ctx, cp, c, imports, endpoints); err != nil {
		return err
	}
	return b.scaleSpike(ctx, cp, imports, endpoints)
}

// scaleMeasure starts coredns on the ClusterSet as it is, and fills step
// with its start-up, memory and lookup latencies; with answers, also the
// answers about the biggest headless import. Then the live heap of the
// multicluster plugin alone and of stock CoreDNS (scaleShares).
func (b *bench) scaleMeasure(ctx context.Context, start func(string) (*server, error), kubeconfig string, step *scaleStep, name string, answers bool) error {
	s, err := start(name)
	if err != nil {
		return err
	}
	defer s.stop()
	step.ready = s.readyAfter
	// Every object is served once the last of each kind answers.
	if step.imports > 0 {
		if err := eventually(ctx, func() error {
			return expectA(s, scaleImportName(step.imports-1, "clusterset"), importIP(step.imports-1))
		}); err != nil {
			return err
		}
	}
	if step.rss, step.heap, err = s.settledMemory(ctx, 60*time.Second); err != nil {
		return err
	}
	sizes := b.res.scale.sizes
	step.lookups = map[string]latencyStats{}
	kinds := []struct {
		kind  string
		names func(int) string
		count int
	}{
		{"clusterset", func(i int) string { return scaleImportName(i, "clusterset") }, step.imports},
		{"fallback", func(i int) string { return scaleImportName(i, "cluster") }, step.imports},
		{"local", func(i int) string { return objectName("local", i) + "." + nsScaleLocal + ".svc.cluster.local." }, scaleLocal},
	}
	for _, k := range kinds {
		if k.count == 0 {
			continue
		}
		var names []string
		for i := range sizes.lookups {
			// Spread over the set.
			names = append(names, k.names(int((int64(i)*7919)%int64(k.count))))
		}
		ds, err := latencies(s.addr, names, sizes.rounds)
		if err != nil {
			return fmt.Errorf("%s lookups: %w", k.kind, err)
		}
		step.lookups[k.kind] = latencyStats{percentile(ds, 50), percentile(ds, 99), percentile(ds, 99.9)}
	}
	status("  %d imports, %d endpoints: ready after %s, VmRSS %.1f MiB, live heap %.1f MiB", step.imports, step.endpoints,
		step.ready.Round(time.Millisecond), mib(step.rss), mib(step.heap))
	if answers {
		b.res.scale.answers, err = bigAnswers(s.addr, scaleHeadlessName(0))
		if err != nil {
			return err
		}
	}
	_ = s.stop()
	step.aloneHeap, step.stockHeap, err = b.scaleShares(ctx, kubeconfig, name, step.imports)
	return err
}

// scaleShares measures, one after the other, the live heap of coredns with
// the multicluster plugin alone (corefileAlone) and of stock CoreDNS (none
// without -stock), each started afresh on the ClusterSet as it is, once
// ready and, for ours, once the last of imports answers.
func (b *bench) scaleShares(ctx context.Context, kubeconfig, name string, imports int) (alone, stock uint64, err error) {
	measure := func(name, binary, corefile string, imports int) (uint64, error) {
		s, err := startServer(ctx, serverOptions{binary: binary, dir: b.dir, name: name, corefile: corefile,
			kubeconfig: kubeconfig, readyTimeout: 10 * time.Minute, settleEvery: b.res.scale.sizes.settleEvery})
		if err != nil {
			return 0, err
		}
		defer s.stop()
		if imports > 0 {
			if err := eventually(ctx, func() error {
				return expectA(s, scaleImportName(imports-1, "clusterset"), importIP(imports-1))
			}); err != nil {
				return 0, err
			}
		}
		_, heap, err := s.settledMemory(ctx, 60*time.Second)
		if err != nil {
			return 0, fmt.Errorf("%s: %w (exited: %v %v); its log ends with:\n%s", name, err, s.proc.Exited(), s.proc.Err(), process.LogTail(s.logPath, 40))
		}
		return heap, nil
	}
	// A server that fails is started again, twice at most: on a machine
	// shared with other servers, the free ports it was given may be taken
	// before it binds them.
	again := func(name, binary, corefile string, imports int) (heap uint64, err error) {
		for range 3 {
			if heap, err = measure(name, binary, corefile, imports); err == nil || ctx.Err() != nil {
				return heap, err
			}
			status("    %v; starting it again", err)
		}
		return 0, err
	}
	if alone, err = again(name+"-alone", b.cfg.coredns, corefileAlone, imports); err != nil {
		return 0, 0, err
	}
	if b.cfg.stock != "" {
		if stock, err = again(name+"-stock", b.cfg.stock, corefileWithout, 0); err != nil {
			return 0, 0, err
		}
	}
	status("    multicluster alone: live heap %.1f MiB; stock CoreDNS: %.1f MiB", mib(alone), mib(stock))
	return alone, stock, nil
}

func scaleImportName(i int, zone string) string {
	return objectName("imp", i) + "." + nsScaleImports + ".svc." + zone + ".local."
}

func scaleHeadlessName(h int) string {
	return objectName("hl", h) + "." + nsScaleHeadless + ".svc.clusterset.local."
}

// expectA checks that name answers exactly ip.
func expectA(s *server, name, ip string) error {
	c, err := newDNSClient(s.addr)
	if err != nil {
		return err
	}
	defer c.close()
	rcode, ips, err := c.a(name)
	if err != nil {
		return err
	}
	if rcode != dns.RcodeSuccess || len(ips) != 1 || ips[0] != ip {
		return fmt.Errorf("%s: %s %v, want %s", name, dns.RcodeToString[rcode], ips, ip)
	}
	return nil
}

// bigAnswers asks A and SRV of name over UDP and TCP.
func bigAnswers(addr, name string) ([]answerSize, error) {
	var out []answerSize
	for _, qtype := range []uint16{dns.TypeA, dns.TypeSRV} {
		for _, proto := range []string{"udp", "tcp"} {
			m := new(dns.Msg)
			m.SetQuestion(name, qtype)
			m.SetEdns0(1232, false)
			c := &dns.Client{Net: proto, Timeout: 5 * time.Second}
			r, _, err := c.Exchange(m, addr)
			if err != nil {
				return nil, fmt.Errorf("%s %s over %s: %w", name, dns.TypeToString[qtype], proto, err)
			}
			r.Compress = true
			out = append(out, answerSize{qtype: dns.TypeToString[qtype], proto: proto, records: len(r.Answer) + len(r.Extra),
				octets: r.Len(), truncated: r.Truncated, rcode: dns.RcodeToString[r.Rcode]})
		}
	}
	return out, nil
}

// endpointPlan spreads the endpoints over the headless imports: import 0
// is the biggest; the others share the rest. Each import's endpoints are in
// slices of at most scalePerSlice endpoints, from as many clusters as that
// takes, up to sizes.clusters, round-robin.
type endpointPlan struct {
	sizes scaleSizes
}

func newEndpointPlan(s scaleSizes) endpointPlan { return endpointPlan{sizes: s} }

// slice k of the whole set: its import, cluster and endpoint count. The
// slices of import 0 come first (biggest/scalePerSlice of them), then the
// others round-robin over imports 1..headless-1.
func (p endpointPlan) slice(k int) (imp, cluster, n int) {
	big := p.sizes.biggest / scalePerSlice
	if k < big {
		return 0, k % p.sizes.clusters, scalePerSlice
	}
	k -= big
	others := p.sizes.headless - 1
	imp = 1 + k%others
	round := k / others
	return imp, (imp + round) % p.sizes.clusters, scalePerSlice
}

// createHeadlessImports creates the headless imports hl-0..hl-(n-1).
func (c *cluster) createHeadlessImports(ctx context.Context, n int) error {
	return c.parallel(ctx, 0, n, func(ctx context.Context, i int) error {
		si := newImport(nsScaleHeadless, objectName("hl", i))
		si.Spec.Type = mcsv1beta1.Headless
		_, err := c.mcs.MulticlusterV1beta1().ServiceImports(nsScaleHeadless).Create(ctx, si, meta.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

// createSlices creates the slices of the plan that hold endpoints from..to,
// and returns how many.
func (c *cluster) createSlices(ctx context.Context, p endpointPlan, from, to int) (int, error) {
	first, last := from/scalePerSlice, (to+scalePerSlice-1)/scalePerSlice
	yes := true
	err := c.parallel(ctx, first, last, func(ctx context.Context, k int) error {
		imp, cl, n := p.slice(k)
		cluster := fmt.Sprintf("cluster-%03d", cl)
		es := &discovery.EndpointSlice{
			ObjectMeta: meta.ObjectMeta{Namespace: nsScaleHeadless, Name: fmt.Sprintf("hl-%d-%s-%d", imp, cluster, k),
				Labels: map[string]string{mcsv1beta1.LabelServiceName: objectName("hl", imp), mcsv1beta1.LabelSourceCluster: cluster,
					discovery.LabelManagedBy: "mcsbench"}},
			AddressType: discovery.AddressTypeIPv4,
			Ports:       []discovery.EndpointPort{{Name: ptrTo("http"), Protocol: ptrTo(corev1.ProtocolTCP), Port: ptrTo[int32](80)}},
		}
		for e := range n {
			a := k*scalePerSlice + e // a distinct address per endpoint, in 10.0.0.0/9
			es.Endpoints = append(es.Endpoints, discovery.Endpoint{
				Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", (a>>16)&127, (a>>8)&255, a&255)},
				Conditions: discovery.EndpointConditions{Ready: &yes},
			})
		}
		_, err := c.kube.DiscoveryV1().EndpointSlices(nsScaleHeadless).Create(ctx, es, meta.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	return last - first, err
}

func ptrTo[T any](v T) *T { return &v }

// scaleSpike restarts the API server under the full ClusterSet, twice:
// first with our coredns and stock CoreDNS running, then with our coredns
// alone under a GOMEMLIMIT, as internal/memlimit sets it for a container
// whose memory limit is what docs/deploy.md's rule gives the objects
// (ruleLimit). Each server's VmRSS is sampled every 20 ms, and our coredns is
// asked clusterset names all along: every answer must be the import's
// address.
func (b *bench) scaleSpike(ctx context.Context, cp *controlplane.ControlPlane, imports, endpoints int) error {
	res := b.res.scale
	servers, objects, err := b.startSideBySide(ctx, cp.Kubeconfig, "", imports, endpoints)
	if err != nil {
		return err
	}
	defer func() {
		for _, s := range servers {
			_ = s.stop()
		}
	}()
	rows, err := b.spikeRound(ctx, cp, servers, objects)
	if err != nil {
		return err
	}
	res.spike = append(res.spike, rows...)
	for _, s := range servers {
		_ = s.stop()
	}

	res.spikeObjects, res.spikeEndpoints = b.relistObjects(imports), endpoints
	limited, soft, limit, err := b.startLimited(ctx, cp.Kubeconfig, "coredns-mcs-gomemlimit", imports, endpoints)
	if err != nil {
		return err
	}
	defer limited.stop()
	res.spikeGoMemLimit = soft
	rows, err = b.spikeRound(ctx, cp, []*server{limited}, objects[:1])
	for i := range rows {
		rows[i].server = fmt.Sprintf("coredns-mcs, GOMEMLIMIT %.0f MiB", mib(soft))
		rows[i].limit = limit
	}
	res.spike = append(res.spike, rows...)
	return err
}

// spikeLimit is the target peak of a relist, as a multiple of the steady
// VmRSS.
const spikeLimit = 1.3

// spikeRound restarts kube-apiserver with servers running, the first of
// them our coredns, and returns each one's steady and peak VmRSS.
func (b *bench) spikeRound(ctx context.Context, cp *controlplane.ControlPlane, servers []*server, objects []string) ([]spikeRow, error) {
	res := b.res.scale
	ours := servers[0]
	m, err := newRelistMeter(ctx, servers)
	if err != nil {
		return nil, err
	}
	var queries, failures, timeouts atomic.Int64
	var firstFail atomic.Value
	imports := b.res.scale.steps[len(b.res.scale.steps)-1].imports
	m.wg.Go(func() {
		c, err := newDNSClient(ours.addr)
		if err != nil {
			firstFail.Store(err.Error())
			return
		}
		defer c.close()
		for i := 0; ; i++ {
			select {
			case <-m.stopped:
				return
			default:
			}
			n := int((int64(i) * 7919) % int64(imports))
			rcode, ips, err := c.a(scaleImportName(n, "clusterset"))
			queries.Add(1)
			var netErr net.Error
			if errors.As(err, &netErr) && netErr.Timeout() {
				// A datagram lost on a busy machine, not an answer.
				timeouts.Add(1)
				continue
			}
			if err != nil || rcode != dns.RcodeSuccess || len(ips) != 1 || ips[0] != importIP(n) {
				failures.Add(1)
				firstFail.CompareAndSwap(nil, fmt.Sprintf("imp-%d: %s %v %v", n, dns.RcodeToString[rcode], ips, err))
			}
		}
	})
	done := func(err error) ([]spikeRow, error) {
		m.stop()
		res.spikeQueries += int(queries.Load())
		res.spikeFailures += int(failures.Load())
		res.spikeTimeouts += int(timeouts.Load())
		if f, ok := firstFail.Load().(string); ok && res.spikeFirstFail == "" {
			res.spikeFirstFail = f
		}
		return nil, err
	}

	status("scale: restarting kube-apiserver")
	stopped := time.Now()
	if err := cp.StopAPIServer(); err != nil {
		return done(err)
	}
	// The watches break: our coredns logs that the API is unreachable.
	waitErr := waitLog(ctx, ours.logPath, "Kubernetes API unreachable", time.Minute)
	if err := cp.StartAPIServer(ctx); err != nil {
		return done(errors.Join(waitErr, err))
	}
	if err := waitLog(ctx, ours.logPath, "Kubernetes API reachable again", 5*time.Minute); err != nil {
		return done(err)
	}
	back := time.Since(stopped)
	// The relist is under way once the API answers again; RSS settles
	// when it is done.
	if err := m.settle(ctx, "the restart"); err != nil {
		return done(err)
	}
	_, _ = done(nil)
	return m.rows(objects, back), nil
}

// waitLog waits until the log at path holds a line containing text.
func waitLog(ctx context.Context, path, text string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		if f, err := os.Open(path); err == nil {
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				if strings.Contains(sc.Text(), text) {
					f.Close()
					return nil
				}
			}
			f.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: no %q after %s", filepath.Base(path), text, within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// writeScale writes the Scale section.
func (r *results) writeScale(p func(string, ...any)) {
	s := r.scale
	if s == nil {
		return
	}
	z := s.sizes
	p("## Scale\n\n")
	p("A synthetic ClusterSet on an API server of its own (`-scale-size %s`): ClusterSetIP ServiceImports in `%s` (one address, one port each), ", z.name, nsScaleImports)
	p("%d headless imports in `%s` whose EndpointSlices (at most %d ready endpoints each, no host names) come from up to %d source clusters; ", z.headless, nsScaleHeadless, scalePerSlice, z.clusters)
	p("the biggest headless import has %d endpoints from %d clusters, the others share the rest. ", z.biggest, min(z.clusters, z.biggest/scalePerSlice))
	if z.etcdWatches {
		p("At this size kube-apiserver runs with `--watch-cache=false`: it serves every list and watch from etcd, not from its watch cache as the field's API servers (and the full and medium sizes) do. ")
	}
	p("At each step `build/coredns` starts afresh with the throughput section's Corefile (*multicluster* and *kubernetes*) whose kubernetes stanza has, as the shipped Corefiles' (manifests, chart), `%s`: the kubernetes plugin leaves out the EndpointSlices labelled with a source cluster, as these imports' are, which *multicluster* caches itself; not pinned; ", corefiles.KubernetesLabels)
	p("start-up is the time to the first 200 of `/ready`, then memory is read as in Memory and start-up (VmRSS settled, live heap after a forced GC). ")
	if z.settleEvery != 0 && z.settleEvery != settleInterval {
		p("At this size VmRSS is read every %s until it settles (within 1%% over six readings), here and before and after the relist spike. ", z.settleEvery)
	}
	p("Bytes per import and per endpoint are the live heap the objects added since the step before cost, each ")
	p("(the endpoints' figure includes the %d headless imports, created with the first endpoints). ", z.headless)
	p("At each step two more servers start afresh, one after the other, and only their live heap is read: `build/coredns` with *multicluster* alone (no *kubernetes*, so no fallback zone), the plugin's own share; ")
	p("and stock CoreDNS (`build/coredns-stock`, the Corefile without *multicluster* and without the labels line), whose kubernetes plugin caches every EndpointSlice, those of imports included: what a server whose Corefile lacks the line pays for the imports' slices beside *multicluster*'s own. ")
	p("Targets: an import's heap of the whole server as deployed (<= 600 B), an endpoint's of the plugin alone (<= 150 B). ")
	p("Lookup latencies are round trips of single A queries over UDP from one client, %d names of each kind spread over the set, %d rounds: ", z.lookups, z.rounds)
	p("clusterset (`imp-N.%s.svc.clusterset.local`), fallback (the same imports in cluster.local) and local (%d ClusterIP Services, answered by *kubernetes*).\n\n", nsScaleImports, scaleLocal)
	p("No imports (%d local Services): VmRSS %.1f MiB, live heap %.1f MiB.\n\n", scaleLocal, mib(s.baseRSS), mib(s.baseHeap))
	p("No imports, live heap of *multicluster* alone: %.1f MiB; of stock CoreDNS: %.1f MiB.\n\n", mib(s.baseAloneHeap), mib(s.baseStockHeap))
	p("| imports | headless | endpoints (slices) | created in | ready after | VmRSS (MiB) | live heap (MiB) | heap per new import (as deployed) | heap per new import (multicluster alone) | heap per new endpoint (multicluster alone) | heap per new endpoint (multicluster + kubernetes, as deployed) | heap per new endpoint (stock CoreDNS) | RSS per object | clusterset p50 / p99 / p99.9 | fallback p50 / p99 / p99.9 | local p50 / p99 / p99.9 |\n")
	p("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, st := range s.steps {
		var perImport, perImportAlone, perEndpointAlone, perEndpoint, perEndpointStock string
		if st.perImport != 0 {
			perImport = fmt.Sprintf("%.0f B (target %d B: %s)", st.perImport, 600, verdict(600, st.perImport))
			perImportAlone = fmt.Sprintf("%.0f B", st.perImportAlone)
		}
		if st.perEndpoint != 0 {
			perEndpointAlone = fmt.Sprintf("%.0f B (target %d B: %s)", st.perEndpointAlone, 150, verdict(150, st.perEndpointAlone))
			perEndpoint = fmt.Sprintf("%.0f B", st.perEndpoint)
			if st.stockHeap != 0 {
				perEndpointStock = fmt.Sprintf("%.0f B", st.perEndpointStock)
			}
		}
		objects := st.imports + st.headless + st.endpoints
		rssPer := float64(int64(st.rss)-int64(s.baseRSS)) / float64(objects)
		p("| %d | %d | %d (%d) | %s | %s | %.1f | %.1f | %s | %s | %s | %s | %s | %.0f B | %s | %s | %s |\n", st.imports, st.headless, st.endpoints, st.slices,
			st.create.Round(100*time.Millisecond), ms(st.ready), mib(st.rss), mib(st.heap), perImport, perImportAlone, perEndpointAlone, perEndpoint, perEndpointStock, rssPer,
			lat(st.lookups["clusterset"]), lat(st.lookups["fallback"]), lat(st.lookups["local"]))
	}
	p("\n\"RSS per object\" is VmRSS over the empty ClusterSet's, divided by imports + headless imports + endpoints, against CoreDNS's own rule of about 1 KB per Pod or Service ")
	p("(`(Pods + Services) / 1000 + 54` MB, kubernetes/Scaling_CoreDNS.md in coredns/deployment).\n\n")
	if len(s.answers) > 0 {
		p("Answers about the biggest headless import (`%s`, %d endpoints), EDNS buffer 1232:\n\n", scaleHeadlessName(0), z.biggest)
		p("| query | transport | rcode | records (answer + additional) | octets | TC |\n|---|---|---|---|---|---|\n")
		for _, a := range s.answers {
			p("| %s | %s | %s | %d | %d | %v |\n", a.qtype, a.proto, a.rcode, a.records, a.octets, a.truncated)
		}
		p("\n")
	}
	r.writeScaleChurn(p)
	if len(s.spike) > 0 || s.expiry != nil {
		p("### Relist spike\n\n")
		p("Under the last step's ClusterSet, with as many more headless Services in `%s` as there are imports, kube-apiserver is stopped and started again, twice. ", nsScaleStock)
		p("First our coredns and stock CoreDNS (`build/coredns-stock`, the Corefile without *multicluster*) run side by side: stock CoreDNS's kubernetes plugin caches every Service and every EndpointSlice, those of imports included; ours, as shipped, leaves the imports' slices to *multicluster* (`%s`). ", corefiles.KubernetesLabels)
		objs, eps := s.spikeObjects, s.spikeEndpoints
		p("Then our coredns runs alone with `GOMEMLIMIT` at %.0f MiB: what it sets itself (90%%) in a container whose memory limit is the one docs/deploy.md's memory rule gives its objects (%d Services and ServiceImports, %d endpoints of imports: a steady %.0f MiB, limit %.1fx that, %.0f MiB). ",
			mib(s.spikeGoMemLimit), objs, eps, mib(ruleSteady(objs, eps)), ruleLimitFactor, mib(ruleLimit(objs, eps)))
		p("VmRSS of each server is sampled every 20 ms from before the stop until it has settled after our coredns logged the API reachable again. ")
		p("Meanwhile one client asks our coredns clusterset names of imports in a loop, each answer checked against the import's address.\n\n")
		p("| server | objects | steady VmRSS (MiB) | peak VmRSS (MiB) | peak / steady | API answering again after | target |\n|---|---|---|---|---|---|---|\n")
		rows := s.spike
		if s.expiry != nil {
			rows = append(rows[:len(rows):len(rows)], s.expiry.rows...)
		}
		for _, row := range rows {
			ratio := float64(row.peak) / float64(row.steady)
			target := "(the field's ratio)"
			switch {
			case row.limit != 0:
				// Under the rule's limit the collector holds the heap
				// below GOMEMLIMIT, whatever the server's steady VmRSS
				// happened to be: the peak is judged against the limit
				// (1.3x the rule's steady).
				target = fmt.Sprintf("<= the limit, %.0f MiB: %s (%.2f of it)", mib(row.limit), verdict(float64(row.limit), float64(row.peak)), float64(row.peak)/float64(row.limit))
			case strings.HasPrefix(row.server, "coredns-mcs"):
				target = fmt.Sprintf("<= %.1fx: %s", spikeLimit, verdict(spikeLimit, ratio))
			}
			p("| %s | %s | %.1f | %.1f | %.2fx | %s | %s |\n", row.server, row.objects, mib(row.steady), mib(row.peak), ratio, row.relistDuration.Round(time.Second), target)
		}
		p("\nLookups during the restarts: %d; SERVFAIL, NXDOMAIN or a wrong address: %d; no reply within 500 ms: %d",
			s.spikeQueries, s.spikeFailures, s.spikeTimeouts)
		if s.spikeFirstFail != "" {
			p(" (first: %s)", s.spikeFirstFail)
		}
		p(".\n\n")
		s.expiry.writeNote(p)
	}
	r.writeReplicas(p)
	if s.note != "" {
		p("%s\n\n", s.note)
	}
}

func lat(l latencyStats) string {
	if l.p50 == 0 {
		return ""
	}
	return us(l.p50) + " / " + us(l.p99) + " / " + us(l.p999)
}

// spliceSection returns doc with its "## Scale" section replaced by section
// (or section added before "## Load average by phase", or at the end).
func spliceSection(doc, section string) string {
	return spliceHeading(doc, "Scale", "Load average by phase", section)
}
