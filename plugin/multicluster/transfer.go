// Zone transfers of the clusterset zones through the transfer plugin, made
// of the resolver's own answers so that a transfer and queries agree.

package multicluster

import (
	"errors"
	"slices"
	"strings"

	"github.com/coredns/coredns/plugin/transfer"
	"github.com/miekg/dns"
)

// errNotServing refuses a transfer while the caches have not synced or the
// plugin is degraded: a partial zone must not reach a secondary.
var errNotServing = errors.New("multicluster: the clusterset zone cannot be transferred until its caches have synced")

// Transfer implements transfer.Transferer for the clusterset zones: AXFR, and
// IXFR as a full transfer unless the client's serial is current. Reverse and
// fallback zones are never transferred: the plugin answers only some of their
// names. The zone holds the SOA (first and last), the NS, dns-version, and
// every name of each import a query is answered with (A, AAAA and SRV, named
// ports' SRV, headless endpoints' host.cluster A and AAAA), as the resolver
// answers them now, so that a transfer and queries agree.
func (m *Multicluster) Transfer(zone string, serial uint32) (<-chan []dns.RR, error) {
	zone = strings.ToLower(dns.Fqdn(zone))
	if isReverseZone(zone) || !slices.Contains(m.Zones, zone) {
		return nil, transfer.ErrNotAuthoritative
	}
	if !m.serving() {
		return nil, errNotServing
	}
	current := m.serial()
	views := m.index.snapshot()
	start := soa(zone, current, m.ttl)
	ch := make(chan []dns.RR)
	go func() {
		defer close(ch)
		ch <- []dns.RR{start}
		if serial != 0 && !serialBefore(serial, current) {
			return // up to date: the SOA alone
		}
		ch <- []dns.RR{ns(zone, m.ttl), txt("dns-version."+zone, schemaVersion, dnsVersionTTL)}
		for _, v := range views {
			m.serviceRecords(v, zone, func(rrs []dns.RR) {
				if len(rrs) > 0 {
					ch <- rrs
				}
			})
		}
		ch <- []dns.RR{soa(zone, current, m.ttl)}
	}()
	return ch, nil
}

// serviceRecords passes to send the records of every name of the service v
// in zone, name by name, as the resolver answers them: each within the
// bounds of a query's answer, and none held longer than it takes to send
// them, whatever the size of the service.
func (m *Multicluster) serviceRecords(v *view, zone string, send func([]dns.RR)) {
	base := request{kind: kindService, service: v.key.name, namespace: v.key.namespace}
	name := serviceName(v.key, zone)
	ask := func(req request, owner string, qtypes ...uint16) {
		for _, qtype := range qtypes {
			send(m.service(req, v, owner, qtype, zone).answer)
		}
	}
	ask(base, name, dns.TypeA, dns.TypeAAAA, dns.TypeSRV)
	// Each named port's name once, with the ports of that name and
	// protocol: grouped in one pass, as asking the resolver name by name
	// would search every port for each.
	if len(v.ports) > 0 {
		groups := map[portName][]servicePort{}
		var order []portName
		for _, p := range v.ports {
			if p.name == "" {
				continue // no _port name to ask for
			}
			k := portName{name: p.name, protocol: p.protocol}
			if _, ok := groups[k]; !ok {
				order = append(order, k)
			}
			groups[k] = append(groups[k], p)
		}
		for _, k := range order {
			owner := "_" + k.name + "._" + k.protocol + "." + name
			var a answer
			if v.headless {
				if !v.readyEndpoints() {
					continue
				}
				a = m.headlessSRV(v, groups[k], owner, zone, maxAnswerRecords)
			} else {
				a = m.clusterSetSRV(v, groups[k], owner, zone, maxAnswerRecords)
			}
			send(a.answer)
		}
	}
	// Each host.cluster name once, though two slices may both hold it.
	seen := map[hostKey]struct{}{}
	v.eachEndpoint(func(cluster string, e endpoint) {
		k := hostKey{host: e.host, cluster: cluster}
		if _, dup := seen[k]; dup || e.host == "" {
			return
		}
		seen[k] = struct{}{}
		req := base
		req.kind, req.host, req.cluster = kindHost, e.host, cluster
		ask(req, hostName(e.host, cluster, v.key, zone), dns.TypeA, dns.TypeAAAA)
	})
}

// portName is a _port._proto name.
type portName struct{ name, protocol string }
