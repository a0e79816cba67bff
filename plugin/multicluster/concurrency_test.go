package multicluster

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// countingNext stands for the next plugin; safe for concurrent queries.
type countingNext struct{ calls atomic.Int64 }

func (n *countingNext) Name() string { return "next" }
func (n *countingNext) ServeDNS(_ context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	n.calls.Add(1)
	m := new(dns.Msg)
	m.SetRcode(r, dns.RcodeRefused)
	w.WriteMsg(m)
	return dns.RcodeRefused, nil
}

// churnAddr returns the address the churn gives service k: ClusterSetIPs
// in 10.50/16 and fd00::50:0/112, endpoints in 10.60/16.
func churnAddr(base string, k, n int) string {
	switch base {
	case "v6":
		return fmt.Sprintf("fd00::50:%d%d", k, n)
	case "ep":
		return fmt.Sprintf("10.60.%d.%d", k, n)
	}
	return fmt.Sprintf("10.50.%d.%d", k, n)
}

// TestConcurrentServeAndChurn queries the plugin from several goroutines
// while ServiceImports, EndpointSlices and Services are created, changed and
// deleted through a fake clientset feeding the real informers. Run it with
// -race. Every reply must pack, never be SERVFAIL, and hold only addresses
// the service had at some point; once everything is deleted, the index is
// empty.
func TestConcurrentServeAndChurn(t *testing.T) {
	m, kube, mcs := startFakeWatcher(t)
	m.Zones = []string{"clusterset.local.", "in-addr.arpa.", "ip6.arpa."}
	next := &countingNext{}
	m.Next = next

	const services = 6
	ctx := context.Background()
	imports := mcs.MulticlusterV1beta1().ServiceImports("ns1")
	slicesAPI := kube.DiscoveryV1().EndpointSlices("ns1")
	servicesAPI := kube.CoreV1().Services("ns1")
	ready := true
	port := int32(80)
	name := func(k int) string { return fmt.Sprintf("svc%d", k) }
	slice := func(k, n int) *discovery.EndpointSlice {
		host := "h0"
		return &discovery.EndpointSlice{
			ObjectMeta:  meta.ObjectMeta{Namespace: "ns1", Name: name(k) + "-east", Labels: map[string]string{labelServiceName: name(k), labelSourceCluster: "east"}},
			AddressType: discovery.AddressTypeIPv4,
			Endpoints: []discovery.Endpoint{
				{Addresses: []string{churnAddr("ep", k, n)}, Hostname: &host, Conditions: discovery.EndpointConditions{Ready: &ready}},
				{Addresses: []string{churnAddr("ep", k, n+100)}},
			},
			Ports: []discovery.EndpointPort{{Port: &port}},
		}
	}
	// steps is one round of what happens to a service; each service runs
	// them in turn, out of phase with the others.
	steps := []func(k int) error{
		func(k int) error {
			_, err := imports.Create(ctx, serviceImport("ns1", name(k), churnAddr("v4", k, 1)), meta.CreateOptions{})
			return err
		},
		func(k int) error {
			_, err := imports.Update(ctx, serviceImport("ns1", name(k), churnAddr("v4", k, 2), churnAddr("v6", k, 2)), meta.UpdateOptions{})
			return err
		},
		func(k int) error {
			svc := &corev1.Service{ObjectMeta: meta.ObjectMeta{Namespace: "ns1", Name: name(k)}}
			_, err := servicesAPI.Create(ctx, svc, meta.CreateOptions{})
			return err
		},
		func(k int) error {
			si := serviceImport("ns1", name(k))
			si.Spec.Type = mcsv1beta1.Headless
			_, err := imports.Update(ctx, si, meta.UpdateOptions{})
			return err
		},
		func(k int) error {
			_, err := slicesAPI.Create(ctx, slice(k, 1), meta.CreateOptions{})
			return err
		},
		func(k int) error {
			_, err := slicesAPI.Update(ctx, slice(k, 2), meta.UpdateOptions{})
			return err
		},
		func(k int) error { return servicesAPI.Delete(ctx, name(k), meta.DeleteOptions{}) },
		func(k int) error { return slicesAPI.Delete(ctx, name(k)+"-east", meta.DeleteOptions{}) },
		func(k int) error { return imports.Delete(ctx, name(k), meta.DeleteOptions{}) },
	}
	// Every address a service may ever answer with.
	allowed := map[string]bool{}
	for k := range services {
		for _, a := range []string{churnAddr("v4", k, 1), churnAddr("v4", k, 2), churnAddr("v6", k, 2),
			churnAddr("ep", k, 1), churnAddr("ep", k, 2), churnAddr("ep", k, 101), churnAddr("ep", k, 102)} {
			allowed[fmt.Sprintf("%s/%s", name(k), net.ParseIP(a))] = true
		}
	}

	var questions []dns.Question
	for k := range services {
		for _, q := range []struct {
			name  string
			qtype uint16
		}{
			{name(k) + ".ns1.svc.clusterset.local.", dns.TypeA},
			{name(k) + ".ns1.svc.clusterset.local.", dns.TypeAAAA},
			{name(k) + ".ns1.svc.clusterset.local.", dns.TypeSRV},
			{"_http._tcp." + name(k) + ".ns1.svc.clusterset.local.", dns.TypeSRV},
			{"h0.east." + name(k) + ".ns1.svc.clusterset.local.", dns.TypeA},
			{name(k) + ".ns1.svc.cluster.local.", dns.TypeA},
			{fmt.Sprintf("2.%d.50.10.in-addr.arpa.", k), dns.TypePTR},
			{fmt.Sprintf("1.%d.60.10.in-addr.arpa.", k), dns.TypePTR},
		} {
			questions = append(questions, dns.Question{Name: q.name, Qtype: q.qtype, Qclass: dns.ClassINET})
		}
	}

	// The churn runs for at least 3 s and until every service has been
	// through a whole round of steps (a loaded machine may take longer;
	// a minute at most); the queries run as long as the churn does.
	minimum := time.Now().Add(3 * time.Second)
	limit := time.Now().Add(time.Minute)
	wholeRound := int64(len(steps) * services)
	churning := make(chan struct{})
	var wg sync.WaitGroup
	var queries, changes atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(churning)
		for round := 0; time.Now().Before(limit) && (time.Now().Before(minimum) || changes.Load() < wholeRound); round++ {
			for k := range services {
				if round < k {
					continue // service k starts k rounds late, out of phase
				}
				if err := steps[(round-k)%len(steps)](k); err != nil {
					t.Errorf("churn round %d, %s: %v", round, name(k), err)
					return
				}
				changes.Add(1)
			}
		}
	}()
	for worker := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := worker; ; i++ {
				select {
				case <-churning:
					return
				default:
				}
				q := questions[i%len(questions)]
				r := new(dns.Msg)
				r.SetQuestion(q.Name, q.Qtype)
				rec := dnstest.NewRecorder(&test.ResponseWriter{})
				rcode, err := m.ServeDNS(ctx, rec, r)
				queries.Add(1)
				if err != nil || rec.Msg == nil {
					t.Errorf("%s %s: rcode %d, error %v, reply %v", q.Name, dns.TypeToString[q.Qtype], rcode, err, rec.Msg)
					return
				}
				if rec.Msg.Rcode == dns.RcodeServerFailure {
					t.Errorf("%s %s: SERVFAIL from a synced plugin", q.Name, dns.TypeToString[q.Qtype])
					return
				}
				if _, err := rec.Msg.Pack(); err != nil {
					t.Errorf("%s %s: reply does not pack: %v", q.Name, dns.TypeToString[q.Qtype], err)
					return
				}
				svc, _, _ := cutService(q.Name)
				for _, rr := range append(append([]dns.RR{}, rec.Msg.Answer...), rec.Msg.Extra...) {
					var ip net.IP
					switch a := rr.(type) {
					case *dns.A:
						ip = a.A
					case *dns.AAAA:
						ip = a.AAAA
					default:
						continue
					}
					if !allowed[svc+"/"+ip.String()] {
						t.Errorf("%s %s: address %s was never %s's", q.Name, dns.TypeToString[q.Qtype], ip, svc)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("%d queries (%d passed on) during %d changes", queries.Load(), next.calls.Load(), changes.Load())
	if changes.Load() < wholeRound {
		t.Errorf("only %d changes in a minute: the churn did not go through a whole round", changes.Load())
	}

	// Delete whatever is left: the index must end up empty.
	for k := range services {
		_ = servicesAPI.Delete(ctx, name(k), meta.DeleteOptions{})
		_ = slicesAPI.Delete(ctx, name(k)+"-east", meta.DeleteOptions{})
		_ = imports.Delete(ctx, name(k), meta.DeleteOptions{})
	}
	waitFor(t, 5*time.Second, "an empty index", func() bool {
		m.index.mu.RLock()
		defer m.index.mu.RUnlock()
		return len(m.index.views) == 0 && len(m.index.namespaces) == 0 && m.index.reverseLen() == 0
	})
}

// cutService returns the service label of a name below svc.ns1.svc.ZONE,
// or the service a test PTR name belongs to.
func cutService(qname string) (string, string, bool) {
	var k int
	var rest string
	if _, err := fmt.Sscanf(qname, "svc%d.%s", &k, &rest); err == nil {
		return fmt.Sprintf("svc%d", k), rest, true
	}
	for i := 0; i+5 < len(qname); i++ {
		if _, err := fmt.Sscanf(qname[i:], "svc%d.%s", &k, &rest); err == nil {
			return fmt.Sprintf("svc%d", k), rest, true
		}
	}
	var a, b int
	if _, err := fmt.Sscanf(qname, "%d.%d.", &a, &b); err == nil {
		return fmt.Sprintf("svc%d", b), "", true
	}
	return "", "", false
}
