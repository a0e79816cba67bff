package multicluster

import (
	"context"
	"net"
	"net/netip"
	"strings"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/metrics"
	"github.com/coredns/coredns/plugin/pkg/dnsutil"
	corerequest "github.com/coredns/coredns/request"
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

// reason is the rule that decided a query: what of the name, of its
// objects or of the plugin's state made the answer what it is, or passed
// the query on.
type reason uint8

const (
	whyNone reason = iota

	// The resolver's (answer.why): what the name holds.
	whyApex               // the zone's apex: SOA and NS
	whyDNSVersion         // dns-version: the schema version, TXT
	whyStructure          // ns.dns, dns, svc: names of the zone's own, with no records
	whyNamespace          // a namespace with imports: a name with no records
	whyNoNamespace        // a namespace without imports: NXDOMAIN
	whyNotSchema          // no name of the MCS DNS schema: NXDOMAIN
	whyNoImport           // no import of the service: NXDOMAIN
	whyReserved           // cluster.svc.ns.svc, no host name below: NXDOMAIN
	whyReservedAbove      // cluster.svc.ns.svc with host names below: NODATA
	whyNoReadyEndpoint    // a headless import without a ready endpoint has no names
	whyNoSuchPort         // no port of that name and protocol: NXDOMAIN
	whyPortType           // a port name holds SRV records alone: NODATA
	whyServiceType        // a service name holds A, AAAA and SRV alone: NODATA
	whyNoPorts            // SRV of an import without ports: NODATA
	whyHostOfClusterSetIP // host names exist for headless imports alone: NXDOMAIN
	whyNoSuchHost         // no ready endpoint of that name in that cluster: NXDOMAIN
	whyClusterAbove       // the labels of a cluster id with host names below: NODATA
	whyNoName             // any other name below a service: NXDOMAIN
	whyHost               // a ready endpoint's name: its addresses
	whyAddresses          // the service's addresses (answer.source)
	whySRV                // the service's SRV records, one per port
	whyPortSRV            // a port's SRV records
)

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
	if len(r.Question) != 1 {
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
	if q.Qclass != dns.ClassINET {
		if kind == zoneClusterset {
			// The clusterset zones exist in class IN alone; they are the
			// plugin's, so it says so rather than let another class reach
			// forward. The server itself refuses other classes unless a
			// plugin such as chaos or forward asks for them.
			return m.refuse(ctx, w, r)
		}
		return false, 0, nil
	}
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
		// Local always wins, unless failover applies to the import and the
		// local Service has no ready endpoint. An ExternalName Service has
		// no endpoints by design and never fails over.
		if !m.failsOver(v) || svc.Type == core.ServiceTypeExternalName || m.local.readyEndpoints(req.namespace, req.service) {
			m.counters.request(server, zoneFallback, outcomeLocal)
			return false, 0, nil
		}
		failover = true
	}
	if v.scope != inScope {
		// The operator keeps this name local, or it is a system name: as
		// if there were no import.
		rule := ruleScopeRefused
		if v.scope == systemRefused {
			rule = ruleSystemRefused
		}
		m.counters.policy(server, rule)
		m.counters.request(server, zoneFallback, outcomePassed)
		return false, 0, nil
	}
	q := r.Question[0]
	zone = q.Name[len(q.Name)-len(zone):] // keep the case of the query
	req.limit = replyLimit(w, r)
	a := m.service(req, v, q.Name, q.Qtype, zone)
	if a.rcode == dns.RcodeNameError {
		// The name does not exist here either: let the cluster-local plugin
		// say so, with its own SOA.
		m.counters.request(server, zoneFallback, outcomePassed)
		return false, 0, nil
	}
	m.counters.fallbackAnswers.inc(server)
	if failover {
		m.counters.failoverAnswers.inc(server)
		if !m.failover {
			m.counters.policy(server, ruleFailoverService)
		}
	}
	return m.write(w, r, zone, a, server, zoneFallback)
}

// failsOver reports whether a fallback name of the import v fails over from
// a local Service that has no ready endpoint: with the failover option, or
// when the import prefers close endpoints (spec.trafficDistribution) and the
// readiness of local endpoints is known.
func (m *Multicluster) failsOver(v *view) bool {
	return m.failover || (v.preferClose && m.endpointsKnown)
}

// serveClusterset answers every name in a clusterset zone.
func (m *Multicluster) serveClusterset(ctx context.Context, w dns.ResponseWriter, r *dns.Msg, name, zone string) (handled bool, rcode int, err error) {
	server := metrics.WithServer(ctx)
	if !m.serving() {
		// Not synced, or the API to sync from is missing: say so rather than
		// deny names that may well exist.
		m.counters.request(server, zoneClusterset, outcomeServfail)
		return m.servfail(w, r)
	}
	q := r.Question[0]
	if q.Qtype == dns.TypeAXFR || q.Qtype == dns.TypeIXFR {
		// A transfer that reached the plugin: no transfer plugin in this
		// server block serves it. Refused, as the kubernetes plugin does.
		return m.refuse(ctx, w, r)
	}
	zone = q.Name[len(q.Name)-len(zone):]
	req := parseRequest(name, zone)
	req.limit = replyLimit(w, r)
	a, _ := m.name(req, q.Name, q.Qtype, zone)
	if a.rcode == dns.RcodeNameError && m.Fall.Through(name) {
		m.counters.request(server, zoneClusterset, outcomeFallthrough)
		return false, 0, nil
	}
	return m.write(w, r, zone, a, server, zoneClusterset)
}

// serveReverse answers PTR queries for addresses the plugin knows, with one
// name in the first clusterset zone. Any other query, and any other address,
// goes on, so that local PTRs keep working.
func (m *Multicluster) serveReverse(ctx context.Context, w dns.ResponseWriter, r *dns.Msg, name, zone string) (handled bool, rcode int, err error) {
	q := r.Question[0]
	if q.Qtype != dns.TypePTR || !m.serving() || m.ptrZone == "" {
		return false, 0, nil
	}
	ip := net.ParseIP(dnsutil.ExtractAddressFromReverse(name))
	addr, ok := netip.AddrFromSlice(ip)
	if !ok {
		return false, 0, nil
	}
	addr = addr.Unmap()
	a, verdict := m.pointer(addr, q.Name, m.ptrZone)
	switch verdict {
	case ptrAnswered:
		return m.write(w, r, q.Name[len(q.Name)-len(zone):], a, metrics.WithServer(ctx), zoneReverse)
	case ptrConflict:
		m.counters.policy(metrics.WithServer(ctx), rulePTRConflict)
	case ptrLocalConflict:
		m.counters.policy(metrics.WithServer(ctx), rulePTRLocalConflict)
		localConflictLogger.log(addr, m.describeLocalConflict)
	case ptrOutOfRange:
		m.counters.policy(metrics.WithServer(ctx), rulePTROutOfRange)
	}
	return m.passOn(ctx, w, r, addr, zone)
}

// passOn passes on the PTR query r for addr, which the plugin does not
// answer itself (no import claims it, it is the local cluster's, imports of
// several namespaces claim it, or it is outside reverse_ranges), so that
// the kubernetes plugin answers it as if there were no import. That plugin
// caches multicluster EndpointSlices too, and names their addresses from
// the kubernetes.io/service-name label, which they do not have: with an
// empty label (host..ns.svc.zone), so that no answer can be sent and the
// client waits until it times out (serviceRecordForIP in
// plugin/kubernetes/reverse.go names every endpoint at the address, of
// every namespace its PTR answers show). When addr is in its cache by such
// a slice, and no Service whose ClusterIP it is answers first:
//   - with a local endpoint at addr in a namespace the kubernetes plugin
//     exposes, that endpoint's name answers, as the kubernetes plugin
//     names it;
//   - otherwise the query goes on as that plugin sends a query for an
//     address it does not know: to the plugin after it, when it falls
//     through for the name, else NXDOMAIN with its own SOA. An endpoint of
//     a namespace it hides is never named.
//
// Any other query is passed on untouched.
func (m *Multicluster) passOn(ctx context.Context, w dns.ResponseWriter, r *dns.Msg, addr netip.Addr, zone string) (handled bool, rcode int, err error) {
	if m.local == nil {
		return false, 0, nil
	}
	k := m.kube
	if k != nil && m.Next != plugin.Handler(k) {
		return false, 0, nil
	}
	ip := addr.String()
	eps, mixed := m.local.byEndpointIP(ip)
	if !mixed {
		return false, 0, nil
	}
	state := corerequest.Request{W: w, Req: r}
	kzone := ""
	if k != nil {
		// As the kubernetes plugin matches its zones, in the query's case.
		qname := state.QName()
		if kzone = plugin.Zones(k.Zones).Matches(qname); kzone == "" {
			return false, 0, nil // not the kubernetes plugin's zone: it passes it on
		}
		kzone = qname[len(qname)-len(kzone):]
	}
	for _, svc := range m.local.byClusterIP(ip) {
		if m.local.reverseExposed(svc.Namespace) {
			return false, 0, nil // it answers with the Service's name
		}
	}
	for _, e := range eps {
		if m.local.exposed(e.key.namespace) {
			q := r.Question[0]
			return m.write(w, r, q.Name[len(q.Name)-len(zone):], m.localEndpointPTR(q.Name, e, addr), metrics.WithServer(ctx), zoneReverse)
		}
	}
	if k == nil {
		return false, 0, nil
	}
	if k.Fall.Through(state.Name()) {
		rcode, err := plugin.NextOrFailure(k.Name(), k.Next, ctx, w, r)
		return true, rcode, err
	}
	rcode, err = plugin.BackendError(ctx, k, kzone, dns.RcodeNameError, state, nil, plugin.Options{})
	return true, rcode, err
}

// minRecordLen is the fewest octets a record of an answer takes on the
// wire: an A record whose owner name is compressed to a pointer (2 + 10 + 4).
const minRecordLen = 16

// replyLimit is the most records of each section worth making for the reply
// to r: over UDP, one more than its buffer holds, so that the server still
// truncates the reply and sets TC, and the client asks again over TCP; over
// TCP, maxAnswerRecords (capAnswer).
func replyLimit(w dns.ResponseWriter, r *dns.Msg) int {
	if _, udp := w.RemoteAddr().(*net.UDPAddr); !udp {
		return maxAnswerRecords
	}
	size := dns.MinMsgSize
	if opt := r.IsEdns0(); opt != nil {
		size = max(size, int(opt.UDPSize()))
	}
	return min(size/minRecordLen+1, maxAnswerRecords)
}

// refuse writes REFUSED for a query of a clusterset zone the plugin does
// not serve: another class, or a zone transfer.
func (m *Multicluster) refuse(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (handled bool, rcode int, err error) {
	resp := new(dns.Msg)
	resp.SetRcode(r, dns.RcodeRefused)
	m.counters.request(metrics.WithServer(ctx), zoneClusterset, outcomeRefused)
	w.WriteMsg(resp)
	return true, dns.RcodeSuccess, nil
}

// servfail writes SERVFAIL for a clusterset name the plugin cannot answer:
// its caches have not synced, or it is degraded. To a client that speaks
// EDNS0 it says why, in an Extended DNS Error (RFC 8914): Not Ready while
// unsynced, otherwise the cause of the degradation.
func (m *Multicluster) servfail(w dns.ResponseWriter, r *dns.Msg) (handled bool, rcode int, err error) {
	resp := new(dns.Msg)
	resp.SetRcode(r, dns.RcodeServerFailure)
	if opt := r.IsEdns0(); opt != nil {
		ede := &dns.EDNS0_EDE{InfoCode: dns.ExtendedErrorCodeNotReady, ExtraText: "multicluster caches not synced"}
		if d := m.degraded.Load(); d != nil {
			ede.InfoCode, ede.ExtraText = d.infoCode, d.text
		}
		resp.SetEdns0(opt.UDPSize(), opt.Do())
		o := resp.IsEdns0()
		o.Option = append(o.Option, ede)
	}
	w.WriteMsg(resp)
	// Written: the server must not write an answer of its own.
	return true, dns.RcodeSuccess, nil
}

// pendingTTL bounds the negative TTL (RFC 2308: the SOA's TTL and minimum,
// whichever is lower) of an answer about an import that has no address yet:
// controllers write a ServiceImport first and its spec.ips, or the derived
// Service, after, and a resolver must not cache that gap for the zone's
// whole TTL.
const pendingTTL = 1

// write sends a, with the SOA of zone in the authority section of negative
// answers; an answer about an import without an address yet carries
// pendingTTL as the SOA's TTL and minimum.
func (m *Multicluster) write(w dns.ResponseWriter, r *dns.Msg, zone string, a answer, server string, kind zoneKind) (handled bool, rcode int, err error) {
	if capped, ok := capAnswer(r, a); ok || a.capped {
		cappedAnswersTotal.WithLabelValues(server, dns.TypeToString[r.Question[0].Qtype]).Inc()
		a = capped
	}
	resp := new(dns.Msg)
	resp.SetRcode(r, a.rcode)
	resp.Authoritative = true
	resp.Answer = a.answer
	resp.Extra = a.extra
	result := outcomeAnswer
	if a.localOnly {
		m.counters.policy(server, ruleLocalPreferred)
	}
	if len(a.answer) == 0 {
		ttl := m.ttl
		if a.pending {
			ttl = min(ttl, pendingTTL)
		}
		resp.Ns = []dns.RR{soa(zone, m.serial(), ttl)}
		result = outcomeNodata
		if a.rcode == dns.RcodeNameError {
			result = outcomeNXDomain
		}
	}
	m.counters.request(server, kind, result)
	w.WriteMsg(resp)
	return true, dns.RcodeSuccess, nil
}
