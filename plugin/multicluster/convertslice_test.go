package multicluster

import (
	"net"
	"slices"
	"testing"

	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The conversion writes addresses and the names made from them into blocks
// of the slice's own: each endpoint still has the address net.ParseIP
// gives (4 bytes for IPv4, mapped ones included) and the name dashedIP
// makes, and what net.ParseIP refuses (zones) is skipped.
func TestSliceSpecAddresses(t *testing.T) {
	yes, no := true, false
	host := "db-0"
	for _, tc := range []struct {
		family discovery.AddressType
		eps    []discovery.Endpoint
		want   []string // the addresses kept
	}{
		{discovery.AddressTypeIPv4, []discovery.Endpoint{
			{Addresses: []string{"10.0.0.2", "10.0.0.1"}},
			{Addresses: []string{"10.0.0.3"}, Conditions: discovery.EndpointConditions{Ready: &no}},
			{Addresses: []string{"10.0.0.4"}, Hostname: &host, Conditions: discovery.EndpointConditions{Ready: &yes}},
			{Addresses: []string{"::ffff:10.0.0.5", "fd00::1", "10.0.0.256", "0.0.0.0"}},
		}, []string{"10.0.0.1", "10.0.0.2", "10.0.0.4", "::ffff:10.0.0.5"}},
		{discovery.AddressTypeIPv6, []discovery.Endpoint{
			{Addresses: []string{"FD00::AB", "fe80::1%eth0", "fd00::1", "10.0.0.1"}},
		}, []string{"FD00::AB", "fd00::1"}},
	} {
		es := &discovery.EndpointSlice{
			ObjectMeta:  meta.ObjectMeta{Namespace: "ns1", Name: "db-east", Labels: map[string]string{labelServiceName: "db", labelSourceCluster: "east"}},
			AddressType: tc.family,
			Endpoints:   tc.eps,
		}
		s, _, err := newSliceSpec(es, len(defaultZone))
		if err != nil {
			t.Fatal(err)
		}
		if s.cluster != "east" {
			t.Errorf("%s: the slice's cluster is %q", tc.family, s.cluster)
		}
		var got []string
		for _, want := range tc.want {
			ip := net.ParseIP(want)
			name := dashedIP(want)
			if want == "10.0.0.4" {
				name = host
			}
			i := slices.IndexFunc(s.endpoints, func(e endpoint) bool { return e.ip.Equal(ip) })
			if i < 0 {
				t.Errorf("%s: not kept: %+v", want, s.endpoints)
				continue
			}
			e := s.endpoints[i]
			if e.host != name || e.named != (name == host) || (ip.To4() != nil) != (len(e.ip) == net.IPv4len) || e.v6 != (ip.To4() == nil) {
				t.Errorf("%s: host %q (named %v) ip %v (%d bytes) v6 %v; want host %q", want, e.host, e.named, e.ip, len(e.ip), e.v6, name)
			}
			got = append(got, want)
		}
		if len(s.endpoints) != len(tc.want) || s.n4+s.n6 != len(tc.want) {
			t.Errorf("%s: %d endpoints (%d + %d), want %d", tc.family, len(s.endpoints), s.n4, s.n6, len(tc.want))
		}
		if !slices.IsSortedFunc(s.endpoints, func(a, b endpoint) int {
			if a.host != b.host {
				if a.host < b.host {
					return -1
				}
				return 1
			}
			return compareIP(a.ip, b.ip)
		}) {
			t.Errorf("%s: endpoints out of order: %+v", tc.family, s.endpoints)
		}
	}
}
