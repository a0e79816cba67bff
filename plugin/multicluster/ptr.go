// PTR answers by the trust model (docs/trust.md): which name, if any, an
// address answers with, given the imports that claim it, the local objects
// that hold it and the reverse ranges.

package multicluster

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/coredns/coredns/plugin/kubernetes/object"
	"github.com/miekg/dns"
)

// ptrVerdict is why a PTR query was answered or passed on.
type ptrVerdict uint8

const (
	ptrNone          ptrVerdict = iota // no verdict: no PTR query of an address
	ptrAnswered                        // one name of an import
	ptrUnknown                         // no import claims the address
	ptrOutOfRange                      // an import claims it, outside reverse_ranges
	ptrLocal                           // a local Service's or endpoint's own address
	ptrConflict                        // claimed by imports of several namespaces
	ptrLocalConflict                   // a local Service's or endpoint's address, claimed by imports of another namespace
)

// pointer answers a PTR query, owner, for addr with the one name in zone
// that addr points back to, or passes it on, and says why. By the trust model
// (docs/trust.md) an address is nobody's outside reverse_ranges, else a local
// Service's (its derived import's name, if any), a local endpoint's, or that
// of the imports of one namespace that claim it, first in comparePTR's order;
// another namespace's claim on a local address passes it on (ptrLocalConflict).
func (r *resolver) pointer(addr netip.Addr, owner, zone string) (answer, ptrVerdict) {
	var buf [4]ptrTarget
	refs := r.index.reverseLookup(addr, buf[:0])
	derived := r.local != nil && (r.derivedPrefix != "" || r.index.hasDerived())
	if len(refs) == 0 && !derived {
		return answer{}, ptrUnknown
	}
	inRange := inRanges(r.reverseRanges, addr)
	if !inRange && len(refs) > 0 {
		return answer{}, ptrOutOfRange
	}
	if r.local == nil {
		return r.importsPointer(refs, owner, zone)
	}
	ip := addr.String()
	svcs := r.local.byClusterIP(ip)
	if !inRange {
		// No import claims it: out of range only if a derived Service's
		// import does.
		for _, svc := range svcs {
			if len(r.derivedImports(svc.Namespace, svc.Name)) > 0 {
				return answer{}, ptrOutOfRange
			}
		}
		return answer{}, ptrUnknown
	}
	if len(svcs) > 0 {
		return r.clusterIPPointer(svcs, refs, owner, zone)
	}
	if len(refs) == 0 {
		return answer{}, ptrUnknown
	}
	eps, _ := r.local.byEndpointIP(ip)
	for _, e := range eps {
		// An endpoint of a derived Service is one of its import's: the
		// import's claims decide.
		if len(r.derivedImports(e.key.namespace, e.key.name)) == 0 {
			if !claimedByEndpoints(refs, eps) {
				return answer{}, ptrLocalConflict
			}
			return answer{}, ptrLocal
		}
	}
	return r.importsPointer(refs, owner, zone)
}

// clusterIPPointer decides for an address that is the ClusterIP of the
// local Services svcs (one, unless the cache is between two versions):
// passed on, unless a Service is the derived Service of imports of its own
// namespace and no import of another namespace claims the address (which
// any namespace's Service may be given, and so may collide with another
// namespace's ClusterSetIP).
func (r *resolver) clusterIPPointer(svcs []*object.Service, refs []ptrTarget, owner, zone string) (answer, ptrVerdict) {
	best, found := ptrTarget{}, false
	for _, svc := range svcs {
		if claimedElsewhere(refs, svc.Namespace) {
			return answer{}, ptrLocalConflict
		}
		imports := r.derivedImports(svc.Namespace, svc.Name)
		if len(imports) == 0 {
			return answer{}, ptrLocal // a local Service's own address
		}
		for _, key := range imports {
			if t := (ptrTarget{key: key}); !found || comparePTR(t, best) < 0 {
				best, found = t, true
			}
		}
	}
	if !found {
		return answer{}, ptrUnknown
	}
	return answer{answer: []dns.RR{ptr(owner, serviceName(best.key, zone), r.ttl)}}, ptrAnswered
}

// importsPointer decides for an address no local object holds: the claims
// of the imports do, if they are of one namespace.
func (r *resolver) importsPointer(refs []ptrTarget, owner, zone string) (answer, ptrVerdict) {
	if len(refs) == 0 {
		return answer{}, ptrUnknown
	}
	if contested(refs) {
		return answer{}, ptrConflict
	}
	best := refs[0]
	for _, t := range refs[1:] {
		if comparePTR(t, best) < 0 {
			best = t
		}
	}
	target := serviceName(best.key, zone)
	if best.host != "" {
		target = hostName(best.host, best.cluster, best.key, zone)
	}
	return answer{answer: []dns.RR{ptr(owner, target, r.ttl)}}, ptrAnswered
}

// claimedElsewhere reports whether an import of a namespace other than
// namespace claims the address. It allocates nothing.
func claimedElsewhere(refs []ptrTarget, namespace string) bool {
	for _, t := range refs {
		if t.key.namespace != namespace {
			return true
		}
	}
	return false
}

// claimedByEndpoints reports whether every import that claims the address
// is of the namespace of one of the local endpoints eps at it: an import of
// the namespace of a local endpoint at its address is no conflict (an
// exported Service's own endpoints come back in its import's slices).
func claimedByEndpoints(refs []ptrTarget, eps []localEndpoint) bool {
	for _, t := range refs {
		if !slices.ContainsFunc(eps, func(e localEndpoint) bool { return e.key.namespace == t.key.namespace }) {
			return false
		}
	}
	return true
}

// localEndpointPTR answers owner, the reverse name of addr, with the name
// the kubernetes plugin gives the local endpoint e, for when that plugin,
// which caches multicluster slices at addr too, could send no answer.
func (r *resolver) localEndpointPTR(owner string, e localEndpoint, addr netip.Addr) answer {
	return answer{answer: []dns.RR{ptr(owner, localEndpointName(e, addr, r.local.zone()), r.ttl)}}
}

// localEndpointName is the name the kubernetes plugin gives the local
// endpoint e at addr: host.svc.ns.svc.zone, host the endpoint's hostname,
// else its address with '.' and ':' turned into '-' (endpointHostname in
// plugin/kubernetes/kubernetes.go, without endpoint_pod_names).
func localEndpointName(e localEndpoint, addr netip.Addr, zone string) string {
	host := e.host
	if host == "" {
		host = dashedIP(addr.String())
		if strings.HasSuffix(host, "-") {
			host += "0"
		}
	}
	return host + "." + e.key.name + "." + e.key.namespace + ".svc." + zone
}

// derivedImports returns the ClusterSetIP imports whose derived Service is
// the local Service namespace/name: by their annotation, or by
// derived_prefix.
func (r *resolver) derivedImports(namespace, name string) []serviceKey {
	keys := r.index.derivedImports(serviceKey{namespace: namespace, name: name})
	if base, ok := strings.CutPrefix(name, r.derivedPrefix); ok && r.derivedPrefix != "" && base != "" {
		key := serviceKey{namespace: namespace, name: base}
		if v := r.index.lookup(namespace, base); v != nil && !v.headless && !slices.Contains(keys, key) {
			keys = append(keys[:len(keys):len(keys)], key)
		}
	}
	return keys
}

// Who may make the plugin answer the reverse name of an address: the rules
// of the trust model (docs/trust.md) that PTR answers follow.

// defaultReverseRanges are the addresses whose reverse names the plugin
// answers unless reverse_ranges names others: those no one can hold on the
// Internet, where Service, Pod and ClusterSetIP ranges are drawn from. A
// public address gets no reverse answer from an import by default, so that
// no ServiceImport can make a cluster's clients believe that 8.8.8.8 is one
// of its services.
var defaultReverseRanges = mustPrefixes(
	"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", // private use, RFC 1918
	"100.64.0.0/10",   // shared address space, RFC 6598
	"198.18.0.0/15",   // benchmarking, RFC 2544
	"192.0.2.0/24",    // documentation, RFC 5737
	"198.51.100.0/24", // documentation, RFC 5737
	"203.0.113.0/24",  // documentation, RFC 5737
	"240.0.0.0/4",     // reserved, RFC 1112
	"fc00::/7",        // unique local, RFC 4193
	"2001:db8::/32",   // documentation, RFC 3849
)

func mustPrefixes(cidrs ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(cidrs))
	for i, c := range cidrs {
		out[i] = netip.MustParsePrefix(c)
	}
	return out
}

// parseRanges parses the CIDRs of reverse_ranges. A CIDR with host bits set
// (10.96.0.10/12) is refused rather than silently widened or narrowed.
func parseRanges(args []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, arg := range args {
		p, err := netip.ParsePrefix(arg)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR, such as 10.96.0.0/12 or fd00::/108", arg)
		}
		if p.Masked() != p {
			return nil, fmt.Errorf("%q has bits set past its prefix length: did you mean %s?", arg, p.Masked())
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// inRanges reports whether addr lies in one of ranges.
func inRanges(ranges []netip.Prefix, addr netip.Addr) bool {
	for _, p := range ranges {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// claimNamespaces returns the namespaces of the imports that claim an
// address, sorted, each once.
func claimNamespaces(refs []ptrTarget) []string {
	var out []string
	for _, r := range refs {
		if !slices.Contains(out, r.key.namespace) {
			out = append(out, r.key.namespace)
		}
	}
	slices.Sort(out)
	return out
}

// contested reports whether imports of more than one namespace claim an
// address. It allocates nothing: it runs on the query path.
func contested(refs []ptrTarget) bool {
	for _, r := range refs[min(1, len(refs)):] {
		if r.key.namespace != refs[0].key.namespace {
			return true
		}
	}
	return false
}
