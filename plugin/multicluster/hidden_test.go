package multicluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/kubernetes"
	"github.com/coredns/coredns/plugin/kubernetes/object"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	api "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

// askPTR asks m for the reverse name of ip, and returns the reply and
// whether the next plugin ran.
func askPTR(t *testing.T, m *Multicluster, next *nextHandler, ip string) (*dns.Msg, bool) {
	t.Helper()
	name, err := dns.ReverseAddr(ip)
	if err != nil {
		t.Fatal(err)
	}
	calls := next.calls
	rec := dnstest.NewRecorder(&test.ResponseWriter{})
	if _, err := m.ServeDNS(context.Background(), rec, test.Case{Qname: name, Qtype: dns.TypePTR}.Msg()); err != nil {
		t.Fatalf("PTR %s: %v", ip, err)
	}
	return rec.Msg, next.calls > calls
}

// fakeKubeAPI is the kubernetes plugin's cache, for the real plugin to
// answer from. Its namespaces are those its namespace informer holds (all,
// unless namespace_labels selects some).
type fakeKubeAPI struct {
	services   []*object.Service
	endpoints  []*object.Endpoints
	namespaces []string
}

func (f *fakeKubeAPI) ServiceList() []*object.Service              { return f.services }
func (f *fakeKubeAPI) EndpointsList() []*object.Endpoints          { return f.endpoints }
func (f *fakeKubeAPI) ServiceImportList() []*object.ServiceImport  { return nil }
func (f *fakeKubeAPI) SvcExtIndexReverse(string) []*object.Service { return nil }
func (f *fakeKubeAPI) SvcImportIndex(string) []*object.ServiceImport {
	return nil
}
func (f *fakeKubeAPI) PodIndex(string) []*object.Pod                    { return nil }
func (f *fakeKubeAPI) McEpIndex(string) []*object.MultiClusterEndpoints { return nil }
func (f *fakeKubeAPI) GetNodeByName(context.Context, string) (*api.Node, error) {
	return nil, errors.New("no nodes")
}
func (f *fakeKubeAPI) Run()                                   {}
func (f *fakeKubeAPI) HasSynced() bool                        { return true }
func (f *fakeKubeAPI) Stop() error                            { return nil }
func (f *fakeKubeAPI) Modified(kubernetes.ModifiedMode) int64 { return 7 }

func (f *fakeKubeAPI) SvcIndex(key string) []*object.Service {
	var out []*object.Service
	for _, s := range f.services {
		if s.Index == key {
			out = append(out, s)
		}
	}
	return out
}

func (f *fakeKubeAPI) SvcIndexReverse(ip string) []*object.Service {
	var out []*object.Service
	for _, s := range f.services {
		if slices.Contains(s.ClusterIPs, ip) {
			out = append(out, s)
		}
	}
	return out
}

func (f *fakeKubeAPI) EpIndex(key string) []*object.Endpoints {
	var out []*object.Endpoints
	for _, e := range f.endpoints {
		if e.Index == key {
			out = append(out, e)
		}
	}
	return out
}

func (f *fakeKubeAPI) EpIndexReverse(ip string) []*object.Endpoints {
	var out []*object.Endpoints
	for _, e := range f.endpoints {
		if slices.Contains(e.IndexIP, ip) {
			out = append(out, e)
		}
	}
	return out
}

func (f *fakeKubeAPI) GetNamespaceByName(name string) (*object.Namespace, error) {
	if !slices.Contains(f.namespaces, name) {
		return nil, fmt.Errorf("namespace %s not found", name)
	}
	return &object.Namespace{Name: name}, nil
}

// slice adds an EndpointSlice of namespace ns labelled
// kubernetes.io/service-name=svc ("" for a multicluster slice, which has
// none), with addresses ip=hostname.
func (f *fakeKubeAPI) slice(ns, svc string, addrs ...string) {
	e := &object.Endpoints{Namespace: ns, Name: ns + "-" + svc, Index: object.EndpointsKey(svc, ns), Subsets: []object.EndpointSubset{{}}}
	for _, a := range addrs {
		ip, host, _ := strings.Cut(a, "=")
		e.IndexIP = append(e.IndexIP, ip)
		e.Subsets[0].Addresses = append(e.Subsets[0].Addresses, object.EndpointAddress{IP: ip, Hostname: host})
	}
	f.endpoints = append(f.endpoints, e)
}

// hiddenCluster is a plugin in front of the real kubernetes plugin, whose
// cache holds a namespace "hidden" it does not expose (namespaces option, or
// namespace_labels with labels): a Service with ClusterIP 10.96.9.9 and an
// endpoint secret-host at 10.244.9.9, both listed by a multicluster slice of
// namespace aaa without a source-cluster label, which also lists 10.244.9.10,
// an endpoint of the exposed namespace demo. With imported, the plugin serves
// the slice too, as the import aaa/x's.
func hiddenCluster(t *testing.T, labels, imported bool) (*Multicluster, *nextHandler) {
	t.Helper()
	cache := &fakeKubeAPI{namespaces: []string{"demo", "aaa", "hidden"}}
	cache.services = []*object.Service{{Name: "secret-svc", Namespace: "hidden", Index: object.ServiceKey("secret-svc", "hidden"), ClusterIPs: []string{"10.96.9.9"}, Type: api.ServiceTypeClusterIP}}
	cache.slice("hidden", "secret-svc", "10.244.9.9=secret-host")
	cache.slice("demo", "api", "10.244.9.10")
	cache.slice("aaa", "", "10.244.9.9=x", "10.96.9.9", "10.244.9.10")
	k := kubernetes.New([]string{"cluster.local.", "in-addr.arpa.", "ip6.arpa."})
	k.APIConn = cache
	if labels {
		cache.namespaces = []string{"demo", "aaa"} // namespace_labels selects these
	} else {
		k.Namespaces = map[string]struct{}{"demo": {}, "aaa": {}}
	}
	m, _ := newTestPlugin(t, nil, nil)
	if imported {
		setImport(t, m, importDef{ns: "aaa", name: "x", typ: "Headless"})
		addSlice(t, m, "aaa", "x", "", "x", discovery.AddressTypeIPv4, ep("10.244.9.9", "x", nil), ep("10.96.9.9", "", nil), ep("10.244.9.10", "", nil))
	}
	next := &nextHandler{}
	k.Next = next
	m.local, m.kube, m.Next = newKubernetesServices(k), k, k
	return m, next
}

// TestHiddenNamespaceStaysHidden: the plugin never names a local object of
// a namespace the kubernetes plugin does not expose, and every PTR query
// it passes on gets an answer that can be sent, though the kubernetes
// plugin's cache holds a multicluster slice at the address, which it would
// name with an empty label.
func TestHiddenNamespaceStaysHidden(t *testing.T) {
	for _, c := range []struct{ labels, imported bool }{{false, false}, {false, true}, {true, false}, {true, true}} {
		labels := c.labels
		t.Run(fmt.Sprintf("namespace_labels %v, imported %v", c.labels, c.imported), func(t *testing.T) {
			m, next := hiddenCluster(t, c.labels, c.imported)
			for _, tc := range []struct {
				ip, want string // "": NXDOMAIN, as for an address the kubernetes plugin does not know
				stock    bool   // the kubernetes plugin answers
			}{
				{ip: "10.244.9.9"},
				{ip: "10.244.9.10", want: "10-244-9-10.api.demo.svc.cluster.local."},
				// With namespace_labels alone the kubernetes plugin names
				// the hidden Service itself (reverse.go): not the
				// plugin's to change.
				{ip: "10.96.9.9", stock: labels},
			} {
				r, passed := askPTR(t, m, next, tc.ip)
				if r == nil {
					t.Fatalf("PTR %s: no reply", tc.ip)
				}
				if _, err := r.Pack(); err != nil {
					t.Errorf("PTR %s: the reply cannot be sent (%v):\n%s", tc.ip, err, r)
					continue
				}
				if passed {
					t.Errorf("PTR %s went past the kubernetes plugin, which does not fall through", tc.ip)
				}
				if strings.Contains(r.String(), "hidden") && !tc.stock {
					t.Errorf("PTR %s names the hidden namespace:\n%s", tc.ip, r)
				}
				switch {
				case tc.stock:
				case tc.want == "" && (r.Rcode != dns.RcodeNameError || len(r.Answer) != 0 || len(r.Ns) != 1):
					t.Errorf("PTR %s: want NXDOMAIN with the kubernetes plugin's SOA, got\n%s", tc.ip, r)
				case tc.want != "" && (len(r.Answer) != 1 || r.Answer[0].(*dns.PTR).Ptr != tc.want):
					t.Errorf("PTR %s: want %s, got\n%s", tc.ip, tc.want, r)
				}
			}
			// With fallthrough, an address the kubernetes plugin would
			// not answer goes to the plugin after it.
			m.kube.Fall.SetZonesFromArgs([]string{"in-addr.arpa"})
			if _, passed := askPTR(t, m, next, "10.96.9.9"); !passed && !labels {
				t.Errorf("PTR of the hidden ClusterIP did not fall through")
			}
		})
	}
}
