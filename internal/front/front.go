// Package front writes what a cluster's own DNS server (the front) needs in
// its configuration to send coredns-mcs standalone the names only it can
// answer, in the form each platform takes (Forms), without ever answering
// worse than the front alone would when coredns-mcs is down, hung or rolling:
//
//   - clusterset.local, and the reverse zones of the ClusterSetIP ranges, go
//     to the standalone server;
//   - in cluster.local, only names of the shape of a service name and the
//     names below one (two labels or more before "svc.cluster.local") reach
//     a server block of their own (a view), whose kubernetes plugin answers
//     local names as the front's own does and falls through for the rest,
//     which go to the standalone server. Every other cluster.local name
//     (pods, search-path expansions such as example.com.cluster.local) stays
//     in the front's own block;
//   - every forward lists a stand-in after the standalone server, with the
//     sequential policy: a server block of the front's own on loopback.
//     forward asks it when the standalone server refuses or does not
//     answer within the read timeout, and skips the standalone server once
//     two health checks have failed (about 2.5 s), until one succeeds.
//     What the stand-in answers depends on whether a search path runs
//     through the zone:
//   - in cluster.local it answers NXDOMAIN, what the front alone answers
//     for every name it forwards (its kubernetes plugin found nothing), so
//     that a pod's search-path walk goes on: a SERVFAIL stops musl's. Only
//     time tells a slow standalone server from a hung one there, so the
//     read timeout (DefaultReadTimeout) is set as long as a hang may cost
//     a lookup, a few hundred times what the server takes;
//   - in the clusterset zone and the reverse zones, which no search path
//     ends in, it answers SERVFAIL: an import is never told it does not
//     exist because coredns-mcs was slow or away, and the read timeout
//     (DefaultClustersetReadTimeout) is a client's own.
//     Neither answer is cached (TTL 0; servfail 0), so names answer again
//     as soon as the standalone server does.
//
// Servers builds those server blocks in the coredns Helm chart's form
// (servers[]: zones, port, plugins of name, parameters, configBlock), from
// which Corefile renders the text a Corefile, a coredns-custom .server key
// or an EKS add-on corefile takes.
package front

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"
)

// Defaults of Options.
const (
	DefaultClusterDomain  = "cluster.local"
	DefaultClustersetZone = "clusterset.local"
	// DefaultStandInPort is the loopback port of the stand-in server block
	// inside the front's pods (CoreDNS uses 53, 8080, 8181 and 9153).
	DefaultStandInPort = 5301
	// DefaultReadTimeout is how long the front waits for the standalone
	// server in cluster.local before it asks the stand-in (NXDOMAIN). The
	// standalone server answers from memory, a hop away, in about a
	// millisecond (40 ms at most seen at a load of 12 on 2 cores); while it
	// hangs, a forwarded name costs this much until the health checks mark
	// it down, and a pod's lookup of an external name with three or four
	// dots forwards two of its search-path expansions: 2 x 120 ms keeps a
	// lookup under 300 ms.
	DefaultReadTimeout = 120 * time.Millisecond
	// DefaultClustersetReadTimeout is how long the front waits in the
	// clusterset zone and the reverse zones before it asks the stand-in
	// (SERVFAIL): the time-out of a client with "options timeout:1", the
	// shortest in use, so that a standalone server that answers before any
	// client gives up is heard.
	DefaultClustersetReadTimeout = time.Second
	// StandInTTL is the TTL (and SOA minimum) of the stand-in's NXDOMAIN:
	// none, so that nobody holds it. The added blocks' caches keep no
	// denial below its TTL (denial MINTTL 0; a response of TTL 0 is never
	// stored: plugin/cache/cache.go, from CoreDNS 1.10.0 on), and clients
	// do not reuse it: an import name the stand-in answered for, because
	// coredns-mcs was away or late, answers again at the next query once it
	// is back, instead of being held unknown for the cache's least negative
	// TTL (5 s). Denials of coredns-mcs itself keep their TTL and are cached.
	StandInTTL = 0
	// denialCache is the added blocks' cache of denials: the cache plugin's
	// default capacity (10000) and TTL cap (30, the blocks' cache TTL), and
	// a least TTL of 0 instead of 5 s.
	denialCache = "denial 10000 30 0"
	// noServfailCache keeps the added blocks' caches from holding a
	// SERVFAIL (the cache plugin's default is 5 s), so that a clusterset
	// name answers again at the next query once coredns-mcs is back.
	noServfailCache = "servfail 0"
)

// Options describe the cluster at hand.
type Options struct {
	// Standalone is the address of the standalone coredns-mcs Service (its
	// ClusterIP), with an optional :port.
	Standalone string
	// ClusterDomain is the cluster's DNS domain (cluster.local).
	ClusterDomain string
	// ClustersetZone is the zone of the multicluster plugin
	// (clusterset.local).
	ClustersetZone string
	// ReverseCIDRs are the ClusterSetIP ranges whose PTR the standalone
	// server answers; each becomes its reverse zones.
	ReverseCIDRs []string
	// KubernetesOptions are the options of the front's own kubernetes
	// stanza (kubeadm: pods insecure, ttl 30), without fallthrough: the
	// added cluster.local block answers local names with them, exactly as
	// the front's own block does.
	KubernetesOptions []string
	// StandInPort is the stand-in's port on 127.0.0.1.
	StandInPort int
	// ReadTimeout is forward's read_timeout for the standalone server in
	// the cluster domain.
	ReadTimeout time.Duration
	// ClustersetReadTimeout is forward's read_timeout for the standalone
	// server in the clusterset zone and the reverse zones.
	ClustersetReadTimeout time.Duration
	// MetricsAddress is the prometheus plugin's address in the front's
	// Corefile (":9153"; the coredns chart's default "0.0.0.0:9153").
	MetricsAddress string
	// CoreDNSVersion is the front's CoreDNS version ("1.12.1"), which
	// decides what the configuration may use: the view plugin needs 1.10.0,
	// forward's read_timeout 1.14.5 (their sources in the coredns module of
	// each version). Unknown (""): no read_timeout, so that an older
	// CoreDNS does not refuse the Corefile; a hang then costs forward's
	// fixed 2 s read timeout per forwarded name until the health checks
	// mark the standalone server down.
	CoreDNSVersion string
}

// Versions of CoreDNS whose plugins the configuration needs.
var (
	minimumVersion     = [3]int{1, 10, 0} // plugin/view
	readTimeoutVersion = [3]int{1, 14, 5} // forward's read_timeout
)

// parseVersion reads "1.12.1" or "v1.12.1" (and a suffix after the patch
// number, such as "-eksbuild.1").
func parseVersion(s string) ([3]int, bool) {
	m := versionPattern.FindStringSubmatch(s)
	if m == nil {
		return [3]int{}, false
	}
	var v [3]int
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	return v, true
}

var versionPattern = regexp.MustCompile(`^v?(\d+)\.(\d+)\.(\d+)`)

func atLeast(v, min [3]int) bool {
	for i := range v {
		if v[i] != min[i] {
			return v[i] > min[i]
		}
	}
	return true
}

// UsesReadTimeout reports whether the configuration for o sets forward's
// read_timeout: only for a CoreDNS known to have it.
func (o Options) UsesReadTimeout() bool {
	v, ok := parseVersion(o.CoreDNSVersion)
	return ok && atLeast(v, readTimeoutVersion)
}

// Plugin is a plugin line of a server block, as the coredns chart's
// servers[].plugins[] hold it.
type Plugin struct {
	Name        string `json:"name"`
	Parameters  string `json:"parameters,omitempty"`
	ConfigBlock string `json:"configBlock,omitempty"`
}

// Zone is a zone of a server block, as the coredns chart's
// servers[].zones[] hold it.
type Zone struct {
	Zone string `json:"zone"`
}

// Server is a server block, in the coredns chart's servers[] form.
type Server struct {
	Zones   []Zone   `json:"zones"`
	Port    int      `json:"port"`
	Plugins []Plugin `json:"plugins"`
}

func (o Options) withDefaults() Options {
	if o.ClusterDomain == "" {
		o.ClusterDomain = DefaultClusterDomain
	}
	if o.ClustersetZone == "" {
		o.ClustersetZone = DefaultClustersetZone
	}
	if o.StandInPort == 0 {
		o.StandInPort = DefaultStandInPort
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.ClustersetReadTimeout == 0 {
		o.ClustersetReadTimeout = DefaultClustersetReadTimeout
	}
	if o.MetricsAddress == "" {
		o.MetricsAddress = ":9153"
	}
	o.ClusterDomain = strings.TrimSuffix(strings.ToLower(o.ClusterDomain), ".")
	o.ClustersetZone = strings.TrimSuffix(strings.ToLower(o.ClustersetZone), ".")
	return o
}

// ReverseZones returns the reverse zones of the ClusterSetIP ranges, each
// once, in order.
func (o Options) ReverseZones() ([]string, error) {
	var zones []string
	for _, cidr := range o.ReverseCIDRs {
		if _, _, err := net.ParseCIDR(cidr); err != nil {
			return nil, fmt.Errorf("ClusterSetIP range %q: %w", cidr, err)
		}
		for _, z := range plugin.Host(cidr).NormalizeExact() {
			z = strings.TrimSuffix(z, ".")
			if !slices.Contains(zones, z) {
				zones = append(zones, z)
			}
		}
	}
	return zones, nil
}

// validate refuses options that would write a configuration that cannot
// work.
func (o Options) validate() error {
	if o.Standalone == "" {
		return errors.New("the standalone Service's address is needed (its ClusterIP)")
	}
	host, port, err := net.SplitHostPort(o.Standalone)
	if err != nil {
		host, port = o.Standalone, ""
	}
	if net.ParseIP(host) == nil {
		return fmt.Errorf("standalone address %q: forward needs an IP address", o.Standalone)
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("standalone address %q: bad port", o.Standalone)
		}
	}
	for _, z := range []string{o.ClusterDomain, o.ClustersetZone} {
		if _, ok := dns.IsDomainName(z); !ok || z == "" {
			return fmt.Errorf("%q is not a domain name", z)
		}
	}
	if o.ClusterDomain == o.ClustersetZone {
		return fmt.Errorf("the cluster domain and the clusterset zone are both %s", o.ClusterDomain)
	}
	if o.StandInPort < 1 || o.StandInPort > 65535 || o.StandInPort == 53 {
		return fmt.Errorf("stand-in port %d: want 1 to 65535, not 53", o.StandInPort)
	}
	for _, d := range []time.Duration{o.ReadTimeout, o.ClustersetReadTimeout} {
		if d < time.Millisecond {
			return fmt.Errorf("read timeout %s: want 1ms or more", d)
		}
	}
	if o.CoreDNSVersion != "" {
		v, ok := parseVersion(o.CoreDNSVersion)
		if !ok {
			return fmt.Errorf("CoreDNS version %q: want MAJOR.MINOR.PATCH", o.CoreDNSVersion)
		}
		if !atLeast(v, minimumVersion) {
			return fmt.Errorf("CoreDNS %s has no view plugin (CoreDNS 1.10.0 or later): upgrade the cluster DNS, or forward only clusterset.local to coredns-mcs", o.CoreDNSVersion)
		}
	}
	for _, opt := range o.KubernetesOptions {
		if f := strings.Fields(opt); len(f) > 0 && (f[0] == "fallthrough" || f[0] == "kubeconfig") {
			return fmt.Errorf("kubernetes option %q: the added block sets its own fallthrough and uses the front's credentials", opt)
		}
	}
	return nil
}

// ServiceNamePattern is the view expression's regular expression: a name
// of domain with two labels before "svc.DOMAIN." (the shape of a service
// name, svc.ns.svc.DOMAIN), or four or more (the names below one that hold
// records: _port._proto.svc.ns and host.cluster.svc.ns, a cluster id of one
// label or several). Names of three labels (cluster.svc.ns) hold no records
// (the MCS DNS specification, 2.3.4 and 2.4.4), and are the shape of the
// search-path expansion NAME.NS.svc.DOMAIN of every external name with one
// dot (example.com) and NAME.svc.DOMAIN of every one with two
// (www.example.com): the front's own kubernetes plugin answers them
// (NXDOMAIN), which halves the names of a pod's external lookup that
// reach coredns-mcs, and the cost of its outages on a CoreDNS without
// forward's read_timeout. Names are compared lowercased (the view
// plugin's name()). It has no braces, which a Corefile would take for a
// block.
func ServiceNamePattern(domain string) string {
	quoted := strings.ReplaceAll(strings.TrimSuffix(strings.ToLower(domain), "."), ".", "[.]")
	return `^([^.]+[.][^.]+[.]([^.]+[.])*)?[^.]+[.][^.]+[.]svc[.]` + quoted + `[.]$`
}

// prepare returns o with its defaults, validated, and its reverse zones:
// what every form of the configuration starts from.
func (o Options) prepare() (Options, []string, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return o, nil, err
	}
	reverse, err := o.ReverseZones()
	return o, reverse, err
}

// Servers returns the server blocks the front needs, in order: the view
// block for cluster.local, the clusterset zone, the reverse zones, and the
// stand-in.
func (o Options) Servers() ([]Server, error) {
	o, reverse, err := o.prepare()
	if err != nil {
		return nil, err
	}
	standIn := fmt.Sprintf("127.0.0.1:%d", o.StandInPort)
	// The health checks ask the clusterset zone's NS, which the standalone
	// server answers (its apex), rather than ". NS", which it has no
	// plugin for and would log as an error.
	forwardTo := func(readTimeout time.Duration) Plugin {
		opts := []string{"policy sequential", "max_fails 1", "health_check 0.5s domain " + o.ClustersetZone + "."}
		if o.UsesReadTimeout() {
			opts = append(opts, "read_timeout "+readTimeout.String())
		}
		return Plugin{Name: "forward", Parameters: ". " + o.Standalone + " " + standIn, ConfigBlock: strings.Join(opts, "\n")}
	}
	errorsPlugin := Plugin{Name: "errors"}
	prometheus := Plugin{Name: "prometheus", Parameters: o.MetricsAddress}

	kubernetes := append(slices.Clone(o.KubernetesOptions), "fallthrough "+o.ClusterDomain)
	servers := []Server{{
		Zones: []Zone{{o.ClusterDomain + "."}},
		Port:  53,
		Plugins: []Plugin{
			errorsPlugin,
			{Name: "view", Parameters: "multicluster", ConfigBlock: "expr name() matches '" + ServiceNamePattern(o.ClusterDomain) + "'"},
			{Name: "kubernetes", Parameters: o.ClusterDomain, ConfigBlock: strings.Join(kubernetes, "\n")},
			prometheus,
			forwardTo(o.ReadTimeout),
			// Local names keep the front's own caching (kubeadm's does not
			// cache cluster.local); misses of coredns-mcs are cached, so a
			// pod's search path costs the hop once per negative TTL, and
			// the stand-in's are not (StandInTTL).
			{Name: "cache", Parameters: "30", ConfigBlock: "disable success " + o.ClusterDomain + "\n" + denialCache + "\n" + noServfailCache},
		},
	}}
	for _, z := range append([]string{o.ClustersetZone}, reverse...) {
		servers = append(servers, Server{
			Zones:   []Zone{{z + "."}},
			Port:    53,
			Plugins: []Plugin{errorsPlugin, prometheus, forwardTo(o.ClustersetReadTimeout), {Name: "cache", Parameters: "30", ConfigBlock: denialCache + "\n" + noServfailCache}},
		})
	}
	standInZones := []Zone{{o.ClusterDomain + "."}, {o.ClustersetZone + "."}}
	unknown := []string{o.ClustersetZone + "."}
	for _, z := range reverse {
		standInZones = append(standInZones, Zone{z + "."})
		unknown = append(unknown, z+".")
	}
	servers = append(servers, Server{
		Zones: standInZones,
		Port:  o.StandInPort,
		Plugins: []Plugin{
			{Name: "bind", Parameters: "127.0.0.1"},
			prometheus,
			{Name: "template", Parameters: "ANY ANY " + o.ClusterDomain + ".", ConfigBlock: strings.Join([]string{
				"rcode NXDOMAIN",
				fmt.Sprintf(`authority "{{ .Zone }} %d IN SOA ns.dns.{{ .Zone }} hostmaster.{{ .Zone }} 1 7200 1800 86400 %d"`, StandInTTL, StandInTTL),
			}, "\n")},
			{Name: "template", Parameters: "ANY ANY " + strings.Join(unknown, " "), ConfigBlock: "rcode SERVFAIL"},
		},
	})
	return servers, nil
}

// Corefile renders server blocks as Corefile text, as the coredns chart
// renders its servers[] (charts/coredns/templates/configmap.yaml of the
// coredns Helm chart): "ZONE... :PORT {", a plugin a line, a config block
// indented below its plugin.
func Corefile(servers []Server) string {
	var b strings.Builder
	for i, s := range servers {
		if i > 0 {
			b.WriteString("\n")
		}
		for j, z := range s.Zones {
			if j > 0 {
				b.WriteString(" ")
			}
			zone := z.Zone
			if zone != "." {
				zone = strings.TrimSuffix(zone, ".")
			}
			fmt.Fprintf(&b, "%s:%d", zone, s.Port)
		}
		b.WriteString(" {\n")
		for _, p := range s.Plugins {
			b.WriteString("    " + p.Name)
			if p.Parameters != "" {
				b.WriteString(" " + p.Parameters)
			}
			if p.ConfigBlock != "" {
				b.WriteString(" {\n")
				for _, l := range strings.Split(p.ConfigBlock, "\n") {
					b.WriteString("        " + l + "\n")
				}
				b.WriteString("    }")
			}
			b.WriteString("\n")
		}
		b.WriteString("}\n")
	}
	return b.String()
}

// Markers enclose the blocks Merge adds to a Corefile, so that a second
// Merge replaces them and Remove takes them out.
const (
	BeginMarker = "# coredns-mcs: begin (kubectl mcs front); the server blocks to the end marker forward to coredns-mcs standalone"
	EndMarker   = "# coredns-mcs: end"
)

// Merge returns corefile with blocks (Corefile text) appended between the
// markers, in place of any blocks an earlier Merge added.
func Merge(corefile, blocks string) string {
	base := strings.TrimRight(Remove(corefile), "\n")
	return base + "\n" + BeginMarker + "\n" + strings.TrimRight(blocks, "\n") + "\n" + EndMarker + "\n"
}

var addedSection = regexp.MustCompile(`(?ms)^` + regexp.QuoteMeta(BeginMarker) + `\n.*?^` + regexp.QuoteMeta(EndMarker) + `\n?`)

// Remove returns corefile without the blocks Merge added.
func Remove(corefile string) string {
	return addedSection.ReplaceAllString(corefile, "")
}
