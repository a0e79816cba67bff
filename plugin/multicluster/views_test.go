package multicluster

import (
	"fmt"
	"net"
	"slices"
	"testing"

	discovery "k8s.io/api/discovery/v1"
)

// specOf returns the spec of the import d.
func specOf(t *testing.T, d importDef) *importSpec {
	t.Helper()
	spec, _, err := newImportSpec(d.fields())
	if err != nil {
		t.Fatalf("import %s/%s: %v", d.ns, d.name, err)
	}
	return spec
}

// readySlice returns the spec of the slice s, whose endpoints are ready
// and named hostnames[i], or unnamed past them.
func readySlice(t *testing.T, s slice, ips []string, hostnames ...string) *sliceSpec {
	t.Helper()
	for i, ip := range ips {
		host := ""
		if i < len(hostnames) {
			host = hostnames[i]
		}
		s.endpoints = append(s.endpoints, ep(ip, host, nil))
	}
	spec, _, err := newSliceSpec(s.object(), len(defaultZone))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// slicesOf files specs as the sources do, in order.
func slicesOf(specs ...*sliceSpec) *serviceSlices {
	ss := &serviceSlices{byName: make(map[string]*sliceSpec)}
	for _, s := range specs {
		ss.replace(ss.byName[s.name], s)
	}
	return ss
}

func ipStrings(ips []net.IP) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	return out
}

func TestNewViewClusterSetIP(t *testing.T) {
	withIPs := importDef{ns: "shop", name: "cart", typ: "ClusterSetIP", ips: []string{"10.42.0.1"}}
	withoutIPs := importDef{ns: "shop", name: "cart", typ: "ClusterSetIP"}
	east := func(t *testing.T) *sliceSpec {
		return readySlice(t, slice{ns: "shop", svc: "cart", cluster: "east", name: "cart-east"}, []string{"10.1.0.3", "10.1.0.1"})
	}
	west := func(t *testing.T) *sliceSpec {
		return readySlice(t, slice{ns: "shop", svc: "cart", cluster: "west", name: "cart-west"}, []string{"10.2.0.1", "10.1.0.1"})
	}
	west6 := func(t *testing.T) *sliceSpec {
		return readySlice(t, slice{ns: "shop", svc: "cart", cluster: "west", name: "cart-west-v6", family: discovery.AddressTypeIPv6}, []string{"fd00::2", "fd00::1"})
	}
	tests := []struct {
		name       string
		imp        importDef
		traffic    string
		slices     func(t *testing.T) []*sliceSpec
		policy     viewPolicy
		spec       bool // the view is the spec's own
		ipv4, ipv6 []string
		localOnly  bool
		dropped    int32
		wantSource addressSource
	}{
		{name: "spec.ips answer whatever the slices hold", imp: withIPs,
			slices: func(t *testing.T) []*sliceSpec { return []*sliceSpec{east(t)} },
			spec:   true, ipv4: []string{"10.42.0.1"}},
		{name: "no spec.ips, no slices", imp: withoutIPs, spec: true},
		{name: "no spec.ips: the slices' addresses, each once, lowest first", imp: withoutIPs,
			slices: func(t *testing.T) []*sliceSpec { return []*sliceSpec{east(t), west(t), west6(t)} },
			ipv4:   []string{"10.1.0.1", "10.1.0.3", "10.2.0.1"}, ipv6: []string{"fd00::1", "fd00::2"}, wantSource: sourceSlices},
		{name: "the lowest max_import_addresses of each family", imp: withoutIPs,
			slices: func(t *testing.T) []*sliceSpec { return []*sliceSpec{east(t), west(t), west6(t)} },
			policy: viewPolicy{maxAddresses: 1},
			ipv4:   []string{"10.1.0.1"}, ipv6: []string{"fd00::1"}, dropped: 3, wantSource: sourceSlices},
		{name: "prefers close endpoints: the local cluster's alone", imp: withoutIPs, traffic: "PreferClose",
			slices: func(t *testing.T) []*sliceSpec { return []*sliceSpec{east(t), west(t), west6(t)} },
			policy: viewPolicy{localCluster: "west"},
			ipv4:   []string{"10.1.0.1", "10.2.0.1"}, ipv6: []string{"fd00::1", "fd00::2"}, localOnly: true, wantSource: sourceSlices},
		{name: "prefers close endpoints, the local cluster has none", imp: withoutIPs, traffic: "PreferClose",
			slices: func(t *testing.T) []*sliceSpec { return []*sliceSpec{east(t), west(t)} },
			policy: viewPolicy{localCluster: "north"},
			ipv4:   []string{"10.1.0.1", "10.1.0.3", "10.2.0.1"}, wantSource: sourceSlices},
		{name: "prefers close endpoints, the local cluster unknown", imp: withoutIPs, traffic: "PreferClose",
			slices: func(t *testing.T) []*sliceSpec { return []*sliceSpec{east(t), west(t)} },
			ipv4:   []string{"10.1.0.1", "10.1.0.3", "10.2.0.1"}, wantSource: sourceSlices},
		{name: "slices without a ready address", imp: withoutIPs,
			slices: func(t *testing.T) []*sliceSpec {
				not := false
				s := slice{ns: "shop", svc: "cart", cluster: "east", name: "cart-east", endpoints: []discovery.Endpoint{ep("10.1.0.1", "", &not)}}
				return []*sliceSpec{readySlice(t, s, nil)}
			},
			spec: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.imp.fields()
			f.trafficDistribution = tc.traffic
			imp, _, err := newImportSpec(f)
			if err != nil {
				t.Fatal(err)
			}
			var ss *serviceSlices
			if tc.slices != nil {
				ss = slicesOf(tc.slices(t)...)
			}
			v := newView(imp, ss, tc.policy)
			if got := v == &imp.view; got != tc.spec {
				t.Errorf("the view is the spec's own: %v, want %v", got, tc.spec)
			}
			if !tc.spec && v.source != tc.wantSource {
				t.Errorf("source %d, want %d", v.source, tc.wantSource)
			}
			if got := ipStrings(v.ipv4); !slices.Equal(got, tc.ipv4) && len(got)+len(tc.ipv4) > 0 {
				t.Errorf("IPv4 %v, want %v", got, tc.ipv4)
			}
			if got := ipStrings(v.ipv6); !slices.Equal(got, tc.ipv6) && len(got)+len(tc.ipv6) > 0 {
				t.Errorf("IPv6 %v, want %v", got, tc.ipv6)
			}
			if v.localOnly != tc.localOnly || v.dropped != tc.dropped {
				t.Errorf("localOnly %v, dropped %d; want %v, %d", v.localOnly, v.dropped, tc.localOnly, tc.dropped)
			}
			if v.headless || v.eps != nil {
				t.Errorf("a ClusterSetIP import's view has endpoints")
			}
		})
	}
}

func TestNewViewHeadless(t *testing.T) {
	db := importDef{ns: "ns1", name: "db", typ: "Headless", ports: []portFields{{name: "pg", port: 5432}}}
	s := func(cluster, name string) slice {
		return slice{ns: "ns1", svc: "db", cluster: cluster, name: name,
			ports: []discovery.EndpointPort{endpointPort("metrics", "TCP", 9187), endpointPort("pg", "TCP", 5432)}}
	}
	east := readySlice(t, s("east.eu", "db-east"), []string{"10.1.0.2", "10.1.0.1"}, "db-1", "db-0")
	west := readySlice(t, s("west", "db-west"), []string{"10.2.0.1"}, "db-0")
	west6 := readySlice(t, slice{ns: "ns1", svc: "db", cluster: "west", name: "db-west-v6", family: discovery.AddressTypeIPv6}, []string{"fd00::1"})

	t.Run("every cluster's endpoints", func(t *testing.T) {
		v := newView(specOf(t, db), slicesOf(east, west, west6), viewPolicy{localCluster: "west"})
		if !v.headless || v.eps == nil || v.localOnly {
			t.Fatalf("headless %v, endpoints %v, localOnly %v; want a headless view of every cluster", v.headless, v.eps != nil, v.localOnly)
		}
		eps := v.eps
		if eps.n4 != 3 || eps.n6 != 1 || eps.s4 != 3 || eps.s6 != 1 {
			t.Errorf("addresses %d+%d, served %d+%d; want 3+1 of both", eps.n4, eps.n6, eps.s4, eps.s6)
		}
		if len(eps.slices) != 3 || len(eps.served) != 3 || eps.slices[0] != east {
			t.Errorf("%d slices, %d served, first %q; want 3, 3, the east one", len(eps.slices), len(eps.served), eps.slices[0].name)
		}
		// The labels of a cluster id of several have names below them.
		for _, c := range []string{"east.eu", "eu"} {
			if _, ok := eps.ents[c]; !ok {
				t.Errorf("%q is not among the names with names below: %v", c, eps.ents)
			}
		}
		if _, ok := eps.ents["west"]; ok {
			t.Errorf("a one-label cluster id is among ents: %v", eps.ents)
		}
		// The slices' ports, not the import's.
		if got := fmt.Sprint(v.ports); len(v.ports) != 2 {
			t.Errorf("ports %s, want the slices' two", got)
		}
		if eps.repeats || eps.addrs4 != nil {
			t.Errorf("no address repeats, yet the view prepared addresses: %v", ipStrings(eps.addrs4))
		}
	})

	t.Run("prefers close endpoints", func(t *testing.T) {
		f := db.fields()
		f.trafficDistribution = "PreferClose"
		imp, _, err := newImportSpec(f)
		if err != nil {
			t.Fatal(err)
		}
		v := newView(imp, slicesOf(east, west, west6), viewPolicy{localCluster: "west"})
		eps := v.eps
		if !v.localOnly || eps.s4 != 1 || eps.s6 != 1 || len(eps.served) != 2 || eps.served[0].cluster != "west" {
			t.Errorf("localOnly %v, served %d slices, %d+%d addresses; want west's two slices, 1+1", v.localOnly, len(eps.served), eps.s4, eps.s6)
		}
		if eps.n4 != 3 || len(eps.slices) != 3 {
			t.Errorf("%d IPv4 addresses in %d slices, want every cluster's: 3 in 3", eps.n4, len(eps.slices))
		}
	})

	t.Run("repeated addresses, prepared once", func(t *testing.T) {
		again := readySlice(t, s("west", "db-west-2"), []string{"10.1.0.1", "10.3.0.1", "10.0.0.9"})
		v := newView(specOf(t, db), slicesOf(east, west, again), viewPolicy{maxAddresses: 3})
		eps := v.eps
		if !eps.repeats {
			t.Fatalf("10.1.0.1 is in two slices, yet repeats is false")
		}
		if got := ipStrings(eps.addrs4); !slices.Equal(got, []string{"10.0.0.9", "10.1.0.1", "10.1.0.2"}) {
			t.Errorf("addresses %v, want the three lowest, each once", got)
		}
		if v.dropped != 2 {
			t.Errorf("dropped %d, want 2 (10.2.0.1 and 10.3.0.1)", v.dropped)
		}
	})

	t.Run("no slices: the import's ports", func(t *testing.T) {
		v := newView(specOf(t, db), nil, viewPolicy{})
		if v.eps == nil || len(v.eps.slices) != 0 || len(v.ports) != 1 || v.ports[0].port != 5432 {
			t.Errorf("endpoints %v, ports %v; want none, and the import's one port", v.eps, v.ports)
		}
	})
}

func TestClusterRun(t *testing.T) {
	var ordered []*sliceSpec
	for _, c := range []struct {
		cluster, name string
		ips           []string
	}{
		{"east", "a", []string{"10.1.0.1"}},
		{"west", "b", []string{"10.2.0.1", "10.2.0.2"}},
		{"west", "c", []string{"10.2.0.3"}},
		{"zulu", "d", []string{"10.3.0.1"}},
	} {
		ordered = append(ordered, readySlice(t, slice{ns: "ns1", svc: "db", cluster: c.cluster, name: c.name}, c.ips))
	}
	tests := []struct {
		cluster string
		names   []string
		n4      int
	}{
		{"east", []string{"a"}, 1},
		{"west", []string{"b", "c"}, 3},
		{"zulu", []string{"d"}, 1},
		{"north", nil, 0},
		{"", nil, 0},
	}
	for _, tc := range tests {
		run, n4, n6 := clusterRun(ordered, tc.cluster)
		var names []string
		for _, s := range run {
			names = append(names, s.name)
		}
		if !slices.Equal(names, tc.names) || n4 != tc.n4 || n6 != 0 {
			t.Errorf("clusterRun(%q) = %v, %d, %d; want %v, %d, 0", tc.cluster, names, n4, n6, tc.names, tc.n4)
		}
		if cap(run) != len(run) {
			t.Errorf("clusterRun(%q): capacity %d past the run's %d: an append would write the next cluster's slices", tc.cluster, cap(run), len(run))
		}
	}
}

func TestLowestAddresses(t *testing.T) {
	a := readySlice(t, slice{ns: "ns1", svc: "db", cluster: "east", name: "a"}, []string{"10.0.0.5", "10.0.0.1", "10.0.0.3"})
	b := readySlice(t, slice{ns: "ns1", svc: "db", cluster: "west", name: "b"}, []string{"10.0.0.3", "10.0.0.2", "10.0.0.10"})
	c := readySlice(t, slice{ns: "ns1", svc: "db", cluster: "west", name: "c", family: discovery.AddressTypeIPv6}, []string{"fd00::9", "fd00::1"})
	tests := []struct {
		name  string
		in    []*sliceSpec
		v6    bool
		limit int
		want  []string
	}{
		{"merged, each once", []*sliceSpec{a, b, c}, false, 10, []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.5", "10.0.0.10"}},
		{"the lowest limit", []*sliceSpec{a, b, c}, false, 3, []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}},
		{"one family", []*sliceSpec{a, b, c}, true, 10, []string{"fd00::1", "fd00::9"}},
		{"none of the family", []*sliceSpec{a, b}, true, 10, nil},
		{"no slices", nil, false, 10, nil},
	}
	for _, tc := range tests {
		if got := ipStrings(lowestAddresses(tc.in, tc.v6, tc.limit)); !slices.Equal(got, tc.want) && len(got)+len(tc.want) > 0 {
			t.Errorf("%s: lowestAddresses = %v, want %v", tc.name, got, tc.want)
		}
	}
}
