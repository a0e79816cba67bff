package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// Rows of TestHostileObjects with shapes whose cost is in how many
// addresses an object lists, and how often they repeat, rather than in its
// ports (docs/trust.md, "Cost model").

// addressSlice creates the EndpointSlice ns/name of the import svc, from
// cluster: endpoints endpoints of perEndpoint addresses each, which
// address(i, j) names (endpoint i, address j), and host names when named.
func addressSlice(t *testing.T, ns, svc, cluster, name string, endpoints, perEndpoint int, named bool, address func(i, j int) string) *discovery.EndpointSlice {
	t.Helper()
	eps := make([]discovery.Endpoint, endpoints)
	for i := range eps {
		for j := range perEndpoint {
			eps[i].Addresses = append(eps[i].Addresses, address(i, j))
		}
		if named {
			eps[i].Hostname = ptr.To(fmt.Sprintf("host-%d", i))
		}
	}
	es := &discovery.EndpointSlice{
		ObjectMeta:  meta.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{mcsv1beta1.LabelServiceName: svc, mcsv1beta1.LabelSourceCluster: cluster}},
		AddressType: discovery.AddressTypeIPv4,
		Endpoints:   eps,
		Ports:       []discovery.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](80)}},
	}
	created, err := kube.DiscoveryV1().EndpointSlices(ns).Create(context.Background(), es, meta.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// victimSliceSeen adds an EndpointSlice to the victim's headless import
// demo/db and checks that its endpoint answers within victimDelay, then
// that its deletion does: a change that waits in the EndpointSlice
// informer's queue behind the attacker's, if those cost more than their
// own size.
func (s *trustSuite) victimSliceSeen(t *testing.T, n int) {
	t.Helper()
	ip := fmt.Sprintf("10.250.1.%d", 10+n%240)
	qname := "db-9.probe.db." + s.victim + ".svc.clusterset.local."
	slice := fmt.Sprintf("db-probe-%d", n)
	start := time.Now()
	createSlice(t, s.victim, "db", "probe", slice, discovery.AddressTypeIPv4, endpoint("db-9", ip, nil))
	// Gone on every way out, so that the victim is intact for the rows
	// after this one.
	t.Cleanup(func() {
		_ = kube.DiscoveryV1().EndpointSlices(s.victim).Delete(context.Background(), slice, meta.DeleteOptions{})
	})
	expectAddresses(t, s.with.server, qname, dns.TypeA, victimDelay, ip)
	t.Logf("a new slice of the victim's answered after %s", time.Since(start).Round(time.Millisecond))
	if err := kube.DiscoveryV1().EndpointSlices(s.victim).Delete(context.Background(), slice, meta.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expectRcode(t, s.with.server, qname, dns.TypeA, victimDelay, dns.RcodeNameError)
}

// slicesOfManyAddresses: a ClusterSetIP import without spec.ips, which
// answers from its slices' addresses (Lighthouse's layout), with 5 slices
// of 1,000 endpoints of 60 addresses each (300,000 addresses; the API
// allows 100 an endpoint), and a one-endpoint slice of it created and
// deleted as fast as the API server takes it: another namespace's change
// shows within victimDelay throughout, and the import answers its lowest
// 2,000 addresses over TCP.
func (s *trustSuite) slicesOfManyAddresses(t *testing.T) {
	ns := attacker(t)
	si := newImport(ns, "addr")
	s.hostileImport(t, si)
	for c := range 5 {
		addressSlice(t, ns, "addr", fmt.Sprintf("c%d", c), fmt.Sprintf("addr-%d", c), 1000, 60, false, func(i, j int) string {
			n := i*60 + j
			return fmt.Sprintf("10.%d.%d.%d", 100+c, n/250, 1+n%250)
		})
	}
	name := "addr." + ns + ".svc.clusterset.local."
	poll.Eventually(t, 5*propagation, name+" answers its lowest 2,000 addresses over TCP", func() (bool, string) {
		r := s.with.query(t, "tcp", name, dns.TypeA)
		got := addresses(r)
		if len(got) == 0 {
			return false, dns.RcodeToString[r.Rcode] + ", no address"
		}
		slices.SortFunc(got, func(a, b string) int { return netip.MustParseAddr(a).Compare(netip.MustParseAddr(b)) })
		return len(got) == 2000 && got[0] == "10.100.0.1" && got[1999] == "10.100.7.250", fmt.Sprintf("%d addresses, %s to %s", len(got), got[0], got[len(got)-1])
	})
	cpu := s.with.metric(t, "process_cpu_seconds_total", "")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	// Stopped before the namespace is deleted, on every way out.
	defer func() {
		cancel()
		wg.Wait()
	}()
	var flaps atomic.Int64
	wg.Go(func() {
		small := &discovery.EndpointSlice{
			ObjectMeta:  meta.ObjectMeta{Namespace: ns, Name: "addr-small", Labels: map[string]string{mcsv1beta1.LabelServiceName: "addr", mcsv1beta1.LabelSourceCluster: "c9"}},
			AddressType: discovery.AddressTypeIPv4,
			Endpoints:   []discovery.Endpoint{{Addresses: []string{"10.99.0.1"}}},
		}
		for ctx.Err() == nil {
			if _, err := kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, small, meta.CreateOptions{}); err != nil {
				if ctx.Err() == nil {
					t.Errorf("create the small slice: %v", err)
				}
				return
			}
			if err := kube.DiscoveryV1().EndpointSlices(ns).Delete(ctx, "addr-small", meta.DeleteOptions{}); err != nil {
				if ctx.Err() == nil {
					t.Errorf("delete the small slice: %v", err)
				}
				return
			}
			flaps.Add(1)
		}
	})
	began := time.Now()
	// The attack under way: a backlog of events, if each cost all the
	// addresses, before the victim changes.
	poll.Eventually(t, time.Minute, "50 flaps of the small slice", func() (bool, string) {
		return flaps.Load() >= 50, fmt.Sprintf("%d flaps", flaps.Load())
	})
	// The victim's slices wait behind the flaps made so far, in the same
	// informer's queue.
	made := flaps.Load()
	for n := range 3 {
		s.victimSliceSeen(t, n)
	}
	cancel()
	wg.Wait()
	// The server's whole CPU over the attack, per event of the small slice
	// it has handled (at least a create and a delete of each flap before
	// the victim's first slice): each costs the slice, not the 300,000
	// addresses beside it.
	events := 2 * made
	perEvent := (s.with.metric(t, "process_cpu_seconds_total", "") - cpu) / float64(events)
	t.Logf("the small slice came and went %d times in %s: %.2f ms of the server's CPU an event", flaps.Load(), time.Since(began).Round(time.Millisecond), perEvent*1000)
	if perEvent > 0.050 {
		t.Errorf("%.1f ms of CPU an event of a one-endpoint slice, over the 50 ms target", perEvent*1000)
	}
}

// repeatedAddresses: a headless import whose 10 slices name 1,000 hosts
// each, every one at the same 60 addresses. Asked A, SRV and PTR from four clients at
// once, each answer is right and whole-or-truncated, and another
// namespace's change shows within victimDelay meanwhile.
func (s *trustSuite) repeatedAddresses(t *testing.T) {
	ns := attacker(t)
	si := newImport(ns, "rep")
	si.Spec.Type = mcsv1beta1.Headless
	s.hostileImport(t, si)
	for c := range 10 {
		addressSlice(t, ns, "rep", fmt.Sprintf("c%d", c), fmt.Sprintf("rep-%d", c), 1000, 60, true, func(_, j int) string {
			return fmt.Sprintf("10.98.0.%d", 1+j)
		})
	}
	name := "rep." + ns + ".svc.clusterset.local."
	poll.Eventually(t, 5*propagation, name+" answers its 60 addresses", func() (bool, string) {
		got := addresses(s.with.query(t, "tcp", name, dns.TypeA))
		return len(got) == 60, fmt.Sprintf("%d addresses", len(got))
	})
	// The last slice's last host, once every slice is in: its 60
	// addresses, over TCP (they take more than a UDP reply without EDNS0).
	poll.Eventually(t, 5*propagation, "host-999.c9."+name+" answers 60 addresses over TCP", func() (bool, string) {
		got := addresses(s.with.query(t, "tcp", "host-999.c9."+name, dns.TypeA))
		return len(got) == 60, fmt.Sprintf("%d addresses", len(got))
	})
	cpu := s.with.metric(t, "process_cpu_seconds_total", "")
	var wg sync.WaitGroup
	defer wg.Wait()   // the clients end on their own, on every way out
	const rounds = 25 // of 3 questions from 4 clients
	wg.Go(func() {
		hammer(t, s.with.server, rounds, question{name, dns.TypeA}, question{"_http._tcp." + name, dns.TypeSRV}, question{"1.0.98.10.in-addr.arpa.", dns.TypePTR})
	})
	began := time.Now()
	for n := range 3 {
		s.victimSliceSeen(t, 3+n)
	}
	wg.Wait()
	// The server's whole CPU over the queries, per query: each costs its
	// answer, not a walk over the 10,000 endpoints.
	queries := float64(4 * 3 * rounds)
	perQuery := (s.with.metric(t, "process_cpu_seconds_total", "") - cpu) / queries
	t.Logf("%.0f queries of A, SRV and PTR from 4 clients, the victim's changes meanwhile: %s, %.2f ms of the server's CPU a query", queries, time.Since(began).Round(time.Millisecond), perQuery*1000)
	if perQuery > 0.005 {
		t.Errorf("%.1f ms of CPU a query, over the 5 ms target", perQuery*1000)
	}
}
