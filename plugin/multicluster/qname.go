// Parsing query names: a name below a zone split into the parts of the MCS
// DNS schema (service, namespace, port, host, cluster), without
// allocating.

package multicluster

import "strings"

// requestKind is the shape of a query name below a zone.
type requestKind uint8

const (
	// kindInvalid is any shape the MCS DNS schema does not define: NXDOMAIN.
	kindInvalid          requestKind = iota
	kindApex                         // Z
	kindDNSVersion                   // dns-version.Z
	kindNameserver                   // ns.dns.Z
	kindNameserverParent             // dns.Z, an empty non-terminal
	kindSvcLabel                     // svc.Z, always an empty non-terminal
	kindNamespace                    // ns.svc.Z
	kindService                      // svc.ns.svc.Z
	kindPort                         // _port._proto.svc.ns.svc.Z
	kindHost                         // host.cluster.svc.ns.svc.Z, cluster may have several labels
	kindReserved                     // cluster.svc.ns.svc.Z, reserved by the spec
)

// request is a parsed query name. Its strings are substrings of the query
// name, so parsing allocates nothing.
type request struct {
	kind      requestKind
	service   string
	namespace string
	port      string // without its leading underscore
	protocol  string // without its leading underscore
	host      string
	cluster   string
	// labels is host.cluster, the labels below the service of a kindHost
	// name.
	labels string
	// limit is the most records of each section an answer is made with:
	// what the reply can carry (recordLimit); 0 is maxAnswerRecords.
	limit int
}

// recordLimit returns the most records of each section the answer to req
// is made with.
func (r request) recordLimit() int {
	if r.limit <= 0 {
		return maxAnswerRecords
	}
	return min(r.limit, maxAnswerRecords)
}

// underService reports whether the request names a service or a name below one:
// the names the fallback zones may answer.
func (r request) underService() bool {
	return r.kind == kindService || r.kind == kindPort || r.kind == kindHost || r.kind == kindReserved
}

// parseRequest splits name, which must be lower case and end in zone (also
// lower case, fully qualified), into a request. It never allocates.
func parseRequest(name, zone string) request {
	if len(name) < len(zone) {
		return request{}
	}
	rest := name[:len(name)-len(zone)]
	if rest == "" {
		return request{kind: kindApex}
	}
	// Below the root zone, rest has already lost its final dot with the zone.
	if zone != "." {
		if rest[len(rest)-1] != '.' {
			return request{} // zone matched inside a label
		}
		rest = rest[:len(rest)-1]
	}
	if rest == "" || strings.IndexByte(rest, '\\') >= 0 {
		// Escaped characters never occur in Kubernetes object names.
		return request{}
	}

	// Walk labels from the right: the schema is anchored at the zone.
	rest, last := cutLast(rest)
	switch last {
	case "dns-version":
		if rest == "" {
			return request{kind: kindDNSVersion}
		}
		return request{}
	case "dns":
		if rest == "" {
			return request{kind: kindNameserverParent}
		}
		if rest == "ns" {
			return request{kind: kindNameserver}
		}
		return request{}
	case "svc":
	default:
		return request{}
	}
	if rest == "" {
		return request{kind: kindSvcLabel}
	}
	rest, ns := cutLast(rest)
	if ns == "" {
		return request{}
	}
	if rest == "" {
		return request{kind: kindNamespace, namespace: ns}
	}
	rest, svc := cutLast(rest)
	if svc == "" {
		return request{}
	}
	r := request{service: svc, namespace: ns}
	if rest == "" {
		r.kind = kindService
		return r
	}

	first, after, found := strings.Cut(rest, ".")
	if !found {
		// One label in front of the service: cluster.svc.ns.svc.Z.
		if first == "" || first[0] == '_' {
			return request{}
		}
		r.kind = kindReserved
		r.cluster = first
		return r
	}
	if first == "" || after == "" {
		return request{}
	}
	if first[0] == '_' {
		// _port._proto.svc.ns.svc.Z: exactly two labels, both underscored.
		if after[0] != '_' || strings.IndexByte(after, '.') >= 0 || len(first) < 2 || len(after) < 2 {
			return request{}
		}
		r.kind = kindPort
		r.port = first[1:]
		r.protocol = after[1:]
		return r
	}
	// host.cluster.svc.ns.svc.Z, where the cluster id may span several labels.
	if after[0] == '_' || strings.Contains(after, "..") || after[len(after)-1] == '.' {
		return request{}
	}
	r.kind = kindHost
	r.host = first
	r.cluster = after
	r.labels = rest
	return r
}

// cutLast splits "a.b.c" into "a.b" and "c". An empty label yields "".
func cutLast(s string) (rest, label string) {
	i := strings.LastIndexByte(s, '.')
	if i < 0 {
		return "", s
	}
	if i == 0 {
		return "", "" // leading empty label
	}
	return s[:i], s[i+1:]
}
