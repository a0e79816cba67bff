package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"

	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/outage"
)

// checkOutage makes the standalone server hang (SIGSTOP), resume, die
// (SIGKILL) and come back, under steady lookups through the front and the
// same lookups through stock CoreDNS with the platform's Corefile alone
// (plain): no external or local lookup fails or answers otherwise than
// plain, no lookup gets SERVFAIL or times out, and imported names answer
// again once the standalone server does. It logs, per phase and kind,
// failures and the latency the front adds (p50, p99).
func checkOutage(t *testing.T, front, plain *server, standalone *standaloneServer, ns string, web *corev1.Service, importIP string) {
	t.Helper()
	ptr, _ := dns.ReverseAddr(web.Spec.ClusterIP)
	cfg := outage.Config{
		Front: front.addr, Alone: plain.addr, Namespace: ns,
		Local: "web." + ns + ".svc.cluster.local.", PTR: ptr,
		Import: "remote." + ns + ".svc.cluster.local.", ImportAddress: importIP,
	}
	standInRequests := func() float64 {
		return resilientServer{server: front, metrics: metricsURL(t, front)}.metric(t, "coredns_dns_requests_total", standInLabels(t, front))
	}
	const phase = 6 * time.Second
	var phases []outage.Phase
	run := func(name string, split time.Duration, first string) []outage.Phase {
		p := outage.Phases(name, outage.Run(cfg, phase), split, first)
		phases = append(phases, p...)
		return p
	}
	comesBack := func(what string) {
		t.Helper()
		// After a health check (the stand-in's NXDOMAIN has a TTL of 0,
		// which no cache holds), the import answers again.
		expectAddresses(t, front, cfg.Import, dns.TypeA, 15*time.Second, cfg.ImportAddress)
		t.Logf("%s: the import answers through the front again", what)
	}

	up := run("up", 0, "")[0]
	standInBefore := max(standInRequests(), 0)
	if err := standalone.process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// forward's health checks mark a server down after two failed checks
	// of a second each: until then every forwarded name waits the read
	// timeout before the stand-in answers.
	hung := run("hung (SIGSTOP), from 3 s on", 3*time.Second, "hung (SIGSTOP), first 3 s")
	// The stand-in's NXDOMAIN has a TTL of 0, and the front's cache keeps
	// none of it: asked twice, the front answers with TTL 0 both times
	// (a cached answer would carry the rest of its TTL, 5 s at the least
	// with the cache plugin's default MINTTL).
	for i := range 2 {
		m := new(dns.Msg)
		m.SetQuestion(cfg.Import, dns.TypeA)
		r, err := harness.Ask("udp", front.addr, m)
		if err != nil {
			t.Fatal(err)
		}
		if r.Rcode != dns.RcodeNameError || len(r.Ns) != 1 || r.Ns[0].Header().Ttl != 0 {
			t.Errorf("hung, query %d: the front answers %s with %s, authority %v; want the stand-in's NXDOMAIN with TTL 0", i+1, cfg.Import, dns.RcodeToString[r.Rcode], r.Ns)
		}
	}
	if err := standalone.process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	comesBack("resumed")
	t.Logf("resumed: the import answered through the front %.1fs after SIGCONT", time.Since(resumed).Seconds())
	run("resumed", 0, "")
	standalone.kill(t)
	down := run("down (killed)", 0, "")[0]
	standInAfter := standInRequests()
	standalone.start(t)
	comesBack("restarted")
	run("restarted", 0, "")

	for _, p := range phases {
		for _, r := range p.Results {
			if r.Failure != "" {
				t.Errorf("%s: %s lookup %s: %s", p.Name, r.Kind, r.Description, r.Failure)
			}
		}
	}
	// The phases did what they say: the import answered from the import
	// while the standalone server ran, NXDOMAIN from the stand-in while it
	// hung and while it was down, and the stand-in counted what it answered.
	// A lookup the standalone server answers slower than the read timeout
	// (a starved machine) gets the stand-in's NXDOMAIN: counted, not failed.
	answered := func(r outage.Result) bool { return r.Answered }
	nxdomain := func(r outage.Result) bool { return r.NXDOMAIN }
	if n := up.Count(outage.Import, answered); n == 0 {
		t.Errorf("up: no import lookup answered the import")
	} else if slow := up.Count(outage.Import, nxdomain); slow > 0 {
		t.Logf("up: %d of %d import lookups answered NXDOMAIN (the standalone server slower than the read timeout, or the front's cache of such an answer)", slow, slow+n)
	}
	for _, p := range []outage.Phase{hung[0], hung[1], down} {
		if p.Count(outage.Import, nxdomain) == 0 {
			t.Errorf("%s: no import lookup answered NXDOMAIN: the outage did not happen", p.Name)
		}
	}
	if standInAfter <= standInBefore {
		t.Errorf("the stand-in's request count went from %v to %v during the outage", standInBefore, standInAfter)
	}
	t.Logf("the stand-in answered %v queries during the outage", standInAfter-standInBefore)
	t.Log("\n" + outage.Table(phases))
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
