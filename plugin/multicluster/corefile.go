// The parser of the Corefile's multicluster stanza: options, their checks
// against each other, and the zones they name.

package multicluster

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/util/validation"
)

// parseCorefile reads the multicluster stanza of a server block.
func parseCorefile(c *caddy.Controller) (*Multicluster, error) {
	m := New()
	m.ownNamespace = podNamespace()
	seen := false
	for c.Next() {
		if seen {
			return nil, plugin.ErrOnce
		}
		seen = true

		if args := c.RemainingArgs(); len(args) > 0 {
			zones, err := normalizeZones(c, args)
			if err != nil {
				return nil, err
			}
			m.Zones = zones
			m.ptrZone = firstForwardZone(zones)
		}
		options := map[string]bool{}
		for c.NextBlock() {
			option := c.Val()
			if options[option] {
				return nil, c.Errf("option %q given twice", option)
			}
			options[option] = true
			if err := parseOption(c, m, option); err != nil {
				return nil, err
			}
		}
	}
	for _, z := range m.Fallback {
		if slices.Contains(m.Zones, z) {
			return nil, c.Errf("fallback zone %q is also a multicluster zone: a zone is answered either from imports or locally first", z)
		}
	}
	if m.failover && len(m.Fallback) == 0 {
		return nil, c.Errf("failover applies to fallback zones: add fallback ZONE...")
	}
	if m.standaloneLine > 0 && m.fallLine > 0 {
		return nil, c.Errf("standalone (line %d) and fallthrough (line %d): a standalone server answers every name of its zones itself; fallthrough would pass them on, toward the DNS that forwards them here", m.standaloneLine, m.fallLine)
	}
	if m.scope != nil && len(m.Fallback) == 0 {
		return nil, c.Errf("fallback_scope applies to fallback zones: add fallback ZONE...")
	}
	if m.systemOptIn != nil && len(m.Fallback) == 0 {
		return nil, c.Errf("system_fallback applies to fallback zones: add fallback ZONE...")
	}
	if m.systemPatterns != nil && len(m.Fallback) == 0 {
		return nil, c.Errf("system_namespaces applies to fallback zones: add fallback ZONE...")
	}
	// system_fallback names system namespaces, which system_namespaces,
	// before or after it, says.
	if err := checkSystemOptIn(m.systemOptIn, m.systemNamespaces()); err != nil {
		return nil, errorAt(c, m.systemOptInLine, "system_fallback: %v", err)
	}
	if len(m.Fallback) > 0 {
		m.scope = m.scope.withSystem(m.systemNamespaces(), m.systemOptIn)
	}
	m.sources.setScope(m.scope)
	m.sources.setLocalCluster(m.clusterID)
	if len(m.Fall.Zones) == 0 {
		m.Fall.Zones = nil
	}
	return m, nil
}

func parseOption(c *caddy.Controller, m *Multicluster, option string) error {
	args := c.RemainingArgs()
	switch option {
	case "kubeconfig":
		if len(args) < 1 || len(args) > 2 {
			return c.Errf("kubeconfig needs a file and optionally a context, got %d arguments", len(args))
		}
		if _, err := os.Stat(args[0]); err != nil {
			return c.Errf("kubeconfig: %v", err)
		}
		m.kubeconfig = args[0]
		if len(args) == 2 {
			m.context = args[1]
		}
	case "namespaces":
		if len(args) == 0 {
			return c.Errf("namespaces needs at least one namespace")
		}
		for _, ns := range args {
			if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
				return c.Errf("namespaces: %q is not a namespace name: %s", ns, strings.Join(errs, "; "))
			}
			m.namespaces[ns] = struct{}{}
		}
	case "fallback":
		if len(args) == 0 {
			return c.Errf("fallback needs at least one zone, such as cluster.local")
		}
		zones, err := normalizeZones(c, args)
		if err != nil {
			return err
		}
		for _, z := range zones {
			if isReverseZone(z) {
				return c.Errf("fallback zone %q is a reverse zone: PTR queries are answered in the multicluster zones", z)
			}
		}
		m.Fallback = zones
	case "failover":
		if len(args) != 0 {
			return c.Errf("failover takes no arguments, got %d", len(args))
		}
		m.failover = true
	case "derived_prefix":
		if len(args) != 1 {
			return c.Errf("derived_prefix needs exactly one prefix, such as derived-, got %d arguments", len(args))
		}
		// The prefix starts a Service name: a DNS label once a name follows.
		if errs := validation.IsDNS1123Label(args[0] + "x"); len(errs) > 0 {
			return c.Errf("derived_prefix %q cannot start a Service name: %s", args[0], strings.Join(errs, "; "))
		}
		m.derivedPrefix = args[0]
	case "cluster_id":
		if len(args) != 1 {
			return c.Errf("cluster_id needs exactly one id, got %d arguments", len(args))
		}
		id := strings.ToLower(args[0])
		if errs := validation.IsDNS1123Subdomain(id); len(errs) > 0 {
			return c.Errf("cluster_id %q is not a cluster id (DNS labels separated by dots): %s", args[0], strings.Join(errs, "; "))
		}
		m.clusterID = id
	case "fallback_scope":
		if len(args) == 0 {
			return c.Errf("fallback_scope needs at least one pattern, such as shop/* or !kube-system/*")
		}
		scope, err := newFallbackScope(args)
		if err != nil {
			return c.Errf("fallback_scope: %v", err)
		}
		m.scope = scope
	case "system_fallback":
		if len(args) == 0 {
			return c.Errf("system_fallback needs at least one pattern, such as kube-system/metrics-server")
		}
		optIn, err := parseSystemOptIn(args)
		if err != nil {
			return c.Errf("system_fallback: %v", err)
		}
		m.systemOptIn, m.systemOptInLine = optIn, c.Line()
	case "system_namespaces":
		if len(args) == 0 {
			return c.Errf("system_namespaces needs at least one namespace or pattern, such as kube-* or openshift-*")
		}
		patterns, err := parseSystemNamespaces(args)
		if err != nil {
			return c.Errf("system_namespaces: %v", err)
		}
		m.systemPatterns = patterns
	case "reverse_ranges":
		if len(args) == 0 {
			return c.Errf("reverse_ranges needs at least one CIDR, such as 10.96.0.0/12")
		}
		if !slices.ContainsFunc(m.Zones, isReverseZone) {
			return c.Errf("reverse_ranges applies to reverse zones: add in-addr.arpa, ip6.arpa or a CIDR to the zones")
		}
		ranges, err := parseRanges(args)
		if err != nil {
			return c.Errf("reverse_ranges: %v", err)
		}
		m.reverseRanges = ranges
	case "ttl":
		if len(args) != 1 {
			return c.Errf("ttl needs exactly one value, got %d", len(args))
		}
		ttl, err := strconv.Atoi(args[0])
		if err != nil {
			return c.Errf("ttl %q is not a number", args[0])
		}
		if ttl < 0 || ttl > maxTTL {
			return c.Errf("ttl must be in range [0, %d]: %d", maxTTL, ttl)
		}
		m.ttl = uint32(ttl)
	case "max_import_addresses":
		if len(args) != 1 {
			return c.Errf("max_import_addresses needs exactly one count, got %d arguments", len(args))
		}
		n, err := strconv.Atoi(args[0])
		if err != nil {
			return c.Errf("max_import_addresses %q is not a number", args[0])
		}
		if n < 1 || n > maxImportAddresses {
			return c.Errf("max_import_addresses must be in range [1, %d], what one answer carries: %d", maxImportAddresses, n)
		}
		m.sources.setMaxAddresses(n)
	case "max_udp_size":
		if len(args) != 1 {
			return c.Errf("max_udp_size needs exactly one size in octets, got %d arguments", len(args))
		}
		size, err := strconv.Atoi(args[0])
		if err != nil {
			return c.Errf("max_udp_size %q is not a number", args[0])
		}
		if size < dns.MinMsgSize || size > dns.MaxMsgSize {
			return c.Errf("max_udp_size must be in range [%d, %d]: %d", dns.MinMsgSize, dns.MaxMsgSize, size)
		}
		m.maxUDPSize = size
	case "fallthrough":
		if _, err := normalizeZones(c, args); err != nil {
			return err
		}
		m.Fall.SetZonesFromArgs(args)
		m.fallLine = c.Line()
	case "standalone":
		if len(args) > 0 {
			return c.Errf("standalone takes no arguments, got %d", len(args))
		}
		m.standaloneLine = c.Line()
	default:
		return c.Errf("unknown property %q", option)
	}
	return nil
}

// serviceAccountNamespace is where a pod finds the namespace it runs in.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// podNamespace returns the namespace the server runs in: POD_NAMESPACE when
// set (the downward API), else its service account's, else "" (outside a
// cluster). A variable, so that tests can set it.
var podNamespace = func() string {
	if ns := strings.TrimSpace(os.Getenv("POD_NAMESPACE")); ns != "" {
		return ns
	}
	b, err := os.ReadFile(serviceAccountNamespace)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// systemNamespaces are the patterns of the namespaces kept out of fallback
// zones: those of system_namespaces, else the default ones, and the
// server's own namespace when known.
func (m *Multicluster) systemNamespaces() []string {
	system := defaultSystemNamespaces
	if m.systemPatterns != nil {
		system = m.systemPatterns
	}
	if m.ownNamespace == "" || isSystemNamespace(system, m.ownNamespace) {
		return system
	}
	return append(slices.Clip(system), m.ownNamespace)
}

// errorAt is c.Errf for the Corefile line line, for an option whose
// arguments can only be judged once the options after it are read.
func errorAt(c *caddy.Controller, line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d - Error during parsing: %s", c.File(), line, fmt.Sprintf(format, args...))
}

// normalizeZones turns zone arguments (names or CIDRs) into lower-case
// fully qualified names, refusing anything that is not a domain name.
func normalizeZones(c *caddy.Controller, args []string) ([]string, error) {
	var zones []string
	for _, arg := range args {
		if strings.Contains(arg, "://") {
			return nil, c.Errf("zone %q: give a name, not a URL", arg)
		}
		normalized := plugin.Host(arg).NormalizeExact()
		if len(normalized) == 0 {
			return nil, c.Errf("zone %q is not a valid domain name or CIDR", arg)
		}
		for _, z := range normalized {
			z = strings.ToLower(z)
			if _, ok := dns.IsDomainName(z); !ok || strings.Contains(z, "..") || strings.ContainsAny(z, " \\/:@") {
				return nil, c.Errf("zone %q is not a valid domain name", arg)
			}
			if !slices.Contains(zones, z) {
				zones = append(zones, z)
			}
		}
	}
	return zones, nil
}
