// The DNS handler: ServeDNS, and the rules that decide what becomes of a
// query in each kind of zone (clusterset, fallback, reverse) and what of it
// is counted.

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

// ServeDNS implements plugin.Handler. It only hands a query on; serve
// decides. Passing on from here, after serve has returned, leaves one small
// frame under the next plugin, whose stack reserveStack has grown where a
// copy is cheap (stack.go). It calls the next plugin itself rather than
// plugin.NextOrFailure, whose writer wrapper (one allocation a query)
// takes effect only nearest the metrics plugin, which is not here; a span
// is still opened when the query is traced.
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
	d.req.limit = m.replyLimit(w, r)
	a := m.service(d.req, v, q.Name, q.Qtype, zone)
	if a.rcode == dns.RcodeNameError {
		// The name does not exist here either: let the cluster-local plugin
		// say so, with its own SOA.
		d.a, d.why = a, a.why
		return
	}
	d.resolved(r, a)
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
	d.req.limit = m.replyLimit(w, r)
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

// decidePassOn decides about a PTR query the plugin does not answer itself.
// The kubernetes plugin names the addresses of multicluster EndpointSlices it
// caches with an empty label (serviceRecordForIP in plugin/kubernetes/
// reverse.go), an answer that cannot be sent: for such an address that is no
// local ClusterIP the plugin answers instead, with the local endpoint's name
// if it has one, else as the kubernetes plugin does for an address it does not
// know. Any other query is passed on untouched.
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
