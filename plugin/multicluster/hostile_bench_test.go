package multicluster

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	core "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Objects at the API server's own limits, as one namespace's writer can
// make them: an EndpointSlice holds at most 1,000 endpoints and 20,000 ports
// (maxEndpoints and maxPorts in pkg/apis/discovery/validation/validation.go
// of Kubernetes v1.37.1); a ServiceImport, a custom resource, as many ports
// as its object size lets through (about 1.5 MiB in etcd: some 30,000 ports
// of long names).

// hostilePorts returns n distinct ports whose names are nameLen octets
// long, numbered from first.
func hostilePorts(n, nameLen, first int) []discovery.EndpointPort {
	ports := make([]discovery.EndpointPort, n)
	for i := range ports {
		name := fmt.Sprintf("p%0*d", max(nameLen-1, 6), first+i)
		ports[i] = endpointPort(name, core.ProtocolTCP, int32(1+(first+i)%65535))
	}
	return ports
}

// hostileSlice is a slice of an import's at the limits: endpoints named
// endpoints, each with its own hostname and address, and ports.
func hostileSlice(ns, svc, cluster, name string, endpoints int, ports []discovery.EndpointPort, octet int) *discovery.EndpointSlice {
	eps := make([]discovery.Endpoint, endpoints)
	for i := range eps {
		host := fmt.Sprintf("host-%d", i)
		eps[i] = discovery.Endpoint{Addresses: []string{fmt.Sprintf("10.%d.%d.%d", octet, i/250, 1+i%250)}, Hostname: &host}
	}
	return &discovery.EndpointSlice{
		ObjectMeta:  meta.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1", Labels: map[string]string{labelServiceName: svc, labelSourceCluster: cluster}},
		AddressType: discovery.AddressTypeIPv4,
		Endpoints:   eps,
		Ports:       ports,
	}
}

// hostileImportPorts returns n ports of an import, as portFields.
func hostileImportPorts(n, nameLen int) []portFields {
	out := make([]portFields, n)
	for i, p := range hostilePorts(n, nameLen, 0) {
		out[i] = portFields{name: *p.Name, protocol: string(*p.Protocol), port: *p.Port}
	}
	return out
}

// hostilePlugin is a synced plugin with the attacker's objects in namespace
// aaa.
func hostilePlugin(tb testing.TB, imports []importDef, slices ...*discovery.EndpointSlice) *Multicluster {
	tb.Helper()
	m, _ := newTestPlugin(tb, imports, fakeLocal{})
	m.Next = discard{}
	for _, es := range slices {
		spec, _, err := newSliceSpec(es, m.longestZone())
		if err != nil {
			tb.Fatal(err)
		}
		m.sources.setSlice(spec)
	}
	return m
}

// hostileQueries are the worst queries of the attacker's objects.
var hostileQueries = []struct {
	name  string
	qname string
	qtype uint16
}{
	{"headless SRV 1000 names x 2000 ports", "big.aaa.svc.clusterset.local.", dns.TypeSRV},
	{"headless A 3000 endpoints", "wide.aaa.svc.clusterset.local.", dns.TypeA},
	{"ClusterSetIP SRV 30000 ports", "ports.aaa.svc.clusterset.local.", dns.TypeSRV},
	{"ClusterSetIP port SRV 30000 ports", "_p0000007._tcp.ports.aaa.svc.clusterset.local.", dns.TypeSRV},
}

func hostileQueryPlugin(tb testing.TB) *Multicluster {
	return hostilePlugin(tb, []importDef{
		{ns: "aaa", name: "big", typ: "Headless"},
		{ns: "aaa", name: "wide", typ: "Headless"},
		{ns: "aaa", name: "ports", typ: "ClusterSetIP", ips: []string{"10.42.9.1"}, ports: hostileImportPorts(30000, 8)},
	},
		hostileSlice("aaa", "big", "c1", "big-c1", 1000, hostilePorts(2000, 8, 0), 1),
		hostileSlice("aaa", "wide", "c1", "wide-c1", 1000, hostilePorts(1, 8, 0), 2),
		hostileSlice("aaa", "wide", "c2", "wide-c2", 1000, hostilePorts(1, 8, 0), 3),
		hostileSlice("aaa", "wide", "c3", "wide-c3", 1000, hostilePorts(1, 8, 0), 4),
	)
}

// BenchmarkHostileQuery measures one query of each worst shape, over UDP
// with a 1232-octet buffer (the answer is truncated) and over TCP.
func BenchmarkHostileQuery(b *testing.B) {
	m := hostileQueryPlugin(b)
	ctx := context.Background()
	for _, q := range hostileQueries {
		for _, proto := range []string{"udp", "tcp"} {
			b.Run(q.name+"/"+proto, func(b *testing.B) {
				r := new(dns.Msg)
				r.SetQuestion(q.qname, q.qtype)
				r.SetEdns0(1232, false)
				w := &nullWriter{test.ResponseWriter{TCP: proto == "tcp"}}
				b.ReportAllocs()
				for b.Loop() {
					m.ServeDNS(ctx, w, r)
				}
			})
		}
	}
}

// BenchmarkHostileEvent measures what one event of the attacker's costs the
// informer that serves every namespace: converting a slice at the limits,
// and updating a small slice of an import whose other slices are at them.
func BenchmarkHostileEvent(b *testing.B) {
	b.Run("convert 1000 endpoints x 20000 ports", func(b *testing.B) {
		es := hostileSlice("aaa", "big", "c1", "big-c1", 1000, hostilePorts(20000, 8, 0), 1)
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := newSliceSpec(es, len(defaultZone)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("small slice beside 3 x 20000 ports", func(b *testing.B) {
		var big []*discovery.EndpointSlice
		for i := range 3 {
			big = append(big, hostileSlice("aaa", "big", "c"+strconv.Itoa(i), "big-"+strconv.Itoa(i), 10, hostilePorts(20000, 8, i*20000), 10+i))
		}
		m := hostilePlugin(b, []importDef{{ns: "aaa", name: "big", typ: "Headless"}}, big...)
		small := hostileSlice("aaa", "big", "c9", "big-small", 1, hostilePorts(1, 8, 0), 20)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			small.ResourceVersion = strconv.Itoa(i)
			small.Endpoints[0].Addresses[0] = fmt.Sprintf("10.20.%d.%d", (i/250)%250, 1+i%250)
			spec, _, err := newSliceSpec(small, m.longestZone())
			if err != nil {
				b.Fatal(err)
			}
			m.sources.setSlice(spec)
		}
	})
	b.Run("import 30000 ports", func(b *testing.B) {
		f := importFields{namespace: "aaa", name: "ports", typ: "ClusterSetIP", ips: []string{"10.42.9.1"}, ports: hostileImportPorts(30000, 8)}
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := newImportSpec(f); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkHostileTransfer measures a zone transfer of the attacker's
// objects, drained as the transfer plugin drains it.
func BenchmarkHostileTransfer(b *testing.B) {
	m := hostileQueryPlugin(b)
	b.ReportAllocs()
	for b.Loop() {
		ch, err := m.Transfer("clusterset.local.", 0)
		if err != nil {
			b.Fatal(err)
		}
		for range ch {
		}
	}
}

// manyAddressSlice is a slice of an import's whose endpoints each list
// perEndpoint addresses (the API server allows 100), all distinct: the
// addresses shape, which a ClusterSetIP import without spec.ips answers
// from.
func manyAddressSlice(ns, svc, cluster, name string, endpoints, perEndpoint, octet int) *discovery.EndpointSlice {
	es := hostileSlice(ns, svc, cluster, name, endpoints, hostilePorts(1, 8, 0), octet)
	for i := range es.Endpoints {
		addrs := make([]string, perEndpoint)
		for j := range addrs {
			k := i*perEndpoint + j
			addrs[j] = fmt.Sprintf("10.%d.%d.%d", octet, k/250, 1+k%250)
		}
		es.Endpoints[i].Addresses = addrs
	}
	return es
}

// repeatedSlice is a slice whose endpoints, named host-0 and on, each list
// the same addresses: the repeats shape.
func repeatedSlice(ns, svc, cluster, name string, endpoints, addresses int, v6 bool) *discovery.EndpointSlice {
	es := hostileSlice(ns, svc, cluster, name, endpoints, hostilePorts(1, 8, 0), 9)
	addrs := make([]string, addresses)
	for j := range addrs {
		addrs[j] = fmt.Sprintf("10.9.0.%d", 1+j)
		if v6 {
			addrs[j] = fmt.Sprintf("fd00::9:%x", 1+j)
		}
	}
	if v6 {
		es.AddressType = discovery.AddressTypeIPv6
	}
	for i := range es.Endpoints {
		es.Endpoints[i].Addresses = addrs
	}
	return es
}

// addressesPlugin serves the addresses shape: a ClusterSetIP import without
// spec.ips whose 5 slices list 1,000 endpoints of 60 addresses each, and
// the imports others.
func addressesPlugin(tb testing.TB, others ...importDef) *Multicluster {
	var big []*discovery.EndpointSlice
	for i := range 5 {
		big = append(big, manyAddressSlice("aaa", "addr", "c"+strconv.Itoa(i), "addr-"+strconv.Itoa(i), 1000, 60, 100+i))
	}
	return hostilePlugin(tb, append([]importDef{{ns: "aaa", name: "addr", typ: "ClusterSetIP"}}, others...), big...)
}

// repeatsPlugin serves the repeats shape: a headless import whose 10
// clusters each export an IPv4 and an IPv6 slice of 1,000 host names, every
// one at the same 60 addresses.
func repeatsPlugin(tb testing.TB) *Multicluster {
	var rep []*discovery.EndpointSlice
	for i := range 10 {
		c := "c" + strconv.Itoa(i)
		rep = append(rep, repeatedSlice("aaa", "rep", c, "rep4-"+c, 1000, 60, false), repeatedSlice("aaa", "rep", c, "rep6-"+c, 1000, 60, true))
	}
	return hostilePlugin(tb, []importDef{{ns: "aaa", name: "rep", typ: "Headless"}}, rep...)
}

// repeatsQueries are the queries of the repeats shape, and of the
// addresses shape's import.
var repeatsQueries = []struct {
	name  string
	qname string
	qtype uint16
}{
	{"A", "rep.aaa.svc.clusterset.local.", dns.TypeA},
	{"AAAA", "rep.aaa.svc.clusterset.local.", dns.TypeAAAA},
	{"SRV", "rep.aaa.svc.clusterset.local.", dns.TypeSRV},
	{"PTR", "1.0.9.10.in-addr.arpa.", dns.TypePTR},
	{"PTR6", "1.0.0.0.9.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa.", dns.TypePTR},
}

// addressesEvent returns an event of the addresses shape: a one-endpoint
// slice of the import created, or deleted, in turn.
func addressesEvent(tb testing.TB, m *Multicluster) func() {
	small := hostileSlice("aaa", "addr", "c9", "addr-small", 1, hostilePorts(1, 8, 0), 20)
	i := 0
	return func() {
		i++
		if i%2 == 0 {
			m.sources.deleteSlice("aaa", "addr-small")
			return
		}
		small.ResourceVersion = strconv.Itoa(i)
		spec, _, err := newSliceSpec(small, m.longestZone())
		if err != nil {
			tb.Fatal(err)
		}
		m.sources.setSlice(spec)
	}
}

// BenchmarkHostileShapes measures the addresses shape's event and the
// repeats shape's queries (over TCP, whose answers are the largest).
func BenchmarkHostileShapes(b *testing.B) {
	b.Run("addresses/event", func(b *testing.B) {
		m := addressesPlugin(b)
		event := addressesEvent(b, m)
		b.ReportAllocs()
		for b.Loop() {
			event()
		}
	})
	b.Run("addresses/event beside 150 slices", func(b *testing.B) {
		var many []*discovery.EndpointSlice
		for i := range 150 {
			many = append(many, manyAddressSlice("aaa", "addr", "c"+strconv.Itoa(i), "addr-"+strconv.Itoa(i), 20, 100, 100+i))
		}
		m := hostilePlugin(b, []importDef{{ns: "aaa", name: "addr", typ: "ClusterSetIP"}}, many...)
		event := addressesEvent(b, m)
		b.ReportAllocs()
		for b.Loop() {
			event()
		}
	})
	b.Run("addresses/A", func(b *testing.B) {
		m := addressesPlugin(b)
		r := new(dns.Msg)
		r.SetQuestion("addr.aaa.svc.clusterset.local.", dns.TypeA)
		w := &nullWriter{test.ResponseWriter{TCP: true}}
		b.ReportAllocs()
		for b.Loop() {
			m.ServeDNS(context.Background(), w, r)
		}
	})
	m := repeatsPlugin(b)
	for _, q := range repeatsQueries {
		b.Run("repeats/"+q.name, func(b *testing.B) {
			r := new(dns.Msg)
			r.SetQuestion(q.qname, q.qtype)
			w := &nullWriter{test.ResponseWriter{TCP: true}}
			b.ReportAllocs()
			for b.Loop() {
				m.ServeDNS(context.Background(), w, r)
			}
		})
	}
}
