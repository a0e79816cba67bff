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
				// Mode 4: the same names and addresses in every slice.
				host := fuzzHostname(hostMode, i, fmt.Sprintf("10-1-%d-%d", i/250, i%250))
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

// FuzzHostileShapes builds one import and its slices across every list
// field the API server takes, up to its limits, with repeats and mixes:
// the import's ports and spec.ips; per slice its endpoints, the addresses
// of each (up to 100), their host names, ports, ready conditions and
// zones; the number of slices. The import is a ClusterSetIP one with
// spec.ips, one without (answered from its slices) or a headless one.
// Every slice's event must stay within the CPU of an event (the part under
// the lock the informers share within 50 ms), a one-endpoint slice that
// comes and goes beside them within 50 ms, and every query within 5 ms of
// CPU and maxQueryAlloc, its reply packed within 64 KiB.
//
// mix: bit 0 IPv6 in every other slice, bit 1 every other endpoint not
// ready, bit 2 zones, bit 3 the same addresses in every slice, bit 4 every
// slice of one cluster. pool, when not 0, is how many addresses the
// endpoints share; hostMode and portMode as in FuzzHostileObjects.
func FuzzHostileShapes(f *testing.F) {
	// kind, slices, endpoints, per endpoint, pool, hostMode, ports, portMode, mix, import ips, import ports
	f.Add(uint8(1), uint8(5), uint16(1000), uint8(60), uint16(0), uint8(0), uint16(1), uint8(0), uint8(0), uint16(0), uint16(1))     // addresses
	f.Add(uint8(2), uint8(10), uint16(1000), uint8(60), uint16(60), uint8(0), uint16(1), uint8(0), uint8(9), uint16(0), uint16(1))   // repeats, dual stack
	f.Add(uint8(2), uint8(2), uint16(1000), uint8(100), uint16(0), uint8(1), uint16(2000), uint8(1), uint8(2), uint16(0), uint16(0)) // one name, 100 addresses x 1,000
	f.Add(uint8(0), uint8(4), uint16(1000), uint8(100), uint16(0), uint8(3), uint16(20000), uint8(2), uint8(7), uint16(5000), uint16(30000))
	f.Add(uint8(1), uint8(12), uint16(1000), uint8(30), uint16(7), uint8(2), uint16(100), uint8(1), uint8(30), uint16(0), uint16(0))
	f.Add(uint8(2), uint8(3), uint16(1000), uint8(100), uint16(0), uint8(0), uint16(20000), uint8(0), uint8(1), uint16(0), uint16(0))
	f.Add(uint8(2), uint8(12), uint16(1), uint8(1), uint16(1), uint8(1), uint16(1), uint8(0), uint8(24), uint16(0), uint16(0))
	f.Fuzz(func(t *testing.T, kind, nSlices uint8, endpoints uint16, perEndpoint uint8, pool uint16, hostMode uint8, ports uint16, portMode, mix uint8, importIPs, importPorts uint16) {
		kind %= 3
		nSlices = max(min(nSlices, 12), 1)
		endpoints, ports = min(endpoints, 1000), min(ports, 20000)
		perEndpoint = max(min(perEndpoint, 100), 1)
		importIPs, importPorts = min(importIPs, 5000), min(importPorts, 30000)
		// At most 400,000 addresses in all (four slices at the limits), so
		// that one input builds in seconds.
		for int(nSlices)*int(endpoints)*int(perEndpoint) > 400000 {
			perEndpoint--
		}
		portsOf := func(n int) []portFields {
			out := make([]portFields, n)
			for i := range out {
				number, name := int32(1+i%65535), fmt.Sprintf("p%07d", i)
				switch portMode % 3 {
				case 1: // one number, many names
					number = 80
				case 2: // a few names and numbers, listed again and again
					number, name = int32(1+i%7), fmt.Sprintf("p%07d", i%7)
				}
				out[i] = portFields{name: name, protocol: []string{"TCP", "UDP", "SCTP"}[i%3], port: number}
			}
			return out
		}
		address := func(k int, v6 bool) string {
			if v6 {
				return fmt.Sprintf("fd00::%x:%x", k>>16, 1+k&0xfffe)
			}
			return fmt.Sprintf("10.%d.%d.%d", 64+k/62500, (k/250)%250, 1+k%250)
		}

		m, _ := newTestPlugin(t, nil, fakeLocal{})
		m.Next = answering{}
		f := importFields{namespace: "aaa", name: "svc", typ: "ClusterSetIP", ports: portsOf(int(importPorts))}
		switch kind {
		case 0:
			for i := range int(importIPs) {
				f.ips = append(f.ips, fmt.Sprintf("10.%d.%d.%d", 40+i/62500, (i/250)%250, 1+i%250))
			}
		case 2:
			f.typ = "Headless"
		}
		spec, _, err := newImportSpec(f)
		if err != nil {
			t.Fatal(err)
		}
		m.sources.setImport(spec)

		event := func(what string, es *discovery.EndpointSlice) {
			t.Helper()
			var spec *sliceSpec
			if d := cpuTime(func() {
				if spec, _, err = newSliceSpec(es, m.longestZone()); err != nil {
					t.Fatal(err)
				}
			}); !raceEnabled && d > maxEventTime*timeScale() {
				t.Fatalf("converting %s took %s of CPU, want at most %s", what, d, maxEventTime*timeScale())
			}
			// The least of three filings, the slice withdrawn between them:
			// the least disturbed by whatever else runs on the machine.
			limit := maxEventTime / 5 * timeScale()
			d := cpuTime(func() { m.sources.setSlice(spec) })
			for range 2 {
				if raceEnabled || d <= limit {
					break
				}
				m.sources.deleteSlice(es.Namespace, es.Name)
				d = min(d, cpuTime(func() { m.sources.setSlice(spec) }))
			}
			if !raceEnabled && d > limit {
				t.Fatalf("filing %s took %s of CPU under the sources' lock, want at most %s", what, d, limit)
			}
		}
		var slicePorts []discovery.EndpointPort
		for _, p := range portsOf(int(ports)) {
			slicePorts = append(slicePorts, discovery.EndpointPort{Name: &p.name, Protocol: (*core.Protocol)(&p.protocol), Port: &p.port})
		}
		ready, notReady, zone := true, false, "zone-a"
		for s := range int(nSlices) {
			v6 := mix&1 != 0 && s%2 == 1
			eps := make([]discovery.Endpoint, endpoints)
			for i := range eps {
				host := fuzzHostname(hostMode, i, fmt.Sprintf("10-64-%d-%d", i/250, 1+i%250))
				addrs := make([]string, perEndpoint)
				for j := range addrs {
					k := i*int(perEndpoint) + j
					if mix&8 == 0 {
						k += s * int(endpoints) * int(perEndpoint)
					}
					if pool > 0 {
						k %= int(pool)
					}
					addrs[j] = address(k, v6)
				}
				eps[i] = discovery.Endpoint{Addresses: addrs, Hostname: host}
				if mix&2 != 0 {
					eps[i].Conditions.Ready = &ready
					if i%2 == 1 {
						eps[i].Conditions.Ready = &notReady
					}
				}
				if mix&4 != 0 {
					eps[i].Zone = &zone
				}
			}
			cluster := fmt.Sprintf("c%d", s/2)
			if mix&16 != 0 {
				cluster = "c0"
			}
			es := &discovery.EndpointSlice{
				ObjectMeta:  meta.ObjectMeta{Namespace: "aaa", Name: fmt.Sprintf("svc-%d", s), Labels: map[string]string{labelServiceName: "svc", labelSourceCluster: cluster}},
				AddressType: discovery.AddressTypeIPv4,
				Endpoints:   eps,
				Ports:       slicePorts,
			}
			if v6 {
				es.AddressType = discovery.AddressTypeIPv6
			}
			event(fmt.Sprintf("slice %d of %d endpoints of %d addresses", s, endpoints, perEndpoint), es)
		}
		flap := hostileSlice("aaa", "svc", "c9", "svc-flap", 1, hostilePorts(1, 8, 0), 20)
		spec2, _, err := newSliceSpec(flap, m.longestZone())
		if err != nil {
			t.Fatal(err)
		}
		if d := fastest(3, func() { m.sources.setSlice(spec2); m.sources.deleteSlice("aaa", "svc-flap") }); !raceEnabled && d > 2*maxEventTime/5*timeScale() {
			t.Errorf("a one-endpoint slice that came and went took %s of CPU, want at most %s", d, 2*maxEventTime/5*timeScale())
		}

		ptr6, _ := dns.ReverseAddr(address(0, true))
		for _, q := range []struct {
			name  string
			qtype uint16
		}{
			{"svc.aaa.svc.clusterset.local.", dns.TypeA},
			{"svc.aaa.svc.clusterset.local.", dns.TypeAAAA},
			{"svc.aaa.svc.clusterset.local.", dns.TypeSRV},
			{"_p0000000._tcp.svc.aaa.svc.clusterset.local.", dns.TypeSRV},
			{"host-0.c0.svc.aaa.svc.clusterset.local.", dns.TypeA},
			{"db-0.c0.svc.aaa.svc.clusterset.local.", dns.TypeAAAA},
			{"1.0.64.10.in-addr.arpa.", dns.TypePTR},
			{ptr6, dns.TypePTR},
		} {
			for _, proto := range []string{"udp", "tcp"} {
				what := q.name + " " + dns.TypeToString[q.qtype] + " over " + proto
				var before, after runtime.MemStats
				var reply *dns.Msg
				runtime.ReadMemStats(&before)
				reply = ask(t, m, proto, q.name, q.qtype)
				runtime.ReadMemStats(&after)
				if got := after.TotalAlloc - before.TotalAlloc; got > maxQueryAlloc {
					t.Errorf("%s allocated %d KiB, want at most %d KiB", what, got>>10, maxQueryAlloc>>10)
				}
				if d := fastest(3, func() { ask(t, m, proto, q.name, q.qtype) }); !raceEnabled && d > maxQueryTime/10*timeScale() {
					t.Errorf("%s took %s of CPU, want at most %s", what, d, maxQueryTime/10*timeScale())
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

// fuzzHostname is the host name of endpoint i by mode (mod 5): a name each,
// one name for all, a name that reads as an address (dashed), none, or a
// few names again and again.
func fuzzHostname(mode uint8, i int, dashed string) *string {
	var h string
	switch mode % 5 {
	case 0:
		h = fmt.Sprintf("host-%d", i)
	case 1:
		h = "db-0"
	case 2:
		h = dashed
	case 3:
		return nil
	case 4:
		h = fmt.Sprintf("host-%d", i%10)
	}
	return &h
}
