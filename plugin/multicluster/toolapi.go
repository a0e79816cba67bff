// The API the kubectl mcs command runs the plugin through, outside a DNS
// server: the same Corefile parser, informers and decisions as the server.

package multicluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/plugin/kubernetes"
	"github.com/miekg/dns"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kubeclient "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kjson "sigs.k8s.io/json"
)

// The functions of this file run the plugin outside a DNS server, for tools
// that must decide exactly as the server does (kubectl mcs): the stanza is
// parsed by the plugin's own parser, the informers are the plugin's own, and
// the kubernetes plugin of the same server block shares its Services, as in
// OnStartup.

// APIVersions are the versions of the MCS APIs (ServiceImport,
// ClusterProperty) the plugin reads, the one it prefers first.
func APIVersions() []string { return slices.Clone(apiVersions) }

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

// ErrImportsNotServed is NewImportLister's error when the API server serves
// ServiceImports in neither version the plugin reads.
var ErrImportsNotServed = errCRDMissing

// ImportObject is one ServiceImport as the server reads it: decoded by the
// plugin's own decoder (imports.go) and validated by its own conversion
// (convert.go).
type ImportObject struct {
	// Namespace and Name are empty when not even the metadata decoded.
	Namespace, Name string
	// Skipped says why the server leaves the object out, as it logs it:
	// the fields DNS reads do not decode, or the object cannot be named in
	// DNS. Nil: the server keeps it.
	Skipped error
	// Problems are the parts of a kept object the server drops, described.
	Problems []string
	// PerClusterCopy: a controller's per-cluster copy, kept but never
	// served.
	PerClusterCopy bool
	// JSON is the object as the API server sent it.
	JSON []byte
}

// ImportLister lists ServiceImports as the informers read them: in the
// version the API server serves, through the same REST clients and the same
// decoder, so that a tool finds the objects the server cannot read, one by
// one, where a typed client fails the whole list.
type ImportLister struct {
	version string
	imports *restImports
}

// NewImportLister returns a lister of the version the API server serves, or
// ErrImportsNotServed.
func NewImportLister(cfg *rest.Config) (*ImportLister, error) {
	kube, err := kubeclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	version, err := servedImportVersion(kube)
	if err != nil {
		return nil, err
	}
	imports, err := newRESTImports(cfg)
	if err != nil {
		return nil, err
	}
	return &ImportLister{version: version, imports: imports}, nil
}

// Version is the ServiceImport version listed: v1beta1 or v1alpha1.
func (l *ImportLister) Version() string { return l.version }

// List lists the ServiceImports of namespace (all when empty), pageSize at
// a time (0: the informers' page size), and calls each with every one, in
// the API server's order. It stops at the first error of the API server or
// of each, and returns it.
func (l *ImportLister) List(ctx context.Context, namespace string, pageSize int64, each func(ImportObject) error) error {
	if pageSize <= 0 {
		pageSize = listPageSize
	}
	c := l.imports.clients[l.version]
	opts := meta.ListOptions{Limit: pageSize}
	for pages := 0; ; pages++ {
		body, err := c.Get().Namespace(namespace).Resource(importResource).VersionedParams(&opts, meta.ParameterCodec).Do(ctx).Raw()
		if err != nil {
			return fmt.Errorf("list %s.%s/%s: %w", importResource, mcsGroup, l.version, err)
		}
		// The items are kept as JSON, each decoded apart below, as
		// importObjectList decodes them.
		var page struct {
			Metadata meta.ListMeta     `json:"metadata"`
			Items    []json.RawMessage `json:"items"`
		}
		if err := kjson.UnmarshalCaseSensitivePreserveInts(body, &page); err != nil {
			return &undecodableError{fmt.Errorf("list of %s: %w", importResource, err)}
		}
		for _, raw := range page.Items {
			if err := each(readImport(raw)); err != nil {
				return err
			}
		}
		next := page.Metadata.Continue
		if next == "" {
			return nil
		}
		if next == opts.Continue {
			return fmt.Errorf("list %s: the API server returned the same continue token twice (after %d pages)", importResource, pages+1)
		}
		opts = meta.ListOptions{Limit: pageSize, Continue: next}
	}
}

// readImport decodes and converts one ServiceImport as the informers do
// (toImportSpec).
func readImport(raw []byte) ImportObject {
	var o importObject
	out := ImportObject{JSON: raw}
	if err := o.UnmarshalJSON(raw); err != nil {
		out.Skipped = err
		return out
	}
	if u := o.unusable; u != nil {
		out.Skipped = fmt.Errorf("its metadata does not decode (%v): %s", u.err, u.excerpt)
		return out
	}
	out.Namespace, out.Name = o.Namespace, o.Name
	if o.err != nil {
		out.Skipped = o.err
		return out
	}
	spec, problems, err := newImportSpec(o.fields())
	out.Skipped, out.Problems = err, problems
	out.PerClusterCopy = spec != nil && spec.perClusterCopy
	return out
}

// WatchedNamespaces returns the namespaces of the stanza's namespaces
// option, sorted; none: every namespace.
func (m *Multicluster) WatchedNamespaces() []string {
	return slices.Sorted(maps.Keys(m.namespaces))
}

// ClusterIDOf returns the local cluster id the server takes from the
// ClusterProperty u, or "" and why it takes none.
func ClusterIDOf(u *unstructured.Unstructured) (id, problem string) {
	obj, err := toClusterIDSpec(u)
	switch o := obj.(type) {
	case nil:
		return "", fmt.Sprint(err)
	case *withProblems:
		return "", strings.Join(o.problems, "; ")
	case *clusterIDSpec:
		return o.id, ""
	}
	return "", fmt.Sprintf("unexpected %T", obj)
}

// IsReverseZone reports whether zone (lower case, fully qualified) is a
// reverse zone, in-addr.arpa. or ip6.arpa. or below, as the plugin tells
// its reverse zones from its clusterset zones.
func IsReverseZone(zone string) bool { return isReverseZone(zone) }
