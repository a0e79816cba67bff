// Explain: a query run through the path ServeDNS takes, and the decision
// it filled described step by step, for operators and the kubectl mcs
// command.

package multicluster

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/miekg/dns"
)

// Explanation is what the plugin does with one query: the facts its
// decision rests on, in the order it weighs them, and what it wrote, or
// that it passed the query on to the next plugin.
type Explanation struct {
	Steps []string
	// Handled: the plugin answered, with Answer; otherwise the query goes
	// to the next plugin of the server block (kubernetes, forward...).
	Handled bool
	Answer  *dns.Msg
}

// Explain runs the query r through the plugin's own ServeDNS path, and
// describes the decision it made there: the record serve filled (decision)
// says which rule applied, to which objects, and what was answered. The
// steps add what the record points at (the import's ports and addresses,
// the claims on an address, the local objects at it), read from the same
// index and local Services; they never decide again.
func (m *Multicluster) Explain(r *dns.Msg) Explanation {
	var d decision
	rec := dnstest.NewRecorder(OfflineWriter{})
	handled, _, _ := m.serve(context.Background(), rec, r, &d)
	steps := m.describe(r, &d)
	if d.why != whyNone {
		steps = append(steps, "decided by: "+d.why.text())
	}
	return Explanation{Steps: steps, Handled: handled && rec.Msg != nil, Answer: rec.Msg}
}

// describe says, step by step, what d records about r.
func (m *Multicluster) describe(r *dns.Msg, d *decision) []string {
	var steps []string
	say := func(format string, args ...any) { steps = append(steps, fmt.Sprintf(format, args...)) }
	if d.why == whyNotOneQuestion {
		say("not one question: passed on")
		return steps
	}
	q := r.Question[0]
	if d.why == whyNotWireName {
		say("%s is no name as the wire carries it (lowering it changes its length), and no Kubernetes object has such a name: passed on", q.Name)
		return steps
	}
	switch d.kind {
	case zoneNone:
		say("%s is in no zone of the plugin (zones %s, fallback %s): passed on", q.Name, strings.Join(m.Zones, " "), strings.Join(m.Fallback, " "))
		return steps
	case zoneClusterset:
		say("zone %s: a clusterset zone, answered from ServiceImports alone, authoritatively", d.zone)
	case zoneFallback:
		say("zone %s: a fallback zone, answered from a ServiceImport only where no local Service of that name wins", d.zone)
	case zoneReverse:
		say("zone %s: a reverse zone; PTR of addresses the plugin knows, everything else passed on", d.zone)
	}
	switch d.why {
	case whyClass:
		say("class %s: refused in clusterset zones, passed on elsewhere", dns.ClassToString[q.Qclass])
		return steps
	case whyDegraded:
		say("the plugin is degraded: %s; SERVFAIL in clusterset zones, everything else passed on", d.degraded.message)
		return steps
	case whyNotSynced:
		say("the plugin's caches have not synced yet: SERVFAIL in clusterset zones, everything else passed on")
		return steps
	}
	if d.kind == zoneReverse {
		m.describePointer(d, say)
	} else {
		m.describeName(q, d, say)
	}
	return steps
}

// describeName says what d records about a name of a clusterset or a
// fallback zone.
func (m *Multicluster) describeName(q dns.Question, d *decision, say func(string, ...any)) {
	fallback, req := d.kind == zoneFallback, d.req
	switch {
	case d.why == whyTransfer:
		say("a zone transfer (%s) reached the plugin: no transfer plugin of this server block serves it, so it is REFUSED, as the kubernetes plugin refuses one", dns.TypeToString[q.Qtype])
		return
	case d.why == whyNotService:
		say("the name is not of a service (svc.NAMESPACE level or above): passed on")
		return
	case !req.underService():
		m.describeStructure(d, say)
		return
	}
	key := serviceKey{namespace: req.namespace, name: req.service}
	v := d.view
	if v == nil {
		if fallback {
			say("no ServiceImport %s: passed on", key)
		} else {
			say("no ServiceImport %s: NXDOMAIN", key)
			describeFallthrough(d, say)
		}
		return
	}
	say("ServiceImport %s, type %s", key, map[bool]string{false: "ClusterSetIP", true: "Headless"}[v.headless])
	if fallback {
		switch d.why {
		case whyNoLocalServices:
			say("no local Services known (no kubernetes plugin in the block, and none cached): passed on")
			return
		case whyLocalNotSynced:
			say("the local Services have not synced yet, so whether a local Service %s wins is not known: passed on", key)
			return
		case whyLocalWins:
			say("the local Service %s exists (type %s): local wins, passed on to the kubernetes plugin", key, d.local.Type)
			return
		case whyLocalExternalName:
			say("the local Service %s is an ExternalName Service, which never fails over: local wins, passed on", key)
			return
		case whyLocalReady:
			say("the local Service %s exists and has a ready endpoint: local wins, passed on (failover applies only without one)", key)
			return
		}
		switch d.failover {
		case failoverOption:
			say("the local Service %s has no ready endpoint: failover to the import, by the failover option", key)
		case failoverTraffic:
			say("the local Service %s has no ready endpoint: failover to the import, by the import's trafficDistribution, which prefers close endpoints", key)
		}
		if d.why == whyOutOfScope {
			if d.local == nil {
				say("no local Service %s", key)
			}
			switch v.scope {
			case scopeRefused:
				say("fallback_scope keeps %s local: passed on, as if there were no import", key)
			case apiServerRefused:
				say("%s is the API server's Service: it never falls back to an import unless system_fallback names it; passed on, as if there were no import", key)
			default:
				say("%s is a system namespace (%s): its names never fall back to an import unless system_fallback names them; passed on, as if there were no import", req.namespace, strings.Join(m.systemNamespaces(), ", "))
			}
			return
		}
	}
	noLocal := fallback && d.local == nil // the import decides alone
	if d.a.rcode == dns.RcodeNameError {
		if noLocal {
			say("no local Service %s: the import decides", key)
		}
		describeNoSuchName(req, v, d.why, say)
		if fallback {
			say("the name does not exist in the import either: passed on, and the kubernetes plugin answers NXDOMAIN with its own SOA")
		} else {
			describeFallthrough(d, say)
		}
		return
	}
	if noLocal {
		say("no local Service %s: the import answers", key)
	}
	switch d.why {
	case whyReservedAbove:
		say("%s.%s.%s.svc holds no records (the MCS DNS specification reserves it), but host names of cluster %s lie below it: NODATA (RFC 8020)", req.cluster, req.service, req.namespace, req.cluster)
		return
	case whyClusterAbove:
		say("%s.%s.%s.svc holds no records, but host names of cluster id %s lie below it: NODATA (RFC 8020)", req.labels, req.service, req.namespace, req.labels)
		return
	case whyHost:
		if len(d.a.answer) == 0 {
			say("%s.%s is a ready endpoint of the headless import, with no %s record: NODATA", req.host, req.cluster, dns.TypeToString[q.Qtype])
			return
		}
		say("%s.%s is a ready endpoint of the headless import: its addresses answer", req.host, req.cluster)
		return
	case whyPortType:
		say("a port name (_%s._%s) holds SRV records only: %s is NODATA", req.port, req.protocol, dns.TypeToString[q.Qtype])
		return
	case whyServiceType:
		say("a service name holds A, AAAA and SRV records only: %s is NODATA", dns.TypeToString[q.Qtype])
		return
	case whyNoPorts:
		say("the import has no ports: no SRV record (NODATA)")
		return
	case whyPortSRV:
		say("the import's port _%s._%s matches", req.port, req.protocol)
	}
	m.describeAddresses(v, d.a.source, say)
}

// describeNoSuchName says why a name at or below the import v does not
// exist (NXDOMAIN), by the resolver's reason why.
func describeNoSuchName(req request, v *view, why reason, say func(string, ...any)) {
	switch why {
	case whyReserved:
		say("%s.%s.%s.svc is reserved by the MCS DNS specification, and no host name of a cluster %s lies below it: NXDOMAIN", req.cluster, req.service, req.namespace, req.cluster)
	case whyNoReadyEndpoint:
		say("the headless import has no ready endpoint: the service has no names (NXDOMAIN, with a TTL of at most %d s, so that resolvers ask again once endpoints come)", pendingTTL)
	case whyNoSlices:
		say("the headless import has no ready endpoint, and its controller writes no EndpointSlices for it (status.endpointSliceObjects: Absent): the service has no names, and none are on their way (NXDOMAIN, with the zone's negative TTL)")
	case whyNoSuchPort:
		var ports []string
		for _, p := range v.ports {
			if p.name == "" {
				ports = append(ports, fmt.Sprintf("%d/%s, unnamed, has no port name", p.port, p.protocol))
			} else {
				ports = append(ports, fmt.Sprintf("_%s._%s (%d)", p.name, p.protocol, p.port))
			}
		}
		if len(ports) == 0 {
			ports = []string{"none"}
		}
		say("the import has no port _%s._%s (its ports: %s): NXDOMAIN", req.port, req.protocol, strings.Join(ports, ", "))
	case whyHostOfClusterSetIP:
		say("host names (HOST.CLUSTER.SERVICE.NAMESPACE.svc) exist only for headless imports, and this one is ClusterSetIP: NXDOMAIN")
	case whyNoSuchHost:
		say("no ready endpoint named %s in cluster %s of the headless import: NXDOMAIN", req.host, req.cluster)
	default:
		say("the name does not exist: NXDOMAIN")
	}
}

// describeStructure says what a name of a clusterset zone that is not a
// service's, nor below one, answers.
func (m *Multicluster) describeStructure(d *decision, say func(string, ...any)) {
	switch d.why {
	case whyApex:
		say("the zone's apex: SOA and NS records, NODATA for other types")
	case whyDNSVersion:
		say("dns-version: the schema version (TXT), NODATA for other types")
	case whyStructure:
		say("a name of the zone's own structure (ns.dns, dns, svc): it exists, with no records (NODATA)")
	case whyNamespace:
		say("namespace %s has imports: the name exists, with no records (NODATA)", d.req.namespace)
	case whyNoNamespace:
		say("no ServiceImport in namespace %s: NXDOMAIN", d.req.namespace)
		describeFallthrough(d, say)
	default:
		say("not a name of the MCS DNS schema (SERVICE.NAMESPACE.svc.ZONE and the names below it): NXDOMAIN")
		describeFallthrough(d, say)
	}
}

// describeFallthrough says that an NXDOMAIN of a clusterset zone was passed
// on, where the fallthrough option covers the name.
func describeFallthrough(d *decision, say func(string, ...any)) {
	if d.fellThrough {
		say("fallthrough covers the name: the NXDOMAIN is not written, the query is passed on")
	}
}

// describeAddresses describes the addresses of the import v that answered,
// from source, for a ClusterSetIP import: the sources ranked above it were
// tried first, and had none.
func (m *Multicluster) describeAddresses(v *view, source addressSource, say func(string, ...any)) {
	if v.headless {
		n, clusters := 0, map[string]int{}
		v.eachEndpoint(func(cluster string, _ endpoint) { n++; clusters[cluster]++ })
		say("%d ready endpoint addresses in its EndpointSlices, from %d clusters", n, len(clusters))
		if v.localOnly {
			say("trafficDistribution prefers close endpoints and the local cluster %q has ready ones: only those answer", m.sources.localCluster())
		} else if v.preferClose {
			say("trafficDistribution prefers close endpoints, but the local cluster has none ready (or is unknown): every cluster's answer")
		}
		return
	}
	addrs := func(v4, v6 []net.IP) string {
		var s []string
		for _, ip := range append(append([]net.IP{}, v4...), v6...) {
			s = append(s, ip.String())
		}
		return strings.Join(s, " ")
	}
	if source == sourceSpec {
		say("address source: spec.ips (%s); spec.ips answer whatever else exists", addrs(v.ipv4, v.ipv6))
		return
	}
	say("spec.ips holds no address that may be served")
	candidates, n := m.derivedCandidates(v)
	for _, c := range candidates[:n] {
		by := "its " + annotationDerivedService + " annotation"
		if c.source == sourcePrefix {
			by = "derived_prefix " + m.derivedPrefix
		}
		if m.local == nil {
			say("no local Services known: the derived Service %s/%s cannot be read", v.key.namespace, c.name)
			break
		}
		if c.source == source {
			v4, v6 := m.derivedIPs(v.key.namespace, c.name)
			say("address source: the ClusterIPs of the derived Service %s/%s, named by %s (%s)", v.key.namespace, c.name, by, addrs(v4, v6))
			return
		}
		say("the derived Service %s/%s, named by %s, does not exist or has no ClusterIP", v.key.namespace, c.name, by)
	}
	if source == sourceSlices {
		say("address source: the ready addresses of its EndpointSlices (%s)", addrs(v.ipv4, v.ipv6))
		if v.localOnly {
			say("trafficDistribution prefers close endpoints and the local cluster %q has ready ones: only those answer", m.sources.localCluster())
		}
		return
	}
	if v.slicesAbsent {
		say("no address at all, and its controller writes no EndpointSlices for it (status.endpointSliceObjects: Absent): A and AAAA answer NODATA, with the zone's negative TTL")
		return
	}
	say("no address at all: A and AAAA answer NODATA, with a TTL of at most %d s, so that resolvers ask again once an address comes", pendingTTL)
}

// describePointer says what d records about a query of a reverse zone:
// who claims the address and which local objects hold it, and the trust
// model's verdict.
func (m *Multicluster) describePointer(d *decision, say func(string, ...any)) {
	switch d.why {
	case whyNotPTR:
		say("not a PTR query: passed on")
		return
	case whyNoPTRZone:
		say("no zone of the plugin is a clusterset zone an address could be named in: passed on")
		return
	case whyNotAddress:
		say("not the reverse name of an address: passed on")
		return
	}
	addr := d.addr
	var refs []ptrTarget
	for _, ref := range m.index.reverseLookup(addr, nil) {
		if slices.Contains(refs, ref) {
			continue // two slices report one endpoint
		}
		refs = append(refs, ref)
		if ref.host != "" {
			say("%s is the address of endpoint %s.%s of ServiceImport %s", addr, ref.host, ref.cluster, ref.key)
		} else {
			say("%s is an address of ServiceImport %s", addr, ref.key)
		}
	}
	// The local objects at the address, as facts; the verdict below is
	// the one the query path recorded (decision.ptr), not decided here.
	if m.local != nil {
		for _, svc := range m.local.byClusterIP(addr.String()) {
			if imports := m.derivedImports(svc.Namespace, svc.Name); len(imports) > 0 {
				say("%s is the ClusterIP of %s/%s, the derived Service of %v", addr, svc.Namespace, svc.Name, imports)
			} else {
				say("%s is the ClusterIP of the local Service %s/%s", addr, svc.Namespace, svc.Name)
			}
		}
		if eps, _ := m.local.byEndpointIP(addr.String()); len(eps) > 0 {
			e := eps[0]
			if imports := m.derivedImports(e.key.namespace, e.key.name); len(imports) > 0 {
				say("%s is the address of a local endpoint of %s, the derived Service of %v", addr, e.key, imports)
			} else {
				say("%s is the address of a local endpoint of %s", addr, e.key)
			}
		}
	}
	if len(refs) == 0 {
		say("no import claims %s", addr)
	}
	switch d.ptr {
	case ptrAnswered:
		say("verdict: one import's name answers (the trust model, docs/trust.md)")
	case ptrUnknown:
		say("verdict: no import claims %s: passed on", addr)
	case ptrLocal:
		say("verdict: %s is a local Service's or endpoint's own address: local wins, passed on", addr)
	case ptrOutOfRange:
		say("verdict: %s is outside the reverse ranges (%s): no import may name it, passed on", addr, describeRanges(m.reverseRanges))
	case ptrLocalConflict:
		say("verdict: imports of namespaces %s claim %s, which the local cluster holds in another namespace: a conflict, passed on to the cluster's own answer (policy_decisions_total rule ptr_local_conflict)", strings.Join(claimNamespaces(refs), ", "), addr)
	case ptrConflict:
		say("verdict: imports of several namespaces (%s) claim %s, and no derived Service decides: a conflict, passed on (coredns_multicluster_reverse_conflicts)", strings.Join(claimNamespaces(refs), ", "), addr)
	}
	// Passed on, where the kubernetes plugin could send no answer.
	const cached = "the kubernetes plugin's cache holds a multicluster EndpointSlice at %s too, which it would name with an empty label, in an answer that cannot be sent"
	switch d.why {
	case whyLocalEndpointName:
		say(cached+": the plugin answers with the local endpoint's name, as the kubernetes plugin gives it", addr)
	case whyKubeFallthrough:
		say(cached+": the query goes on as the kubernetes plugin sends one for an address it does not know: it falls through, to the plugin after it", addr)
	case whyKubeNXDomain:
		say(cached+": the plugin answers as the kubernetes plugin does for an address it does not know: NXDOMAIN, with its SOA", addr)
	}
}

// describeRanges names reverse ranges, the default ones by what they are.
func describeRanges(ranges []netip.Prefix) string {
	if slices.Equal(ranges, defaultReverseRanges) {
		return "the default: private, shared, documentation and reserved ranges, no public address"
	}
	names := make([]string, len(ranges))
	for i, p := range ranges {
		names[i] = p.String()
	}
	return strings.Join(names, ", ")
}
