// The caddy hooks: the plugin registered, started once every plugin of the
// server block exists, and stopped with the instance or after a failed
// reload.

package multicluster

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/kubernetes"
	clog "github.com/coredns/coredns/plugin/pkg/log"
	"k8s.io/client-go/dynamic"
	kubeclient "k8s.io/client-go/kubernetes"
)

var log = clog.NewWithPlugin(pluginName)

// startupWait bounds how long start-up waits for the first sync, so that a
// slow API server delays the server a little, never indefinitely.
const startupWait = 5 * time.Second

func init() { plugin.Register(pluginName, setup) }

func setup(c *caddy.Controller) error {
	m, err := parseCorefile(c)
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

func mapKeys(m map[string]struct{}) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
