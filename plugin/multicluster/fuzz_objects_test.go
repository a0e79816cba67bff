package multicluster

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FuzzObjects builds a ServiceImport and an EndpointSlice from arbitrary
// field values, as a faulty or hostile controller could write them, and
// queries the names they define. Conversion must never panic and must keep
// only what DNS can serve; every reply must pack.
func FuzzObjects(f *testing.F) {
	f.Add("ns1", "web", "ClusterSetIP", "10.0.0.1", "fd00::1", "http", "TCP", int32(80), "east", "db-0", "10.1.0.1", uint8(0))
	f.Add("ns1", "db", "Headless", "", "", "", "", int32(5432), "west.eu", "", "fd00::5", uint8(1))
	f.Add("ns1", "db", "Headless", "10.0.0.1", "::ffff:10.0.0.2", "Not_A_Label", "ICMP", int32(70000), "East", "DB-0", "::ffff:10.1.0.1", uint8(0))
	f.Add("ns1", "two", "ClusterSetIP", "10.0.0.1", "::ffff:10.0.0.2", "dns", "UDP", int32(53), "east", "", "10.0.0.3", uint8(4))
	f.Add("ns1", "odd", "", "not-an-ip", "10.0.0.1", "x", "udp", int32(-1), "", "h", "db.example.com", uint8(2))
	f.Add("", "web", "LoadBalancer", "10.0.0.1", "10.0.0.2", "", "SCTP", int32(0), "a..b", "-h-", "1.2.3.4.5", uint8(3))
	f.Add("ns1", "db", "Headless", "None", "None", "db", "TCP", int32(5432), "", "db-0", "10.1.0.2", uint8(0))
	f.Add("ns1", "web", "ClusterSetIP", "None", "10.0.0.1", "http", "TCP", int32(80), "", "", "10.1.0.3", uint8(0))
	f.Fuzz(func(t *testing.T, ns, name, typ, ip1, ip2, portName, protocol string, port int32, cluster, host, addr string, family uint8) {
		m, _ := newTestPlugin(t, nil, fakeLocal{})
		m.Next = &countingNext{}

		imp, _, err := newImportSpec(importFields{namespace: ns, name: name, typ: typ, ips: []string{ip1, ip2},
			ports: []portFields{{name: portName, protocol: protocol, port: port}}})
		if err == nil {
			checkImportSpec(t, imp)
			m.sources.setImport(imp)
		}
		ready := family&4 == 0
		p, proto := port, corev1.Protocol(protocol)
		es := &discovery.EndpointSlice{
			ObjectMeta:  meta.ObjectMeta{Namespace: ns, Name: name + "-" + cluster, Labels: map[string]string{labelServiceName: name, labelSourceCluster: cluster}},
			AddressType: []discovery.AddressType{discovery.AddressTypeIPv4, discovery.AddressTypeIPv6, discovery.AddressTypeFQDN}[family%3],
			Endpoints:   []discovery.Endpoint{{Addresses: []string{addr, ip1}, Hostname: &host, Conditions: discovery.EndpointConditions{Ready: &ready}}},
			Ports:       []discovery.EndpointPort{{Name: &portName, Protocol: &proto, Port: &p}},
		}
		if slice, _, err := newSliceSpec(es, len(defaultZone)); err == nil {
			for _, e := range slice.endpoints {
				// No host name only without a cluster (or for a name too
				// long, which these short names never make).
				if (len(e.ip) == net4) == e.v6 || (e.host == "") != (cluster == "") || slice.cluster != strings.ToLower(cluster) {
					t.Fatalf("endpoint %+v from %v", e, es)
				}
			}
			m.sources.setSlice(slice)
		}

		svc := strings.ToLower(name) + "." + strings.ToLower(ns) + ".svc."
		qnames := []string{
			svc + "clusterset.local.",
			"_" + portName + "._" + protocol + "." + svc + "clusterset.local.",
			host + "." + cluster + "." + svc + "clusterset.local.",
			cluster + "." + svc + "clusterset.local.",
			svc + "cluster.local.",
			"_" + portName + "._" + protocol + "." + svc + "cluster.local.",
		}
		for _, a := range []string{ip1, ip2, addr} {
			if rev, err := dns.ReverseAddr(a); err == nil {
				qnames = append(qnames, rev)
			}
		}
		for _, qname := range qnames {
			if _, ok := dns.IsDomainName(qname); !ok {
				continue
			}
			for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeSRV, dns.TypePTR, dns.TypeANY} {
				r := new(dns.Msg)
				r.SetQuestion(dns.Fqdn(qname), qtype)
				rec := dnstest.NewRecorder(&test.ResponseWriter{})
				if _, err := m.ServeDNS(context.Background(), rec, r); err != nil {
					t.Fatalf("%s %s: %v", qname, dns.TypeToString[qtype], err)
				}
				if rec.Msg == nil {
					t.Fatalf("%s %s: no reply from a synced plugin", qname, dns.TypeToString[qtype])
				}
				if _, err := rec.Msg.Pack(); err != nil {
					t.Fatalf("%s %s: reply does not pack: %v\n%v", qname, dns.TypeToString[qtype], err, rec.Msg)
				}
			}
		}
	})
}

const net4 = 4 // length of an IPv4 address as the specs keep it

// checkImportSpec checks what an accepted import keeps: each address once,
// in its family's length, and ports DNS can name.
func checkImportSpec(t *testing.T, s *importSpec) {
	t.Helper()
	for _, family := range [][]net.IP{s.ipv4, s.ipv6} {
		for i, ip := range family {
			if slices.ContainsFunc(family[:i], ip.Equal) {
				t.Fatalf("address %v kept twice: %v %v", ip, s.ipv4, s.ipv6)
			}
		}
	}
	if (s.source == sourceSpec) != (len(s.ipv4)+len(s.ipv6) > 0) {
		t.Fatalf("source %v with addresses %v %v", s.source, s.ipv4, s.ipv6)
	}
	for _, ip := range s.ipv4 {
		if len(ip) != net4 {
			t.Fatalf("IPv4 address %v kept in %d bytes", ip, len(ip))
		}
	}
	for _, ip := range s.ipv6 {
		if ip.To4() != nil {
			t.Fatalf("IPv4 address %v kept as IPv6", ip)
		}
	}
	for _, p := range s.ports {
		if p.port == 0 || (p.protocol != "tcp" && p.protocol != "udp" && p.protocol != "sctp") {
			t.Fatalf("port %+v kept", p)
		}
	}
}
