package multicluster

import (
	"context"
	"flag"
	"fmt"
	"math"
	"net"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	discovery "k8s.io/api/discovery/v1"
)

// What one query or one event may cost, whatever the objects behind it:
// the trust model's bounds (docs/trust.md).
const (
	maxQueryAlloc = 4 << 20 // octets allocated by one query
	// maxSmallEventAlloc is what a change of one small slice may allocate,
	// beside slices at the API server's limits: its own size, not theirs.
	maxSmallEventAlloc = 64 << 10
	// The time a query or an event may take: ten and five times the
	// targets of 5 ms a query and 50 ms an event, so that a busy machine
	// stays within them; what each costs is measured by the benchmarks
	// (BenchmarkHostileQuery, BenchmarkHostileEvent).
	maxQueryTime = 50 * time.Millisecond
	maxEventTime = 250 * time.Millisecond
)

// fastest returns the least CPU time of n runs of f: the least disturbed by
// whatever else runs on the machine.
func fastest(n int, f func()) time.Duration {
	best := time.Duration(math.MaxInt64)
	for range n {
		best = min(best, cpuTime(f))
	}
	return best
}

// timeScale is what the CPU bounds are multiplied by: fuzzing instruments
// the code for coverage, which makes it a few times slower.
func timeScale() time.Duration {
	if f := flag.Lookup("test.fuzz"); f != nil && f.Value.String() != "" {
		return 4
	}
	return 1
}

// checkTime fails t when the least CPU time of a few runs of f is over
// limit. Under the race detector it checks nothing.
func checkTime(t *testing.T, what string, limit time.Duration, f func()) {
	t.Helper()
	if raceEnabled {
		return
	}
	if d := fastest(3, f); d > limit*timeScale() {
		t.Errorf("%s took %s of CPU, want at most %s", what, d, limit*timeScale())
	}
}

// allocated returns the octets f allocates, on average over n calls.
func allocated(n int, f func()) uint64 {
	f() // warm: what is made once is not what each call costs
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(n)
}

// ask queries m as a client over proto does, with a 1232-octet EDNS buffer,
// and returns the reply as the server sends it: truncated to the buffer
// over UDP.
func ask(t testing.TB, m *Multicluster, proto, qname string, qtype uint16) *dns.Msg {
	t.Helper()
	r := new(dns.Msg)
	r.SetQuestion(qname, qtype)
	r.SetEdns0(1232, false)
	w := &capture{ResponseWriter: test.ResponseWriter{TCP: proto == "tcp"}}
	if _, err := m.ServeDNS(context.Background(), w, r); err != nil || w.msg == nil {
		t.Fatalf("%s %s over %s: no reply (%v)", qname, dns.TypeToString[qtype], proto, err)
	}
	reply := w.msg
	size := dns.MaxMsgSize
	if proto == "udp" {
		size = 1232
	}
	if reply.Len() > size {
		reply.Truncate(size) // what the server's writer does (request.Scrub)
	}
	return reply
}

// capture keeps the reply written.
type capture struct {
	test.ResponseWriter
	msg *dns.Msg
}

func (c *capture) WriteMsg(m *dns.Msg) error { c.msg = m; return nil }

// TestHostileQueriesBounded: the worst query of each object shape at the
// API server's limits allocates at most maxQueryAlloc, and answers what a
// reply carries: over TCP a message of at most 64 KiB, over UDP a
// truncated one (TC), so that the client asks again over TCP.
func TestHostileQueriesBounded(t *testing.T) {
	m := hostileQueryPlugin(t)
	for _, q := range hostileQueries {
		for _, proto := range []string{"udp", "tcp"} {
			t.Run(q.name+"/"+proto, func(t *testing.T) {
				reply := ask(t, m, proto, q.qname, q.qtype)
				if reply.Rcode != dns.RcodeSuccess || len(reply.Answer) == 0 {
					t.Fatalf("%s, %d records", dns.RcodeToString[reply.Rcode], len(reply.Answer))
				}
				reply.Compress = true
				if n := reply.Len(); n > dns.MaxMsgSize {
					t.Errorf("%d octets, over a TCP message", n)
				}
				if proto == "udp" && !reply.Truncated && q.name != "ClusterSetIP port SRV 30000 ports" {
					t.Errorf("a UDP reply of %d records, not truncated", len(reply.Answer))
				}
				if got := allocated(3, func() { ask(t, m, proto, q.qname, q.qtype) }); got > maxQueryAlloc {
					t.Errorf("one query allocated %d KiB, want at most %d KiB", got>>10, maxQueryAlloc>>10)
				}
				checkTime(t, "one query", maxQueryTime, func() { ask(t, m, proto, q.qname, q.qtype) })
			})
		}
	}
}

// TestSmallEventBesideHostileSlices: a change of a small slice costs its own
// size, however large the service's other slices are (3 of 20,000 ports
// each here): the union of their ports is not made again.
func TestSmallEventBesideHostileSlices(t *testing.T) {
	var big []*discovery.EndpointSlice
	for i := range 3 {
		big = append(big, hostileSlice("aaa", "big", "c"+strconv.Itoa(i), "big-"+strconv.Itoa(i), 10, hostilePorts(20000, 8, i*20000), 10+i))
	}
	m := hostilePlugin(t, []importDef{{ns: "aaa", name: "big", typ: "Headless"}}, big...)
	small := hostileSlice("aaa", "big", "c9", "big-small", 1, hostilePorts(1, 8, 0), 20)
	i := 0
	event := func() {
		i++
		small.ResourceVersion = strconv.Itoa(i)
		small.Endpoints[0].Addresses[0] = fmt.Sprintf("10.20.%d.%d", (i/250)%250, 1+i%250)
		spec, _, err := newSliceSpec(small, m.longestZone())
		if err != nil {
			t.Fatal(err)
		}
		m.sources.setSlice(spec)
	}
	checkTime(t, "a change of a one-endpoint slice", maxEventTime/10, event)
	if got := allocated(20, event); got > maxSmallEventAlloc {
		t.Errorf("a change of a one-endpoint slice allocated %d KiB, want at most %d KiB", got>>10, maxSmallEventAlloc>>10)
	}
	// The union is right: every port of every slice, each once.
	v := m.index.lookup("aaa", "big")
	if len(v.ports) != 60000 {
		t.Errorf("%d ports in the view, want 60000", len(v.ports))
	}
	for j := 1; j < len(v.ports); j++ {
		if comparePorts(v.ports[j-1], v.ports[j]) >= 0 {
			t.Fatalf("ports %v and %v out of order", v.ports[j-1], v.ports[j])
		}
	}
}

// TestHostileAddressesEvent: a ClusterSetIP import without spec.ips, whose
// 5 slices list 1,000 endpoints of 60 addresses each, answers from its
// slices' lowest maxImportAddresses addresses and counts the rest; a
// one-endpoint slice of it that comes and goes costs at most 50 ms of CPU
// an event, not a walk over the 300,000 addresses under the lock every
// informer shares, and another namespace's change made meanwhile waits for
// no such walk.
func TestHostileAddressesEvent(t *testing.T) {
	m := addressesPlugin(t, importDef{ns: "bbb", name: "web", typ: "Headless"})
	event := addressesEvent(t, m)
	checkTime(t, "an event of a one-endpoint slice beside 300,000 addresses", maxEventTime/5, event)
	if _, ok := m.sources.sliceOf[sliceID{namespace: "aaa", name: "addr-small"}]; !ok {
		event() // the one-endpoint slice is there
	}

	v := m.index.lookup("aaa", "addr")
	if len(v.ipv4) != maxImportAddresses || !v.ipv4[0].Equal(net.IPv4(10, 20, 0, 1)) || !v.ipv4[1].Equal(net.IPv4(10, 100, 0, 1)) {
		t.Errorf("%d addresses from %v, want %d from 10.20.0.1, 10.100.0.1", len(v.ipv4), v.ipv4[:min(2, len(v.ipv4))], maxImportAddresses)
	}
	if want := int32(300001 - maxImportAddresses); v.dropped != want || m.index.dropped.Load() != int64(want) {
		t.Errorf("%d addresses dropped, %d counted, want %d", v.dropped, m.index.dropped.Load(), want)
	}
	if n := m.index.reverseLen(); n != maxImportAddresses {
		t.Errorf("%d addresses in the reverse map, want %d", n, maxImportAddresses)
	}
	reply := ask(t, m, "tcp", "addr.aaa.svc.clusterset.local.", dns.TypeA)
	if len(reply.Answer) != maxImportAddresses {
		t.Errorf("%d records, want %d", len(reply.Answer), maxImportAddresses)
	}
	if raceEnabled {
		return
	}
	// Another namespace's slice changes while the import's flaps: each
	// change waits for at most the flapping slice's own event.
	stop, done := make(chan struct{}), make(chan struct{})
	// flapped signals each of the attacker's events, so that every change
	// of the other namespace's is made while one is under way.
	flapped := make(chan struct{}, 1)
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				event()
				select {
				case flapped <- struct{}{}:
				default:
				}
			}
		}
	}()
	var waits []time.Duration
	other := hostileSlice("bbb", "web", "c1", "web-c1", 1, hostilePorts(1, 8, 0), 30)
	for i := range 20 {
		other.Endpoints[0].Addresses[0] = fmt.Sprintf("10.30.1.%d", 1+i)
		spec, _, err := newSliceSpec(other, m.longestZone())
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		m.sources.setSlice(spec)
		waits = append(waits, time.Since(start))
		select {
		case <-flapped:
		case <-time.After(10 * time.Second):
			t.Fatal("the flapping slice made no event within 10 s")
		}
	}
	close(stop)
	<-done
	slices.Sort(waits)
	if median := waits[len(waits)/2]; median > maxEventTime/5 {
		t.Errorf("another namespace's change took %s to apply (median of %d), want at most %s", median, len(waits), maxEventTime/5)
	}
	if a := ask(t, m, "tcp", "web.bbb.svc.clusterset.local.", dns.TypeA); len(a.Answer) != 1 || a.Answer[0].(*dns.A).A.String() != "10.30.1.20" {
		t.Errorf("the other namespace's answer: %v", a.Answer)
	}
}

// TestHostileManySlicesEvent: with 150 slices of 2,000 addresses each, an
// event of the import's answers from its slices merges the lowest
// addresses, not every slice's 2,000: a one-endpoint slice that comes and
// goes costs at most 50 ms of CPU.
func TestHostileManySlicesEvent(t *testing.T) {
	var many []*discovery.EndpointSlice
	for i := range 150 {
		many = append(many, manyAddressSlice("aaa", "addr", "c"+strconv.Itoa(i), "addr-"+strconv.Itoa(i), 20, 100, 100+i))
	}
	m := hostilePlugin(t, []importDef{{ns: "aaa", name: "addr", typ: "ClusterSetIP"}}, many...)
	event := addressesEvent(t, m)
	checkTime(t, "an event of a one-endpoint slice beside 150 slices", maxEventTime/5, event)
	if _, ok := m.sources.sliceOf[sliceID{namespace: "aaa", name: "addr-small"}]; !ok {
		event() // the one-endpoint slice is there
	}
	if v := m.index.lookup("aaa", "addr"); len(v.ipv4) != maxImportAddresses || !v.ipv4[0].Equal(net.IPv4(10, 20, 0, 1)) {
		t.Errorf("%d addresses from %v", len(v.ipv4), v.ipv4[:min(1, len(v.ipv4))])
	}
}

// TestHostileRepeatsQueries: a headless import whose 10 clusters each
// export an IPv4 and an IPv6 slice of 1,000 host names, every one at the
// same 60 addresses, answers each query within 5 ms of CPU and maxQueryAlloc:
// the addresses are prepared once per change, each once, and SRV and PTR
// answers stop at what they carry instead of walking 1.2 million repeats.
func TestHostileRepeatsQueries(t *testing.T) {
	m := repeatsPlugin(t)
	for _, q := range repeatsQueries {
		for _, proto := range []string{"udp", "tcp"} {
			t.Run(q.name+"/"+proto, func(t *testing.T) {
				reply := ask(t, m, proto, q.qname, q.qtype)
				if reply.Rcode != dns.RcodeSuccess || len(reply.Answer) == 0 {
					t.Fatalf("%s, %d records", dns.RcodeToString[reply.Rcode], len(reply.Answer))
				}
				if got := allocated(3, func() { ask(t, m, proto, q.qname, q.qtype) }); got > maxQueryAlloc {
					t.Errorf("one query allocated %d KiB, want at most %d KiB", got>>10, maxQueryAlloc>>10)
				}
				checkTime(t, "one query", maxQueryTime/10, func() { ask(t, m, proto, q.qname, q.qtype) })
			})
		}
	}
	// What they answer: each address once, and the first name by the
	// order PTR answers follow.
	for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA} {
		if reply := ask(t, m, "tcp", "rep.aaa.svc.clusterset.local.", qtype); len(reply.Answer) != 60 {
			t.Errorf("%s: %d records, want 60", dns.TypeToString[qtype], len(reply.Answer))
		}
	}
	for _, qname := range []string{repeatsQueries[3].qname, repeatsQueries[4].qname} {
		reply := ask(t, m, "tcp", qname, dns.TypePTR)
		if len(reply.Answer) != 1 || reply.Answer[0].(*dns.PTR).Ptr != "host-0.c0.rep.aaa.svc.clusterset.local." {
			t.Errorf("PTR %s: %v", qname, reply.Answer)
		}
	}
	reply := ask(t, m, "tcp", "rep.aaa.svc.clusterset.local.", dns.TypeSRV)
	targets := map[string]int{}
	for _, rr := range reply.Extra {
		targets[rr.Header().Name]++
	}
	if len(reply.Answer) == 0 || targets[reply.Answer[0].(*dns.SRV).Target] != 120 {
		t.Errorf("the first SRV target has %d addresses, want the 120 of both its slices", targets[reply.Answer[0].(*dns.SRV).Target])
	}
}

// TestHostileEventsBounded: converting an object at the API server's limits
// takes at most maxEventTime, on the informer goroutine every namespace's
// objects wait on.
func TestHostileEventsBounded(t *testing.T) {
	es := hostileSlice("aaa", "big", "c1", "big-c1", 1000, hostilePorts(20000, 8, 0), 1)
	checkTime(t, "converting a slice of 1,000 endpoints and 20,000 ports", maxEventTime, func() {
		if _, _, err := newSliceSpec(es, len(defaultZone)); err != nil {
			t.Fatal(err)
		}
	})
	f := importFields{namespace: "aaa", name: "ports", typ: "ClusterSetIP", ips: []string{"10.42.9.1"}, ports: hostileImportPorts(30000, 8)}
	checkTime(t, "converting an import of 30,000 ports", maxEventTime, func() {
		if _, _, err := newImportSpec(f); err != nil {
			t.Fatal(err)
		}
	})
}

// TestMemoryReturnsAfterHostileObjects: what imports brought leaves with
// them. 30 versions of an import of 5,000 long port names, and 2,000
// imports of port lists of their own, then deleted: the live heap comes
// back within 1 MiB, and the shared port lists hold nothing of them.
func TestMemoryReturnsAfterHostileObjects(t *testing.T) {
	m, _ := newTestPlugin(t, nil, fakeLocal{})
	liveHeap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC() // the cleanups of the first free the entries of the second
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	// The lists of this test's imports, which other tests' lists may be
	// collected beside.
	sharedLists := func() int {
		portSets.Lock()
		defer portSets.Unlock()
		n := 0
		for key := range portSets.m {
			if strings.HasPrefix(key, "mem-") {
				n++
			}
		}
		return n
	}
	before := liveHeap()
	for v := range 30 {
		ports := make([]portFields, 5000)
		for i := range ports {
			ports[i] = portFields{name: fmt.Sprintf("v%02d-%058d", v, i), protocol: "TCP", port: int32(1 + i)}
		}
		spec, _, err := newImportSpec(importFields{namespace: "aaa", name: "ports", resourceVersion: strconv.Itoa(v), typ: "ClusterSetIP", ips: []string{"10.42.9.1"}, ports: ports})
		if err != nil {
			t.Fatal(err)
		}
		m.sources.setImport(spec)
	}
	for i := range 2000 {
		spec, _, err := newImportSpec(importFields{namespace: "aaa", name: fmt.Sprintf("s%d", i), typ: "ClusterSetIP", ips: []string{"10.42.10.1"},
			ports: []portFields{{name: fmt.Sprintf("mem-%d", i), port: 80}, {name: "q", port: int32(1 + i)}}})
		if err != nil {
			t.Fatal(err)
		}
		m.sources.setImport(spec)
	}
	if n := sharedLists(); n != 2000 {
		t.Fatalf("%d shared port lists, want the 2,000 short ones among them", n)
	}
	m.sources.deleteImport(serviceKey{namespace: "aaa", name: "ports"})
	for i := range 2000 {
		m.sources.deleteImport(serviceKey{namespace: "aaa", name: fmt.Sprintf("s%d", i)})
	}
	// The runtime runs the cleanups that drop the lists' entries after a
	// collection, on a goroutine of its own.
	waitFor(t, 10*time.Second, "the shared port lists of the imports to go", func() bool {
		liveHeap()
		return sharedLists() == 0
	})
	if after := liveHeap(); after > before+1<<20 {
		t.Errorf("live heap %d KiB after the imports went, %d KiB before: want at most 1 MiB more", after>>10, before>>10)
	}
	runtime.KeepAlive(m)
}

// TestObjectLogBounded: an import with 10,000 refused port names makes one
// line of at most maxLogLine octets, naming maxProblems of them; a thousand
// versions of it, at most the window's lines, and then one line that says
// how many were left out.
func TestObjectLogBounded(t *testing.T) {
	ports := make([]portFields, 10000)
	for i := range ports {
		ports[i] = portFields{name: fmt.Sprintf("Not_A_Label_%055d", i), port: 80}
	}
	_, problems, err := newImportSpec(importFields{namespace: "aaa", name: "noisy", typ: "ClusterSetIP", ips: []string{"10.42.9.1"}, ports: ports})
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != maxProblems+1 || problems[maxProblems] != "and 9992 more problems" {
		t.Fatalf("%d problems, the last %q", len(problems), problems[len(problems)-1])
	}
	var lines []string
	now := time.Unix(1000, 0)
	l := newBoundedLog("lines about skipped objects", 5, func(s string) { lines = append(lines, s) })
	l.now = func() time.Time { return now }
	for v := range 1000 {
		l.printf("ServiceImport aaa/noisy (resourceVersion %d): %s", v, joinProblems(problems))
	}
	if len(lines) != 5 {
		t.Errorf("%d lines in a window, want 5", len(lines))
	}
	for _, line := range lines {
		if len(line) > maxLogLine+32 {
			t.Errorf("a line of %d octets", len(line))
		}
	}
	now = now.Add(time.Minute)
	l.printf("one more")
	if len(lines) != 7 || lines[5] != "995 more lines about skipped objects were not logged in the last 1m0s" || lines[6] != "one more" {
		t.Errorf("the next window: %q", lines[5:])
	}
}
