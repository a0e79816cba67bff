// The answer type and the records answers are made of (A, AAAA, SRV, SOA,
// NS, TXT, PTR), and the names of services and hosts.

package multicluster

import (
	"net"

	"github.com/miekg/dns"
)

const (
	// schemaVersion is the MCS DNS schema the zone implements (KEP-1645).
	schemaVersion = "1.0.0"
	// dnsVersionTTL is the TTL of dns-version.Z, as the kubernetes plugin uses.
	dnsVersionTTL = 28800
	// maxSOATTL caps the TTL of the SOA record itself, as CoreDNS does.
	maxSOATTL = 300
)

// answer is what a query resolves to before it is written.
type answer struct {
	rcode  int
	answer []dns.RR
	extra  []dns.RR
	// localOnly: the records are the local cluster's alone, chosen because
	// the import prefers close endpoints.
	localOnly bool
	// pending: the import exists but has no address yet (pendingTTL).
	pending bool
	// capped: records were left out as they were made, so that no more
	// were made than an answer carries (capAnswer).
	capped bool
	// why is what of the name decided the answer: the rule of the schema,
	// or of the import, that gave these records or none.
	why reason
	// source is where the addresses of a ClusterSetIP import's answer came
	// from (A, AAAA, SRV).
	source addressSource
}

// nxdomain is the answer for a name that does not exist, and why.
func nxdomain(why reason) answer { return answer{rcode: dns.RcodeNameError, why: why} }

// nodata is the answer for a name that exists with no record of the type
// asked, and why.
func nodata(why reason) answer { return answer{rcode: dns.RcodeSuccess, why: why} }

// addresses returns A or AAAA records named owner: at most limit, as many
// as the reply carries.
func addresses(owner string, ips []net.IP, v6 bool, ttl uint32, limit int) []dns.RR {
	ips = ips[:min(len(ips), limit)]
	if len(ips) == 0 {
		return nil
	}
	b := newAddressBlock(len(ips), v6)
	rrs := make([]dns.RR, len(ips))
	for i, ip := range ips {
		rrs[i] = b.next(owner, ip, ttl)
	}
	return rrs
}

// addressBlock hands out A or AAAA records allocated in one block, so that an
// answer of many addresses costs a few allocations, not one per record. Each
// answer gets its own records: plugins after this one may change them.
type addressBlock struct {
	v4 []dns.A
	v6 []dns.AAAA
}

func newAddressBlock(n int, v6 bool) *addressBlock {
	if v6 {
		return &addressBlock{v6: make([]dns.AAAA, 0, n)}
	}
	return &addressBlock{v4: make([]dns.A, 0, n)}
}

// next returns a record of the block's family; the block must have room.
func (b *addressBlock) next(owner string, ip net.IP, ttl uint32) dns.RR {
	if b.v6 != nil {
		b.v6 = append(b.v6, dns.AAAA{Hdr: dns.RR_Header{Name: owner, Rrtype: dns.TypeAAAA, Class: dns.ClassINET, Ttl: ttl}, AAAA: ip})
		return &b.v6[len(b.v6)-1]
	}
	b.v4 = append(b.v4, dns.A{Hdr: dns.RR_Header{Name: owner, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: ttl}, A: ip})
	return &b.v4[len(b.v4)-1]
}

// srv returns one SRV record. Weights split 100 evenly between the n records
// of an answer, at least 1, as the kubernetes plugin does.
func srv(owner, target string, port uint16, n int, ttl uint32) dns.SRV {
	return dns.SRV{
		Hdr:      dns.RR_Header{Name: owner, Rrtype: dns.TypeSRV, Class: dns.ClassINET, Ttl: ttl},
		Priority: 0,
		Weight:   srvWeight(n),
		Port:     port,
		Target:   target,
	}
}

// srvWeight is the weight of each of n SRV records: 100 split evenly, at
// least 1.
func srvWeight(n int) uint16 {
	return uint16(max(100/max(n, 1), 1)) // #nosec G115 -- at most 100
}

// soa returns the SOA of zone, in the form the kubernetes plugin uses.
func soa(zone string, serial, ttl uint32) dns.RR {
	return &dns.SOA{
		Hdr:     dns.RR_Header{Name: zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: min(ttl, maxSOATTL)},
		Ns:      "ns.dns." + zone,
		Mbox:    "hostmaster." + zone,
		Serial:  serial,
		Refresh: 7200,
		Retry:   1800,
		Expire:  86400,
		Minttl:  ttl,
	}
}

func ns(zone string, ttl uint32) dns.RR {
	return &dns.NS{Hdr: dns.RR_Header{Name: zone, Rrtype: dns.TypeNS, Class: dns.ClassINET, Ttl: ttl}, Ns: "ns.dns." + zone}
}

func txt(owner, text string, ttl uint32) dns.RR {
	return &dns.TXT{Hdr: dns.RR_Header{Name: owner, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: ttl}, Txt: []string{text}}
}

func ptr(owner, target string, ttl uint32) dns.RR {
	return &dns.PTR{Hdr: dns.RR_Header{Name: owner, Rrtype: dns.TypePTR, Class: dns.ClassINET, Ttl: ttl}, Ptr: target}
}

// serviceName is svc.ns.svc.zone.
func serviceName(key serviceKey, zone string) string {
	return key.name + "." + key.namespace + ".svc." + zone
}

// hostName is host.cluster.svc.ns.svc.zone.
func hostName(host, cluster string, key serviceKey, zone string) string {
	return host + "." + cluster + "." + serviceName(key, zone)
}

// matchPorts returns the ports of v a port query asks for.
func matchPorts(ports []servicePort, name, protocol string) []servicePort {
	var out []servicePort
	for _, p := range ports {
		if p.name == name && p.protocol == protocol {
			out = append(out, p)
		}
	}
	return out
}
