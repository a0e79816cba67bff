package multicluster

import (
	"context"
	"net"
	"net/netip"
	"strings"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/metrics"
	"github.com/coredns/coredns/plugin/pkg/dnsutil"
	"github.com/miekg/dns"
	ot "github.com/opentracing/opentracing-go"
	core "k8s.io/api/core/v1"
)

// zoneKind tells how a zone is served.
type zoneKind uint8

const (
	zoneNone       zoneKind = iota
	zoneClusterset          // answered from imports, authoritative
	zoneReverse             // PTR of known addresses, everything else passed on
	zoneFallback            // answered from imports only where no local Service exists
	zoneKinds
)

func (k zoneKind) String() string {
	switch k {
	case zoneClusterset:
		return "clusterset"
	case zoneReverse:
		return "reverse"
	case zoneFallback:
		return "fallback"
	}
	return "none"
}

// ServeDNS implements plugin.Handler.
//
// It only hands a query on; serve decides. Every cluster-local query in a
// cluster is passed on, and CoreDNS runs each query on a fresh goroutine with
// a small stack, so the frames under the next plugin are its cost: when the
// lookups of the kubernetes plugin, deep below, cross a stack-size boundary
// the runtime copies the whole stack on every query. Passing from here, after
// serve has returned, leaves just this small frame under the next plugin, and
// reserveStack grows the stack here, where a copy is cheap, to the size the
// rest of the chain needs (see stack.go).
//
// plugin.NextOrFailure would also wrap the writer to track which plugin
// writes the answer, one allocation per query; but only the tracker nearest
// the metrics plugin's recorder takes effect, and that one is not ours, so
// the wrapper would change nothing. It is kept where it does something:
// opening a child span when the query is traced.
func (m *Multicluster) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	if handled, rcode, err := m.serve(ctx, w, r); handled {
		return rcode, err
	}
	reserveStack(0)
	if m.Next == nil || ot.SpanFromContext(ctx) != nil {
		return plugin.NextOrFailure(m.Name(), m.Next, ctx, w, r)
	}
	return m.Next.ServeDNS(ctx, w, r)
}

// serve answers the query if it is the plugin's to answer, and reports
// whether it did; handled is false for a query to pass on.
func (m *Multicluster) serve(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (handled bool, rcode int, err error) {
	if len(r.Question) != 1 || r.Question[0].Qclass != dns.ClassINET {
		return false, 0, nil
	}
	q := r.Question[0]
	// ToLower returns its argument when there is nothing to lower: the common
	// case costs no allocation.
	name := strings.ToLower(q.Name)
	if len(name) != len(q.Name) {
		// Lowering changed the length: not a name from the wire (those are
		// ASCII, escaped), and no Kubernetes object has such a name.
		return false, 0, nil
	}
	zone, kind := m.matchZone(name)
	switch kind {
	case zoneFallback:
		return m.serveFallback(ctx, w, r, name, zone)
	case zoneClusterset:
		return m.serveClusterset(ctx, w, r, name, zone)
	case zoneReverse:
		return m.serveReverse(ctx, w, r, name, zone)
	}
	return false, 0, nil
}

// matchZone returns the longest zone name lies in, and how it is served.
// name must be lower case.
func (m *Multicluster) matchZone(name string) (string, zoneKind) {
	best, kind := "", zoneNone
	for _, z := range m.Zones {
		if len(z) > len(best) && inZone(name, z) {
			best, kind = z, zoneClusterset
			if isReverseZone(z) {
				kind = zoneReverse
			}
		}
	}
	for _, z := range m.Fallback {
		if len(z) > len(best) && inZone(name, z) {
			best, kind = z, zoneFallback
		}
	}
	if kind == zoneNone && len(m.Zones) > 0 {
		// A zone of "." matches everything, but has length 1: look again.
		for _, z := range m.Zones {
			if z == "." {
				return z, zoneClusterset
			}
		}
	}
	return best, kind
}

// inZone reports whether name equals zone or lies below it, on a label
// boundary that is not an escaped dot. Both are lower case and fully qualified.
func inZone(name, zone string) bool {
	if zone == "." {
		return true
	}
	if !strings.HasSuffix(name, zone) {
		return false
	}
	i := len(name) - len(zone)
	if i == 0 {
		return true
	}
	if name[i-1] != '.' {
		return false
	}
	// The dot ends a label unless an odd number of backslashes escapes it.
	slashes := 0
	for j := i - 2; j >= 0 && name[j] == '\\'; j-- {
		slashes++
	}
	return slashes%2 == 0
}

func isReverseZone(z string) bool {
	return strings.HasSuffix(z, "in-addr.arpa.") || strings.HasSuffix(z, "ip6.arpa.")
}

// serveFallback answers a name in a cluster-local zone from an import when no
// local Service of that name exists; everything else goes to the next plugin
// untouched. The import lookup comes first: for the names of local Services,
// which is nearly every query in a cluster, it is the only cost.
func (m *Multicluster) serveFallback(ctx context.Context, w dns.ResponseWriter, r *dns.Msg, name, zone string) (handled bool, rcode int, err error) {
	req := parseRequest(name, zone)
	if !req.underService() || !m.serving() {
		return false, 0, nil
	}
	v := m.index.lookup(req.namespace, req.service)
	if v == nil || m.local == nil || !m.local.hasSynced() {
		return false, 0, nil
	}
	server := metrics.WithServer(ctx)
	failover := false
	if svc := m.local.service(req.namespace, req.service); svc != nil {
		// Local always wins, unless failover is on and the local Service
		// has no ready endpoint. An ExternalName Service has no endpoints
		// by design and never fails over.
		if !m.failover || svc.Type == core.ServiceTypeExternalName || m.local.readyEndpoints(req.namespace, req.service) {
			m.counters.request(server, zoneFallback, outcomeLocal)
			return false, 0, nil
		}
		failover = true
	}
	q := r.Question[0]
	zone = q.Name[len(q.Name)-len(zone):] // keep the case of the query
	a := m.resolveService(req, v, q.Name, q.Qtype, zone)
	if a.rcode == dns.RcodeNameError {
		// The name does not exist here either: let the cluster-local plugin
		// say so, with its own SOA.
		m.counters.request(server, zoneFallback, outcomePassed)
		return false, 0, nil
	}
	m.counters.fallbackAnswers.inc(server)
	if failover {
		m.counters.failoverAnswers.inc(server)
	}
	return m.write(w, r, zone, a, server, zoneFallback)
}

// serveClusterset answers every name in a clusterset zone.
func (m *Multicluster) serveClusterset(ctx context.Context, w dns.ResponseWriter, r *dns.Msg, name, zone string) (handled bool, rcode int, err error) {
	server := metrics.WithServer(ctx)
	if !m.serving() {
		// Not synced, or the API to sync from is missing: say so rather than
		// deny names that may well exist.
		m.counters.request(server, zoneClusterset, outcomeServfail)
		return true, dns.RcodeServerFailure, nil
	}
	q := r.Question[0]
	zone = q.Name[len(q.Name)-len(zone):]
	a := m.resolve(parseRequest(name, zone), q.Name, q.Qtype, zone)
	if a.rcode == dns.RcodeNameError && m.Fall.Through(name) {
		m.counters.request(server, zoneClusterset, outcomeFallthrough)
		return false, 0, nil
	}
	return m.write(w, r, zone, a, server, zoneClusterset)
}

// serveReverse answers PTR queries for addresses the index knows. Any other
// query, and any other address, goes on, so that local PTRs keep working.
func (m *Multicluster) serveReverse(ctx context.Context, w dns.ResponseWriter, r *dns.Msg, name, zone string) (handled bool, rcode int, err error) {
	q := r.Question[0]
	if q.Qtype != dns.TypePTR || !m.serving() {
		return false, 0, nil
	}
	ip := net.ParseIP(dnsutil.ExtractAddressFromReverse(name))
	addr, ok := netip.AddrFromSlice(ip)
	if !ok {
		return false, 0, nil
	}
	targets := m.index.reverseLookup(addr.Unmap())
	if len(targets) == 0 {
		return false, 0, nil
	}
	a := answer{rcode: dns.RcodeSuccess}
	for _, t := range targets {
		for _, z := range m.Zones {
			if isReverseZone(z) {
				continue
			}
			target := serviceName(t.key, z)
			if t.host != "" {
				target = hostName(t.host, t.cluster, t.key, z)
			}
			a.answer = append(a.answer, ptr(q.Name, target, m.ttl))
		}
	}
	if len(a.answer) == 0 {
		return false, 0, nil
	}
	return m.write(w, r, q.Name[len(q.Name)-len(zone):], a, metrics.WithServer(ctx), zoneReverse)
}

// write sends a, with the SOA of zone in the authority section of negative
// answers.
func (m *Multicluster) write(w dns.ResponseWriter, r *dns.Msg, zone string, a answer, server string, kind zoneKind) (handled bool, rcode int, err error) {
	resp := new(dns.Msg)
	resp.SetRcode(r, a.rcode)
	resp.Authoritative = true
	resp.Answer = a.answer
	resp.Extra = a.extra
	result := outcomeAnswer
	if len(a.answer) == 0 {
		resp.Ns = []dns.RR{soa(zone, m.index.serial.Load(), m.ttl)}
		result = outcomeNodata
		if a.rcode == dns.RcodeNameError {
			result = outcomeNXDomain
		}
	}
	m.counters.request(server, kind, result)
	w.WriteMsg(resp)
	return true, dns.RcodeSuccess, nil
}

// resolve answers any name of a clusterset zone. owner is the query name as
// asked, zone the zone in the query's case.
func (m *Multicluster) resolve(req request, owner string, qtype uint16, zone string) answer {
	switch req.kind {
	case kindApex:
		switch qtype {
		case dns.TypeSOA:
			return answer{answer: []dns.RR{soa(zone, m.index.serial.Load(), m.ttl)}}
		case dns.TypeNS:
			return answer{answer: []dns.RR{ns(zone, m.ttl)}}
		}
		return nodata
	case kindDNSVersion:
		if qtype == dns.TypeTXT {
			return answer{answer: []dns.RR{txt(owner, schemaVersion, dnsVersionTTL)}}
		}
		return nodata
	case kindNameserver, kindNameserverParent, kindSvcLabel:
		return nodata
	case kindNamespace:
		if m.index.hasNamespace(req.namespace) {
			return nodata
		}
		return nxdomain
	case kindService, kindPort, kindHost, kindReserved:
		v := m.index.lookup(req.namespace, req.service)
		if v == nil {
			return nxdomain
		}
		return m.resolveService(req, v, owner, qtype, zone)
	}
	return nxdomain
}

// resolveService answers a name at or below the service v.
func (m *Multicluster) resolveService(req request, v *view, owner string, qtype uint16, zone string) answer {
	if req.kind == kindReserved {
		return nxdomain
	}
	if v.headless {
		return m.resolveHeadless(req, v, owner, qtype, zone)
	}
	switch req.kind {
	case kindService:
		switch qtype {
		case dns.TypeA:
			v4, _ := m.clusterSetIPs(v)
			return answer{answer: addresses(owner, v4, false, m.ttl)}
		case dns.TypeAAAA:
			_, v6 := m.clusterSetIPs(v)
			return answer{answer: addresses(owner, v6, true, m.ttl)}
		case dns.TypeSRV:
			return m.clusterSetSRV(v, v.ports, owner, zone)
		}
		return nodata
	case kindPort:
		ports := matchPorts(v.ports, req.port, req.protocol)
		if len(ports) == 0 {
			return nxdomain
		}
		if qtype == dns.TypeSRV {
			return m.clusterSetSRV(v, ports, owner, zone)
		}
		return nodata
	}
	// host.cluster names exist only for headless imports.
	return nxdomain
}

// clusterSetSRV returns one SRV per port, all pointing at the service name,
// whose addresses go in the additional section.
func (m *Multicluster) clusterSetSRV(v *view, ports []servicePort, owner, zone string) answer {
	if len(ports) == 0 {
		return nodata
	}
	target := serviceName(v.key, zone)
	a := answer{answer: make([]dns.RR, len(ports))}
	block := make([]dns.SRV, len(ports))
	for i, p := range ports {
		block[i] = srv(owner, target, p.port, len(ports), m.ttl)
		a.answer[i] = &block[i]
	}
	v4, v6 := m.clusterSetIPs(v)
	a.extra = append(addresses(target, v4, false, m.ttl), addresses(target, v6, true, m.ttl)...)
	return a
}

// clusterSetIPs returns the addresses of a ClusterSetIP import: its spec.ips,
// or, when it has none and derived_prefix is set, the ClusterIPs of the local
// Service PREFIX+name, read from the Service cache at query time so that
// answers follow that Service as it changes. This is how Karmada leaves
// imports: spec.ips empty, and a shadow Service "derived-name" that carries
// the ClusterIP.
func (m *Multicluster) clusterSetIPs(v *view) (v4, v6 []net.IP) {
	if len(v.ipv4) > 0 || len(v.ipv6) > 0 || m.derivedPrefix == "" || m.local == nil {
		return v.ipv4, v.ipv6
	}
	svc := m.local.service(v.key.namespace, m.derivedPrefix+v.key.name)
	if svc == nil {
		return nil, nil
	}
	return clusterIPs(svc)
}

// resolveHeadless answers names of a headless import. Without a ready
// endpoint the service has no names at all (spec 2.4.1).
func (m *Multicluster) resolveHeadless(req request, v *view, owner string, qtype uint16, zone string) answer {
	if !v.readyEndpoints() {
		return nxdomain
	}
	switch req.kind {
	case kindService:
		switch qtype {
		case dns.TypeA, dns.TypeAAAA:
			v6 := qtype == dns.TypeAAAA
			n := countFamily(v.endpoints, v6)
			if n == 0 {
				return nodata
			}
			b := newAddressBlock(n, v6)
			rrs := make([]dns.RR, 0, n)
			for _, e := range v.endpoints {
				if e.v6 == v6 {
					rrs = append(rrs, b.next(owner, e.ip, m.ttl))
				}
			}
			return answer{answer: rrs}
		case dns.TypeSRV:
			return m.headlessSRV(v, v.ports, owner, zone)
		}
		return nodata
	case kindPort:
		ports := matchPorts(v.ports, req.port, req.protocol)
		if len(ports) == 0 {
			return nxdomain
		}
		if qtype == dns.TypeSRV {
			return m.headlessSRV(v, ports, owner, zone)
		}
		return nodata
	case kindHost:
		found := false
		var rrs []dns.RR
		for _, e := range v.endpoints {
			if e.host != req.host || e.cluster != req.cluster {
				continue
			}
			found = true
			if (qtype == dns.TypeA && !e.v6) || (qtype == dns.TypeAAAA && e.v6) {
				rrs = append(rrs, newAddressBlock(1, e.v6).next(owner, e.ip, m.ttl))
			}
		}
		if !found {
			return nxdomain
		}
		return answer{answer: rrs}
	}
	return nxdomain
}

// headlessSRV returns one SRV per endpoint name and port, targets named
// host.cluster.svc.ns.svc.zone, with their addresses in the additional section.
func (m *Multicluster) headlessSRV(v *view, ports []servicePort, owner, zone string) answer {
	if len(ports) == 0 {
		return nodata
	}
	// Endpoints are sorted by cluster and host, so the addresses of one name
	// are adjacent: one SRV per name and port, every address in Additional.
	names := 0
	for i, e := range v.endpoints {
		if i == 0 || e.host != v.endpoints[i-1].host || e.cluster != v.endpoints[i-1].cluster {
			names++
		}
	}
	n := names * len(ports)
	a := answer{answer: make([]dns.RR, 0, n), extra: make([]dns.RR, 0, len(v.endpoints))}
	block := make([]dns.SRV, 0, n)
	v4, v6 := newAddressBlock(countFamily(v.endpoints, false), false), newAddressBlock(countFamily(v.endpoints, true), true)
	target := ""
	for i, e := range v.endpoints {
		if i == 0 || e.host != v.endpoints[i-1].host || e.cluster != v.endpoints[i-1].cluster {
			target = hostName(e.host, e.cluster, v.key, zone)
			for _, p := range ports {
				block = append(block, srv(owner, target, p.port, n, m.ttl))
				a.answer = append(a.answer, &block[len(block)-1])
			}
		}
		b := v4
		if e.v6 {
			b = v6
		}
		a.extra = append(a.extra, b.next(target, e.ip, m.ttl))
	}
	return a
}
