// Addresses no import may name: those the API server refuses in
// EndpointSlices, and more that no Service answers at (multicast, cloud
// metadata and host addresses, IPv6 spellings of refused IPv4 ones).

package multicluster

import (
	"bytes"
	"net"
)

// specialIP says why ip can be neither a ClusterSetIP nor an endpoint, or
// returns "". It applies to spec.ips, which the API server leaves unchecked,
// what it refuses in EndpointSlices (ValidateEndpointIP, Kubernetes'
// pkg/apis/core/validation/validation.go), and more that no Service answers
// at, in any spelling: multicast, broadcast, 0.0.0.0/8, the clouds' metadata
// and host addresses. It allocates nothing for an address it accepts.
func specialIP(ip net.IP) string {
	if v4 := ip.To4(); v4 != nil { // also ::ffff:a.b.c.d, which is the same address
		return specialIPv4(v4)
	}
	if len(ip) != net.IPv6len {
		return "not an IP address"
	}
	if why := specialInEveryFamily(ip); why != "" {
		return why
	}
	switch {
	case hasPrefix(ip, ipv4Compatible[:]):
		// ::a.b.c.d, deprecated by RFC 4291 (2.5.5.1): no Service or pod
		// has one, and a stack that still routes it sends it to a.b.c.d.
		return "an IPv4-compatible address (deprecated, RFC 4291)"
	case hasPrefix(ip, ipv4Translated[:]):
		if why := specialIPv4(ip[12:]); why != "" {
			return "an IPv4-translated address (::ffff:0:a.b.c.d) of " + why
		}
	case hasPrefix(ip, nat64WellKnown[:]):
		// A NAT64 gateway sends 64:ff9b::a.b.c.d to a.b.c.d (RFC 6052).
		if why := specialIPv4(ip[12:]); why != "" {
			return "a NAT64 address (64:ff9b::/96) of " + why
		}
	case hasPrefix(ip, nat64LocalUse[:]):
		// RFC 8215: the network chooses the prefix length within the /48,
		// and so where the IPv4 address lies in it; no Service or pod has
		// an address translated to IPv4 either.
		return "a local-use NAT64 address (64:ff9b:1::/48)"
	case ip.Equal(awsMetadataIPv6):
		return "the AWS instance metadata service's IPv6 address"
	}
	return ""
}

// specialInEveryFamily says why ip, of either family, is an address that
// the API server refuses in EndpointSlices, or multicast, or returns "".
func specialInEveryFamily(ip net.IP) string {
	switch {
	case ip.IsUnspecified():
		return "the unspecified address"
	case ip.IsLoopback():
		return "a loopback address"
	case ip.IsLinkLocalUnicast():
		return "a link-local address"
	case ip.IsMulticast():
		return "a multicast address"
	}
	return ""
}

// specialIPv4 is specialIP of a 4-byte IPv4 address.
func specialIPv4(ip net.IP) string {
	if why := specialInEveryFamily(ip); why != "" {
		return why
	}
	switch {
	case ip[0] == 0:
		// 0.0.0.0/8, "this host on this network": never a destination
		// (RFC 6890).
		return "an address of 0.0.0.0/8 (this network)"
	case ip.Equal(net.IPv4bcast):
		return "the broadcast address"
	case ip.Equal(alibabaMetadata):
		return "the Alibaba Cloud instance metadata address"
	case ip.Equal(azureHost):
		return "the Azure host address"
	}
	return ""
}

// Addresses of cloud platforms that answer an instance's requests as the
// instance (metadata, credentials), besides 169.254.169.254, which
// link-local covers.
var (
	// fd00:ec2::254: the instance metadata service over IPv6, Amazon EC2
	// User Guide, "Access instance metadata for an EC2 instance".
	awsMetadataIPv6 = net.ParseIP("fd00:ec2::254")
	// 100.100.100.200: Alibaba Cloud ECS documentation, "Instance metadata".
	alibabaMetadata = net.IPv4(100, 100, 100, 200).To4()
	// 168.63.129.16: the host node's virtual address (WireServer, DNS,
	// DHCP), Azure Virtual Network documentation, "What is IP address
	// 168.63.129.16?".
	azureHost = net.IPv4(168, 63, 129, 16).To4()
)

// IPv6 prefixes whose addresses stand for IPv4 ones, as the first bytes of
// an address: ::/96 (IPv4-compatible), ::ffff:0:0/96 (IPv4-translated, RFC
// 2765), 64:ff9b::/96 (NAT64, RFC 6052) and 64:ff9b:1::/48 (local-use
// NAT64, RFC 8215). IPv4-mapped addresses are IPv4 addresses to net.IP.
var (
	ipv4Compatible = [12]byte{}
	ipv4Translated = [12]byte{8: 0xff, 9: 0xff}
	nat64WellKnown = [12]byte{0: 0x00, 1: 0x64, 2: 0xff, 3: 0x9b}
	nat64LocalUse  = [6]byte{0: 0x00, 1: 0x64, 2: 0xff, 3: 0x9b, 4: 0x00, 5: 0x01}
)

// hasPrefix reports whether the 16-byte ip starts with the bytes of prefix.
func hasPrefix(ip net.IP, prefix []byte) bool {
	return bytes.Equal(ip[:len(prefix)], prefix)
}
