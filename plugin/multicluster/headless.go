// The resolver's answers for headless imports: the names of ready
// endpoints, their addresses, and the SRV records with the targets' addresses
// beside them, built no larger than the reply carries.

package multicluster

import (
	"cmp"
	"net"
	"slices"
	"sort"

	"github.com/miekg/dns"
)

// headless answers names of a headless import. Without a ready endpoint the
// service has no names at all (spec 2.4.1): a denial resolvers should ask
// again soon (pending), unless the import's controller writes no
// EndpointSlices for it, so that none will come.
func (r *resolver) headless(req request, v *view, owner string, qtype uint16, zone string) answer {
	if !v.readyEndpoints() {
		if v.slicesAbsent {
			return answer{rcode: dns.RcodeNameError, why: whyNoSlices}
		}
		return answer{rcode: dns.RcodeNameError, pending: true, why: whyNoReadyEndpoint}
	}
	eps := v.eps
	switch req.kind {
	case kindService:
		switch qtype {
		case dns.TypeA, dns.TypeAAAA:
			v6 := qtype == dns.TypeAAAA
			n := eps.s4
			switch {
			case eps.repeats && v6:
				n = len(eps.addrs6)
			case eps.repeats:
				n = len(eps.addrs4)
			case v6:
				n = eps.s6
			}
			rrs := eps.addressRecords(owner, v6, r.ttl, req.recordLimit())
			return answer{answer: rrs, localOnly: v.localOnly, capped: n > maxAnswerRecords || v.dropped > 0, why: whyAddresses}
		case dns.TypeSRV:
			return r.headlessSRV(v, v.ports, owner, zone, req.recordLimit())
		}
		return nodata(whyServiceType)
	case kindPort:
		return portAnswer(v, req, qtype, func(ports []servicePort) answer { return r.headlessSRV(v, ports, owner, zone, req.recordLimit()) })
	case kindHost:
		// Many endpoints may share a hostname: the answer takes as many
		// as it can carry, each address once.
		var rrs []dns.RR
		var seen addressSet
		capped := false
		found := eps.eachHost(req.host, req.cluster, func(e endpoint) bool {
			switch {
			case qtype != dns.TypeA && qtype != dns.TypeAAAA:
				return false // the name exists, with no record of the type
			case (qtype == dns.TypeAAAA) != e.v6 || !seen.add(e.ip):
			case len(rrs) == req.recordLimit():
				capped = len(rrs) == maxAnswerRecords
				return false // one more than the answer takes: no need to look further
			default:
				rrs = append(rrs, newAddressBlock(1, e.v6).next(owner, e.ip, r.ttl))
			}
			return true
		})
		if found {
			return answer{answer: rrs, capped: capped, why: whyHost}
		}
		if _, ent := eps.ents[req.labels]; ent {
			// An intermediate name of a cluster id of several labels:
			// names exist below it (RFC 8020).
			return nodata(whyClusterAbove)
		}
		return nxdomain(whyNoSuchHost)
	}
	return nxdomain(whyNoName)
}

// eachHost calls f for each endpoint named host in the slices of cluster,
// until f returns false, and reports whether there was one. The slices of
// one cluster are one run, and the endpoints of one name one run in each:
// no walk over the others.
func (eps *endpointSet) eachHost(host, cluster string, f func(endpoint) bool) bool {
	found := false
	lo, _ := slices.BinarySearchFunc(eps.slices, cluster, func(s *sliceSpec, c string) int { return cmp.Compare(s.cluster, c) })
	for _, s := range eps.slices[lo:] {
		if s.cluster != cluster {
			break
		}
		i, _ := slices.BinarySearchFunc(s.endpoints, host, func(e endpoint, h string) int { return cmp.Compare(e.host, h) })
		for _, e := range s.endpoints[i:] {
			if e.host != host {
				break
			}
			found = true
			if !f(e) {
				return true
			}
		}
	}
	return found
}

// hasHost reports whether an endpoint named host is in the slices of
// cluster.
func (eps *endpointSet) hasHost(host, cluster string) bool {
	return eps.eachHost(host, cluster, func(endpoint) bool { return false })
}

// addressSet holds the addresses an answer has a record of, when its
// endpoints may repeat one: records are dropped as they would be made, not
// after, so that no more are made than the answer carries.
type addressSet map[[16]byte]struct{}

// add reports whether ip was not in the set, and adds it.
func (s *addressSet) add(ip net.IP) bool {
	if *s == nil {
		*s = make(addressSet)
	}
	k := [16]byte(ip.To16())
	if _, ok := (*s)[k]; ok {
		return false
	}
	(*s)[k] = struct{}{}
	return true
}

// addressRecords returns the A or AAAA records, named owner, of the served
// endpoints' addresses: at most limit, each address once. Where slices
// repeat addresses, the view prepared them, each once; otherwise they are
// taken in the order of the slices, and the walk stops at limit.
func (eps *endpointSet) addressRecords(owner string, v6 bool, ttl uint32, limit int) []dns.RR {
	switch {
	case eps.repeats && v6:
		return addresses(owner, eps.addrs6, true, ttl, limit)
	case eps.repeats:
		return addresses(owner, eps.addrs4, false, ttl, limit)
	case v6:
		return endpointAddresses(owner, eps.served, eps.s6, true, ttl, limit)
	}
	return endpointAddresses(owner, eps.served, eps.s4, false, ttl, limit)
}

// endpointAddresses returns the A or AAAA records, named owner, of the n
// addresses of one family in slices, which repeat none: at most limit, in
// the order of the slices.
func endpointAddresses(owner string, in []*sliceSpec, n int, v6 bool, ttl uint32, limit int) []dns.RR {
	n = min(n, limit)
	if n == 0 {
		return nil
	}
	b := newAddressBlock(n, v6)
	rrs := make([]dns.RR, 0, n)
	for _, s := range in {
		if (v6 && s.n6 == 0) || (!v6 && s.n4 == 0) {
			continue
		}
		for _, e := range s.endpoints {
			if e.v6 != v6 {
				continue
			}
			if len(rrs) == n {
				return rrs
			}
			rrs = append(rrs, b.next(owner, e.ip, ttl))
		}
	}
	return rrs
}

// headlessSRV returns one SRV per endpoint name and port number, targets
// named host.cluster.svc.ns.svc.zone, with their addresses in the additional
// section. Endpoints without a host name (their slice names no cluster, or
// the name would be too long) share one SRV per port whose target is the
// service's own name, which answers every address of the service.
//
// No more records are made than an answer can carry: at most
// maxAnswerRecords of each section, the targets kept whole as capAnswer
// keeps them, and repeated records (a name in two slices) dropped as they
// would be made. A name times a port of each is what an endpoint set at the
// API server's limits would otherwise make: 1,000 names and 20,000 ports are
// 20 million records.
func (r *resolver) headlessSRV(v *view, ports []servicePort, owner, zone string, limit int) answer {
	ports = distinctPorts(ports)
	if len(ports) == 0 {
		return nodata(whyNoPorts)
	}
	eps := v.eps
	anonymous, names, named := false, 0, 0
	for _, s := range eps.served {
		anonymous = anonymous || s.anonymous > 0
		names += s.names
		named += len(s.endpoints) - s.anonymous
	}
	if anonymous {
		names++
	}
	n := names * len(ports)
	extra := named
	if anonymous {
		extra += eps.s4 + eps.s6
	}
	b := srvBuilder{owner: owner, ports: ports, n: n, ttl: r.ttl, dups: eps.dups,
		answer: make([]dns.RR, 0, min(n, limit)), extra: make([]dns.RR, 0, min(extra, limit)),
		// Whether the whole answer would be over what any reply carries.
		capped: n > maxAnswerRecords || extra > maxAnswerRecords,
		octets: maxAnswerSize - 12 - (len(owner) + 1 + 4)}
	b.block = make([]dns.SRV, 0, cap(b.answer))
	if b.dups {
		b.kept = make(map[hostKey]struct{}, min(names, cap(b.answer)/len(ports)+1))
	}
	if anonymous {
		target := serviceName(v.key, zone)
		if b.target(target) {
			for _, v6 := range []bool{false, true} {
				b.addExtra(eps.addressRecords(target, v6, r.ttl, limit)...)
			}
		}
	}
	v4, v6 := newAddressBlock(min(named, limit), false), newAddressBlock(min(named, limit), true)
	add := func(target string, e endpoint) {
		if !b.extraRoom(e.v6) {
			return
		}
		ab := v4
		if e.v6 {
			ab = v6
		}
		b.extra = append(b.extra, ab.next(target, e.ip, r.ttl))
	}
	var seen addressSet
served:
	for _, s := range eps.served {
		named := s.endpoints[s.anonymous:]
		for i := 0; i < len(named); {
			host := named[i].host
			if !b.dups {
				if b.full {
					break served
				}
				target := hostName(host, s.cluster, v.key, zone)
				if !b.target(target) {
					break served
				}
				for ; i < len(named) && named[i].host == host; i++ {
					if len(b.extra) == cap(b.extra) {
						i = runEnd(named, i)
						break
					}
					add(target, named[i])
				}
				continue
			}
			// Names may repeat in other slices, and addresses under
			// several names: each name is answered once, at its first
			// slice, with its addresses from every slice of its cluster,
			// each once; its runs elsewhere are skipped, not walked.
			i = runEnd(named, i)
			k := hostKey{host: host, cluster: s.cluster}
			if _, kept := b.kept[k]; kept {
				continue
			}
			if b.full {
				break served
			}
			target := hostName(host, s.cluster, v.key, zone)
			if !b.target(target) {
				break served
			}
			b.keep(k)
			if len(b.extra) == cap(b.extra) {
				continue
			}
			clear(seen)
			eps.eachHost(host, s.cluster, func(e endpoint) bool {
				if len(b.extra) == cap(b.extra) {
					return false
				}
				if seen.add(e.ip) {
					add(target, e)
				}
				return true
			})
		}
	}
	if b.dups {
		// A name in two slices: one SRV per name and port, weights shared
		// by the records that remain.
		for _, rr := range b.answer {
			rr.(*dns.SRV).Weight = srvWeight(len(b.answer))
		}
	}
	return answer{answer: b.answer, extra: b.extra, localOnly: v.localOnly, capped: b.capped, why: whySRV}
}

// runEnd returns the end of the run of endpoints named eps[i].host, eps
// ordered by host: found in steps that double, then halve, so that a short
// run costs a few nearby reads, not a search of the whole slice.
func runEnd(eps []endpoint, i int) int {
	host := eps[i].host
	hi, step := i+1, 1
	for hi < len(eps) && eps[hi].host == host {
		i, hi, step = hi, hi+step, step*2
	}
	hi = min(hi, len(eps))
	return i + 1 + sort.Search(hi-i-1, func(j int) bool { return eps[i+1+j].host != host })
}

// srvBuilder makes the records of a headless SRV answer, within its bounds.
type srvBuilder struct {
	owner  string
	ports  []servicePort
	n      int // the records of the whole answer, which the weights share
	ttl    uint32
	dups   bool
	answer []dns.RR
	extra  []dns.RR
	block  []dns.SRV
	// full: a target was left out, so every one after it is; capped: the
	// whole answer would be more than any reply carries.
	full, capped bool
	// octets is what the records may still take of a TCP message: as they
	// are made, what each takes at most is taken from it, so that an
	// answer of long targets is made no larger than capAnswer keeps.
	octets int
	// kept are the names answered, when a name may be in several slices.
	kept map[hostKey]struct{}
}

func (b *srvBuilder) keep(k hostKey) {
	if b.kept == nil {
		b.kept = make(map[hostKey]struct{})
	}
	b.kept[k] = struct{}{}
}

// target adds the SRV records of target, one per port, and reports whether
// it did: a target whose records no longer fit is left out, and so are the
// ones after it, unless it is the first (a service of thousands of ports),
// of which as many records as fit are kept.
func (b *srvBuilder) target(target string) bool {
	if b.full {
		return false
	}
	size := srvSize(target)
	if room := cap(b.answer) - len(b.answer); len(b.answer) > 0 && (len(b.ports) > room || len(b.ports)*size > b.octets) {
		b.full = true
		b.capped = b.capped || len(b.ports)*size > b.octets
		return false
	}
	for _, p := range b.ports {
		if len(b.answer) == cap(b.answer) || size > b.octets {
			b.full = true
			b.capped = b.capped || size > b.octets
			break
		}
		b.octets -= size
		b.block = append(b.block, srv(b.owner, target, p.port, b.n, b.ttl))
		b.answer = append(b.answer, &b.block[len(b.block)-1])
	}
	return true
}

// addExtra adds address records to the additional section while it has
// room.
func (b *srvBuilder) addExtra(rrs ...dns.RR) {
	for _, rr := range rrs {
		_, v6 := rr.(*dns.AAAA)
		if !b.extraRoom(v6) {
			return
		}
		b.extra = append(b.extra, rr)
	}
}

// extraRoom reports whether the additional section has room for one more
// address record, and takes it; once one does not fit, none does.
func (b *srvBuilder) extraRoom(v6 bool) bool {
	size := addressSize(v6)
	if len(b.extra) == cap(b.extra) || size > b.octets {
		b.capped = b.capped || size > b.octets
		b.extra = slices.Clip(b.extra)
		return false
	}
	b.octets -= size
	return true
}

// srvSize and addressSize are the most octets an SRV record of target, or
// an address record of one of the answer's targets, takes in a message:
// its owner name a pointer to a name before it (the question's, the SRV
// target's), the target in full.
func srvSize(target string) int { return 2 + 10 + 6 + len(target) + 1 }

func addressSize(v6 bool) int {
	if v6 {
		return 2 + 10 + 16
	}
	return 2 + 10 + 4
}
