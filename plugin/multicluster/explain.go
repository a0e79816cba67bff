package multicluster

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/pkg/dnsutil"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	core "k8s.io/api/core/v1"
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
// describes the state its decision rests on. The answer is the one a
// server would write; the steps are read from the same index, local
// Services and options, without changing what is answered.
func (m *Multicluster) Explain(r *dns.Msg) Explanation {
	var e Explanation
	e.Steps = m.describe(r)
	rec := dnstest.NewRecorder(&test.ResponseWriter{})
	handled, _, _ := m.serve(context.Background(), rec, r, nil)
	e.Handled = handled && rec.Msg != nil
	e.Answer = rec.Msg
	return e
}

func (m *Multicluster) describe(r *dns.Msg) []string {
	var steps []string
	say := func(format string, args ...any) { steps = append(steps, fmt.Sprintf(format, args...)) }
	if len(r.Question) != 1 {
		say("not one question: passed on")
		return steps
	}
	q := r.Question[0]
	name := strings.ToLower(q.Name)
	zone, kind := m.matchZone(name)
	switch kind {
	case zoneNone:
		say("%s is in no zone of the plugin (zones %s, fallback %s): passed on", q.Name, strings.Join(m.Zones, " "), strings.Join(m.Fallback, " "))
		return steps
	case zoneClusterset:
		say("zone %s: a clusterset zone, answered from ServiceImports alone, authoritatively", zone)
	case zoneFallback:
		say("zone %s: a fallback zone, answered from a ServiceImport only where no local Service of that name wins", zone)
	case zoneReverse:
		say("zone %s: a reverse zone; PTR of addresses the plugin knows, everything else passed on", zone)
	}
	if q.Qclass != dns.ClassINET {
		say("class %s: refused in clusterset zones, passed on elsewhere", dns.ClassToString[q.Qclass])
		return steps
	}
	// A degraded plugin never syncs: its reason comes first.
	switch {
	case m.degraded.Load() != nil:
		say("the plugin is degraded: %s; SERVFAIL in clusterset zones, everything else passed on", m.degraded.Load().message)
		return steps
	case !m.synced.Load():
		say("the plugin's caches have not synced yet: SERVFAIL in clusterset zones, everything else passed on")
		return steps
	}
	if kind == zoneReverse {
		m.describePointer(name, q.Qtype, say)
		return steps
	}
	if kind == zoneClusterset && (q.Qtype == dns.TypeAXFR || q.Qtype == dns.TypeIXFR) {
		say("a zone transfer (%s) reached the plugin: no transfer plugin of this server block serves it, so it is REFUSED, as the kubernetes plugin refuses one", dns.TypeToString[q.Qtype])
		return steps
	}
	req := parseRequest(name, zone)
	if !req.underService() {
		if kind == zoneFallback {
			say("the name is not of a service (svc.NAMESPACE level or above): passed on")
		} else {
			m.describeStructure(name, req, q.Qtype, say)
		}
		return steps
	}
	key := serviceKey{namespace: req.namespace, name: req.service}
	v := m.index.lookup(req.namespace, req.service)
	if v == nil {
		if kind == zoneFallback {
			say("no ServiceImport %s: passed on", key)
		} else {
			say("no ServiceImport %s: NXDOMAIN", key)
			m.describeFallthrough(name, say)
		}
		return steps
	}
	say("ServiceImport %s, type %s", key, map[bool]string{false: "ClusterSetIP", true: "Headless"}[v.headless])
	noLocal := false // a fallback name without a local Service of that name
	if kind == zoneFallback {
		if m.local == nil {
			say("no local Services known (no kubernetes plugin in the block, and none cached): passed on")
			return steps
		}
		if svc := m.local.service(req.namespace, req.service); svc != nil {
			ready := m.local.readyEndpoints(req.namespace, req.service)
			switch {
			case !m.failsOver(v):
				say("the local Service %s exists (type %s): local wins, passed on to the kubernetes plugin", key, svc.Type)
				return steps
			case svc.Type == core.ServiceTypeExternalName:
				say("the local Service %s is an ExternalName Service, which never fails over: local wins, passed on", key)
				return steps
			case ready:
				say("the local Service %s exists and has a ready endpoint: local wins, passed on (failover applies only without one)", key)
				return steps
			}
			why := "the failover option"
			if !m.failover {
				why = "the import's trafficDistribution, which prefers close endpoints"
			}
			say("the local Service %s has no ready endpoint: failover to the import, by %s", key, why)
		} else {
			noLocal = true
		}
		if v.scope != inScope {
			if noLocal {
				say("no local Service %s", key)
			}
			switch {
			case v.scope == scopeRefused:
				say("fallback_scope keeps %s local: passed on, as if there were no import", key)
			case apiServerService.matches(req.namespace, req.service):
				say("%s is the API server's Service: it never falls back to an import unless system_fallback names it; passed on, as if there were no import", key)
			default:
				say("%s is a system namespace (%s): its names never fall back to an import unless system_fallback names them; passed on, as if there were no import", req.namespace, strings.Join(m.systemNamespaces(), ", "))
			}
			return steps
		}
	}
	a := m.service(req, v, name, q.Qtype, zone)
	if a.rcode == dns.RcodeNameError {
		if noLocal {
			say("no local Service %s: the import decides", key)
		}
		m.describeNoSuchName(req, v, say)
		if kind == zoneFallback {
			say("the name does not exist in the import either: passed on, and the kubernetes plugin answers NXDOMAIN with its own SOA")
		} else {
			m.describeFallthrough(name, say)
		}
		return steps
	}
	if noLocal {
		say("no local Service %s: the import answers", key)
	}
	switch {
	case req.kind == kindReserved:
		say("%s.%s.%s.svc holds no records (the MCS DNS specification reserves it), but host names of cluster %s lie below it: NODATA (RFC 8020)", req.cluster, req.service, req.namespace, req.cluster)
		return steps
	case req.kind == kindHost && v.eps != nil && !v.eps.hasHost(req.host, req.cluster):
		say("%s.%s.%s.svc holds no records, but host names of cluster id %s lie below it: NODATA (RFC 8020)", req.labels, req.service, req.namespace, req.labels)
		return steps
	case req.kind == kindHost:
		say("%s.%s is a ready endpoint of the headless import: its addresses answer", req.host, req.cluster)
		return steps
	case req.kind == kindPort && q.Qtype != dns.TypeSRV:
		say("a port name (_%s._%s) holds SRV records only: %s is NODATA", req.port, req.protocol, dns.TypeToString[q.Qtype])
		return steps
	case req.kind == kindService && q.Qtype != dns.TypeA && q.Qtype != dns.TypeAAAA && q.Qtype != dns.TypeSRV:
		say("a service name holds A, AAAA and SRV records only: %s is NODATA", dns.TypeToString[q.Qtype])
		return steps
	case req.kind == kindPort:
		say("the import's port _%s._%s matches", req.port, req.protocol)
	}
	m.describeAddresses(v, say)
	return steps
}

// describeNoSuchName says why a name at or below the import v does not
// exist (NXDOMAIN).
func (m *Multicluster) describeNoSuchName(req request, v *view, say func(string, ...any)) {
	switch {
	case req.kind == kindReserved:
		say("%s.%s.%s.svc is reserved by the MCS DNS specification, and no host name of a cluster %s lies below it: NXDOMAIN", req.cluster, req.service, req.namespace, req.cluster)
	case v.headless && !v.readyEndpoints():
		say("the headless import has no ready endpoint: the service has no names (NXDOMAIN)")
	case req.kind == kindPort:
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
	case req.kind == kindHost && !v.headless:
		say("host names (HOST.CLUSTER.SERVICE.NAMESPACE.svc) exist only for headless imports, and this one is ClusterSetIP: NXDOMAIN")
	case req.kind == kindHost:
		say("no ready endpoint named %s in cluster %s of the headless import: NXDOMAIN", req.host, req.cluster)
	default:
		say("the name does not exist: NXDOMAIN")
	}
}

// describeStructure says what a name of a clusterset zone that is not a
// service's, nor below one, answers.
func (m *Multicluster) describeStructure(name string, req request, qtype uint16, say func(string, ...any)) {
	switch req.kind {
	case kindApex:
		say("the zone's apex: SOA and NS records, NODATA for other types")
	case kindDNSVersion:
		say("dns-version: the schema version (TXT), NODATA for other types")
	case kindNameserver, kindNameserverParent, kindSvcLabel:
		say("a name of the zone's own structure (ns.dns, dns, svc): it exists, with no records (NODATA)")
	case kindNamespace:
		if m.index.hasNamespace(req.namespace) {
			say("namespace %s has imports: the name exists, with no records (NODATA)", req.namespace)
			return
		}
		say("no ServiceImport in namespace %s: NXDOMAIN", req.namespace)
		m.describeFallthrough(name, say)
	default:
		say("not a name of the MCS DNS schema (SERVICE.NAMESPACE.svc.ZONE and the names below it): NXDOMAIN")
		m.describeFallthrough(name, say)
	}
}

// describeFallthrough says that an NXDOMAIN of a clusterset zone is passed
// on, where the fallthrough option covers the name.
func (m *Multicluster) describeFallthrough(name string, say func(string, ...any)) {
	if m.Fall.Through(name) {
		say("fallthrough covers the name: the NXDOMAIN is not written, the query is passed on")
	}
}

func (m *Multicluster) describeAddresses(v *view, say func(string, ...any)) {
	if v.headless {
		n, clusters := 0, map[string]int{}
		v.eachEndpoint(func(cluster string, _ endpoint) { n++; clusters[cluster]++ })
		say("%d ready endpoint addresses in its EndpointSlices, from %d clusters", n, len(clusters))
		if v.localOnly {
			say("trafficDistribution prefers close endpoints and the local cluster %q has ready ones: only those answer", m.sources.localCluster())
		} else if v.preferClose {
			say("trafficDistribution prefers close endpoints, but the local cluster has none ready (or is unknown): every cluster's answer")
		}
		if n == 0 {
			say("no ready endpoint: the service has no names (NXDOMAIN)")
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
	if v.source == sourceSpec {
		say("address source: spec.ips (%s); spec.ips answer whatever else exists", addrs(v.ipv4, v.ipv6))
		return
	}
	say("spec.ips holds no address that may be served")
	type candidate struct{ name, by string }
	var derived []candidate
	if v.derived != "" {
		derived = append(derived, candidate{v.derived, "its multicluster.kubernetes.io/derived-service annotation"})
	}
	if m.derivedPrefix != "" {
		derived = append(derived, candidate{m.derivedPrefix + v.key.name, "derived_prefix " + m.derivedPrefix})
	}
	for _, d := range derived {
		if m.local == nil {
			say("no local Services known: the derived Service %s/%s cannot be read", v.key.namespace, d.name)
			break
		}
		if v4, v6 := m.derivedIPs(v.key.namespace, d.name); len(v4)+len(v6) > 0 {
			say("address source: the ClusterIPs of the derived Service %s/%s, named by %s (%s)", v.key.namespace, d.name, d.by, addrs(v4, v6))
			return
		}
		say("the derived Service %s/%s, named by %s, does not exist or has no ClusterIP", v.key.namespace, d.name, d.by)
	}
	if v.source == sourceSlices {
		say("address source: the ready addresses of its EndpointSlices (%s)", addrs(v.ipv4, v.ipv6))
		if v.localOnly {
			say("trafficDistribution prefers close endpoints and the local cluster %q has ready ones: only those answer", m.sources.localCluster())
		}
		return
	}
	say("no address at all: A and AAAA answer NODATA")
}

func (m *Multicluster) describePointer(name string, qtype uint16, say func(string, ...any)) {
	if qtype != dns.TypePTR {
		say("not a PTR query: passed on")
		return
	}
	addr, ok := netip.AddrFromSlice(net.ParseIP(dnsutil.ExtractAddressFromReverse(name)))
	if !ok {
		say("not the reverse name of an address: passed on")
		return
	}
	addr = addr.Unmap()
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
	if m.local != nil {
		for _, svc := range m.local.byClusterIP(addr.String()) {
			if imports := m.derivedImports(svc.Namespace, svc.Name); len(imports) > 0 {
				say("%s is the ClusterIP of %s/%s, the derived Service of %v", addr, svc.Namespace, svc.Name, imports)
			} else {
				say("%s is the ClusterIP of the local Service %s/%s: local wins", addr, svc.Namespace, svc.Name)
			}
		}
		if eps, _ := m.local.byEndpointIP(addr.String()); len(eps) > 0 {
			say("%s is the address of a local endpoint of %s: local wins", addr, eps[0].key)
		}
	}
	if len(refs) == 0 {
		say("no import claims %s", addr)
	}
	switch _, verdict := m.pointer(addr, name, m.ptrZone); verdict {
	case ptrOutOfRange:
		say("%s is outside the reverse ranges (%s): no import may name it, passed on", addr, describeRanges(m.reverseRanges))
	case ptrLocalConflict:
		say("imports of namespaces %s claim %s, which the local cluster holds in another namespace: a conflict, passed on to the cluster's own answer (policy_decisions_total rule ptr_local_conflict)", strings.Join(claimNamespaces(refs), ", "), addr)
	case ptrConflict:
		say("imports of several namespaces (%s) claim %s, and no derived Service decides: a conflict, passed on (coredns_multicluster_reverse_conflicts)", strings.Join(claimNamespaces(refs), ", "), addr)
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
