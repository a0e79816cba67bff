package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// Rows of TestHostileObjects with objects at the API server's own limits:
// an EndpointSlice of 1,000 endpoints and 20,000 ports (maxEndpoints and
// maxPorts in pkg/apis/discovery/validation/validation.go of Kubernetes
// v1.37.1), a ServiceImport of as many ports as its size lets through. In
// each, the victim answers throughout, a change of the victim's shows
// within victimDelay, a freshly started server becomes ready, and the
// server's resident memory stays within what docs/deploy.md's memory rule
// gives a replica for the objects.

// victimDelay is how soon a change of another namespace must show, however
// busy the attacker keeps the server.
const victimDelay = time.Second

// limitPorts returns n ports of distinct numbers from first, with names of
// the form p<number>.
func limitPorts(n, first int) []discovery.EndpointPort {
	ports := make([]discovery.EndpointPort, n)
	for i := range ports {
		ports[i] = discovery.EndpointPort{Name: ptr.To(fmt.Sprintf("p%d", first+i)), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(int32(1 + (first+i)%65535))}
	}
	return ports
}

// limitSlice creates the EndpointSlice ns/name of the headless import svc,
// from cluster, with endpoints named endpoints (addresses 10.<octet>.x.y)
// and ports.
func limitSlice(t *testing.T, ns, svc, cluster, name string, endpoints, octet int, ports []discovery.EndpointPort) *discovery.EndpointSlice {
	t.Helper()
	eps := make([]discovery.Endpoint, endpoints)
	for i := range eps {
		eps[i] = endpoint(fmt.Sprintf("host-%d", i), fmt.Sprintf("10.%d.%d.%d", octet, i/250, 1+i%250), nil)
	}
	es := &discovery.EndpointSlice{
		ObjectMeta:  meta.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{mcsv1beta1.LabelServiceName: svc, mcsv1beta1.LabelSourceCluster: cluster}},
		AddressType: discovery.AddressTypeIPv4,
		Endpoints:   eps,
		Ports:       ports,
	}
	created, err := kube.DiscoveryV1().EndpointSlices(ns).Create(context.Background(), es, meta.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// headlessImport creates the headless import ns/name.
func (s *trustSuite) headlessImport(t *testing.T, ns, name string) {
	t.Helper()
	si := newImport(ns, name)
	si.Spec.Type = mcsv1beta1.Headless
	s.hostileImport(t, si)
}

// victimSeesChanges creates an import in the victim's namespace and checks
// that the server answers it within victimDelay, and then that its deletion
// shows as soon. n names the probe.
func (s *trustSuite) victimSeesChanges(t *testing.T, n int) {
	t.Helper()
	name := fmt.Sprintf("probe-%d", n)
	ip := fmt.Sprintf("10.250.20.%d", 1+n%250)
	qname := name + "." + s.victim + ".svc.clusterset.local."
	start := time.Now()
	createImport(t, newImport(s.victim, name, ip))
	expectAddresses(t, s.with.server, qname, dns.TypeA, victimDelay, ip)
	t.Logf("a new import of the victim's answered after %s", time.Since(start).Round(time.Millisecond))
	if err := mcs.MulticlusterV1beta1().ServiceImports(s.victim).Delete(context.Background(), name, meta.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expectRcode(t, s.with.server, qname, dns.TypeA, victimDelay, dns.RcodeNameError)
}

// hammer asks srv the attacker's names from 4 clients at once, over UDP
// and TCP, rounds times, and checks each reply: over UDP truncated to the
// client's buffer, over TCP within a TCP message.
func hammer(t *testing.T, srv *server, rounds int, questions ...question) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan string, 8*rounds*len(questions))
	for c := range 4 {
		wg.Go(func() {
			for range rounds {
				for _, q := range questions {
					proto := []string{"udp", "tcp"}[c%2]
					m := new(dns.Msg)
					m.SetQuestion(q.name, q.qtype)
					m.SetEdns0(1232, false)
					r, err := harness.Ask(proto, srv.addr, m)
					if r != nil {
						r.Compress = true // as it came: Len is then its size on the wire
					}
					switch {
					case err != nil:
						errs <- fmt.Sprintf("%s %s over %s: %v", q.name, dns.TypeToString[q.qtype], proto, err)
					case r.Rcode != dns.RcodeSuccess || len(r.Answer) == 0:
						errs <- fmt.Sprintf("%s %s over %s: %s, %d records", q.name, dns.TypeToString[q.qtype], proto, dns.RcodeToString[r.Rcode], len(r.Answer))
					case proto == "tcp" && r.Len() > dns.MaxMsgSize:
						errs <- fmt.Sprintf("%s %s over TCP: %d octets", q.name, dns.TypeToString[q.qtype], r.Len())
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// withinMemoryRule checks srv's resident memory against the limit of
// docs/deploy.md's memory rule, 1.3 x steady. The steady memory of the
// objects the API server holds besides the attacker's (every other test's
// too) is what base, a fresh server started before the attack, settled at;
// the attacker's objects add what the rule gives them: 1.4 MiB per 1,000
// imports, 1.2 MiB per 1,000 endpoints (the labels line left out, as
// trustCorefile does).
func withinMemoryRule(t *testing.T, srv, base resilientServer, imports, endpoints int) {
	t.Helper()
	steady := base.metric(t, "process_resident_memory_bytes", "") + (1.4*float64(imports)/1000+1.2*float64(endpoints)/1000)*(1<<20)
	limit := 1.3 * steady
	rss := srv.metric(t, "process_resident_memory_bytes", "")
	t.Logf("resident memory %.1f MiB, the rule's limit %.1f MiB (steady %.1f MiB)", rss/(1<<20), limit/(1<<20), steady/(1<<20))
	if rss > limit {
		t.Errorf("resident memory %.1f MiB, over the memory rule's limit of %.1f MiB", rss/(1<<20), limit/(1<<20))
	}
}

// freshServer starts another server, as a new replica or a restarted one
// does: it must become ready, and answer the victim. Started while the
// attacker's objects exist, its memory is what they cost besides the rest
// of the API server's objects, without what earlier rows left in the
// suite's server; started before, it is the baseline of that.
func (s *trustSuite) freshServer(t *testing.T) resilientServer {
	t.Helper()
	port := harness.FreePort(t)
	fresh := resilientServer{
		server:  startServer(t, trustCorefile(port, "127.0.0.1:9", false), false),
		metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", port),
	}
	poll.Eventually(t, 30*time.Second, "a fresh server's /ready 200", func() (bool, string) { return fresh.isReady(), "not ready" })
	expectAddresses(t, fresh.server, "checkout."+s.victim+".svc.clusterset.local.", dns.TypeA, propagation, victimVIP)
	return fresh
}

// sliceAtTheLimits: a headless import whose one slice has 1,000 named
// endpoints and 20,000 ports (each name x port an SRV record: 20 million).
func (s *trustSuite) sliceAtTheLimits(t *testing.T) {
	base := s.freshServer(t)
	ns := attacker(t)
	s.headlessImport(t, ns, "big")
	stop := s.keepAsking(t, "checkout."+s.victim+".svc.clusterset.local.", victimVIP)
	limitSlice(t, ns, "big", "c1", "big-c1", 1000, 252, limitPorts(20000, 0))
	name := "big." + ns + ".svc.clusterset.local."
	expectAddresses(t, s.with.server, "host-999.c1."+name, dns.TypeA, 5*propagation, "10.252.3.250")
	s.hammerBoth(t, base, stop, 1, 1000, question{name, dns.TypeSRV}, question{"_p7._tcp." + name, dns.TypeSRV}, question{name, dns.TypeA})
}

// hammerBoth asks the attacker's names of the suite's server while the
// victim is asked (until stop), checks that a change of the victim's shows
// within victimDelay (probe n), then asks them of a fresh server, whose
// memory must stay within the rule for the attacker's endpoints.
func (s *trustSuite) hammerBoth(t *testing.T, base resilientServer, stop func(), n, endpoints int, questions ...question) {
	t.Helper()
	hammer(t, s.with.server, 5, questions...)
	stop()
	s.victimSeesChanges(t, n)
	fresh := s.freshServer(t)
	hammer(t, fresh.server, 5, questions...)
	withinMemoryRule(t, fresh, base, 10, endpoints)
}

// importAtTheLimits: a ClusterSetIP import of 20,000 ports (about 1 MiB).
func (s *trustSuite) importAtTheLimits(t *testing.T) {
	base := s.freshServer(t)
	ns := attacker(t)
	si := newImport(ns, "ports", "10.250.12.1")
	si.Spec.Ports = nil
	for _, p := range limitPorts(20000, 0) {
		si.Spec.Ports = append(si.Spec.Ports, mcsv1beta1.ServicePort{Name: *p.Name, Protocol: corev1.ProtocolTCP, Port: *p.Port})
	}
	stop := s.keepAsking(t, "checkout."+s.victim+".svc.clusterset.local.", victimVIP)
	s.hostileImport(t, si)
	name := "ports." + ns + ".svc.clusterset.local."
	s.hammerBoth(t, base, stop, 2, 0, question{name, dns.TypeSRV}, question{"_p19999._tcp." + name, dns.TypeSRV})
}

// slicesOfDistinctPorts: three slices of 20,000 ports each, all different,
// and a small slice beside them that changes again and again: each change
// must cost the small slice, not the union of 60,000 ports, and another
// namespace's change must show as soon as ever.
func (s *trustSuite) slicesOfDistinctPorts(t *testing.T) {
	base := s.freshServer(t)
	ns := attacker(t)
	s.headlessImport(t, ns, "wide")
	for i := range 3 {
		limitSlice(t, ns, "wide", fmt.Sprintf("c%d", i), fmt.Sprintf("wide-%d", i), 1, 240+i, limitPorts(20000, 20000*i))
	}
	small := limitSlice(t, ns, "wide", "c9", "wide-small", 1, 243, limitPorts(1, 0))
	name := "wide." + ns + ".svc.clusterset.local."
	expectAddresses(t, s.with.server, name, dns.TypeA, 5*propagation, "10.240.0.1", "10.241.0.1", "10.242.0.1", "10.243.0.1")
	// The attacker's updates go on while the victim changes.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			small.Endpoints[0].Addresses = []string{fmt.Sprintf("10.243.%d.%d", (i/250)%250, 1+i%250)}
			updated, err := kube.DiscoveryV1().EndpointSlices(ns).Update(ctx, small, meta.UpdateOptions{})
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("update the small slice: %v", err)
				}
				return
			}
			small = updated
		}
	})
	for n := range 3 {
		s.victimSeesChanges(t, 3+n)
	}
	cancel()
	wg.Wait()
	if r := s.with.query(t, "tcp", name, dns.TypeSRV); r.Rcode != dns.RcodeSuccess || len(r.Answer) == 0 {
		t.Errorf("SRV of 60,001 ports over TCP: %s, %d records", dns.RcodeToString[r.Rcode], len(r.Answer))
	}
	fresh := s.freshServer(t)
	hammer(t, fresh.server, 5, question{name, dns.TypeSRV})
	withinMemoryRule(t, fresh, base, 10, 4)
}

// refusedPortNames: an import of 10,000 port names the plugin refuses, in
// 20 versions: a few short log lines, not one of half a megabyte per
// version.
func (s *trustSuite) refusedPortNames(t *testing.T) {
	ns := attacker(t)
	si := newImport(ns, "noisy", "10.250.13.1")
	si.Spec.Ports = nil
	for i := range 10000 {
		si.Spec.Ports = append(si.Spec.Ports, mcsv1beta1.ServicePort{Name: fmt.Sprintf("Not_A_Label_%040d", i), Protocol: corev1.ProtocolTCP, Port: 80})
	}
	logBefore := len(s.with.log.String())
	si = createImport(t, si)
	t.Cleanup(func() {
		_ = mcs.MulticlusterV1beta1().ServiceImports(ns).Delete(context.Background(), "noisy", meta.DeleteOptions{})
	})
	for v := range 20 {
		si.Spec.IPs = []string{fmt.Sprintf("10.250.13.%d", 2+v)}
		var err error
		if si, err = mcs.MulticlusterV1beta1().ServiceImports(ns).Update(context.Background(), si, meta.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	expectAddresses(t, s.with.server, "noisy."+ns+".svc.clusterset.local.", dns.TypeA, propagation, "10.250.13.21")
	written := s.with.log.String()[logBefore:]
	lines := strings.Count(written, "noisy")
	t.Logf("21 versions of an import of 10,000 refused port names: %d log lines, %d octets", lines, len(written))
	for line := range strings.Lines(written) {
		if len(line) > 2048 {
			t.Errorf("a log line of %d octets: %.200s...", len(line), line)
		}
	}
	if lines > 21 || len(written) > 64<<10 {
		t.Errorf("%d lines and %d octets of log for 21 versions", lines, len(written))
	}
}
