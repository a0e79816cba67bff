// Conversion of an EndpointSlice into a sliceSpec: its ready endpoints,
// their names and addresses, validated as convert.go validates imports.

package multicluster

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// maxNameLength is the longest name, in presentation form with its final
// dot, that fits the 255 octets of a name on the wire (RFC 1035, 2.3.4).
const maxNameLength = 254

// newSliceSpec reduces a multicluster EndpointSlice to its ready endpoints.
// longestZone is the length of the longest zone its names are answered in;
// an endpoint whose host.cluster name would not fit a DNS name there keeps
// its address but gets no host name.
func newSliceSpec(es *discovery.EndpointSlice, longestZone int) (*sliceSpec, []string, error) {
	var problems problemList
	s, err := sliceSpecOf(es, longestZone, &problems)
	return s, problems.strings(), err
}

func sliceSpecOf(es *discovery.EndpointSlice, longestZone int, problems *problemList) (s *sliceSpec, err error) {
	svc := es.Labels[labelServiceName]
	if !isDNSLabel(svc) {
		return nil, fmt.Errorf("label %s=%q is not a service name", labelServiceName, short(svc))
	}
	// Without a source-cluster label (mcs-api's e2e and simple controllers
	// write none) the slice's addresses still serve the service's own name,
	// but no host.cluster name can be made for them.
	cluster := lowerIntern(es.Labels[labelSourceCluster])
	if errs := validation.IsDNS1123Subdomain(cluster); cluster != "" && len(errs) > 0 {
		return nil, fmt.Errorf("label %s=%q is not a DNS name: %s", labelSourceCluster, short(cluster), strings.Join(errs, "; "))
	}
	s = &sliceSpec{
		key:             serviceKey{namespace: intern(es.Namespace), name: intern(svc)},
		name:            es.Name,
		resourceVersion: es.ResourceVersion,
		cluster:         cluster,
	}
	ports := make([]portFields, 0, len(es.Ports))
	for _, p := range es.Ports {
		if p.Port == nil {
			// "All ports" (discovery/v1 EndpointPort): valid, but there is no
			// port number to answer SRV with.
			continue
		}
		f := portFields{protocol: string(corev1.ProtocolTCP), port: *p.Port}
		if p.Name != nil {
			f.name = *p.Name
		}
		if p.Protocol != nil {
			f.protocol = string(*p.Protocol)
		}
		ports = append(ports, f)
	}
	s.ports = validPorts(ports, problems)
	// Sorted as views list them: the ports of a service's slices are
	// merged in this order (serviceSlices.updatePorts).
	sortPorts(s.ports)
	s.ports = sharedPorts(s.ports)

	// host.cluster.svc.ns.svc.ZONE: what a host name leaves room for.
	room := maxNameLength - (len(cluster) + 1 + len(svc) + 1 + len(es.Namespace) + len(".svc.") + longestZone) - 1
	family := es.AddressType
	// Every address and every name made from an address is written into
	// one block of the slice's own: a slice of n endpoints costs a few
	// allocations, not several per endpoint, which an informer converting
	// a rolling update's every event pays for. The slice keeps its
	// endpoints: they are sized for the ready ones, with no room to grow.
	addrs, width := 0, net.IPv6len
	for _, e := range es.Endpoints {
		if e.Conditions.Ready == nil || *e.Conditions.Ready {
			addrs += len(e.Addresses)
		}
	}
	if family == discovery.AddressTypeIPv4 {
		width = net.IPv4len
	}
	s.endpoints = make([]endpoint, 0, addrs)
	packed := make([]byte, 0, addrs*width)
	var dashed []byte // the names made from addresses, one after the other
	var dashedEnds []int
	for _, e := range es.Endpoints {
		if e.Conditions.Ready != nil && !*e.Conditions.Ready {
			continue
		}
		hostname := ""
		if e.Hostname != nil {
			if h := strings.ToLower(*e.Hostname); isDNSLabel(h) {
				hostname = intern(h) // a StatefulSet's names repeat in every cluster
			} else {
				problems.add("hostname %q is not a DNS label; addresses named instead", short(*e.Hostname))
			}
		}
		for _, a := range e.Addresses {
			// As net.ParseIP: no zone.
			addr, perr := netip.ParseAddr(a)
			if perr != nil || addr.Zone() != "" {
				problems.add("endpoint address %q is not an IP address; skipped", short(a))
				continue
			}
			ip16 := addr.As16()
			if why := specialIP(ip16[:]); why != "" {
				problems.add("endpoint address %s is %s; skipped", a, why)
				continue
			}
			v6 := !addr.Unmap().Is4()
			if (family == discovery.AddressTypeIPv4 && v6) || (family == discovery.AddressTypeIPv6 && !v6) {
				problems.add("endpoint address %s does not match addressType %s; skipped", a, family)
				continue
			}
			raw := ip16[:]
			if !v6 {
				raw = ip16[12:]
			}
			if cap(packed)-len(packed) < len(raw) {
				// More than the family foresaw (no addressType): a block
				// of its own, the ones before stay where they are.
				packed = make([]byte, 0, (addrs-len(s.endpoints))*net.IPv6len)
			}
			packed = append(packed, raw...)
			ip := net.IP(packed[len(packed)-len(raw) : len(packed) : len(packed)])
			host, fromAddress := "", false
			if cluster != "" {
				host = hostname
				n := len(host)
				if host == "" {
					n, fromAddress = len(a), true
				}
				if n > room {
					name := host
					if fromAddress {
						name = dashedIP(a)
					}
					problems.add("endpoint %s: the name %s.%s.svc.%s.svc.<zone> would exceed 255 octets; it answers for the service's name only", a, name, cluster, es.Namespace)
					host, fromAddress = "", false
				}
			}
			if fromAddress {
				dashed = appendDashed(dashed, a)
				dashedEnds = append(dashedEnds, len(dashed))
			} else {
				dashedEnds = append(dashedEnds, -1)
			}
			// named: the host is the endpoint's own hostname, not made of
			// its address.
			s.endpoints = append(s.endpoints, endpoint{host: host, ip: ip, v6: v6, named: host != "" && !fromAddress})
		}
	}
	if len(dashed) > 0 {
		names, start := string(dashed), 0
		for i, end := range dashedEnds {
			if end >= 0 {
				s.endpoints[i].host = names[start:end]
				start = end
			}
		}
	}
	slices.SortFunc(s.endpoints, func(a, b endpoint) int {
		if a.host != b.host { // interned: one name's addresses compare at once
			return strings.Compare(a.host, b.host)
		}
		return compareIP(a.ip, b.ip)
	})
	// An address listed twice under one name answers once.
	s.endpoints = slices.CompactFunc(s.endpoints, func(a, b endpoint) bool { return a.host == b.host && a.ip.Equal(b.ip) })
	if len(s.endpoints) < cap(s.endpoints)*7/8 {
		s.endpoints = slices.Clone(s.endpoints) // skipped or repeated addresses left room
	}
	for i, e := range s.endpoints {
		if e.host == "" {
			s.anonymous++
		} else if i == 0 || s.endpoints[i-1].host != e.host {
			s.names++
		}
		if e.v6 {
			s.n6++
		} else {
			s.n4++
		}
		if e.named && (i == 0 || s.endpoints[i-1].host != e.host) && looksDashed(e.host) {
			s.selfDups = true
		}
	}
	s.byAddr, s.distinct4 = addressIndex(s.endpoints)
	// An address under two names: two hostnames, or two texts (10.0.0.1
	// and ::ffff:10.0.0.1 are one IPv4 address).
	s.selfDups = s.selfDups || len(s.byAddr) < len(s.endpoints)
	return s, nil
}

// addressIndex returns the byAddr index of eps, ordered by host, then
// address, and how many of its addresses are IPv4 (four octets each, as
// conversion stores them).
func addressIndex(eps []endpoint) ([]int32, int) {
	idx := make([]int32, 0, len(eps))
	if !slices.ContainsFunc(eps, func(e endpoint) bool { return len(e.ip) != net.IPv4len }) {
		// IPv4 alone, the common case: address and position in one word,
		// sorted without a comparison function.
		keys := make([]uint64, len(eps))
		for i, e := range eps {
			keys[i] = uint64(binary.BigEndian.Uint32(e.ip))<<32 | uint64(i) // #nosec G115 -- i < 2^31
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i == 0 || k>>32 != keys[i-1]>>32 {
				idx = append(idx, int32(uint32(k))) // #nosec G115 -- a position
			}
		}
	} else {
		for i := range eps {
			idx = append(idx, int32(i)) // #nosec G115 -- at most 100,000 endpoints
		}
		slices.SortFunc(idx, func(a, b int32) int { return cmp.Or(compareAddr(eps[a].ip, eps[b].ip), cmp.Compare(a, b)) })
		idx = slices.CompactFunc(idx, func(a, b int32) bool { return bytes.Equal(eps[a].ip, eps[b].ip) })
	}
	if len(idx) < cap(idx)*7/8 {
		idx = slices.Clone(idx) // repeated addresses left room
	}
	d4, _ := slices.BinarySearchFunc(idx, net.IPv6len, func(i int32, n int) int { return cmp.Compare(len(eps[i].ip), n) })
	return idx, d4
}

// compareAddr orders addresses IPv4 first, then by their octets.
func compareAddr(a, b net.IP) int {
	return cmp.Or(cmp.Compare(len(a), len(b)), bytes.Compare(a, b))
}

// appendDashed appends dashedIP(ip) to b.
func appendDashed(b []byte, ip string) []byte {
	for i := range len(ip) {
		switch c := ip[i]; {
		case c == '.' || c == ':':
			b = append(b, '-')
		case 'A' <= c && c <= 'Z':
			b = append(b, c+'a'-'A')
		default:
			b = append(b, c)
		}
	}
	return b
}

// dashedIP names an endpoint without a hostname after its address, as the
// kubernetes plugin does: 10.0.0.1 -> 10-0-0-1, fd00::1 -> fd00--1.
func dashedIP(ip string) string {
	return dashes.Replace(strings.ToLower(ip))
}

var dashes = strings.NewReplacer(".", "-", ":", "-")

// valueOf returns *p, or "" for nil.
func valueOf(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
