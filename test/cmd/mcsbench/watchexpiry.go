package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"
)

// The relist spike's second cause: every watch of the servers expires
// while the API server stays up. The servers reach kube-apiserver through
// a TCP proxy of the benchmark; the proxy closes every connection and stops
// listening, so that the reflectors, refused, keep retrying their watches
// from the resourceVersion they last saw (client-go v0.37.1
// tools/cache/reflector.go, isWatchErrorRetriable: a refused watch is
// retried, not relisted). The
// benchmark then writes until kube-apiserver's watch cache no longer holds
// the events since that resourceVersion, and listens again: each reflector's
// watch is answered 410 Gone (reason Expired) and it lists every object
// again.
//
// kube-apiserver keeps a resource's events in a ring (k8s.io/apiserver
// v0.37.1 pkg/storage/cacher/watch_cache_history.go, resizeCacheLocked):
// once full, it grows while its oldest event is younger than
// eventFreshDuration (DefaultEventFreshDuration in cacher.go: the one-minute
// bookmark frequency plus 15 s), and otherwise drops its oldest event for a
// new one; a watch from before the oldest
// event held gets "too old resource version" (GetIntervalLocked). So one
// write of each kind as the watches break, and writes again once that
// write is older than eventFreshDuration, push it out: the benchmark checks
// with watches of its own from the resourceVersion read after the break,
// and goes on writing, doubling the batch, until each kind answers 410.
// Meanwhile some imports change address, and the client checks that our
// coredns, once it answers an import's new address, never answers its old
// one again.
//
// The smoke size (scaleSizes.etcdWatches) does not wait out the watch
// cache: its kube-apiserver runs with --watch-cache=false and serves the
// watches from etcd, and after the one write of each kind the benchmark
// compacts etcd at its current revision (controlplane.CompactEtcd), as
// kube-apiserver's own compactor does every --etcd-compaction-interval. A
// watch from a compacted revision is answered 410 Gone (reason Expired) at
// once (k8s.io/apiserver v0.37.1 pkg/storage/etcd3/errors.go,
// interpretWatchError), so the reflectors relist as they do after the
// watch cache has dropped their events.

const (
	nsScaleExpiry = "bench-scale-expiry" // objects the benchmark writes to expire the watches; namespaces nsScaleExpiry-N
	expiryObjects = 8                    // objects of each kind the writes go round
	// eventFresh is kube-apiserver's DefaultEventFreshDuration.
	eventFresh = 75 * time.Second
)

// expiryResults is the watch-expiry case of the relist spike.
type expiryResults struct {
	rows                                   []spikeRow
	queries, failures, timeouts, backwards int
	firstFail                              string
	changed                                int // imports whose address changed while the watches were down, per round
	rounds                                 []expiryRound
	goMemLimit                             uint64
	// etcd: kube-apiserver served the watches from etcd, which the
	// benchmark compacted (the smoke size), instead of its watch cache.
	etcd bool
	// addresses holds the address of each import changed so far: a later
	// round's servers start with it.
	addresses map[int]string
}

// expiryRound is what one round observed.
type expiryRound struct {
	servers string
	// writes is what each kind took, until a watch from the resourceVersion
	// of the break was answered 410 Gone.
	writes map[string]int
	// compactions of etcd until then (the smoke size).
	compactions int
	// down is from the break until the proxy listened again.
	down time.Duration
	// newAfter is from then until our coredns answered every changed
	// import's new address.
	newAfter time.Duration
	// oursExpired counts the lines our coredns logged for an expired
	// watch, by kind.
	oursExpired map[string]int
	// lookups of the round, wrong answers, and old answers after new ones.
	queries, failures, backwards int
}

// apiProxy passes TCP connections on to kube-apiserver until cut.
type apiProxy struct {
	target, addr string
	mu           sync.Mutex
	ln           net.Listener
	conns        map[net.Conn]struct{}
}

func newAPIProxy(target string) (*apiProxy, error) {
	p := &apiProxy{target: target, addr: "127.0.0.1:0", conns: map[net.Conn]struct{}{}}
	if err := p.listen(); err != nil {
		return nil, err
	}
	p.addr = p.ln.Addr().String()
	return p, nil
}

// listen listens at p.addr again and serves.
func (p *apiProxy) listen() error {
	var ln net.Listener
	var err error
	// The port was ours a moment ago; it may take a few tries to get back.
	for range 50 {
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go p.serve(ln)
	return nil
}

func (p *apiProxy) serve(ln net.Listener) {
	for {
		in, err := ln.Accept()
		if err != nil {
			return
		}
		go p.pass(ln, in)
	}
}

func (p *apiProxy) pass(ln net.Listener, in net.Conn) {
	out, err := net.DialTimeout("tcp", p.target, 10*time.Second)
	if err != nil {
		in.Close()
		return
	}
	p.mu.Lock()
	if p.ln != ln { // cut meanwhile
		p.mu.Unlock()
		in.Close()
		out.Close()
		return
	}
	p.conns[in], p.conns[out] = struct{}{}, struct{}{}
	p.mu.Unlock()
	var once sync.Once
	closeBoth := func() {
		once.Do(func() {
			in.Close()
			out.Close()
			p.mu.Lock()
			delete(p.conns, in)
			delete(p.conns, out)
			p.mu.Unlock()
		})
	}
	go func() { _, _ = io.Copy(out, in); closeBoth() }()
	_, _ = io.Copy(in, out)
	closeBoth()
}

// cut stops listening and closes every connection: a client's next
// attempt is refused.
func (p *apiProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
}

// writeProxyKubeconfig writes a copy of the kubeconfig at src whose
// clusters are reached at server.
func writeProxyKubeconfig(src, dst, server string) error {
	cfg, err := clientcmd.LoadFromFile(src)
	if err != nil {
		return err
	}
	for _, c := range cfg.Clusters {
		c.Server = server
	}
	return clientcmd.WriteToFile(*cfg, dst)
}

// expiryKind is a kind of object the servers watch: how to write one event
// of it, and how to watch it from a resourceVersion.
type expiryKind struct {
	resource string
	write    func(ctx context.Context, n int) error
	watch    func(ctx context.Context, o meta.ListOptions) (watch.Interface, error)
}

func expiryNamespace(i int) string { return fmt.Sprintf("%s-%d", nsScaleExpiry, i) }

// expiryKinds are the kinds our coredns and stock CoreDNS watch: our
// ServiceImports and EndpointSlices, and the kubernetes plugin's Services,
// EndpointSlices and Namespaces. Each write changes an annotation of one
// of expiryObjects objects in nsScaleExpiry-0 (or of the namespaces
// nsScaleExpiry-N), so that it is an event of its kind.
func expiryKinds(c *cluster) []expiryKind {
	patch := func(n int) []byte {
		return fmt.Appendf(nil, `{"metadata":{"annotations":{"mcsbench/write":"%d"}}}`, n)
	}
	ns := expiryNamespace(0)
	name := func(n int) string { return objectName("expiry", n%expiryObjects) }
	return []expiryKind{
		{"serviceimports", func(ctx context.Context, n int) error {
			_, err := c.mcs.MulticlusterV1beta1().ServiceImports(ns).Patch(ctx, name(n), types.MergePatchType, patch(n), meta.PatchOptions{})
			return err
		}, func(ctx context.Context, o meta.ListOptions) (watch.Interface, error) {
			return c.mcs.MulticlusterV1beta1().ServiceImports(corev1.NamespaceAll).Watch(ctx, o)
		}},
		{"endpointslices", func(ctx context.Context, n int) error {
			_, err := c.kube.DiscoveryV1().EndpointSlices(ns).Patch(ctx, name(n), types.MergePatchType, patch(n), meta.PatchOptions{})
			return err
		}, func(ctx context.Context, o meta.ListOptions) (watch.Interface, error) {
			return c.kube.DiscoveryV1().EndpointSlices(corev1.NamespaceAll).Watch(ctx, o)
		}},
		{"services", func(ctx context.Context, n int) error {
			_, err := c.kube.CoreV1().Services(ns).Patch(ctx, name(n), types.MergePatchType, patch(n), meta.PatchOptions{})
			return err
		}, func(ctx context.Context, o meta.ListOptions) (watch.Interface, error) {
			return c.kube.CoreV1().Services(corev1.NamespaceAll).Watch(ctx, o)
		}},
		{"namespaces", func(ctx context.Context, n int) error {
			_, err := c.kube.CoreV1().Namespaces().Patch(ctx, expiryNamespace(n%expiryObjects), types.MergePatchType, patch(n), meta.PatchOptions{})
			return err
		}, func(ctx context.Context, o meta.ListOptions) (watch.Interface, error) {
			return c.kube.CoreV1().Namespaces().Watch(ctx, o)
		}},
	}
}

// createExpiryObjects creates the objects the writes change.
func (c *cluster) createExpiryObjects(ctx context.Context) error {
	for i := range expiryObjects {
		if err := c.namespace(ctx, expiryNamespace(i)); err != nil {
			return err
		}
	}
	ns := expiryNamespace(0)
	if err := c.createServices(ctx, ns, "expiry", 0, expiryObjects, true); err != nil {
		return err
	}
	return c.parallel(ctx, 0, expiryObjects, func(ctx context.Context, i int) error {
		_, err := c.mcs.MulticlusterV1beta1().ServiceImports(ns).Create(ctx, newImport(ns, objectName("expiry", i), fmt.Sprintf("10.127.255.%d", i)), meta.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		_, err = c.kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discovery.EndpointSlice{
			ObjectMeta:  meta.ObjectMeta{Namespace: ns, Name: objectName("expiry", i)},
			AddressType: discovery.AddressTypeIPv4,
		}, meta.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

// expired reports whether a watch of k from rv is answered 410 Gone.
func (k expiryKind) expired(ctx context.Context, rv string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	w, err := k.watch(ctx, meta.ListOptions{ResourceVersion: rv})
	if err != nil {
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return true, nil
		}
		return false, err
	}
	defer w.Stop()
	select {
	case e, ok := <-w.ResultChan():
		if !ok || e.Type != watch.Error {
			return false, nil // the events since rv are there
		}
		err := apierrors.FromObject(e.Object)
		return apierrors.IsResourceExpired(err) || apierrors.IsGone(err), nil
	case <-time.After(5 * time.Second):
		return false, nil // nothing since rv, and no error
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// changedIP is the address import n has after round r changed it, in
// 172.16.0.0/12, apart from every other address of the benchmark.
func changedIP(n, r int) string {
	return fmt.Sprintf("172.%d.%d.%d", 16+r, (n>>8)&255, n&255)
}

// scaleExpiry measures the watch-expiry case: our coredns and stock CoreDNS
// side by side, then (beyond the smoke size) our coredns alone under the
// GOMEMLIMIT it would set in a container whose memory limit is the one
// docs/deploy.md's rule gives its objects (ruleLimit).
func (b *bench) scaleExpiry(ctx context.Context, cp *controlplane.ControlPlane, c *cluster, imports, endpoints int) error {
	b.phase("scale: relist spike, watches expired")
	res := &expiryResults{changed: min(100, imports/10), addresses: map[int]string{}, etcd: b.res.scale.sizes.etcdWatches}
	b.res.scale.expiry = res
	// The imports changed go back to their addresses afterwards, which the
	// rest of the section checks answers against.
	defer func() {
		err := c.parallel(ctx, 0, res.changed, func(ctx context.Context, n int) error {
			p := fmt.Appendf(nil, `{"spec":{"ips":[%q]}}`, importIP(n))
			_, err := c.mcs.MulticlusterV1beta1().ServiceImports(nsScaleImports).Patch(ctx, objectName("imp", n), types.MergePatchType, p, meta.PatchOptions{})
			return err
		})
		if err != nil {
			status("scale: restoring the changed imports: %v", err)
		}
	}()
	if err := c.createExpiryObjects(ctx); err != nil {
		return err
	}
	u, err := url.Parse(cp.Host)
	if err != nil {
		return err
	}
	proxy, err := newAPIProxy(u.Host)
	if err != nil {
		return err
	}
	defer proxy.cut()
	kubeconfig := filepath.Join(b.dir, "proxied.kubeconfig")
	if err := writeProxyKubeconfig(cp.Kubeconfig, kubeconfig, "https://"+proxy.addr); err != nil {
		return err
	}
	servers, objects, err := b.startSideBySide(ctx, kubeconfig, "-expiry", imports, endpoints)
	if err != nil {
		return err
	}
	defer func() {
		for _, s := range servers {
			_ = s.stop()
		}
	}()
	names := []string{"coredns-mcs", "stock CoreDNS"}
	rows, err := b.expiryRound(ctx, cp, c, proxy, servers, objects, imports, 1, strings.Join(names[:len(servers)], " and "))
	if err != nil {
		return err
	}
	for i := range rows {
		rows[i].server = names[i] + ", watches expired"
	}
	res.rows = append(res.rows, rows...)
	for _, s := range servers {
		_ = s.stop()
	}
	if b.res.scale.sizes.name == "small" {
		return nil // the smoke test: one round exercises it all
	}

	limited, soft, limit, err := b.startLimited(ctx, kubeconfig, "coredns-mcs-expiry-gomemlimit", imports, endpoints)
	if err != nil {
		return err
	}
	defer limited.stop()
	res.goMemLimit = soft
	label := fmt.Sprintf("coredns-mcs, GOMEMLIMIT %.0f MiB", mib(soft))
	rows, err = b.expiryRound(ctx, cp, c, proxy, []*server{limited}, objects[:1], imports, 2, label)
	for i := range rows {
		rows[i].server = "coredns-mcs, watches expired, " + strings.TrimPrefix(label, "coredns-mcs, ")
		rows[i].limit = limit
	}
	res.rows = append(res.rows, rows...)
	return err
}

// expiryRound breaks the servers' watches, expires them, lets the servers
// back, and returns each one's steady and peak VmRSS. servers[0] is our
// coredns, which is asked clusterset names all along.
func (b *bench) expiryRound(ctx context.Context, cp *controlplane.ControlPlane, c *cluster, proxy *apiProxy, servers []*server, objects []string, imports, round int, label string) ([]spikeRow, error) {
	res := b.res.scale.expiry
	ours := servers[0]
	m, err := newRelistMeter(ctx, servers)
	if err != nil {
		return nil, err
	}
	rec := expiryRound{servers: label, writes: map[string]int{}, oursExpired: map[string]int{}}

	// The addresses an import may answer: changed imports answer their old
	// address until their new one, and never the old one after.
	var mu sync.Mutex
	current, previous, seenNew := res.addresses, map[int]string{}, map[int]bool{}
	address := func(n int) string {
		if ip, ok := current[n]; ok {
			return ip
		}
		return importIP(n)
	}
	changed := res.changed

	var queries, failures, timeouts, backwards atomic.Int64
	var firstFail atomic.Value
	m.wg.Go(func() {
		cl, err := newDNSClient(ours.addr)
		if err != nil {
			firstFail.Store(err.Error())
			return
		}
		defer cl.close()
		for i := 0; ; i++ {
			select {
			case <-m.stopped:
				return
			default:
			}
			// Every other name is a changed import.
			n := i / 2 % max(changed, 1)
			if i%2 == 1 {
				n = int((int64(i) * 7919) % int64(imports))
			}
			rcode, ips, err := cl.a(scaleImportName(n, "clusterset"))
			queries.Add(1)
			var netErr net.Error
			if errors.As(err, &netErr) && netErr.Timeout() {
				timeouts.Add(1)
				continue
			}
			mu.Lock()
			want, old, isNew := address(n), previous[n], seenNew[n]
			ok := err == nil && rcode == dns.RcodeSuccess && len(ips) == 1
			switch {
			case ok && ips[0] == want:
				seenNew[n] = true
			case ok && old != "" && ips[0] == old && !isNew:
				// Not yet relisted.
			case ok && old != "" && ips[0] == old:
				backwards.Add(1)
				firstFail.CompareAndSwap(nil, fmt.Sprintf("imp-%d: %s again after %s", n, old, want))
			default:
				failures.Add(1)
				firstFail.CompareAndSwap(nil, fmt.Sprintf("imp-%d: %s %v %v, want %s", n, dns.RcodeToString[rcode], ips, err, want))
			}
			mu.Unlock()
		}
	})
	done := func(err error) ([]spikeRow, error) {
		m.stop()
		rec.queries, rec.failures, rec.backwards = int(queries.Load()), int(failures.Load()), int(backwards.Load())
		res.queries += int(queries.Load())
		res.failures += int(failures.Load())
		res.timeouts += int(timeouts.Load())
		res.backwards += int(backwards.Load())
		if f, ok := firstFail.Load().(string); ok && res.firstFail == "" {
			res.firstFail = f
		}
		res.rounds = append(res.rounds, rec)
		return nil, err
	}

	status("scale: cutting the servers' connections to kube-apiserver")
	cut := time.Now()
	proxy.cut()
	if err := waitLog(ctx, ours.logPath, "Kubernetes API unreachable", time.Minute); err != nil {
		return done(err)
	}
	// Every resourceVersion a server saw is at most this one.
	list, err := c.kube.CoreV1().Namespaces().List(ctx, meta.ListOptions{Limit: 1})
	if err != nil {
		return done(err)
	}
	rv := list.ResourceVersion

	// Changes while the watches are down.
	mu.Lock()
	for n := range changed {
		previous[n] = address(n)
		current[n] = changedIP(n, round)
		seenNew[n] = false
	}
	mu.Unlock()
	if err := c.parallel(ctx, 0, changed, func(ctx context.Context, n int) error {
		p := fmt.Appendf(nil, `{"spec":{"ips":[%q]}}`, changedIP(n, round))
		_, err := c.mcs.MulticlusterV1beta1().ServiceImports(nsScaleImports).Patch(ctx, objectName("imp", n), types.MergePatchType, p, meta.PatchOptions{})
		return err
	}); err != nil {
		return done(err)
	}

	// One write of each kind now, more once it is older than eventFresh,
	// until a watch from rv is answered 410 Gone; at the smoke size, a
	// compaction of etcd instead of the wait.
	kinds := expiryKinds(c)
	var serial atomic.Int64
	write := func(k expiryKind, n int) error {
		rec.writes[k.resource] += n
		return c.parallel(ctx, 0, n, func(ctx context.Context, _ int) error { return k.write(ctx, int(serial.Add(1))) })
	}
	for _, k := range kinds {
		if err := write(k, 1); err != nil {
			return done(err)
		}
	}
	seeded := time.Now()
	compact := func() error {
		rev, err := cp.CompactEtcd(ctx)
		if err != nil {
			return err
		}
		rec.compactions++
		status("  compacted etcd at revision %d", rev)
		return nil
	}
	if res.etcd {
		status("scale: compacting etcd until a watch from resourceVersion %s is answered 410 Gone", rv)
		if err := compact(); err != nil {
			return done(err)
		}
	} else {
		status("scale: writing until the watch cache has no events since resourceVersion %s (at least %s)", rv, eventFresh)
	}
	batch := map[string]int{}
	expired := map[string]bool{}
	deadline := time.Now().Add(15 * time.Minute)
	for len(expired) < len(kinds) {
		for _, k := range kinds {
			if expired[k.resource] {
				continue
			}
			gone, err := k.expired(ctx, rv)
			if err != nil {
				return done(fmt.Errorf("watch %s from %s: %w", k.resource, rv, err))
			}
			if gone {
				expired[k.resource] = true
				continue
			}
			if res.etcd {
				// Each compaction is at the revision of its time, past rv.
				if err := compact(); err != nil {
					return done(err)
				}
				continue
			}
			if time.Since(seeded) > eventFresh {
				batch[k.resource] = min(max(2*batch[k.resource], 100), 20000)
				if err := write(k, batch[k.resource]); err != nil {
					return done(err)
				}
			}
		}
		if time.Now().After(deadline) {
			return done(fmt.Errorf("watches from resourceVersion %s still not expired after %v of writes %v", rv, time.Since(cut), rec.writes))
		}
		select {
		case <-ctx.Done():
			return done(ctx.Err())
		case <-time.After(time.Second):
		}
	}
	status("  every kind answers 410 Gone from %s after %s; writes %v", rv, time.Since(cut).Round(time.Second), rec.writes)

	if err := proxy.listen(); err != nil {
		return done(err)
	}
	reopened := time.Now()
	rec.down = reopened.Sub(cut)
	if err := waitLog(ctx, ours.logPath, "Kubernetes API reachable again", 5*time.Minute); err != nil {
		return done(err)
	}
	back := time.Since(cut)
	// The relist delivers the changes.
	for n := range changed {
		err := eventuallyWithin(ctx, 5*time.Minute, func() error { return expectA(ours, scaleImportName(n, "clusterset"), changedIP(n, round)) })
		if err != nil {
			return done(fmt.Errorf("after the watches expired: %w", err))
		}
	}
	rec.newAfter = time.Since(reopened)
	if err := m.settle(ctx, "the watches expired"); err != nil {
		return done(err)
	}
	rec.oursExpired = expiredLines(ours.logPath)
	_, _ = done(nil)
	rows := m.rows(objects, back)
	status("  our coredns logged expired watches: %v; new addresses served %s after the proxy listened again", rec.oursExpired, rec.newAfter.Round(time.Millisecond))
	return rows, nil
}

// expiredLines counts the plugin's log lines for an expired watch, by kind.
func expiredLines(path string) map[string]int {
	out := map[string]int{}
	data, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	for line := range strings.Lines(string(data)) {
		const head = "Watch of "
		i := strings.Index(line, head)
		if i < 0 || !strings.Contains(line, "expired (410 Gone)") {
			continue
		}
		kind, _, _ := strings.Cut(line[i+len(head):], " ")
		out[kind]++
	}
	return out
}

// writeNote writes what the watch-expiry rows of the Relist spike table
// rest on.
func (e *expiryResults) writeNote(p func(string, ...any)) {
	if e == nil || len(e.rows) == 0 {
		return
	}
	p("The rows \"watches expired\": kube-apiserver stays up; the servers reach it through a TCP proxy of the benchmark, which closes every connection and stops listening, so that each reflector, refused, retries its watch from the resourceVersion it last saw. ")
	kinds := fmt.Sprintf("every kind the servers watch (ServiceImports, EndpointSlices, Services, Namespaces: an annotation of objects in `%s-0`), ", nsScaleExpiry)
	p("Meanwhile %d imports change address, and the benchmark changes ", e.changed)
	if e.etcd {
		p("one object of %sthen compacts etcd at its current revision (kube-apiserver serves the watches from etcd at this size, `--watch-cache=false`), ", kinds)
	} else {
		p("objects of %sone write of each kind at once and more once that write is older than kube-apiserver's event freshness (75 s), ", kinds)
	}
	p("until a watch of its own from the resourceVersion read after the break is answered 410 Gone for each kind: ")
	if e.etcd {
		p("etcd no longer holds the revisions since then. ")
	} else {
		p("the watch cache no longer holds the events since then. ")
	}
	p("Then the proxy listens again.\n\n")
	p("| round | servers | writes until 410 Gone | connections down | new addresses all answered after | our coredns logged \"expired (410 Gone)\" | lookups: all / wrong / gone back |\n|---|---|---|---|---|---|---|\n")
	for i, r := range e.rounds {
		var writes, logged []string
		for _, k := range []string{"serviceimports", "endpointslices", "services", "namespaces"} {
			writes = append(writes, fmt.Sprintf("%s %d", k, r.writes[k]))
		}
		if e.etcd {
			writes = append(writes, fmt.Sprintf("etcd compactions %d", r.compactions))
		}
		for _, k := range []string{"ServiceImport", "EndpointSlice", "Service", "ClusterProperty"} {
			if n := r.oursExpired[k]; n > 0 {
				logged = append(logged, fmt.Sprintf("%s %d", k, n))
			}
		}
		if len(logged) == 0 {
			logged = append(logged, "none")
		}
		p("| %d | %s | %s | %s | %s | %s | %d / %d / %d |\n", i+1, r.servers, strings.Join(writes, ", "), r.down.Round(time.Second), ms(r.newAfter), strings.Join(logged, ", "),
			r.queries, r.failures, r.backwards)
	}
	p("\nLookups while the watches were down and relisting: %d; SERVFAIL, NXDOMAIN or an address neither the old nor the new: %d; an old address after the new one (data going backwards): %d; no reply within 500 ms: %d",
		e.queries, e.failures, e.backwards, e.timeouts)
	if e.firstFail != "" {
		p(" (first: %s)", e.firstFail)
	}
	p(".\n\n")
}
