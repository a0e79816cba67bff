package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// TestConformance walks the Multicluster DNS specification of KEP-1645
// (schema 1.0.0), section by section, against the binary and real objects in
// the API server. Every name is also asked in cluster.local, the fallback
// zone, where it must be answered the same way under that zone.
func TestConformance(t *testing.T) {
	s := startServer(t, corefileWith, true)
	ns := namespace(t, "conformance")

	// A dual-stack ClusterSetIP import.
	createImport(t, &mcsv1beta1.ServiceImport{
		ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: "myservice"},
		Spec: mcsv1beta1.ServiceImportSpec{
			Type: mcsv1beta1.ClusterSetIP,
			IPs:  []string{"10.42.42.42", "2001:db8::42"},
			Ports: []mcsv1beta1.ServicePort{
				{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443},
				{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53},
			},
		},
	})
	// A headless import exported by three clusters, one of them with a
	// cluster id of two labels.
	headless := &mcsv1beta1.ServiceImport{
		ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: "headless"},
		Spec: mcsv1beta1.ServiceImportSpec{
			Type:  mcsv1beta1.Headless,
			Ports: []mcsv1beta1.ServicePort{{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443}},
		},
	}
	createImport(t, headless)
	createSlice(t, ns, "headless", "cluster-a", "headless-a", discovery.AddressTypeIPv4,
		endpoint("my-pet-1", "10.3.0.101", nil),
		endpoint("my-pet-2", "10.3.0.102", ptr.To(true)),
		endpoint("my-pet-3", "10.3.0.103", ptr.To(false)), // not ready: no records
	)
	createSlice(t, ns, "headless", "cluster-b", "headless-b", discovery.AddressTypeIPv4,
		endpoint("my-pet-1", "10.4.0.101", nil), // the same hostname as in cluster-a
		endpoint("", "10.4.0.150", nil),         // no hostname: named by its address
	)
	createSlice(t, ns, "headless", "cluster-b", "headless-b-v6", discovery.AddressTypeIPv6,
		endpoint("my-pet-1", "2001:db8::b1", nil), // dual-stack endpoint
	)
	createSlice(t, ns, "headless", "east.prod", "headless-east", discovery.AddressTypeIPv4,
		endpoint("db-0", "10.5.0.1", nil),
	)
	// A headless import whose only endpoint is not ready.
	createImport(t, &mcsv1beta1.ServiceImport{
		ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: "unready"},
		Spec:       mcsv1beta1.ServiceImportSpec{Type: mcsv1beta1.Headless, Ports: headless.Spec.Ports},
	})
	createSlice(t, ns, "unready", "cluster-a", "unready-a", discovery.AddressTypeIPv4, endpoint("x", "10.3.1.1", ptr.To(false)))

	// Wait for the last object to be served before asserting.
	expectAddresses(t, s, "headless."+ns+".svc.clusterset.local.", dns.TypeA, propagation, "10.3.0.101", "10.3.0.102", "10.4.0.101", "10.4.0.150", "10.5.0.1")

	for _, zone := range []string{"clusterset.local.", "cluster.local."} {
		svc := "myservice." + ns + ".svc." + zone
		hl := "headless." + ns + ".svc." + zone
		t.Run(zone, func(t *testing.T) {
			if zone == "clusterset.local." {
				t.Run("2.2 schema version", func(t *testing.T) {
					expectRecords(t, s, "dns-version."+zone, dns.TypeTXT, dns.RcodeSuccess,
						[]string{`dns-version.clusterset.local. 28800 IN TXT "1.0.0"`}, nil)
				})
			}
			t.Run("2.3.1 ClusterSetIP A/AAAA", func(t *testing.T) {
				expectRecords(t, s, svc, dns.TypeA, dns.RcodeSuccess, []string{svc + " 5 IN A 10.42.42.42"}, nil)
				expectRecords(t, s, svc, dns.TypeAAAA, dns.RcodeSuccess, []string{svc + " 5 IN AAAA 2001:db8::42"}, nil)
			})
			t.Run("2.3.2 ClusterSetIP SRV", func(t *testing.T) {
				extra := []string{svc + " 5 IN A 10.42.42.42", svc + " 5 IN AAAA 2001:db8::42"}
				expectRecords(t, s, "_https._tcp."+svc, dns.TypeSRV, dns.RcodeSuccess,
					[]string{"_https._tcp." + svc + " 5 IN SRV 0 100 443 " + svc}, extra)
				expectRecords(t, s, "_dns._udp."+svc, dns.TypeSRV, dns.RcodeSuccess,
					[]string{"_dns._udp." + svc + " 5 IN SRV 0 100 53 " + svc}, extra)
				expectRecords(t, s, svc, dns.TypeSRV, dns.RcodeSuccess, []string{
					svc + " 5 IN SRV 0 50 443 " + svc,
					svc + " 5 IN SRV 0 50 53 " + svc,
				}, extra)
				expectRcodeNow(t, s, "_https._udp."+svc, dns.TypeSRV, dns.RcodeNameError)
			})
			t.Run("2.3.4 no cluster-specific ClusterSetIP names", func(t *testing.T) {
				expectRcodeNow(t, s, "cluster-a."+svc, dns.TypeA, dns.RcodeNameError)
				expectRcodeNow(t, s, "my-pet-1.cluster-a."+svc, dns.TypeA, dns.RcodeNameError)
			})
			t.Run("2.4.1 headless A/AAAA", func(t *testing.T) {
				expectRecords(t, s, hl, dns.TypeA, dns.RcodeSuccess, []string{
					hl + " 5 IN A 10.3.0.101", hl + " 5 IN A 10.3.0.102", hl + " 5 IN A 10.4.0.101",
					hl + " 5 IN A 10.4.0.150", hl + " 5 IN A 10.5.0.1",
				}, nil)
				expectRecords(t, s, hl, dns.TypeAAAA, dns.RcodeSuccess, []string{hl + " 5 IN AAAA 2001:db8::b1"}, nil)
				// Per hostname and cluster: duplicate hostnames stay distinct.
				expectRecords(t, s, "my-pet-1.cluster-a."+hl, dns.TypeA, dns.RcodeSuccess, []string{"my-pet-1.cluster-a." + hl + " 5 IN A 10.3.0.101"}, nil)
				expectRecords(t, s, "my-pet-1.cluster-b."+hl, dns.TypeA, dns.RcodeSuccess, []string{"my-pet-1.cluster-b." + hl + " 5 IN A 10.4.0.101"}, nil)
				expectRecords(t, s, "my-pet-1.cluster-b."+hl, dns.TypeAAAA, dns.RcodeSuccess, []string{"my-pet-1.cluster-b." + hl + " 5 IN AAAA 2001:db8::b1"}, nil)
				expectRecords(t, s, "10-4-0-150.cluster-b."+hl, dns.TypeA, dns.RcodeSuccess, []string{"10-4-0-150.cluster-b." + hl + " 5 IN A 10.4.0.150"}, nil)
				expectRecords(t, s, "db-0.east.prod."+hl, dns.TypeA, dns.RcodeSuccess, []string{"db-0.east.prod." + hl + " 5 IN A 10.5.0.1"}, nil)
				// A name that exists with the other family only: NODATA.
				expectRecords(t, s, "my-pet-1.cluster-a."+hl, dns.TypeAAAA, dns.RcodeSuccess, nil, nil)
				// Not ready: no name at all.
				expectRcodeNow(t, s, "my-pet-3.cluster-a."+hl, dns.TypeA, dns.RcodeNameError)
				expectRcodeNow(t, s, "my-pet-1.cluster-c."+hl, dns.TypeA, dns.RcodeNameError)
				// No ready endpoint at all: NXDOMAIN.
				expectRcodeNow(t, s, "unready."+ns+".svc."+zone, dns.TypeA, dns.RcodeNameError)
				expectRcodeNow(t, s, "unready."+ns+".svc."+zone, dns.TypeAAAA, dns.RcodeNameError)
			})
			t.Run("2.4.2 headless SRV", func(t *testing.T) {
				targets := []string{"my-pet-1.cluster-a.", "my-pet-2.cluster-a.", "10-4-0-150.cluster-b.", "my-pet-1.cluster-b.", "db-0.east.prod."}
				var answer []string
				for _, target := range targets {
					answer = append(answer, "_https._tcp."+hl+" 5 IN SRV 0 20 443 "+target+hl)
				}
				extra := []string{
					"my-pet-1.cluster-a." + hl + " 5 IN A 10.3.0.101",
					"my-pet-2.cluster-a." + hl + " 5 IN A 10.3.0.102",
					"10-4-0-150.cluster-b." + hl + " 5 IN A 10.4.0.150",
					"my-pet-1.cluster-b." + hl + " 5 IN A 10.4.0.101",
					"my-pet-1.cluster-b." + hl + " 5 IN AAAA 2001:db8::b1",
					"db-0.east.prod." + hl + " 5 IN A 10.5.0.1",
				}
				expectRecords(t, s, "_https._tcp."+hl, dns.TypeSRV, dns.RcodeSuccess, answer, extra)
				expectRcodeNow(t, s, "_http._tcp."+hl, dns.TypeSRV, dns.RcodeNameError)
			})
			t.Run("2.4.4 no cluster-only headless names", func(t *testing.T) {
				// cluster-a.svc holds no records; host names lie below it,
				// so it exists (an empty non-terminal, RFC 8020): NODATA.
				// A cluster without host names there has no name at all.
				expectRecords(t, s, "cluster-a."+hl, dns.TypeA, dns.RcodeSuccess, nil, nil)
				expectRcodeNow(t, s, "cluster-z."+hl, dns.TypeA, dns.RcodeNameError)
			})
		})
	}

	t.Run("2.3.3 ClusterSetIP PTR", func(t *testing.T) {
		expectRecords(t, s, "42.42.42.10.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess,
			[]string{"42.42.42.10.in-addr.arpa. 5 IN PTR myservice." + ns + ".svc.clusterset.local."}, nil)
		v6 := reverse(t, "2001:db8::42")
		expectRecords(t, s, v6, dns.TypePTR, dns.RcodeSuccess, []string{v6 + " 5 IN PTR myservice." + ns + ".svc.clusterset.local."}, nil)
	})
	t.Run("2.4.3 headless PTR", func(t *testing.T) {
		hl := "headless." + ns + ".svc.clusterset.local."
		expectRecords(t, s, "101.0.3.10.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess, []string{"101.0.3.10.in-addr.arpa. 5 IN PTR my-pet-1.cluster-a." + hl}, nil)
		expectRecords(t, s, "1.0.5.10.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess, []string{"1.0.5.10.in-addr.arpa. 5 IN PTR db-0.east.prod." + hl}, nil)
		v6 := reverse(t, "2001:db8::b1")
		expectRecords(t, s, v6, dns.TypePTR, dns.RcodeSuccess, []string{v6 + " 5 IN PTR my-pet-1.cluster-b." + hl}, nil)
		// A not-ready endpoint has no PTR: the address is passed on to the
		// kubernetes plugin, which does not know it either.
		if r := s.query(t, "udp", "103.0.3.10.in-addr.arpa.", dns.TypePTR); len(r.Answer) != 0 {
			t.Errorf("PTR of a not-ready endpoint: %v", r.Answer)
		}
	})

	t.Run("endpoint turns not ready", func(t *testing.T) {
		slice, err := kube.DiscoveryV1().EndpointSlices(ns).Get(context.Background(), "headless-east", meta.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		slice.Endpoints[0].Conditions.Ready = ptr.To(false)
		if _, err := kube.DiscoveryV1().EndpointSlices(ns).Update(context.Background(), slice, meta.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		expectRcode(t, s, "db-0.east.prod.headless."+ns+".svc.clusterset.local.", dns.TypeA, propagation, dns.RcodeNameError)
		expectAddresses(t, s, "headless."+ns+".svc.clusterset.local.", dns.TypeA, propagation, "10.3.0.101", "10.3.0.102", "10.4.0.101", "10.4.0.150")
	})
	t.Run("one cluster's slice deleted leaves the others", func(t *testing.T) {
		if err := kube.DiscoveryV1().EndpointSlices(ns).Delete(context.Background(), "headless-a", meta.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		expectAddresses(t, s, "headless."+ns+".svc.clusterset.local.", dns.TypeA, propagation, "10.4.0.101", "10.4.0.150")
		expectAddresses(t, s, "headless."+ns+".svc.cluster.local.", dns.TypeAAAA, propagation, "2001:db8::b1")
	})
}

// TestLargeHeadless serves a headless import of 500 endpoints: over UDP the
// reply is truncated to a valid message with TC set, over TCP it holds every
// record.
func TestLargeHeadless(t *testing.T) {
	s := startServer(t, corefileWith, true)
	ns := namespace(t, "large")
	createImport(t, &mcsv1beta1.ServiceImport{
		ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: "big"},
		Spec: mcsv1beta1.ServiceImportSpec{
			Type:  mcsv1beta1.Headless,
			Ports: []mcsv1beta1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}},
		},
	})
	const perSlice, nSlices = 100, 5
	all := map[string]bool{}
	for i := range nSlices {
		var eps []discovery.Endpoint
		for j := range perSlice {
			ip := fmt.Sprintf("10.6.%d.%d", i, j+1)
			all[ip] = true
			eps = append(eps, endpoint(fmt.Sprintf("pod-%d-%d", i, j), ip, nil))
		}
		createSlice(t, ns, "big", fmt.Sprintf("cluster-%d", i%2), fmt.Sprintf("big-%d", i), discovery.AddressTypeIPv4, eps...)
	}
	name := "big." + ns + ".svc.clusterset.local."
	poll.Eventually(t, propagation, "500 addresses over TCP", func() (bool, string) {
		n := len(addresses(s.query(t, "tcp", name, dns.TypeA)))
		return n == len(all), fmt.Sprint(n)
	})

	for _, udpSize := range []uint16{0, 1232, 4096} {
		t.Run(fmt.Sprintf("UDP, EDNS0 buffer %d", udpSize), func(t *testing.T) {
			m := new(dns.Msg)
			m.SetQuestion(name, dns.TypeA)
			limit := dns.MinMsgSize
			if udpSize > 0 {
				m.SetEdns0(udpSize, false)
				limit = int(udpSize)
			}
			raw := exchangeRaw(t, s.addr, m)
			if len(raw) > limit {
				t.Errorf("UDP reply of %d bytes, over the client's %d", len(raw), limit)
			}
			r := new(dns.Msg)
			if err := r.Unpack(raw); err != nil {
				t.Fatalf("UDP reply does not parse: %v", err)
			}
			if !r.Truncated || r.Rcode != dns.RcodeSuccess {
				t.Errorf("UDP reply: TC %v, rcode %s; want TC and NOERROR", r.Truncated, dns.RcodeToString[r.Rcode])
			}
			for _, a := range addresses(r) {
				if !all[a] {
					t.Errorf("UDP reply holds %s, not an endpoint", a)
				}
			}
		})
	}
	t.Run("TCP A", func(t *testing.T) {
		r := s.query(t, "tcp", name, dns.TypeA)
		got := addresses(r)
		if r.Truncated || len(got) != len(all) {
			t.Fatalf("TCP: TC %v, %d addresses; want all %d", r.Truncated, len(got), len(all))
		}
		for _, a := range got {
			if !all[a] {
				t.Errorf("TCP reply holds %s, not an endpoint", a)
			}
		}
	})
	t.Run("TCP SRV", func(t *testing.T) {
		r := s.query(t, "tcp", "_http._tcp."+name, dns.TypeSRV)
		if r.Truncated || len(r.Answer) != len(all) {
			t.Fatalf("TCP SRV: TC %v, %d records; want %d", r.Truncated, len(r.Answer), len(all))
		}
	})
}

// exchangeRaw sends m over UDP and returns the reply's bytes, so that its
// size on the wire can be checked.
func exchangeRaw(t *testing.T, addr string, m *dns.Msg) []byte {
	t.Helper()
	c := &dns.Client{Net: "udp", UDPSize: dns.MaxMsgSize}
	conn, err := c.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.WriteMsg(m); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, dns.MaxMsgSize)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

func endpoint(host, ip string, ready *bool) discovery.Endpoint {
	e := discovery.Endpoint{Addresses: []string{ip}, Conditions: discovery.EndpointConditions{Ready: ready}}
	if host != "" {
		e.Hostname = ptr.To(host)
	}
	return e
}

// createSlice creates a multicluster EndpointSlice of an import, as an MCS
// controller does, with the import's port.
func createSlice(t *testing.T, ns, service, cluster, name string, family discovery.AddressType, endpoints ...discovery.Endpoint) {
	t.Helper()
	slice := &discovery.EndpointSlice{
		ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
			mcsv1beta1.LabelServiceName:   service,
			mcsv1beta1.LabelSourceCluster: cluster,
		}},
		AddressType: family,
		Endpoints:   endpoints,
		Ports:       []discovery.EndpointPort{{Name: ptr.To("https"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](443)}},
	}
	if service == "big" {
		slice.Ports[0].Name, slice.Ports[0].Port = ptr.To("http"), ptr.To[int32](80)
	}
	if _, err := kube.DiscoveryV1().EndpointSlices(ns).Create(context.Background(), slice, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// expectRecords asks name over UDP and TCP and checks the rcode, the AA bit,
// and the answer and additional sections as sets of records in presentation
// form (over UDP, the additional section may hold only some of extra). An empty answer of NOERROR must carry the zone's SOA.
func expectRecords(t *testing.T, s *server, name string, qtype uint16, rcode int, answer, extra []string) {
	t.Helper()
	for _, proto := range []string{"udp", "tcp"} {
		r := s.query(t, proto, name, qtype)
		what := proto + " " + name + " " + dns.TypeToString[qtype]
		if r.Rcode != rcode || !r.Authoritative {
			t.Errorf("%s: rcode %s AA %v, want %s AA", what, dns.RcodeToString[r.Rcode], r.Authoritative, dns.RcodeToString[rcode])
		}
		if got, want := presentation(r.Answer), sorted(answer); !slices.Equal(got, want) {
			t.Errorf("%s: answer\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		// The additional section "may include" the targets' addresses: over
		// UDP, CoreDNS drops them first to fit 512 octets. Over TCP, all.
		got, want := presentation(r.Extra), sorted(extra)
		complete := slices.Equal(got, want)
		if proto == "udp" {
			complete = !slices.ContainsFunc(got, func(rr string) bool { return !slices.Contains(want, rr) })
		}
		if !complete {
			t.Errorf("%s: additional\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if len(answer) == 0 && (len(r.Ns) != 1 || r.Ns[0].Header().Rrtype != dns.TypeSOA) {
			t.Errorf("%s: NODATA without the zone's SOA: %v", what, r.Ns)
		}
	}
}

// expectRcodeNow asks name once over UDP and checks the rcode.
func expectRcodeNow(t *testing.T, s *server, name string, qtype uint16, rcode int) {
	t.Helper()
	if r := s.query(t, "udp", name, qtype); r.Rcode != rcode {
		t.Errorf("%s %s: rcode %s, want %s", name, dns.TypeToString[qtype], dns.RcodeToString[r.Rcode], dns.RcodeToString[rcode])
	}
}

// presentation returns the records in presentation form, fields separated by
// single spaces, OPT records left out, sorted.
func presentation(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		if rr.Header().Rrtype == dns.TypeOPT {
			continue
		}
		out = append(out, strings.Join(strings.Fields(rr.String()), " "))
	}
	slices.Sort(out)
	return out
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func reverse(t *testing.T, ip string) string {
	t.Helper()
	name, err := dns.ReverseAddr(ip)
	if err != nil {
		t.Fatal(err)
	}
	return name
}
