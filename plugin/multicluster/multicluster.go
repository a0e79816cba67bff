// The plugin's type, its constructor with the Corefile's defaults, and its
// readiness: what every other file hangs off.

package multicluster

import (
	"sync/atomic"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/kubernetes"
	"github.com/coredns/coredns/plugin/pkg/fall"
	"k8s.io/client-go/rest"
)

const (
	pluginName = "multicluster"

	defaultZone = "clusterset.local."
	defaultTTL  = 5
	maxTTL      = 3600
	// defaultMaxUDPSize caps the plugin's UDP answers whatever buffer a
	// client advertises: the size DNS Flag Day 2020 recommends, which
	// avoids IP fragmentation, and keeps what a spoofed small query can
	// make the server send to its victim near the query's own size.
	defaultMaxUDPSize = 1232
)

// Multicluster is the plugin.
type Multicluster struct {
	Next plugin.Handler

	// Zones are the zones answered from imports: clusterset zones and the
	// reverse zones PTR queries are answered in.
	Zones []string
	// Fallback are cluster-local zones in which a name without a local
	// Service is answered from an import of that name.
	Fallback []string
	Fall     fall.F

	// resolver answers from the index and the local cluster; the plugin
	// decides which queries reach it, writes and counts.
	resolver

	// ptrZone is the clusterset zone PTR answers name: the first of Zones
	// that is not a reverse zone, or empty.
	ptrZone string

	namespaces map[string]struct{} // empty: all namespaces

	// maxUDPSize caps the size of the plugin's answers over UDP (the
	// max_udp_size option): larger ones are truncated, with TC.
	maxUDPSize int

	// failover answers a fallback name from its import while the local
	// Service of that name has no ready endpoint.
	failover bool
	// endpointsKnown: the readiness of local endpoints is known (a
	// kubernetes plugin that caches endpoints shares its cache), so imports
	// that prefer close endpoints may fail over one by one.
	endpointsKnown bool
	// clusterID is the local cluster's id from the Corefile; empty: read
	// from the ClusterProperty cluster.clusterset.k8s.io.
	clusterID string
	// scope limits which imports answer in fallback zones; nil: all. With
	// fallback zones it always keeps the system namespaces out, except the
	// names of systemOptIn.
	scope       *fallbackScope
	systemOptIn []scopePattern
	// systemOptInLine is the Corefile line of system_fallback.
	systemOptInLine int
	// systemPatterns are the system namespaces of system_namespaces; nil:
	// defaultSystemNamespaces.
	systemPatterns []string
	// ownNamespace is the namespace the server runs in, "" when unknown.
	ownNamespace string

	kubeconfig string
	context    string
	// standaloneLine is the Corefile line of the standalone option, 0
	// without it; fallLine that of fallthrough.
	standaloneLine, fallLine int
	// config, when set, is the client configuration, before kubeconfig: a
	// tool that runs the plugin outside a server gives its own (toolapi.go).
	config *rest.Config

	// kube is the kubernetes plugin of the server block, if any.
	kube *kubernetes.Kubernetes

	sources  *sources
	counters *queryCounters
	// watch runs the informers; nil in tests that fill the index directly.
	watch *watcher

	// synced is true once every informer has synced.
	synced atomic.Bool
	// degraded holds why the clusterset zones cannot be served (a missing CRD
	// or RBAC rule, an unreachable API server at start), or nil.
	degraded atomic.Pointer[degradation]
}

// degradation is why the plugin is degraded: the log's message, and the
// Extended DNS Error (RFC 8914) its SERVFAIL answers carry.
type degradation struct {
	message  string
	infoCode uint16
	text     string
}

// New returns a Multicluster with the defaults of the Corefile syntax.
func New() *Multicluster {
	x := newIndex()
	return &Multicluster{
		Zones:      []string{defaultZone},
		resolver:   resolver{index: x, ttl: defaultTTL, reverseRanges: defaultReverseRanges},
		ptrZone:    defaultZone,
		sources:    newSources(x),
		counters:   newQueryCounters(),
		namespaces: map[string]struct{}{},
		maxUDPSize: defaultMaxUDPSize,
	}
}

// Name implements plugin.Handler.
func (m *Multicluster) Name() string { return pluginName }

// Ready implements ready.Readiness. A degraded plugin reports ready: it must
// never hold back the cluster-local DNS served next to it.
func (m *Multicluster) Ready() bool {
	return m.degraded.Load() != nil || (m.synced.Load() && m.localSynced())
}

func (m *Multicluster) localSynced() bool {
	return m.local != nil && m.local.hasSynced()
}

// serving reports whether the index can be trusted: informers synced and
// nothing missing.
func (m *Multicluster) serving() bool {
	return m.degraded.Load() == nil && m.synced.Load()
}
