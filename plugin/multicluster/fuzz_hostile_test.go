package multicluster

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/miekg/dns"
	core "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FuzzHostileObjects builds a headless and a ClusterSetIP import, and the
// slices of the headless one, in shapes up to the API server's limits (up to
// 1,000 endpoints and 20,000 ports a slice, up to 30,000 ports and 5,000
// addresses an import), with names, numbers and protocols that repeat or not
// as the input says; then asks every kind of name of theirs over UDP and
// TCP. Each conversion must stay within the time of an event, each query
// within the time and the allocation of a query (maxQueryAlloc), and each
// reply must pack, over TCP within 64 KiB.
func FuzzHostileObjects(f *testing.F) {
	f.Add(uint16(1000), uint16(2000), uint8(1), uint8(8), uint8(0), uint8(0), uint16(30000), uint16(1))
	f.Add(uint16(1000), uint16(20), uint8(3), uint8(62), uint8(1), uint8(1), uint16(0), uint16(5000))
	f.Add(uint16(300), uint16(20000), uint8(2), uint8(1), uint8(2), uint8(2), uint16(100), uint16(2))
	f.Add(uint16(1), uint16(1), uint8(4), uint8(3), uint8(3), uint8(3), uint16(1), uint16(0))
	f.Add(uint16(1000), uint16(1), uint8(4), uint8(40), uint8(4), uint8(4), uint16(20000), uint16(3000))
	f.Fuzz(func(t *testing.T, endpoints, ports uint16, slices, nameLen, hostMode, portMode uint8, importPorts, importIPs uint16) {
		endpoints, ports = min(endpoints, 1000), min(ports, 20000)
		slices, nameLen = min(slices, 4), max(min(nameLen, 62), 1)
		importPorts, importIPs = min(importPorts, 30000), min(importIPs, 5000)

		portsOf := func(n int) []portFields {
			out := make([]portFields, n)
			for i := range out {
				number := int32(1 + i%65535)
				switch portMode % 4 {
				case 1: // one number, many names
					number = 80
				case 2: // few names, many numbers
					i %= 7
				}
				proto := []string{"TCP", "UDP", "SCTP", ""}[int(portMode/4+uint8(i))%4]
				out[i] = portFields{name: fmt.Sprintf("p%0*d", int(nameLen)-1, i), protocol: proto, port: number}
			}
			return out
		}
		m, _ := newTestPlugin(t, nil, fakeLocal{})
		// What the plugin passes on gets the next plugin's empty reply.
		m.Next = answering{}
		ips := make([]string, importIPs)
		for i := range ips {
			ips[i] = fmt.Sprintf("10.%d.%d.%d", 40+i/62500, (i/250)%250, 1+i%250)
		}
		checkEvent := func(what string, f func()) {
			t.Helper()
			if d := cpuTime(f); !raceEnabled && d > maxEventTime*timeScale() {
				t.Fatalf("%s took %s of CPU, want at most %s", what, d, maxEventTime*timeScale())
			}
		}
		for _, f := range []importFields{
			{namespace: "aaa", name: "csip", typ: "ClusterSetIP", ips: ips, ports: portsOf(int(importPorts))},
			{namespace: "aaa", name: "hl", typ: "Headless", ports: portsOf(int(importPorts))},
		} {
			checkEvent("an import's event", func() {
				spec, _, err := newImportSpec(f)
				if err != nil {
					t.Fatal(err)
				}
				m.sources.setImport(spec)
			})
		}
		var slicePorts []discovery.EndpointPort
		for _, p := range portsOf(int(ports)) {
			slicePorts = append(slicePorts, discovery.EndpointPort{Name: &p.name, Protocol: (*core.Protocol)(&p.protocol), Port: &p.port})
		}
		for s := range int(slices) {
			eps := make([]discovery.Endpoint, endpoints)
			for i := range eps {
				var host *string
				switch hostMode % 5 {
				case 0: // a name each
					h := fmt.Sprintf("host-%d", i)
					host = &h
				case 1: // one name for all
					h := "db-0"
					host = &h
				case 2: // names that read as addresses
					h := fmt.Sprintf("10-1-%d-%d", i/250, i%250)
					host = &h
				case 3: // no names
				case 4: // the same names and addresses in every slice
					h := fmt.Sprintf("host-%d", i%10)
					host = &h
				}
				octet := 10 + s
				if hostMode%5 == 4 {
					octet = 10
				}
				eps[i] = discovery.Endpoint{Addresses: []string{fmt.Sprintf("10.%d.%d.%d", octet, i/250, 1+i%250)}, Hostname: host}
			}
			cluster := fmt.Sprintf("c%d", s%2)
			es := &discovery.EndpointSlice{
				ObjectMeta:  meta.ObjectMeta{Namespace: "aaa", Name: fmt.Sprintf("hl-%d", s), Labels: map[string]string{labelServiceName: "hl", labelSourceCluster: cluster}},
				AddressType: discovery.AddressTypeIPv4,
				Endpoints:   eps,
				Ports:       slicePorts,
			}
			checkEvent("a slice's event", func() {
				spec, _, err := newSliceSpec(es, m.longestZone())
				if err != nil {
					t.Fatal(err)
				}
				m.sources.setSlice(spec)
			})
		}

		port := fmt.Sprintf("_p%0*d._tcp.", int(nameLen)-1, 0)
		for _, q := range []struct {
			name  string
			qtype uint16
		}{
			{"csip.aaa.svc.clusterset.local.", dns.TypeA},
			{"csip.aaa.svc.clusterset.local.", dns.TypeSRV},
			{port + "csip.aaa.svc.clusterset.local.", dns.TypeSRV},
			{"hl.aaa.svc.clusterset.local.", dns.TypeA},
			{"hl.aaa.svc.clusterset.local.", dns.TypeSRV},
			{port + "hl.aaa.svc.clusterset.local.", dns.TypeSRV},
			{"host-0.c0.hl.aaa.svc.clusterset.local.", dns.TypeA},
			{"db-0.c0.hl.aaa.svc.clusterset.local.", dns.TypeA},
			{"hl.aaa.svc.cluster.local.", dns.TypeSRV},
			{"1.0.10.10.in-addr.arpa.", dns.TypePTR},
		} {
			for _, proto := range []string{"udp", "tcp"} {
				var before, after runtime.MemStats
				var reply *dns.Msg
				runtime.ReadMemStats(&before)
				d := cpuTime(func() { reply = ask(t, m, proto, q.name, q.qtype) })
				runtime.ReadMemStats(&after)
				what := q.name + " " + dns.TypeToString[q.qtype] + " over " + proto
				if got := after.TotalAlloc - before.TotalAlloc; got > maxQueryAlloc {
					t.Errorf("%s allocated %d KiB, want at most %d KiB", what, got>>10, maxQueryAlloc>>10)
				}
				if !raceEnabled && d > maxQueryTime*timeScale() {
					t.Errorf("%s took %s of CPU, want at most %s", what, d, maxQueryTime*timeScale())
				}
				reply.Compress = true
				if _, err := reply.Pack(); err != nil {
					t.Fatalf("%s: the reply does not pack: %v", what, err)
				}
				if n := reply.Len(); n > dns.MaxMsgSize {
					t.Errorf("%s: %d octets", what, n)
				}
			}
		}
	})
}
