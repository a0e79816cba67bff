package multicluster

import "testing"

func TestMatchZone(t *testing.T) {
	tests := []struct {
		zones, fallback []string
		name            string
		zone            string
		kind            zoneKind
	}{
		{[]string{"clusterset.local."}, []string{"cluster.local."}, "web.ns1.svc.clusterset.local.", "clusterset.local.", zoneClusterset},
		{[]string{"clusterset.local."}, []string{"cluster.local."}, "clusterset.local.", "clusterset.local.", zoneClusterset},
		{[]string{"clusterset.local."}, []string{"cluster.local."}, "web.ns1.svc.cluster.local.", "cluster.local.", zoneFallback},
		{[]string{"clusterset.local."}, []string{"cluster.local."}, "example.org.", "", zoneNone},
		{[]string{"clusterset.local."}, []string{"cluster.local."}, "xcluster.local.", "", zoneNone},
		{[]string{"clusterset.local.", "in-addr.arpa.", "ip6.arpa."}, nil, "1.0.42.10.in-addr.arpa.", "in-addr.arpa.", zoneReverse},
		{[]string{"clusterset.local.", "in-addr.arpa.", "ip6.arpa."}, nil, "1.0.0.0.ip6.arpa.", "ip6.arpa.", zoneReverse},
		// The longest zone wins, whichever list it is in.
		{[]string{"local."}, []string{"cluster.local."}, "web.ns1.svc.cluster.local.", "cluster.local.", zoneFallback},
		{[]string{"east.cluster.local."}, []string{"cluster.local."}, "web.ns1.svc.east.cluster.local.", "east.cluster.local.", zoneClusterset},
		{[]string{"in-addr.arpa.", "10.in-addr.arpa."}, nil, "1.0.42.10.in-addr.arpa.", "10.in-addr.arpa.", zoneReverse},
		// The root zone holds every name, but any other zone is longer.
		{[]string{"."}, []string{"cluster.local."}, "example.org.", ".", zoneClusterset},
		{[]string{"."}, []string{"cluster.local."}, "web.ns1.svc.cluster.local.", "cluster.local.", zoneFallback},
		{nil, []string{"cluster.local."}, "example.org.", "", zoneNone},
	}
	for _, tc := range tests {
		m := &Multicluster{Zones: tc.zones, Fallback: tc.fallback}
		zone, kind := m.matchZone(tc.name)
		if zone != tc.zone || kind != tc.kind {
			t.Errorf("zones %v, fallback %v: matchZone(%q) = %q, %s; want %q, %s", tc.zones, tc.fallback, tc.name, zone, kind, tc.zone, tc.kind)
		}
	}
}

func TestInZone(t *testing.T) {
	tests := []struct {
		name, zone string
		want       bool
	}{
		{"clusterset.local.", "clusterset.local.", true},
		{"a.clusterset.local.", "clusterset.local.", true},
		{"aclusterset.local.", "clusterset.local.", false},
		{`a\.clusterset.local.`, "clusterset.local.", false},
		{`a\\.clusterset.local.`, "clusterset.local.", true},
		{"local.", "clusterset.local.", false},
		{"anything.", ".", true},
	}
	for _, tc := range tests {
		if got := inZone(tc.name, tc.zone); got != tc.want {
			t.Errorf("inZone(%q, %q) = %v, want %v", tc.name, tc.zone, got, tc.want)
		}
	}
}

func TestIsReverseZone(t *testing.T) {
	tests := []struct {
		zone string
		want bool
	}{
		{"in-addr.arpa.", true},
		{"10.in-addr.arpa.", true},
		{"ip6.arpa.", true},
		{"d.f.ip6.arpa.", true},
		{"arpa.", false},
		{"clusterset.local.", false},
		{".", false},
	}
	for _, tc := range tests {
		if got := isReverseZone(tc.zone); got != tc.want {
			t.Errorf("isReverseZone(%q) = %v, want %v", tc.zone, got, tc.want)
		}
	}
}

func TestFirstForwardZone(t *testing.T) {
	tests := []struct {
		zones []string
		want  string
	}{
		{[]string{"in-addr.arpa.", "ip6.arpa.", "cluster.local.", "example.org."}, "cluster.local."},
		{[]string{"clusterset.local.", "in-addr.arpa."}, "clusterset.local."},
		{[]string{"in-addr.arpa.", "ip6.arpa."}, ""},
		{nil, ""},
	}
	for _, tc := range tests {
		if got := firstForwardZone(tc.zones); got != tc.want {
			t.Errorf("firstForwardZone(%v) = %q, want %q", tc.zones, got, tc.want)
		}
	}
}

func TestLongestZone(t *testing.T) {
	tests := []struct {
		zones, fallback []string
		want            int
	}{
		{[]string{"clusterset.local."}, []string{"cluster.local."}, len("clusterset.local.")},
		{[]string{"clusterset.local."}, []string{"east.cluster.local."}, len("east.cluster.local.")},
		// Reverse zones name addresses, not services: they do not count.
		{[]string{"clusterset.local.", "0.0.0.0.0.0.0.0.d.f.ip6.arpa."}, nil, len("clusterset.local.")},
		{[]string{"in-addr.arpa."}, nil, 0},
	}
	for _, tc := range tests {
		m := &Multicluster{Zones: tc.zones, Fallback: tc.fallback}
		if got := m.longestZone(); got != tc.want {
			t.Errorf("zones %v, fallback %v: longestZone() = %d, want %d", tc.zones, tc.fallback, got, tc.want)
		}
	}
}
