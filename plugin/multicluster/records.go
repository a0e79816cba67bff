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
}

var (
	nxdomain = answer{rcode: dns.RcodeNameError}
	nodata   = answer{rcode: dns.RcodeSuccess}
)

// addresses returns A or AAAA records named owner.
func addresses(owner string, ips []net.IP, v6 bool, ttl uint32) []dns.RR {
	if len(ips) == 0 {
		return nil
	}
	rrs := make([]dns.RR, len(ips))
	for i, ip := range ips {
		rrs[i] = address(owner, ip, v6, ttl)
	}
	return rrs
}

func address(owner string, ip net.IP, v6 bool, ttl uint32) dns.RR {
	if v6 {
		return &dns.AAAA{Hdr: dns.RR_Header{Name: owner, Rrtype: dns.TypeAAAA, Class: dns.ClassINET, Ttl: ttl}, AAAA: ip}
	}
	return &dns.A{Hdr: dns.RR_Header{Name: owner, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: ttl}, A: ip}
}

// srv returns one SRV record. Weights split 100 evenly between the n records
// of an answer, at least 1, as the kubernetes plugin does.
func srv(owner, target string, port uint16, n int, ttl uint32) *dns.SRV {
	weight := uint16(100 / max(n, 1))
	return &dns.SRV{
		Hdr:      dns.RR_Header{Name: owner, Rrtype: dns.TypeSRV, Class: dns.ClassINET, Ttl: ttl},
		Priority: 0,
		Weight:   max(weight, 1),
		Port:     port,
		Target:   target,
	}
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
