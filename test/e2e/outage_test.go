package e2e

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
)

// lookupKind is a kind of lookup a pod makes through the cluster DNS.
type lookupKind string

const (
	// external: a name outside the cluster through a pod's search path
	// (ndots:5, namespace NS): NAME.NS.svc.cluster.local,
	// NAME.svc.cluster.local, NAME.cluster.local, then NAME, one after the
	// other as a stub resolver walks them, until one answers.
	external lookupKind = "external (search path)"
	// local: a local Service's name and its ClusterIP's PTR.
	local lookupKind = "local"
	// imported: an import-only name under cluster.local, which needs the
	// standalone server: NXDOMAIN is allowed while it is away, SERVFAIL
	// and time-outs never.
	imported lookupKind = "import"
)

var lookupKinds = []lookupKind{external, local, imported}

// lookupResult is one lookup through the front and the same through the
// cluster DNS alone.
type lookupResult struct {
	kind        lookupKind
	front       time.Duration
	alone       time.Duration
	failure     string // empty: none
	nxdomain    bool   // an import answered NXDOMAIN
	standalone  bool   // an import answered from the import
	description string
}

// outagePhase is what the lookups of one phase gave.
type outagePhase struct {
	name    string
	results []lookupResult
}

// checkOutage makes the standalone server hang (SIGSTOP), resume, die
// (SIGKILL) and come back, under steady lookups through the front and the
// same lookups through stock CoreDNS with the platform's Corefile alone
// (plain): no external or local lookup fails or answers otherwise than
// plain, no lookup gets SERVFAIL or times out, and imported names answer
// again once the standalone server does. It logs, per phase and kind,
// failures and the latency the front adds (p50, p99).
func checkOutage(t *testing.T, front, plain *server, standalone *standaloneServer, ns string, web *corev1.Service) {
	t.Helper()
	importName := "remote." + ns + ".svc.cluster.local."
	ptr, _ := dns.ReverseAddr(web.Spec.ClusterIP)
	standInRequests := func() float64 {
		return resilientServer{server: front, metrics: metricsURL(t, front)}.metric(t, "coredns_dns_requests_total", standInLabels(t, front))
	}
	const phase = 6 * time.Second
	var phases []outagePhase
	// run runs a phase; with split, the lookups of its first split go in a
	// phase of their own, named first.
	run := func(name string, split time.Duration, first string) outagePhase {
		all := outagePhase{name: name}
		early := outagePhase{name: first}
		later := outagePhase{name: name}
		for _, r := range lookups(front, plain, ns, ptr, importName, phase) {
			all.results = append(all.results, r.lookupResult)
			if r.began < split {
				early.results = append(early.results, r.lookupResult)
			} else {
				later.results = append(later.results, r.lookupResult)
			}
		}
		if split > 0 {
			phases = append(phases, early, later)
		} else {
			phases = append(phases, all)
		}
		return all
	}
	comesBack := func(what string) {
		t.Helper()
		// After the stand-in's NXDOMAIN (negative TTL 5 s in the front's
		// cache) and a health check, the import answers again.
		expectAddresses(t, front, importName, dns.TypeA, 15*time.Second, "10.42.5.1")
		t.Logf("%s: the import answers through the front again", what)
	}

	up := run("up", 0, "")
	standInBefore := max(standInRequests(), 0)
	if err := standalone.process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// forward's health checks mark a server down after two failed
	// checks of a second each: until then every forwarded name waits the
	// read timeout before the stand-in answers.
	hung := run("hung (SIGSTOP), from 3 s on", 3*time.Second, "hung (SIGSTOP), first 3 s")
	if err := standalone.process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	comesBack("resumed")
	run("resumed", 0, "")
	standalone.kill(t)
	down := run("down (killed)", 0, "")
	standInAfter := standInRequests()
	standalone.start(t)
	comesBack("restarted")
	run("restarted", 0, "")

	for _, p := range phases {
		for _, r := range p.results {
			if r.failure != "" {
				t.Errorf("%s: %s lookup %s: %s", p.name, r.kind, r.description, r.failure)
			}
		}
	}
	// The phases did what they say: the import answered from the import
	// while the standalone server ran, NXDOMAIN from the stand-in while it
	// hung and while it was down, and the stand-in counted what it answered.
	count := func(p outagePhase, f func(lookupResult) bool) int {
		n := 0
		for _, r := range p.results {
			if r.kind == imported && f(r) {
				n++
			}
		}
		return n
	}
	// A lookup the standalone server answers slower than the read timeout
	// (a starved machine) gets the stand-in's NXDOMAIN: counted, not failed.
	if n := count(up, func(r lookupResult) bool { return r.standalone }); n == 0 {
		t.Errorf("up: no import lookup answered the import")
	} else if slow := count(up, func(r lookupResult) bool { return r.nxdomain }); slow > 0 {
		t.Logf("up: %d of %d import lookups answered NXDOMAIN (the standalone server slower than the read timeout, or the front's cache of such an answer)", slow, slow+n)
	}
	for _, p := range []outagePhase{hung, down} {
		if count(p, func(r lookupResult) bool { return r.nxdomain }) == 0 {
			t.Errorf("%s: no import lookup answered NXDOMAIN: the outage did not happen", p.name)
		}
	}
	if standInAfter <= standInBefore {
		t.Errorf("the stand-in's request count went from %v to %v during the outage", standInBefore, standInAfter)
	}
	t.Logf("the stand-in answered %v queries during the outage", standInAfter-standInBefore)
	t.Log("\n" + outageTable(phases))
}

// standInLabels are the labels of the front's request counter for the
// stand-in's server block.
func standInLabels(t *testing.T, front *server) string {
	t.Helper()
	i := strings.Index(front.corefile, "bind 127.0.0.1")
	head := front.corefile[:max(i, 0)]
	line := head[strings.LastIndex(strings.TrimRight(head, "\n \t{"), "\n")+1:]
	port := ""
	if _, after, ok := strings.Cut(strings.Fields(line)[0], ":"); ok {
		port = after
	}
	if i < 0 || port == "" {
		t.Fatalf("no stand-in block in:\n%s", front.corefile)
	}
	return `family="1",proto="udp",server="dns://127.0.0.1:` + port + `",type="A",view="",zone="cluster.local."`
}

// lookups starts lookups of every kind at a steady rate for d, as many
// pods do (a client that waits for each answer before the next question
// would ask less while answers are slow, and hide them), each through
// front and then through plain, with one client attempt and a 5 s
// time-out, as a stub resolver does. It returns them by the time since
// the start at which each began.
func lookups(front, plain *server, ns, ptr, importName string, d time.Duration) []timedResult {
	const every = 20 * time.Millisecond
	var (
		mu      sync.Mutex
		results []timedResult
		running sync.WaitGroup
	)
	start := time.Now()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for i := 0; time.Since(start) < d; i++ {
		began := time.Since(start)
		host := fmt.Sprintf("x%d-%d.example.org.", start.UnixNano()%1e6, i)
		running.Go(func() {
			batch := []lookupResult{
				searchWalk(front, plain, host, ns),
				compareLookup(local, front, plain, "web."+ns+".svc.cluster.local.", dns.TypeA),
				compareLookup(local, front, plain, ptr, dns.TypePTR),
				importLookup(front, importName),
			}
			mu.Lock()
			defer mu.Unlock()
			for _, r := range batch {
				results = append(results, timedResult{r, began})
			}
		})
		<-tick.C
	}
	running.Wait()
	return results
}

// timedResult is a lookup and when it began, since the start of its phase.
type timedResult struct {
	lookupResult
	began time.Duration
}

// exchange asks addr once over UDP.
func exchange(addr, name string, qtype uint16) (*dns.Msg, time.Duration, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.RecursionDesired = true
	c := dns.Client{Net: "udp", Timeout: 5 * time.Second}
	start := time.Now()
	r, _, err := c.Exchange(m, addr)
	return r, time.Since(start), err
}

// answerOf is a comparable form of an answer: its rcode and records
// without TTLs, sorted.
func answerOf(r *dns.Msg) string {
	var rrs []string
	for _, rr := range r.Answer {
		c := dns.Copy(rr)
		c.Header().Ttl = 0
		rrs = append(rrs, c.String())
	}
	sort.Strings(rrs)
	return dns.RcodeToString[r.Rcode] + " " + strings.Join(rrs, " | ")
}

// searchWalk resolves host as a pod in namespace ns with ndots:5 does,
// through front and through plain.
func searchWalk(front, plain *server, host, ns string) lookupResult {
	names := []string{host + ns + ".svc.cluster.local.", host + "svc.cluster.local.", host + "cluster.local.", host}
	res := lookupResult{kind: external, description: host}
	walk := func(s *server) (string, time.Duration, string) {
		var total time.Duration
		for _, n := range names {
			r, took, err := exchange(s.addr, n, dns.TypeA)
			total += took
			if err != nil {
				return "", total, fmt.Sprintf("%s: %v", n, err)
			}
			if r.Rcode == dns.RcodeServerFailure {
				return "", total, n + ": SERVFAIL"
			}
			if r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0 {
				return n + " " + answerOf(r), total, ""
			}
		}
		return "no answer", total, ""
	}
	got, frontTook, failure := walk(front)
	want, aloneTook, aloneFailure := walk(plain)
	res.front, res.alone = frontTook, aloneTook
	switch {
	case failure != "":
		res.failure = failure
	case aloneFailure != "":
		res.failure = "alone: " + aloneFailure
	case got != want:
		res.failure = fmt.Sprintf("answered %q, alone %q", got, want)
	}
	return res
}

// compareLookup asks front and plain the same question; they must answer
// alike.
func compareLookup(kind lookupKind, front, plain *server, name string, qtype uint16) lookupResult {
	res := lookupResult{kind: kind, description: name + " " + dns.TypeToString[qtype]}
	r, took, err := exchange(front.addr, name, qtype)
	res.front = took
	a, aloneTook, aloneErr := exchange(plain.addr, name, qtype)
	res.alone = aloneTook
	switch {
	case err != nil:
		res.failure = err.Error()
	case aloneErr != nil:
		res.failure = "alone: " + aloneErr.Error()
	case answerOf(r) != answerOf(a):
		res.failure = fmt.Sprintf("answered %q, alone %q", answerOf(r), answerOf(a))
	}
	return res
}

// importLookup asks front for an import-only name.
func importLookup(front *server, name string) lookupResult {
	res := lookupResult{kind: imported, description: name}
	r, took, err := exchange(front.addr, name, dns.TypeA)
	res.front = took
	switch {
	case err != nil:
		res.failure = err.Error()
	case r.Rcode == dns.RcodeNameError:
		res.nxdomain = true
	case r.Rcode == dns.RcodeSuccess && slices.Equal(addresses(r), []string{"10.42.5.1"}):
		res.standalone = true
	default:
		res.failure = "answered " + answerOf(r)
	}
	return res
}

// outageTable is the phases as a Markdown table: per phase and kind, the
// lookups, failures, and the latency through the front and through the
// cluster DNS alone (p50 / p99).
func outageTable(phases []outagePhase) string {
	var b strings.Builder
	b.WriteString("| phase | lookup | n | failures | front p50 / p99 | alone p50 / p99 | added p50 / p99 |\n|---|---|---|---|---|---|---|\n")
	for _, p := range phases {
		for _, kind := range lookupKinds {
			var front, alone []time.Duration
			failures := 0
			for _, r := range p.results {
				if r.kind != kind {
					continue
				}
				front = append(front, r.front)
				if r.alone > 0 {
					alone = append(alone, r.alone)
				}
				if r.failure != "" {
					failures++
				}
			}
			fp50, fp99 := quantiles(front)
			ap50, ap99 := quantiles(alone)
			added := "n/a"
			if len(alone) > 0 {
				added = fmt.Sprintf("%s / %s", ms(fp50-ap50), ms(fp99-ap99))
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %d | %s / %s | %s | %s |\n", p.name, kind, len(front), failures, ms(fp50), ms(fp99),
				map[bool]string{true: ms(ap50) + " / " + ms(ap99), false: "n/a"}[len(alone) > 0], added)
		}
	}
	return b.String()
}

func quantiles(d []time.Duration) (p50, p99 time.Duration) {
	if len(d) == 0 {
		return 0, 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)/2], s[(len(s)-1)*99/100]
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000)
}
