// The resolver's forward answers: every name of a clusterset zone, and of
// a fallback zone once the handler let it through, from the index and the
// derived Services, built no larger than the reply carries. A headless
// import's names are headless.go's.

package multicluster

import (
	"net"
	"net/netip"
	"slices"

	"github.com/miekg/dns"
)

// resolver turns a parsed request into records and an rcode, from the index
// and from what the local cluster knows (derived Services). It writes
// nothing and counts nothing: ServeDNS decides which queries reach it, writes
// the answer and counts it.
type resolver struct {
	index *index
	// local answers questions about this cluster's Services; set in
	// OnStartup, nil in tests that have no cluster.
	local localServices
	ttl   uint32
	// derivedPrefix names the local Service whose ClusterIPs a ClusterSetIP
	// import without spec.ips answers with: derivedPrefix+name (Karmada).
	derivedPrefix string
	// reverseRanges are the addresses whose reverse names may be answered.
	reverseRanges []netip.Prefix
}

// name answers any name of a clusterset zone, and returns the import it
// read, if any. owner is the query name as asked, zone the zone in the
// query's case.
func (r *resolver) name(req request, owner string, qtype uint16, zone string) (answer, *view) {
	switch req.kind {
	case kindApex:
		switch qtype {
		case dns.TypeSOA:
			return answer{answer: []dns.RR{soa(zone, r.serial(), r.ttl)}, why: whyApex}, nil
		case dns.TypeNS:
			return answer{answer: []dns.RR{ns(zone, r.ttl)}, why: whyApex}, nil
		}
		return nodata(whyApex), nil
	case kindDNSVersion:
		if qtype == dns.TypeTXT {
			return answer{answer: []dns.RR{txt(owner, schemaVersion, dnsVersionTTL)}, why: whyDNSVersion}, nil
		}
		return nodata(whyDNSVersion), nil
	case kindNameserver, kindNameserverParent, kindSvcLabel:
		return nodata(whyStructure), nil
	case kindNamespace:
		if r.index.hasNamespace(req.namespace) {
			return nodata(whyNamespace), nil
		}
		return nxdomain(whyNoNamespace), nil
	case kindService, kindPort, kindHost, kindReserved:
		v := r.index.lookup(req.namespace, req.service)
		if v == nil {
			return nxdomain(whyNoImport), nil
		}
		return r.service(req, v, owner, qtype, zone), v
	}
	return nxdomain(whyNotSchema), nil
}

// service answers a name at or below the service v.
func (r *resolver) service(req request, v *view, owner string, qtype uint16, zone string) answer {
	if req.kind == kindReserved {
		// cluster.svc.ns.svc.Z holds no records (the specification reserves
		// it); it exists when host names of that cluster lie below it.
		if v.headless && v.eps != nil && v.eps.hasNamesBelow(req.cluster) {
			return nodata(whyReservedAbove)
		}
		return nxdomain(whyReserved)
	}
	if v.headless {
		return r.headless(req, v, owner, qtype, zone)
	}
	switch req.kind {
	case kindService:
		switch qtype {
		case dns.TypeA:
			v4, v6, local, source := r.clusterSetIPs(v)
			return answer{answer: addresses(owner, v4, false, r.ttl, req.recordLimit()), localOnly: local, pending: len(v4)+len(v6) == 0 && !v.slicesAbsent, capped: len(v4) > maxAnswerRecords || droppedFrom(v, source), why: whyAddresses, source: source}
		case dns.TypeAAAA:
			v4, v6, local, source := r.clusterSetIPs(v)
			return answer{answer: addresses(owner, v6, true, r.ttl, req.recordLimit()), localOnly: local, pending: len(v4)+len(v6) == 0 && !v.slicesAbsent, capped: len(v6) > maxAnswerRecords || droppedFrom(v, source), why: whyAddresses, source: source}
		case dns.TypeSRV:
			return r.clusterSetSRV(v, v.ports, owner, zone, req.recordLimit())
		}
		return nodata(whyServiceType)
	case kindPort:
		return portAnswer(v, req, qtype, func(ports []servicePort) answer { return r.clusterSetSRV(v, ports, owner, zone, req.recordLimit()) })
	}
	// host.cluster names exist only for headless imports.
	return nxdomain(whyHostOfClusterSetIP)
}

// portAnswer answers a _port._proto name of v: NXDOMAIN without such a
// port, srvOf the matching ports for SRV, NODATA for any other type.
func portAnswer(v *view, req request, qtype uint16, srvOf func([]servicePort) answer) answer {
	ports := matchPorts(v.ports, req.port, req.protocol)
	if len(ports) == 0 {
		return nxdomain(whyNoSuchPort)
	}
	if qtype == dns.TypeSRV {
		a := srvOf(ports)
		a.why = whyPortSRV
		return a
	}
	return nodata(whyPortType)
}

// clusterSetSRV returns one SRV per port, all pointing at the service name,
// whose addresses go in the additional section.
func (r *resolver) clusterSetSRV(v *view, ports []servicePort, owner, zone string, limit int) answer {
	ports = distinctPorts(ports)
	if len(ports) == 0 {
		return nodata(whyNoPorts)
	}
	target := serviceName(v.key, zone)
	// No more records are made than the reply can carry.
	built := ports[:min(len(ports), limit)]
	a := answer{answer: make([]dns.RR, len(built)), why: whySRV}
	block := make([]dns.SRV, len(built))
	for i, p := range built {
		block[i] = srv(owner, target, p.port, len(ports), r.ttl)
		a.answer[i] = &block[i]
	}
	v4, v6, local, source := r.clusterSetIPs(v)
	a.extra = append(addresses(target, v4, false, r.ttl, limit), addresses(target, v6, true, r.ttl, limit)...)
	a.localOnly, a.source = local, source
	a.capped = len(ports) > maxAnswerRecords || len(v4) > maxAnswerRecords || len(v6) > maxAnswerRecords || droppedFrom(v, source)
	return a
}

// droppedFrom reports whether addresses from source, v's slices', were left
// out of v (maxImportAddresses).
func droppedFrom(v *view, source addressSource) bool {
	return source == sourceSlices && v.dropped > 0
}

// clusterSetIPs returns the addresses of a ClusterSetIP import from the first
// source that has any, in this order:
//  1. spec.ips;
//  2. the ClusterIPs of the local Service its derived-service annotation
//     names (Cilium, the mcs-api reference controller), which are written
//     to spec.ips only some time after that Service exists;
//  3. with derived_prefix, the ClusterIPs of the local Service PREFIX+name
//     (Karmada leaves spec.ips empty and creates "derived-name");
//  4. the ready addresses of the import's EndpointSlices, of every cluster
//     (Lighthouse, without clusterset IPs: each cluster's ClusterIP).
//
// Derived Services are read from the Service cache at query time, so that
// answers follow them as they change. local reports that the addresses are
// the local cluster's alone, from slices of an import that prefers close
// endpoints; source which of the four they came from (sourceNone: none).
func (r *resolver) clusterSetIPs(v *view) (v4, v6 []net.IP, local bool, source addressSource) {
	if v.source == sourceSpec || r.local == nil {
		return v.ipv4, v.ipv6, v.localOnly, v.source
	}
	candidates, n := r.derivedCandidates(v)
	for _, c := range candidates[:n] {
		if v4, v6 := r.derivedIPs(v.key.namespace, c.name); len(v4) > 0 || len(v6) > 0 {
			return v4, v6, false, c.source
		}
	}
	return v.ipv4, v.ipv6, v.localOnly, v.source
}

// derivedCandidate is a local Service whose ClusterIPs may answer for a
// ClusterSetIP import, and the source it would be.
type derivedCandidate struct {
	name   string
	source addressSource
}

// derivedCandidates returns the derived Services of the ClusterSetIP
// import v in the order clusterSetIPs tries them (explain lists them in
// the same order from here): the one its annotation names, then the one
// of derived_prefix. An array, so that the query path allocates nothing.
func (r *resolver) derivedCandidates(v *view) (c [2]derivedCandidate, n int) {
	if v.derived != "" {
		c[n] = derivedCandidate{v.derived, sourceDerived}
		n++
	}
	if r.derivedPrefix != "" {
		c[n] = derivedCandidate{r.derivedPrefix + v.key.name, sourcePrefix}
		n++
	}
	return c, n
}

// derivedIPs returns the ClusterIPs of the local Service namespace/name, none
// if it does not exist or is headless.
func (r *resolver) derivedIPs(namespace, name string) (v4, v6 []net.IP) {
	svc := r.local.service(namespace, name)
	if svc == nil {
		return nil, nil
	}
	return clusterIPs(svc)
}

// distinctPorts returns ports with each port number once, the first of
// each: a service may have one port number for TCP and for UDP, but an SRV
// record holds its target and number, not its protocol.
func distinctPorts(ports []servicePort) []servicePort {
	if len(ports) > smallList {
		return distinctPortsOfMany(ports)
	}
	for i := 1; i < len(ports); i++ {
		for j := range i {
			if ports[j].port == ports[i].port {
				out := slices.Clone(ports[:i])
				for _, p := range ports[i+1:] {
					if !slices.ContainsFunc(out, func(q servicePort) bool { return q.port == p.port }) {
						out = append(out, p)
					}
				}
				return out
			}
		}
	}
	return ports
}

// distinctPortsOfMany is distinctPorts for a long list: one pass over a
// set of port numbers, and a copy only when some number repeats.
func distinctPortsOfMany(ports []servicePort) []servicePort {
	var seen [65536 / 64]uint64
	first := -1
	for i, p := range ports {
		w, bit := p.port/64, uint64(1)<<(p.port%64)
		if seen[w]&bit != 0 {
			first = i
			break
		}
		seen[w] |= bit
	}
	if first < 0 {
		return ports
	}
	out := slices.Clone(ports[:first])
	for _, p := range ports[first+1:] {
		w, bit := p.port/64, uint64(1)<<(p.port%64)
		if seen[w]&bit == 0 {
			seen[w] |= bit
			out = append(out, p)
		}
	}
	return out
}

// serial returns the zones' SOA serial. Changes of imports move it as they
// are published; changes of local Services, which derived Services are, are
// noticed here, when the serial is read: if some import reads a derived
// Service and a local Service changed since the serial was last read, it
// moves on. (It may move for a Service no import reads: a secondary then
// transfers a zone that did not change, which is safe; the other way round,
// a secondary told it is current when it is not, is not.)
func (r *resolver) serial() uint32 {
	if r.local != nil && (r.derivedPrefix != "" || r.index.hasDerived()) {
		mod := r.local.modified()
		if seen := r.index.localModified.Load(); seen != mod && r.index.localModified.CompareAndSwap(seen, mod) {
			r.index.serial.tick()
		}
	}
	return r.index.serial.Load()
}
