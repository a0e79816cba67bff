package multicluster

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/kubernetes"
	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	kubeclient "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

var log = clog.NewWithPlugin(pluginName)

// startupWait bounds how long start-up waits for the first sync, so that a
// slow API server delays the server a little, never indefinitely.
const startupWait = 5 * time.Second

func init() { plugin.Register(pluginName, setup) }

func setup(c *caddy.Controller) error {
	m, err := parse(c)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	mark := markOf(c)

	// In OnStartup every plugin of the server block exists, so the kubernetes
	// plugin's cache of Services can be found and shared.
	c.OnStartup(func() error {
		k, ok := dnsserver.GetConfig(c).Handler("kubernetes").(*kubernetes.Kubernetes)
		if ok && k.APIConn != nil {
			m.local = newKubernetesServices(k)
			m.kube = k
			m.endpointsKnown = kubernetesCachesEndpoints(k)
		}
		if m.standaloneLine > 0 {
			_, forwards := dnsserver.GetConfig(c).Handler("forward").(plugin.Handler)
			if err := m.checkStandalone(k, forwards); err != nil {
				return plugin.Error(pluginName, err)
			}
		}
		if m.failover {
			// Failover reads endpoint readiness from the kubernetes plugin's
			// cache; without it every Service would look down.
			switch {
			case m.local == nil:
				return plugin.Error(pluginName, errors.New("failover needs the kubernetes plugin in the same server block: it reads local endpoints from its cache"))
			case !kubernetesCachesEndpoints(k):
				return plugin.Error(pluginName, errors.New("failover needs the kubernetes plugin to watch endpoints: remove its noendpoints option"))
			}
		}
		if err := m.startWatching(); err != nil {
			return plugin.Error(pluginName, err)
		}
		running.add(m, mark)
		return nil
	})
	c.OnShutdown(func() error {
		if m.watch != nil {
			m.watch.stop()
			running.remove(m.watch)
		}
		return nil
	})
	// A reload whose new instance started its watchers (OnStartup) and then
	// failed (a server could not listen, a later plugin's OnStartup failed)
	// runs no OnShutdown of that instance: caddy drops the instance and runs
	// this on the one that goes on serving.
	c.OnRestartFailed(func() error {
		running.stopOrphans()
		return nil
	})

	dnsserver.GetConfig(c).AddPlugin(func(next plugin.Handler) plugin.Handler {
		m.Next = next
		return m
	})
	return nil
}

// instanceMark marks, in a caddy instance's storage, the instance whose
// plugin blocks started a watcher.
type instanceMark struct{ _ byte } // not zero-sized: every mark is distinct

type instanceMarkKey struct{}

// markOf returns the mark of c's instance, set by its first multicluster
// block.
func markOf(c *caddy.Controller) *instanceMark {
	if mark, ok := c.Get(instanceMarkKey{}).(*instanceMark); ok {
		return mark
	}
	mark := &instanceMark{}
	c.Set(instanceMarkKey{}, mark)
	return mark
}

// running holds every watcher started and not yet stopped, with the mark of
// the instance that started it, so that what a failed reload leaves behind
// can be found. Like the prometheus plugin's registry of listeners, it is
// one per process because caddy instances come and go within one.
var running = &runningWatchers{owner: map[*watcher]runningWatcher{}}

type runningWatchers struct {
	mu    sync.Mutex
	owner map[*watcher]runningWatcher
}

// runningWatcher is a running watcher's instance mark, and the plugin it
// feeds, whose state the state gauges read (state.go).
type runningWatcher struct {
	mark   *instanceMark
	plugin *Multicluster
}

func (r *runningWatchers) add(m *Multicluster, mark *instanceMark) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.owner[m.watch] = runningWatcher{mark: mark, plugin: m}
}

// plugins returns the plugins whose watchers run.
func (r *runningWatchers) plugins() []*Multicluster {
	r.mu.Lock()
	defer r.mu.Unlock()
	ms := make([]*Multicluster, 0, len(r.owner))
	for _, rw := range r.owner {
		ms = append(ms, rw.plugin)
	}
	return ms
}

func (r *runningWatchers) remove(w *watcher) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.owner, w)
}

// stopOrphans stops every running watcher whose instance caddy no longer
// holds: one that failed to start, or (a restart failing in an old
// instance's OnShutdown) one that was stopping. The instance that serves
// keeps its watchers.
func (r *runningWatchers) stopOrphans() {
	alive := map[*instanceMark]bool{}
	for _, inst := range caddy.Instances() {
		inst.StorageMu.RLock()
		if mark, ok := inst.Storage[instanceMarkKey{}].(*instanceMark); ok {
			alive[mark] = true
		}
		inst.StorageMu.RUnlock()
	}
	r.mu.Lock()
	var orphans []*watcher
	for w, rw := range r.owner {
		if !alive[rw.mark] {
			orphans = append(orphans, w)
			delete(r.owner, w)
		}
	}
	r.mu.Unlock()
	for _, w := range orphans {
		w.stop()
	}
	if len(orphans) > 0 {
		log.Infof("Stopped the informers of %d server block(s) of an instance that is not serving after a failed reload", len(orphans))
	}
}

// userAgent names this distribution and its version to the API server, as
// the kubernetes plugin names CoreDNS's: caddy.AppName and caddy.AppVersion,
// which the main package sets from the version the build stamps before any
// server starts, then the plugin, the CoreDNS release and commit, and the
// platform, e.g. "coredns-mcs/v1.2.0 (CoreDNS-1.15.0) multicluster
// git_commit:abc1234 (linux/amd64/go1.26.0)".
func userAgent() string {
	return fmt.Sprintf("%s/%s %s git_commit:%s (%s/%s/%s)", caddy.AppName, caddy.AppVersion, pluginName, coremain.GitCommit, runtime.GOOS, runtime.GOARCH, runtime.Version())
}

// clientConfig returns the configuration of the plugin's clients: its user
// agent, and no client-side rate limit (client-go's default is 5 requests a
// second, bursts of 10: DefaultQPS and DefaultBurst in rest/config.go). A
// list comes in pages of listPageSize (thinPages), asked one after the
// other: 100,000 imports are 200 of them, which the default limit would
// spread over 40 s at each start and relist. Each informer waits for the
// answer to one request before it makes the next (a list page, then its
// watch, renewed every 5 to 10 minutes; failures are retried with a
// backoff), so the plugin has at most one request per informer in flight;
// the API server's priority and fairness limits what it serves at once.
//
// The content type is left to the clients: client-go's typed clients of
// built-in kinds (EndpointSlices, Services) ask for protobuf when none is
// set (gentype.PrefersProtobuf in kubernetes/typed/discovery/v1/
// endpointslice.go, Request.UseProtobufAsDefault in rest/request.go, client-go
// v0.37.1), as the kubernetes plugin asks for it explicitly; ServiceImports
// and ClusterProperties, custom resources, come as JSON.
func clientConfig(in *rest.Config) *rest.Config {
	cfg := rest.CopyConfig(in)
	cfg.UserAgent = userAgent()
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
	return cfg
}

// startWatching connects to the API server and starts the informers. It
// waits a little for the first sync; the plugin reports not ready until then.
func (m *Multicluster) startWatching() error {
	cfg, err := m.restConfig()
	if err != nil {
		return err
	}
	cfg = clientConfig(cfg)
	kube, err := kubeclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	imports, err := newRESTImports(cfg)
	if err != nil {
		return err
	}
	var dyn dynamic.Interface
	if m.clusterID == "" {
		if dyn, err = dynamic.NewForConfig(cfg); err != nil {
			return fmt.Errorf("dynamic client: %w", err)
		}
	}
	w := &watcher{
		kube:        kube,
		imports:     imports,
		namespaces:  slices.Sorted(mapKeys(m.namespaces)),
		sources:     m.sources,
		health:      newHealth(func(d *degradation) { m.degraded.Store(d) }),
		ownServices: m.local == nil,
		dynamic:     dyn,
		retry:       time.Second,
		longestZone: m.longestZone(),
	}
	synced := make(chan struct{})
	w.start(func() {
		m.synced.Store(true)
		close(synced)
	})
	if w.ownServices {
		m.local = w.localServices()
	}
	m.watch = w

	timeout := time.NewTimer(startupWait)
	defer timeout.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-synced:
			return nil
		case <-timeout.C:
			log.Warningf("Not synced after %s; serving continues and readiness follows the sync", startupWait)
			return nil
		case <-tick.C:
			if m.degraded.Load() != nil {
				return nil // already logged; waiting would change nothing
			}
		}
	}
}

// restConfig returns the client configuration: the kubeconfig file and
// context of the Corefile, else the in-cluster configuration.
func (m *Multicluster) restConfig() (*rest.Config, error) {
	if m.config != nil {
		return rest.CopyConfig(m.config), nil
	}
	if m.kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster configuration (set kubeconfig to run outside a cluster): %w", err)
		}
		return cfg, nil
	}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: m.kubeconfig},
		&clientcmd.ConfigOverrides{CurrentContext: m.context},
	)
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", m.kubeconfig, err)
	}
	return cfg, nil
}

func mapKeys(m map[string]struct{}) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// parse reads the multicluster stanza of a server block.
func parse(c *caddy.Controller) (*Multicluster, error) {
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
