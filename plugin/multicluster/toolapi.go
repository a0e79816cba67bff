// The API the kubectl mcs command runs the plugin through, outside a DNS
// server: the same Corefile parser, informers and decisions as the server.

package multicluster

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/plugin/kubernetes"
	"github.com/miekg/dns"
	"k8s.io/client-go/rest"
)

// The functions of this file run the plugin outside a DNS server, for tools
// that must decide exactly as the server does (kubectl mcs): the stanza is
// parsed by the plugin's own parser, the informers are the plugin's own, and
// the kubernetes plugin of the same server block shares its Services, as in
// OnStartup.

// ParseStanza parses a multicluster stanza, as the server does.
func ParseStanza(c *caddy.Controller) (*Multicluster, error) { return parseCorefile(c) }

// Start connects to the API server with cfg (the Corefile's kubeconfig
// option is ignored), shares the Services of k, the started kubernetes
// plugin of the same server block (nil if the block has none), starts the
// informers and waits up to wait for them to sync, or until the plugin is
// degraded. Stop ends it.
func (m *Multicluster) Start(cfg *rest.Config, k *kubernetes.Kubernetes, wait time.Duration) error {
	m.config = cfg
	if k != nil && k.APIConn != nil {
		m.local = newKubernetesServices(k)
		m.endpointsKnown = kubernetesCachesEndpoints(k)
	}
	if m.failover && !m.endpointsKnown {
		return errors.New("failover needs the kubernetes plugin, watching endpoints, in the same server block")
	}
	if err := m.startWatching(); err != nil {
		return err
	}
	deadline := time.Now().Add(wait)
	for !m.synced.Load() && m.degraded.Load() == nil {
		if time.Now().After(deadline) {
			return fmt.Errorf("the plugin's caches did not sync within %s", wait)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// Stop stops what Start started.
func (m *Multicluster) Stop() {
	if m.watch != nil {
		m.watch.stop()
	}
}

// Degraded returns why the clusterset zones cannot be served, or "".
func (m *Multicluster) Degraded() string {
	if d := m.degraded.Load(); d != nil {
		return d.message
	}
	return ""
}

// ClusterID returns the local cluster's id, from the Corefile or the
// ClusterProperty, or "".
func (m *Multicluster) ClusterID() string { return m.sources.localCluster() }

// Import is a summary of one import the plugin serves.
type Import struct {
	Namespace, Name string
	Headless        bool
	// PerClusterCopy: a controller's per-cluster copy, never served.
	PerClusterCopy bool
	// Addresses are the ClusterSetIP addresses the plugin answers with now
	// (from spec.ips, a derived Service or ready endpoints), or the ready
	// endpoint addresses of a headless import.
	Addresses []string
}

// Imports returns every import of the index, by namespace and name.
func (m *Multicluster) Imports() []Import {
	var out []Import
	for _, v := range m.index.snapshot() {
		imp := Import{Namespace: v.key.namespace, Name: v.key.name, Headless: v.headless}
		if v.headless {
			v.eachEndpoint(func(_ string, e endpoint) { imp.Addresses = append(imp.Addresses, e.ip.String()) })
		} else {
			v4, v6, _, _ := m.clusterSetIPs(v)
			for _, ip := range append(slices.Clip(v4), v6...) {
				imp.Addresses = append(imp.Addresses, ip.String())
			}
		}
		out = append(out, imp)
	}
	return out
}

// PerClusterCopies returns the namespace/name of every ServiceImport the
// plugin keeps as a controller's per-cluster copy.
func (m *Multicluster) PerClusterCopies() []string {
	m.sources.mu.Lock()
	keys := slices.Collect(maps.Keys(m.sources.copies))
	m.sources.mu.Unlock()
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.String()
	}
	slices.Sort(out)
	return out
}

// Standalone reports whether the stanza sets the standalone option: the
// server answers every name of its zones itself and never passes one on
// toward the DNS that forwards them to it.
func (m *Multicluster) Standalone() bool { return m.standaloneLine > 0 }

// OfflineWriter is the ResponseWriter under a dnstest.Recorder for a tool
// that runs plugins outside a server (Explain, kubectl mcs): a UDP client
// on loopback, writing nowhere. It stands in for plugin/test's
// ResponseWriter, which would link the testing package into the binaries.
type OfflineWriter struct{}

func (OfflineWriter) LocalAddr() net.Addr {
	return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53}
}
func (OfflineWriter) RemoteAddr() net.Addr {
	return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (OfflineWriter) WriteMsg(*dns.Msg) error     { return nil }
func (OfflineWriter) Write(b []byte) (int, error) { return len(b), nil }
func (OfflineWriter) Close() error                { return nil }
func (OfflineWriter) TsigStatus() error           { return nil }
func (OfflineWriter) TsigTimersOnly(bool)         {}
func (OfflineWriter) Hijack()                     {}
