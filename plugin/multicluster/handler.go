package multicluster

import (
	"context"
	"net"
	"net/netip"
	"strings"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/kubernetes/object"
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

	// serve's, before any zone's own rules.
	whyNotOneQuestion // not one question: passed on
	whyNotWireName    // lowering changed the name's length: no name from the wire, passed on
	whyNoZone         // in no zone of the plugin: passed on
	whyClass          // not class IN: refused in clusterset zones, passed on elsewhere
	whyDegraded       // an API or a permission is missing (decision.degraded)
	whyNotSynced      // the caches have not synced yet
	whyTransfer       // AXFR or IXFR, which no transfer plugin served: refused

	// serve's, in fallback zones; after them the resolver's decide.
	whyNotService        // not a service's name, nor below one: passed on
	whyNoLocalServices   // no local Services are known: passed on
	whyLocalNotSynced    // the local Services have not synced: passed on
	whyLocalWins         // a local Service of the name exists, and it does not fail over
	whyLocalExternalName // the local Service is an ExternalName Service: it never fails over
	whyLocalReady        // the local Service has a ready endpoint: it does not fail over
	whyOutOfScope        // the fallback scope keeps the import local (view.scope says how)

	// serve's, in reverse zones.
	whyNotPTR            // not a PTR query: passed on
	whyNoPTRZone         // no clusterset zone to name an address in: passed on
	whyNotAddress        // not the reverse name of an address: passed on
	whyPointer           // the trust model's verdict decided (decision.ptr)
	whyLocalEndpointName // passed on, where the kubernetes plugin could send no answer: the local endpoint's name
	whyKubeFallthrough   // passed on, where the kubernetes plugin could send no answer: it falls through
	whyKubeNXDomain      // passed on, where the kubernetes plugin could send no answer: its NXDOMAIN

	// The resolver's (answer.why): what the name holds.
	whyApex               // the zone's apex: SOA and NS
	whyDNSVersion         // dns-version: the schema version, TXT
	whyStructure          // ns.dns, dns, svc: names of the zone's own, with no records
	whyNamespace          // a namespace with imports: a name with no records
	whyNoNamespace        // a namespace without imports: NXDOMAIN
	whyNotSchema          // no name of the MCS DNS schema: NXDOMAIN
	whyNoImport           // no import of the service: NXDOMAIN (passed on in fallback zones)
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

// ofName reports whether the resolver gave the reason: what the name
// holds decided, not serve's rules.
func (w reason) ofName() bool { return w >= whyApex }

// decision is what serve decided about one query: what was asked, the rule
// that applied, the objects it rests on, and what was answered. serve fills
// it as it goes; the reply is written from it (reply), the counters count
// it (count), and Explain describes it, so that none of them decides again.
// It is a value in serve's frame, filled in place: it costs the query path
// no allocation.
type decision struct {
	// What was asked: the zone the name is in, lower case, and how the
	// zone is served; below a forward zone the name, parsed; below a
	// reverse zone the address.
	zone string
	kind zoneKind
	req  request
	addr netip.Addr

	// why is the rule that decided: one of serve's, or the resolver's
	// (a.why) when the name's records decided.
	why reason

	// The objects: the import of the name, the local Service of a
	// fallback name, why the plugin is degraded.
	view     *view
	local    *object.Service
	degraded *degradation
	// failover: a fallback name's local Service had no ready endpoint,
	// and the import answers in its place, by this cause.
	failover failoverCause
	// ptr is the trust model's verdict on the address of a PTR query,
	// ptrNone for any other query.
	ptr ptrVerdict

	// What was answered: reply says how, a holds the records and rcode of
	// replyAnswer, as sent (capped: cut to what a message carries).
	reply       replyKind
	a           answer
	capped      bool
	fellThrough bool   // an NXDOMAIN of a clusterset zone, passed on by fallthrough
	kubeZone    string // the kubernetes plugin's zone, in the query's case, for its NXDOMAIN
}

// failoverCause is why a fallback name fails over from its local Service.
type failoverCause uint8

const (
	noFailover      failoverCause = iota
	failoverOption                // the failover option
	failoverTraffic               // the import's trafficDistribution prefers close endpoints
)

// replyKind is what serve writes, or whether it passes the query on.
type replyKind uint8

const (
	replyPass         replyKind = iota // nothing: the next plugin answers
	replyAnswer                        // decision.a, with the zone's SOA when it has no records
	replyRefused                       // REFUSED
	replyServfail                      // SERVFAIL, with an Extended DNS Error that says why
	replyKubeNext                      // the kubernetes plugin falls through: the plugin after it answers
	replyKubeNXDomain                  // NXDOMAIN with the kubernetes plugin's SOA
)

// resolved records a, the resolver's answer, as the reply, cut to what a
// message carries (capAnswer), and its reason as the decision's.
func (d *decision) resolved(r *dns.Msg, a answer) {
	if capped, ok := capAnswer(r, a); ok || a.capped {
		d.capped = true
		a = capped
	}
	d.a, d.why, d.reply = a, a.why, replyAnswer
}

// outcome is what requestsTotal counts the query as, if anything.
func (d *decision) outcome() (outcome, bool) {
	switch d.reply {
	case replyAnswer:
		switch {
		case len(d.a.answer) > 0:
			return outcomeAnswer, true
		case d.a.rcode == dns.RcodeNameError:
			return outcomeNXDomain, true
		}
		return outcomeNodata, true
	case replyRefused:
		return outcomeRefused, true
	case replyServfail:
		return outcomeServfail, true
	case replyPass:
		switch {
		case d.fellThrough:
			return outcomeFallthrough, true
		case d.kind != zoneFallback:
		case d.why == whyLocalWins, d.why == whyLocalExternalName, d.why == whyLocalReady:
			return outcomeLocal, true
		case d.why == whyOutOfScope, d.view != nil && d.why.ofName():
			// Kept local, or a name the import does not have.
			return outcomePassed, true
		}
	}
	return 0, false
}

// ruleSet is a set of the policy rules that decided a query.
type ruleSet uint8

func (s *ruleSet) add(r rule)     { *s |= 1 << r }
func (s ruleSet) has(r rule) bool { return s&(1<<r) != 0 }
func (s ruleSet) empty() bool     { return s == 0 }

// rules are the policies that decided d, as policy_decisions_total counts
// them.
func (d *decision) rules() (set ruleSet) {
	switch d.ptr {
	case ptrConflict:
		set.add(rulePTRConflict)
	case ptrLocalConflict:
		set.add(rulePTRLocalConflict)
	case ptrOutOfRange:
		set.add(rulePTROutOfRange)
	}
	if d.why == whyOutOfScope {
		if d.view.scope == systemRefused {
			set.add(ruleSystemRefused)
		} else {
			set.add(ruleScopeRefused)
		}
	}
	if d.reply == replyAnswer {
		if d.failover == failoverTraffic {
			set.add(ruleFailoverService)
		}
		if d.a.localOnly {
			set.add(ruleLocalPreferred)
		}
	}
	return set
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
// rest of the chain needs (see stack.go). The decision record lives in
// serve's frame, which is gone by then.
//
// plugin.NextOrFailure would also wrap the writer to track which plugin
// writes the answer, one allocation per query; but only the tracker nearest
// the metrics plugin's recorder takes effect, and that one is not ours, so
// the wrapper would change nothing. It is kept where it does something:
// opening a child span when the query is traced.
func (m *Multicluster) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	if handled, rcode, err := m.serve(ctx, w, r, nil); handled {
		return rcode, err
	}
	reserveStack(0)
	if m.Next == nil || ot.SpanFromContext(ctx) != nil {
		return plugin.NextOrFailure(m.Name(), m.Next, ctx, w, r)
	}
	return m.Next.ServeDNS(ctx, w, r)
}

// serve answers the query if it is the plugin's to answer, and reports
// whether it did; handled is false for a query to pass on. It decides
// (decide), counts the decision and writes the reply it names; with out
// set, it gives the decision to the caller (Explain).
func (m *Multicluster) serve(ctx context.Context, w dns.ResponseWriter, r *dns.Msg, out *decision) (handled bool, rcode int, err error) {
	var d decision
	m.decide(w, r, &d)
	m.count(ctx, r, &d)
	if out != nil {
		*out = d
	}
	return m.reply(ctx, w, r, &d)
}

// decide fills d with what the plugin does with r: it writes nothing and
// counts nothing. w is read for the size of the reply it can take.
func (m *Multicluster) decide(w dns.ResponseWriter, r *dns.Msg, d *decision) {
	if len(r.Question) != 1 {
		d.why = whyNotOneQuestion
		return
	}
	q := r.Question[0]
	// ToLower returns its argument when there is nothing to lower: the common
	// case costs no allocation.
	name := strings.ToLower(q.Name)
	if len(name) != len(q.Name) {
		// Lowering changed the length: not a name from the wire (those are
		// ASCII, escaped), and no Kubernetes object has such a name.
		d.why = whyNotWireName
		return
	}
	d.zone, d.kind = m.matchZone(name)
	switch {
	case d.kind == zoneNone:
		d.why = whyNoZone
		return
	case q.Qclass != dns.ClassINET:
		// The clusterset zones exist in class IN alone; they are the
		// plugin's, so it says so rather than let another class reach
		// forward. The server itself refuses other classes unless a
		// plugin such as chaos or forward asks for them.
		d.why = whyClass
		if d.kind == zoneClusterset {
			d.reply = replyRefused
		}
		return
	}
	// Not synced, or the API to sync from is missing: clusterset names
	// answer SERVFAIL rather than deny names that may well exist, and
	// every other query goes on. A degraded plugin never syncs: its cause
	// comes first.
	if d.degraded = m.degraded.Load(); d.degraded != nil {
		d.why = whyDegraded
	} else if !m.synced.Load() {
		d.why = whyNotSynced
	}
	if d.why != whyNone {
		if d.kind == zoneClusterset {
			d.reply = replyServfail
		}
		return
	}
	switch d.kind {
	case zoneFallback:
		m.decideFallback(w, r, name, d)
	case zoneClusterset:
		m.decideClusterset(w, r, name, d)
	case zoneReverse:
		m.decideReverse(w, r, name, d)
	}
}

// decideFallback answers a name in a cluster-local zone from an import
// when no local Service of that name exists; everything else goes to the
// next plugin untouched. The import lookup comes first: for the names of
// local Services, which is nearly every query in a cluster, it is the only
// cost.
func (m *Multicluster) decideFallback(w dns.ResponseWriter, r *dns.Msg, name string, d *decision) {
	d.req = parseRequest(name, d.zone)
	if !d.req.underService() {
		d.why = whyNotService
		return
	}
	v := m.index.lookup(d.req.namespace, d.req.service)
	if v == nil {
		d.why = whyNoImport
		return
	}
	d.view = v
	switch {
	case m.local == nil:
		d.why = whyNoLocalServices
		return
	case !m.local.hasSynced():
		d.why = whyLocalNotSynced
		return
	}
	if svc := m.local.service(d.req.namespace, d.req.service); svc != nil {
		// Local always wins, unless failover applies to the import and the
		// local Service has no ready endpoint. An ExternalName Service has
		// no endpoints by design and never fails over.
		d.local = svc
		switch {
		case !m.failsOver(v):
			d.why = whyLocalWins
			return
		case svc.Type == core.ServiceTypeExternalName:
			d.why = whyLocalExternalName
			return
		case m.local.readyEndpoints(d.req.namespace, d.req.service):
			d.why = whyLocalReady
			return
		}
		d.failover = failoverTraffic
		if m.failover {
			d.failover = failoverOption
		}
	}
	if v.scope != inScope {
		// The operator keeps this name local, or it is a system name: as
		// if there were no import.
		d.why = whyOutOfScope
		return
	}
	q := r.Question[0]
	zone := q.Name[len(q.Name)-len(d.zone):] // keep the case of the query
	d.req.limit = replyLimit(w, r)
	a := m.service(d.req, v, q.Name, q.Qtype, zone)
	if a.rcode == dns.RcodeNameError {
		// The name does not exist here either: let the cluster-local plugin
		// say so, with its own SOA.
		d.a, d.why = a, a.why
		return
	}
	d.resolved(r, a)
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

// failsOver reports whether a fallback name of the import v fails over from
// a local Service that has no ready endpoint: with the failover option, or
// when the import prefers close endpoints (spec.trafficDistribution) and the
// readiness of local endpoints is known.
func (m *Multicluster) failsOver(v *view) bool {
	return m.failover || (v.preferClose && m.endpointsKnown)
}

// decideClusterset answers every name in a clusterset zone.
func (m *Multicluster) decideClusterset(w dns.ResponseWriter, r *dns.Msg, name string, d *decision) {
	q := r.Question[0]
	if q.Qtype == dns.TypeAXFR || q.Qtype == dns.TypeIXFR {
		// A transfer that reached the plugin: no transfer plugin in this
		// server block serves it. Refused, as the kubernetes plugin does.
		d.why, d.reply = whyTransfer, replyRefused
		return
	}
	zone := q.Name[len(q.Name)-len(d.zone):]
	d.req = parseRequest(name, d.zone)
	d.req.limit = replyLimit(w, r)
	a, v := m.name(d.req, q.Name, q.Qtype, zone)
	d.view = v
	if a.rcode == dns.RcodeNameError && m.Fall.Through(name) {
		d.a, d.why, d.fellThrough = a, a.why, true
		return
	}
	d.resolved(r, a)
}

// decideReverse answers PTR queries for addresses the plugin knows, with
// one name in the first clusterset zone. Any other query, and any other
// address, goes on, so that local PTRs keep working.
func (m *Multicluster) decideReverse(w dns.ResponseWriter, r *dns.Msg, name string, d *decision) {
	q := r.Question[0]
	switch {
	case q.Qtype != dns.TypePTR:
		d.why = whyNotPTR
		return
	case m.ptrZone == "":
		d.why = whyNoPTRZone
		return
	}
	ip := net.ParseIP(dnsutil.ExtractAddressFromReverse(name))
	addr, ok := netip.AddrFromSlice(ip)
	if !ok {
		d.why = whyNotAddress
		return
	}
	d.addr = addr.Unmap()
	a, verdict := m.pointer(d.addr, q.Name, m.ptrZone)
	d.ptr = verdict
	if verdict == ptrAnswered {
		d.resolved(r, a)
		d.why = whyPointer
		return
	}
	d.why = whyPointer
	m.decidePassOn(w, r, d)
}

// decidePassOn decides about the PTR query r for d.addr, which the plugin
// does not answer itself (no import claims it, it is the local cluster's,
// imports of several namespaces claim it, or it is outside
// reverse_ranges): it is passed on, so that the kubernetes plugin answers
// it as if there were no import. That plugin caches multicluster
// EndpointSlices too, and names their addresses from the
// kubernetes.io/service-name label, which they do not have: with an empty
// label (host..ns.svc.zone), so that no answer can be sent and the client
// waits until it times out (serviceRecordForIP in
// plugin/kubernetes/reverse.go names every endpoint at the address, of
// every namespace its PTR answers show). When the address is in its cache
// by such a slice, and no Service whose ClusterIP it is answers first:
//   - with a local endpoint at the address in a namespace the kubernetes
//     plugin exposes, that endpoint's name answers, as the kubernetes
//     plugin names it;
//   - otherwise the query goes on as that plugin sends a query for an
//     address it does not know: to the plugin after it, when it falls
//     through for the name, else NXDOMAIN with its own SOA. An endpoint of
//     a namespace it hides is never named.
//
// Any other query is passed on untouched.
func (m *Multicluster) decidePassOn(w dns.ResponseWriter, r *dns.Msg, d *decision) {
	if m.local == nil {
		return
	}
	k := m.kube
	if k != nil && m.Next != plugin.Handler(k) {
		return
	}
	ip := d.addr.String()
	eps, mixed := m.local.byEndpointIP(ip)
	if !mixed {
		return
	}
	state := corerequest.Request{W: w, Req: r}
	if k != nil {
		// As the kubernetes plugin matches its zones, in the query's case.
		qname := state.QName()
		kzone := plugin.Zones(k.Zones).Matches(qname)
		if kzone == "" {
			return // not the kubernetes plugin's zone: it passes it on
		}
		d.kubeZone = qname[len(qname)-len(kzone):]
	}
	for _, svc := range m.local.byClusterIP(ip) {
		if m.local.reverseExposed(svc.Namespace) {
			return // it answers with the Service's name
		}
	}
	for _, e := range eps {
		if m.local.exposed(e.key.namespace) {
			d.resolved(r, m.localEndpointPTR(r.Question[0].Name, e, d.addr))
			d.why = whyLocalEndpointName
			return
		}
	}
	switch {
	case k == nil:
	case k.Fall.Through(state.Name()):
		d.why, d.reply = whyKubeFallthrough, replyKubeNext
	default:
		d.why, d.reply = whyKubeNXDomain, replyKubeNXDomain
	}
}

// count counts the decision d about r: the request by zone kind and
// outcome, the policies that decided it, the answers of fallback zones and
// of failovers, capped answers; and logs a local conflict (bounded). A
// query nothing counts, such as a cluster-local name passed on, costs no
// more than the look at d.
func (m *Multicluster) count(ctx context.Context, r *dns.Msg, d *decision) {
	o, counted := d.outcome()
	set := d.rules()
	if !counted && set.empty() && !d.capped {
		return
	}
	server := metrics.WithServer(ctx)
	if d.capped {
		cappedAnswersTotal.WithLabelValues(server, dns.TypeToString[r.Question[0].Qtype]).Inc()
	}
	for rl := range rules {
		if set.has(rl) {
			m.counters.policy(server, rl)
		}
	}
	if d.kind == zoneFallback && d.reply == replyAnswer {
		m.counters.fallbackAnswers.inc(server)
		if d.failover != noFailover {
			m.counters.failoverAnswers.inc(server)
		}
	}
	if counted {
		m.counters.request(server, d.kind, o)
	}
	if d.ptr == ptrLocalConflict {
		localConflictLogger.log(d.addr, m.describeLocalConflict)
	}
}

// reply writes what d says to write, if anything, and reports whether it
// did.
func (m *Multicluster) reply(ctx context.Context, w dns.ResponseWriter, r *dns.Msg, d *decision) (handled bool, rcode int, err error) {
	switch d.reply {
	case replyAnswer:
		return m.write(w, r, d)
	case replyRefused:
		resp := new(dns.Msg)
		resp.SetRcode(r, dns.RcodeRefused)
		w.WriteMsg(resp)
		return true, dns.RcodeSuccess, nil
	case replyServfail:
		return m.servfail(w, r, d.degraded)
	case replyKubeNext:
		k := m.kube
		rcode, err := plugin.NextOrFailure(k.Name(), k.Next, ctx, w, r)
		return true, rcode, err
	case replyKubeNXDomain:
		state := corerequest.Request{W: w, Req: r}
		rcode, err := plugin.BackendError(ctx, m.kube, d.kubeZone, dns.RcodeNameError, state, nil, plugin.Options{})
		return true, rcode, err
	}
	return false, 0, nil
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

// servfail writes SERVFAIL for a clusterset name the plugin cannot answer:
// its caches have not synced, or it is degraded (degraded, nil when not).
// To a client that speaks EDNS0 it says why, in an Extended DNS Error (RFC
// 8914): Not Ready while unsynced, otherwise the cause of the degradation.
func (m *Multicluster) servfail(w dns.ResponseWriter, r *dns.Msg, degraded *degradation) (handled bool, rcode int, err error) {
	resp := new(dns.Msg)
	resp.SetRcode(r, dns.RcodeServerFailure)
	if opt := r.IsEdns0(); opt != nil {
		ede := &dns.EDNS0_EDE{InfoCode: dns.ExtendedErrorCodeNotReady, ExtraText: "multicluster caches not synced"}
		if degraded != nil {
			ede.InfoCode, ede.ExtraText = degraded.infoCode, degraded.text
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

// write sends d.a, with the SOA of d's zone, in the query's case, in the
// authority section of negative answers; an answer about an import without
// an address yet carries pendingTTL as the SOA's TTL and minimum.
func (m *Multicluster) write(w dns.ResponseWriter, r *dns.Msg, d *decision) (handled bool, rcode int, err error) {
	a := d.a
	resp := new(dns.Msg)
	resp.SetRcode(r, a.rcode)
	resp.Authoritative = true
	resp.Answer = a.answer
	resp.Extra = a.extra
	if len(a.answer) == 0 {
		ttl := m.ttl
		if a.pending {
			ttl = min(ttl, pendingTTL)
		}
		q := r.Question[0]
		resp.Ns = []dns.RR{soa(q.Name[len(q.Name)-len(d.zone):], m.serial(), ttl)}
	}
	w.WriteMsg(resp)
	return true, dns.RcodeSuccess, nil
}
