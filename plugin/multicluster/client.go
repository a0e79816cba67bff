// The configuration of the plugin's API clients: where it comes from
// (kubeconfig, in-cluster, or a tool's own), the user agent, and no
// client-side rate limit.

package multicluster

import (
	"fmt"
	"runtime"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/coremain"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// userAgent names this distribution and its version to the API server, as
// the kubernetes plugin names CoreDNS's: caddy.AppName and caddy.AppVersion,
// which the main package sets from the version the build stamps before any
// server starts, then the plugin, the CoreDNS release and commit, and the
// platform: "coredns-mcs/VERSION (CoreDNS-VERSION) multicluster
// git_commit:COMMIT (OS/ARCH/GOVERSION)".
func userAgent() string {
	return fmt.Sprintf("%s/%s %s git_commit:%s (%s/%s/%s)", caddy.AppName, caddy.AppVersion, pluginName, coremain.GitCommit, runtime.GOOS, runtime.GOARCH, runtime.Version())
}

// clientConfig returns the configuration of the plugin's clients: its user
// agent, and no client-side rate limit. client-go's default (5 a second,
// bursts of 10: rest/config.go) would spread the 200 list pages of 100,000
// imports over 40 s at each start and relist; each informer has one request
// in flight at most, and the API server's priority and fairness does the rest.
// The content type is the clients' own: protobuf for built-in kinds (client-go
// rest/request.go), JSON for custom resources.
func clientConfig(in *rest.Config) *rest.Config {
	cfg := rest.CopyConfig(in)
	cfg.UserAgent = userAgent()
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
	return cfg
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
