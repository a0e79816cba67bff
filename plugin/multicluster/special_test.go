package multicluster

import (
	"net"
	"net/netip"
	"strings"
	"testing"
)

// TestSpecialIP: every spelling of an address no Service answers at is
// refused, in spec.ips and in endpoints, and the addresses around them are
// not.
func TestSpecialIP(t *testing.T) {
	for _, tc := range []struct {
		ip   string
		want string // in the reason; "" accepted
	}{
		{"169.254.169.254", "link-local"},
		{"::ffff:169.254.169.254", "link-local"}, // IPv4-mapped: the same address
		{"::169.254.169.254", "IPv4-compatible"},
		{"::a9fe:a9fe", "IPv4-compatible"},
		{"::10.96.0.10", "IPv4-compatible"},
		{"::ffff:0:169.254.169.254", "IPv4-translated address (::ffff:0:a.b.c.d) of a link-local"},
		{"::ffff:0:10.96.0.10", ""},
		{"64:ff9b::a9fe:a9fe", "NAT64 address (64:ff9b::/96) of a link-local"},
		{"64:ff9b::169.254.169.254", "NAT64"},
		{"64:ff9b::127.0.0.1", "NAT64 address (64:ff9b::/96) of a loopback"},
		{"64:ff9b::100.100.100.200", "NAT64 address (64:ff9b::/96) of the Alibaba Cloud"},
		{"64:ff9b::168.63.129.16", "Azure"},
		{"64:ff9b::a00:1", ""},
		{"64:ff9b::808:808", ""}, // a public address, as 8.8.8.8 is
		{"64:ff9b:1::a9fe:a9fe", "local-use NAT64"},
		{"64:ff9b:1:a9fe:a9:fe00::", "local-use NAT64"}, // the /48 embedding
		{"64:ff9b:2::1", ""},
		{"fd00:ec2::254", "AWS instance metadata"},
		{"fd00:ec2::255", ""},
		{"100.100.100.200", "Alibaba Cloud"},
		{"100.100.100.201", ""},
		{"168.63.129.16", "Azure host"},
		{"168.63.129.17", ""},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "0.0.0.0/8"},
		{"1.0.0.0", ""},
		{"127.0.0.1", "loopback"},
		{"255.255.255.255", "broadcast"},
		{"224.0.0.1", "multicast"},
		{"::", "unspecified"},
		{"::1", "loopback"},
		{"fe80::1", "link-local"},
		{"ff02::1", "multicast"},
		{"10.96.0.10", ""},
		{"fd00:10:96::a", ""},
		{"2001:db8::1", ""},
	} {
		ip := net.ParseIP(tc.ip)
		if ip == nil {
			t.Fatalf("%s is not an address", tc.ip)
		}
		got := specialIP(ip)
		if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
			t.Errorf("specialIP(%s) = %q, want %q", tc.ip, got, tc.want)
		}
		// newSliceSpec passes the 16 bytes of a parsed netip.Addr.
		a16 := netip.MustParseAddr(tc.ip).As16()
		if again := specialIP(a16[:]); again != got {
			t.Errorf("specialIP(%s) as 16 bytes = %q, as parsed %q", tc.ip, again, got)
		}
	}
	// Accepting an address costs nothing: it runs per endpoint.
	for _, s := range []string{"10.96.0.10", "fd00:10:96::a", "64:ff9b::808:808"} {
		ip := net.ParseIP(s)
		if n := testing.AllocsPerRun(100, func() { _ = specialIP(ip) }); n != 0 {
			t.Errorf("specialIP(%s): %v allocations", s, n)
		}
	}
}
