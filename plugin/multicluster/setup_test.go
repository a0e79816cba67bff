package multicluster

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/plugin/kubernetes"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

func TestParseDefaults(t *testing.T) {
	m, err := parseCorefile(caddy.NewTestController("dns", "multicluster"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Zones, []string{"clusterset.local."}) {
		t.Errorf("zones %v, want [clusterset.local.]", m.Zones)
	}
	if m.ttl != 5 || len(m.Fallback) != 0 || m.Fall.Zones != nil || m.kubeconfig != "" || len(m.namespaces) != 0 {
		t.Errorf("unexpected defaults: %+v", m)
	}
}

func TestParseEveryOption(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	input := `multicluster ClusterSet.Local 10.0.0.0/24 ip6.arpa {
		kubeconfig ` + kubeconfig + ` member2
		namespaces default shop
		fallback cluster.local
		ttl 30
		fallthrough in-addr.arpa
		failover
		derived_prefix derived-
		cluster_id East.Prod
		fallback_scope shop/* !shop/internal-* */payments
		system_fallback kube-system/metrics-* dns-system/probe cattle-system/agent
		system_namespaces kube-* openshift-* cattle-system kube-*
		reverse_ranges 10.96.0.0/12 fd00:10:96::/112 10.96.0.0/12
	}`
	defer setPodNamespace("dns-system")()
	m, err := parseCorefile(caddy.NewTestController("dns", input))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"clusterset.local.", "0.0.10.in-addr.arpa.", "ip6.arpa."}; !slices.Equal(m.Zones, want) {
		t.Errorf("zones %v, want %v", m.Zones, want)
	}
	if m.kubeconfig != kubeconfig || m.context != "member2" {
		t.Errorf("kubeconfig %q context %q", m.kubeconfig, m.context)
	}
	if _, ok := m.namespaces["shop"]; !ok || len(m.namespaces) != 2 {
		t.Errorf("namespaces %v", m.namespaces)
	}
	if !slices.Equal(m.Fallback, []string{"cluster.local."}) {
		t.Errorf("fallback %v", m.Fallback)
	}
	if m.ttl != 30 {
		t.Errorf("ttl %d", m.ttl)
	}
	if !slices.Equal(m.Fall.Zones, []string{"in-addr.arpa."}) {
		t.Errorf("fallthrough %v", m.Fall.Zones)
	}
	if !m.failover || m.derivedPrefix != "derived-" {
		t.Errorf("failover %v derived_prefix %q", m.failover, m.derivedPrefix)
	}
	if m.clusterID != "east.prod" || m.sources.localCluster() != "east.prod" {
		t.Errorf("cluster_id %q, sources know %q", m.clusterID, m.sources.localCluster())
	}
	want := &fallbackScope{
		include: []scopePattern{{namespace: "shop", name: "*"}, {namespace: "*", name: "payments"}},
		exclude: []scopePattern{{namespace: "shop", name: "internal-*"}},
		system:  []string{"kube-*", "openshift-*", "cattle-system", "dns-system"},
		optIn:   []scopePattern{{namespace: "kube-system", name: "metrics-*"}, {namespace: "dns-system", name: "probe"}, {namespace: "cattle-system", name: "agent"}},
	}
	if !reflect.DeepEqual(m.scope, want) {
		t.Errorf("fallback_scope %+v, want %+v", m.scope, want)
	}
	if want := mustPrefixes("10.96.0.0/12", "fd00:10:96::/112"); !slices.Equal(m.reverseRanges, want) {
		t.Errorf("reverse_ranges %v, want %v", m.reverseRanges, want)
	}
}

// setPodNamespace makes the namespace the server runs in ns, until the
// function it returns runs.
func setPodNamespace(ns string) func() {
	saved := podNamespace
	podNamespace = func() string { return ns }
	return func() { podNamespace = saved }
}

// TestSystemNamespacesByDefault: with fallback zones, the system namespaces
// and the server's own are kept out of them by default, with no option; the
// clusterset zone is not affected; system_fallback opts names in.
func TestSystemNamespacesByDefault(t *testing.T) {
	defer setPodNamespace("dns-system")()
	m, err := parseCorefile(caddy.NewTestController("dns", "multicluster { \n fallback cluster.local \n }"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ns, name string
		want     bool
	}{
		{"kube-system", "metrics-server", false},
		{"kube-public", "x", false},
		{"kube-node-lease", "x", false},
		{"kube-flannel", "x", false},
		{"openshift", "x", false},
		{"openshift-monitoring", "prometheus-k8s", false},
		{"openshiftx", "x", true},
		{"my-openshift-apps", "x", true},
		{"dns-system", "x", false},
		{"kubex", "x", true},
		{"default", "kubernetes", false},
		{"default", "kubernetes-dashboard", true},
		{"shop", "cart", true},
	} {
		if got := m.scope.allows(tc.ns, tc.name); got != tc.want {
			t.Errorf("allows %s/%s = %v, want %v", tc.ns, tc.name, got, tc.want)
		}
	}
	// No fallback zone, no scope: the clusterset zone serves everything.
	m, err = parseCorefile(caddy.NewTestController("dns", "multicluster"))
	if err != nil {
		t.Fatal(err)
	}
	if m.scope != nil {
		t.Errorf("a scope without fallback zones: %+v", m.scope)
	}
	// Opted in: that name alone, and it still obeys fallback_scope.
	m, err = parseCorefile(caddy.NewTestController("dns", "multicluster { \n fallback cluster.local \n system_fallback kube-system/metrics-server \n fallback_scope !*/metrics-server \n }"))
	if err != nil {
		t.Fatal(err)
	}
	if m.scope.allows("kube-system", "metrics-server") || m.scope.allows("kube-system", "other") {
		t.Errorf("opted in, then excluded by fallback_scope: %+v", m.scope)
	}
	m, err = parseCorefile(caddy.NewTestController("dns", "multicluster { \n fallback cluster.local \n system_fallback kube-system/metrics-server \n }"))
	if err != nil {
		t.Fatal(err)
	}
	if !m.scope.allows("kube-system", "metrics-server") || m.scope.allows("kube-system", "other") {
		t.Errorf("system_fallback kube-system/metrics-server: %+v", m.scope)
	}
	// A namespace a default pattern matches is opted in by its name.
	m, err = parseCorefile(caddy.NewTestController("dns", "multicluster { \n fallback cluster.local \n system_fallback openshift-monitoring/thanos-* \n }"))
	if err != nil {
		t.Fatal(err)
	}
	if !m.scope.allows("openshift-monitoring", "thanos-querier") || m.scope.allows("openshift-monitoring", "prometheus-k8s") {
		t.Errorf("system_fallback openshift-monitoring/thanos-*: %+v", m.scope)
	}
	// system_namespaces replaces the default patterns; the server's own
	// namespace and default/kubernetes stay system names.
	m, err = parseCorefile(caddy.NewTestController("dns", "multicluster { \n fallback cluster.local \n system_fallback cattle-system/webhook \n system_namespaces cattle-* platform \n }"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ns, name string
		want     bool
	}{
		{"cattle-system", "agent", false},
		{"cattle-system", "webhook", true},
		{"cattle-fleet-system", "x", false},
		{"platform", "x", false},
		{"platformx", "x", true},
		{"dns-system", "x", false},
		{"default", "kubernetes", false},
		{"kube-system", "metrics-server", true},
		{"openshift-dns", "x", true},
	} {
		if got := m.scope.allows(tc.ns, tc.name); got != tc.want {
			t.Errorf("system_namespaces cattle-* platform: allows %s/%s = %v, want %v", tc.ns, tc.name, got, tc.want)
		}
	}
}

// TestKubernetesCachesEndpoints reads the kubernetes plugin's noendpoints
// option as that plugin parses it, so that a CoreDNS upgrade that moves the
// option fails here rather than failing over every Service.
func TestKubernetesCachesEndpoints(t *testing.T) {
	for input, want := range map[string]bool{
		"kubernetes cluster.local":                      true,
		"kubernetes cluster.local {\n pods insecure\n}": true,
		"kubernetes cluster.local {\n noendpoints\n}":   false,
	} {
		k, err := kubernetes.ParseStanza(caddy.NewTestController("dns", input))
		if err != nil {
			t.Fatalf("%q: %v", input, err)
		}
		if got := kubernetesCachesEndpoints(k); got != want {
			t.Errorf("%q: endpoints cached %v, want %v", input, got, want)
		}
	}
}

func TestParseFallthroughAllZones(t *testing.T) {
	m, err := parseCorefile(caddy.NewTestController("dns", "multicluster {\n fallthrough\n}"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Fall.Zones, []string{"."}) {
		t.Errorf("fallthrough without zones: %v, want [.]", m.Fall.Zones)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		input string
		want  string // in the error, with the line number
	}{
		{"multicluster {\n bogus\n}", `Testfile:2 - Error during parsing: unknown property "bogus"`},
		{"multicluster {\n ttl\n}", "Testfile:2 - Error during parsing: ttl needs exactly one value"},
		{"multicluster {\n ttl 1 2\n}", "ttl needs exactly one value, got 2"},
		{"multicluster {\n ttl five\n}", `ttl "five" is not a number`},
		{"multicluster {\n ttl -1\n}", "ttl must be in range [0, 3600]: -1"},
		{"multicluster {\n ttl 3601\n}", "ttl must be in range [0, 3600]: 3601"},
		{"multicluster {\n\n namespaces\n}", "Testfile:3 - Error during parsing: namespaces needs at least one namespace"},
		{"multicluster {\n namespaces Bad_NS\n}", `namespaces: "Bad_NS" is not a namespace name`},
		{"multicluster {\n fallback\n}", "fallback needs at least one zone"},
		{"multicluster {\n fallback in-addr.arpa\n}", `fallback zone "in-addr.arpa." is a reverse zone`},
		{"multicluster cluster.local {\n fallback cluster.local\n}", `fallback zone "cluster.local." is also a multicluster zone`},
		{"multicluster {\n kubeconfig\n}", "kubeconfig needs a file and optionally a context, got 0 arguments"},
		{"multicluster {\n kubeconfig /nonexistent/kubeconfig\n}", "kubeconfig: stat /nonexistent/kubeconfig: no such file or directory"},
		{"multicluster {\n kubeconfig a b c\n}", "got 3 arguments"},
		{"multicluster clusterset..local", `zone "clusterset..local" is not a valid domain name`},
		{"multicluster http://clusterset.local", `zone "http://clusterset.local": give a name, not a URL`},
		{"multicluster {\n fallback cluster..local\n}", `zone "cluster..local" is not a valid domain name`},
		{"multicluster {\n fallthrough bad..zone\n}", `zone "bad..zone" is not a valid domain name`},
		{"multicluster {\n ttl 5\n ttl 6\n}", `Testfile:3 - Error during parsing: option "ttl" given twice`},
		{"multicluster\nmulticluster", "this plugin can only be used once per Server Block"},
		{"multicluster {\n fallback cluster.local\n failover now\n}", "Testfile:3 - Error during parsing: failover takes no arguments, got 1"},
		{"multicluster {\n failover\n}", "failover applies to fallback zones"},
		{"multicluster {\n derived_prefix\n}", "Testfile:2 - Error during parsing: derived_prefix needs exactly one prefix"},
		{"multicluster {\n derived_prefix a b\n}", "got 2 arguments"},
		{"multicluster {\n derived_prefix Derived_\n}", `derived_prefix "Derived_" cannot start a Service name`},
		{"multicluster {\n derived_prefix -x\n}", `derived_prefix "-x" cannot start a Service name`},
		{"multicluster {\n cluster_id\n}", "Testfile:2 - Error during parsing: cluster_id needs exactly one id, got 0"},
		{"multicluster {\n cluster_id east west\n}", "cluster_id needs exactly one id, got 2"},
		{"multicluster {\n cluster_id east_1\n}", `cluster_id "east_1" is not a cluster id`},
		{"multicluster {\n fallback cluster.local\n fallback_scope\n}", "Testfile:3 - Error during parsing: fallback_scope needs at least one pattern"},
		{"multicluster {\n fallback cluster.local\n\n fallback_scope shop/* shop\n}", `Testfile:4 - Error during parsing: fallback_scope: "shop" is not NAMESPACE/NAME`},
		{"multicluster {\n fallback cluster.local\n fallback_scope shop/a/b\n}", `fallback_scope: "shop/a/b" is not NAMESPACE/NAME`},
		{"multicluster {\n fallback cluster.local\n fallback_scope /web\n}", `fallback_scope: "/web": an empty name`},
		{"multicluster {\n fallback cluster.local\n fallback_scope Shop/*\n}", `fallback_scope: "Shop/*": "Shop" has 'S'`},
		{"multicluster {\n fallback cluster.local\n fallback_scope shop/we?b\n}", `fallback_scope: "shop/we?b": "we?b" has '?'`},
		{"multicluster {\n fallback cluster.local\n fallback_scope !!shop/*\n}", `fallback_scope: "!!shop/*"`},
		{"multicluster {\n fallback_scope shop/*\n}", "fallback_scope applies to fallback zones"},
		{"multicluster {\n fallback cluster.local\n system_fallback\n}", "Testfile:3 - Error during parsing: system_fallback needs at least one pattern"},
		{"multicluster {\n fallback cluster.local\n system_fallback shop/cart\n}", `Testfile:3 - Error during parsing: system_fallback: "shop/cart": "shop" is not a system namespace (kube-*, openshift, openshift-*)`},
		{"multicluster {\n fallback cluster.local\n system_fallback kube-*/dns\n}", `Testfile:3 - Error during parsing: system_fallback: "kube-*/dns": name the namespace itself, not "kube-*"`},
		// Judged against system_namespaces, given before or after.
		{"multicluster {\n fallback cluster.local\n system_fallback kube-system/dns\n system_namespaces openshift-*\n}", `Testfile:3 - Error during parsing: system_fallback: "kube-system/dns": "kube-system" is not a system namespace (openshift-*)`},
		{"multicluster {\n fallback cluster.local\n system_namespaces\n}", "Testfile:3 - Error during parsing: system_namespaces needs at least one namespace or pattern"},
		{"multicluster {\n fallback cluster.local\n\n system_namespaces kube-* Kube-System\n}", `Testfile:4 - Error during parsing: system_namespaces: "Kube-System": "Kube-System" has 'K'`},
		{"multicluster {\n fallback cluster.local\n system_namespaces kube-system/dns\n}", `system_namespaces: "kube-system/dns": "kube-system/dns" has '/'`},
		{"multicluster {\n fallback cluster.local\n system_namespaces !kube-*\n}", `system_namespaces: "!kube-*": "!kube-*" has '!'`},
		{"multicluster {\n system_namespaces kube-*\n}", "system_namespaces applies to fallback zones"},
		{"multicluster {\n fallback cluster.local\n system_fallback !kube-system/dns\n}", `system_fallback: "!kube-system/dns": system_fallback names what may fall back`},
		{"multicluster {\n fallback cluster.local\n system_fallback kube-system\n}", `system_fallback: "kube-system" is not NAMESPACE/NAME`},
		{"multicluster {\n system_fallback kube-system/dns\n}", "system_fallback applies to fallback zones"},
		{"multicluster {\n reverse_ranges 10.96.0.0/12\n}", "Testfile:2 - Error during parsing: reverse_ranges applies to reverse zones"},
		{"multicluster in-addr.arpa {\n reverse_ranges\n}", "Testfile:2 - Error during parsing: reverse_ranges needs at least one CIDR"},
		{"multicluster in-addr.arpa {\n reverse_ranges 10.96.0.0\n}", `reverse_ranges: "10.96.0.0" is not a CIDR`},
		{"multicluster in-addr.arpa {\n reverse_ranges 10.96.0.10/12\n}", `reverse_ranges: "10.96.0.10/12" has bits set past its prefix length: did you mean 10.96.0.0/12?`},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			_, err := parseCorefile(caddy.NewTestController("dns", tc.input))
			if err == nil {
				t.Fatalf("parseCorefile(%q) succeeded, want an error with %q", tc.input, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parseCorefile(%q) = %q, want it to contain %q", tc.input, err, tc.want)
			}
		})
	}
}

// TestReadmeCorefiles parses every multicluster stanza of the plugin's
// README, so that the documentation never shows a Corefile that fails.
func TestReadmeCorefiles(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)~~~ (?:corefile|txt)\n(.*?)~~~").FindAllSubmatch(readme, -1)
	n := 0
	for _, b := range blocks {
		stanzas := extractStanzas(string(b[1]))
		for _, s := range stanzas {
			n++
			if strings.Contains(s, "KUBECONFIG") || strings.Contains(s, "NAMESPACE...") {
				continue // the syntax synopsis
			}
			s = strings.ReplaceAll(s, "/etc/coredns/kubeconfig", writeKubeconfig(t))
			if _, err := parseCorefile(caddy.NewTestController("dns", s)); err != nil {
				t.Errorf("README stanza does not parse: %v\n%s", err, s)
			}
		}
	}
	if n < 4 {
		t.Errorf("found %d multicluster stanzas in README.md, want at least 4", n)
	}
}

// TestGuideCorefiles parses every multicluster stanza of the guides in
// docs/, which users copy into their clusters.
func TestGuideCorefiles(t *testing.T) {
	guides, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, guide := range guides {
		text, err := os.ReadFile(guide)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range regexp.MustCompile("(?s)```\n(.*?)```").FindAllSubmatch(text, -1) {
			for _, s := range extractStanzas(string(b[1])) {
				n++
				if _, err := parseCorefile(caddy.NewTestController("dns", s)); err != nil {
					t.Errorf("%s: stanza does not parse: %v\n%s", guide, err, s)
				}
			}
		}
	}
	if n == 0 {
		t.Errorf("no multicluster stanza found in %v", guides)
	}
}

// extractStanzas returns each "multicluster ..." stanza of a Corefile with
// its block, if any.
func extractStanzas(corefile string) []string {
	var out []string
	lines := strings.Split(corefile, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(line, "multicluster") {
			continue
		}
		stanza := line
		if strings.HasSuffix(line, "{") {
			depth := 1
			for i++; i < len(lines) && depth > 0; i++ {
				l := strings.TrimSpace(lines[i])
				depth += strings.Count(l, "{") - strings.Count(l, "}")
				stanza += "\n" + l
			}
			i--
		}
		out = append(out, stanza)
	}
	return out
}

func writeKubeconfig(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The plugin's clients are not throttled (a list is many pages, asked one
// after the other) and say who they are; the configuration they came from
// is left as it was.
func TestClientConfig(t *testing.T) {
	in := &rest.Config{Host: "https://api.example:6443", QPS: 5, Burst: 10, UserAgent: "someone"}
	cfg := clientConfig(in)
	if cfg.QPS >= 0 || cfg.RateLimiter != nil || cfg.UserAgent != userAgent() || cfg.Host != in.Host {
		t.Errorf("QPS %v, rate limiter %v, user agent %q, host %q; want no limit, %q, %q", cfg.QPS, cfg.RateLimiter, cfg.UserAgent, cfg.Host, userAgent(), in.Host)
	}
	if in.QPS != 5 || in.UserAgent != "someone" {
		t.Errorf("the configuration given was changed: %+v", in)
	}
	// client-go builds no rate limiter for a negative QPS.
	rc, err := rest.RESTClientFor(&rest.Config{Host: "https://api.example:6443", QPS: cfg.QPS, ContentConfig: rest.ContentConfig{GroupVersion: &schema.GroupVersion{Version: "v1"}, NegotiatedSerializer: scheme.Codecs.WithoutConversion()}, APIPath: "/api"})
	if err != nil {
		t.Fatal(err)
	}
	if rl := rc.GetRateLimiter(); rl != nil {
		t.Errorf("client-go made a rate limiter %T for QPS %v", rl, cfg.QPS)
	}
}
