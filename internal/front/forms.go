package front

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Platform names a cluster DNS setup, by how its configuration is changed.
type Platform string

const (
	// Kubeadm and any CoreDNS whose ConfigMap kube-system/coredns may be
	// edited: the Corefile, with the blocks merged in.
	Kubeadm Platform = "kubeadm"
	// K3s and AKS import the keys of the ConfigMap kube-system/coredns-custom
	// ending in .server as server blocks of their own (k3s:
	// manifests/coredns.yaml of the k3s repository; AKS: "Customize CoreDNS
	// with Azure Kubernetes Service").
	K3s Platform = "k3s"
	AKS Platform = "aks"
	// EKS takes a whole Corefile as the CoreDNS add-on's configuration
	// value "corefile": the cluster's own, with the blocks merged in.
	EKS Platform = "eks"
	// CoreDNSChart is a CoreDNS installed by the coredns Helm chart: its
	// servers[] value, the chart's default server and the added ones.
	CoreDNSChart Platform = "coredns-chart"
	// RKE2 configures its rke2-coredns chart (the coredns chart with
	// rke2's patches) with a HelmChartConfig.
	RKE2 Platform = "rke2"
	// KubeDNS takes stub domains only: clusterset.local and the reverse
	// zones, no cluster.local fallback.
	KubeDNS Platform = "kube-dns"
	// OpenShift's DNS operator takes server blocks that only forward, as
	// spec.servers of its DNS resource "default": clusterset.local and the
	// reverse zones, no cluster.local fallback (Server and ForwardPlugin in
	// operator/v1/types_dns.go of openshift/api, vendored in
	// openshift/cluster-dns-operator).
	OpenShift Platform = "openshift"
)

// Platforms lists every form Render knows.
var Platforms = []Platform{Kubeadm, K3s, AKS, EKS, CoreDNSChart, RKE2, KubeDNS, OpenShift}

// OpenShiftServerName is the name of the spec.servers entry front writes.
const OpenShiftServerName = "coredns-mcs"

// CustomKey is the key of coredns-custom that holds the blocks.
const CustomKey = "multicluster.server"

// KubernetesOptions returns the options of a platform's own kubernetes
// stanza, when the cluster's Corefile is not at hand to read them from
// (Info.OwnOptions; for EKS and AKS read them from the cluster's Corefile).
func KubernetesOptions(p Platform) []string {
	return RowOf(p).OwnOptions
}

// kubeadmOptions are the options of kubeadm's kubernetes stanza
// (cmd/kubeadm/app/phases/addons/dns/manifests.go, Kubernetes v1.37.1),
// which the coredns chart's has too (charts/coredns/values.yaml of
// github.com/coredns/helm; rke2-coredns keeps them).
var kubeadmOptions = []string{"pods insecure", "ttl 30"}

// KubeadmCorefile is the Corefile kubeadm writes
// (cmd/kubeadm/app/phases/addons/dns/manifests.go, Kubernetes v1.37.1).
const KubeadmCorefile = `.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30 {
       disable success cluster.local
       disable denial cluster.local
    }
    loop
    reload
    loadbalance
}
`

// K3sCorefile is the Corefile of k3s's manifests/coredns.yaml (the k3s
// repository, with %{CLUSTER_DOMAIN}% set to cluster.local), which imports
// /etc/coredns/custom/*.override into its server block and
// /etc/coredns/custom/*.server at the top level.
const K3sCorefile = `.:53 {
    errors
    health
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
      pods insecure
      fallthrough in-addr.arpa ip6.arpa
    }
    hosts /etc/coredns/NodeHosts {
      ttl 60
      reload 15s
      fallthrough
    }
    prometheus :9153
    forward . /etc/resolv.conf
    cache 30
    loop
    reload
    loadbalance
    import /etc/coredns/custom/*.override
}
import /etc/coredns/custom/*.server
`

// KubeadmCoreDNSVersion is the CoreDNS kubeadm v1.37.1 deploys
// (CoreDNSVersion in cmd/kubeadm/app/constants/constants.go).
const KubeadmCoreDNSVersion = "1.14.6"

// ChartDefaultServer is the default servers[] entry of the coredns Helm
// chart (charts/coredns/values.yaml of github.com/coredns/helm): a list in
// the values replaces it, so the chart's own server must be repeated.
var ChartDefaultServer = Server{
	Zones: []Zone{{"."}},
	Port:  53,
	Plugins: []Plugin{
		{Name: "errors"},
		{Name: "health", ConfigBlock: "lameduck 5s"},
		{Name: "ready"},
		{Name: "kubernetes", Parameters: "cluster.local in-addr.arpa ip6.arpa", ConfigBlock: "pods insecure\nfallthrough in-addr.arpa ip6.arpa\nttl 30"},
		{Name: "prometheus", Parameters: "0.0.0.0:9153"},
		{Name: "forward", Parameters: ". /etc/resolv.conf"},
		{Name: "cache", Parameters: "30"},
		{Name: "loop"},
		{Name: "reload"},
		{Name: "loadbalance"},
	},
}

// Render returns the configuration of platform p as the object (YAML) or
// value (JSON, EKS) to apply, with what live holds kept.
func Render(p Platform, o Options, live Live) (string, error) {
	r, ok := Lookup(string(p))
	if !ok {
		return "", fmt.Errorf("unknown platform %q: want one of %s", p, strings.Join(PlatformNames(), ", "))
	}
	return r.Render(o, live)
}

// OpenShiftDNS returns OpenShift's DNS resource "default" with its
// spec.servers whole, since applying it replaces the list (the CRD's
// servers has no list type that merges, Server in operator/v1/types_dns.go
// of openshift/api): the entries dns holds (the live object, nil if none),
// but one named OpenShiftServerName, then server unless nil (removal).
func OpenShiftDNS(dns map[string]any, server map[string]any) (string, error) {
	existing, _, err := unstructured.NestedSlice(dns, "spec", "servers")
	if err != nil {
		return "", fmt.Errorf("spec.servers of dns.operator.openshift.io/default: %w", err)
	}
	servers := []any{}
	for _, s := range existing {
		if m, ok := s.(map[string]any); ok && m["name"] == OpenShiftServerName {
			continue
		}
		servers = append(servers, s)
	}
	if server != nil {
		servers = append(servers, server)
	}
	return toYAML(map[string]any{
		"apiVersion": "operator.openshift.io/v1",
		"kind":       "DNS",
		"metadata":   map[string]string{"name": "default"},
		"spec":       map[string]any{"servers": servers},
	})
}

// RKE2Config returns the HelmChartConfig kube-system/rke2-coredns whose
// valuesContent is the one config holds (the live object, nil if none),
// every other value kept, with servers[]: the servers it lists (the
// chart's default server when it lists none), without the ones front
// wrote, then add (none: removal). Applying it replaces valuesContent
// whole, as a string.
func RKE2Config(config map[string]any, add []Server, standInPort int) (string, error) {
	text, _, err := unstructured.NestedString(config, "spec", "valuesContent")
	if err != nil {
		return "", fmt.Errorf("spec.valuesContent of HelmChartConfig kube-system/rke2-coredns: %w", err)
	}
	values := map[string]any{}
	if err := yaml.Unmarshal([]byte(text), &values); err != nil {
		return "", fmt.Errorf("spec.valuesContent of HelmChartConfig kube-system/rke2-coredns: %w", err)
	}
	if values == nil {
		values = map[string]any{}
	}
	listed, has := values["servers"].([]any)
	var servers []any
	for _, s := range listed {
		if !writtenByFront(s, standInPort) {
			servers = append(servers, s)
		}
	}
	if len(add) > 0 {
		if !has {
			// A list replaces the chart's default server: repeat it.
			servers = append(servers, ChartDefaultServer)
		}
		for _, s := range add {
			servers = append(servers, s)
		}
	}
	if has || len(add) > 0 {
		values["servers"] = servers
	}
	content, err := yaml.Marshal(values)
	if err != nil {
		return "", err
	}
	return toYAML(map[string]any{
		"apiVersion": "helm.cattle.io/v1",
		"kind":       "HelmChartConfig",
		"metadata":   map[string]string{"name": "rke2-coredns", "namespace": "kube-system"},
		"spec":       map[string]string{"valuesContent": string(content)},
	})
}

// writtenByFront reports whether a servers[] entry of the chart's values is
// one front writes: the stand-in (bound to 127.0.0.1 on its port), or a
// block whose forward lists the stand-in after the standalone Service.
func writtenByFront(entry any, standInPort int) bool {
	data, err := json.Marshal(entry)
	if err != nil {
		return false
	}
	var s Server
	if err := json.Unmarshal(data, &s); err != nil {
		return false
	}
	standIn := fmt.Sprintf("127.0.0.1:%d", standInPort)
	for _, p := range s.Plugins {
		switch {
		case p.Name == "bind" && p.Parameters == "127.0.0.1" && s.Port == standInPort:
			return true
		case p.Name == "forward" && slices.Contains(strings.Fields(p.Parameters), standIn):
			return true
		}
	}
	return false
}

// EKSValue returns the EKS CoreDNS add-on's configuration value (the JSON
// that aws eks update-addon --configuration-values takes) whose corefile
// is corefile. The add-on takes the value whole: keys not in it go back to
// the add-on's defaults (docs/platforms.md, EKS).
func EKSValue(corefile string) (string, error) {
	out, err := json.MarshalIndent(map[string]string{"corefile": corefile}, "", "  ")
	if err != nil {
		return "", fmt.Errorf("the add-on's configuration value: %w", err)
	}
	return string(out) + "\n", nil
}

// OpenShiftServer returns the spec.servers entry of OpenShift's DNS
// resource that forwards the clusterset zone and the reverse zones to the
// standalone server. The operator's blocks only forward
// (controller_dns_configmap.go of openshift/cluster-dns-operator): no
// view, no stand-in, no read_timeout.
func OpenShiftServer(o Options) (map[string]any, error) {
	o, reverse, err := o.prepare()
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"name":  OpenShiftServerName,
		"zones": append([]string{o.ClustersetZone}, reverse...),
		"forwardPlugin": map[string]any{
			"upstreams": []string{o.Standalone},
			"policy":    "Sequential",
		},
	}, nil
}

// StubDomains returns the kube-dns ConfigMap with stub domains for the
// clusterset zone and the reverse zones, added to the ones it has.
func StubDomains(o Options, existing map[string][]string) (*corev1.ConfigMap, error) {
	o, reverse, err := o.prepare()
	if err != nil {
		return nil, err
	}
	stubs := map[string][]string{}
	for k, v := range existing {
		stubs[k] = v
	}
	for _, z := range append([]string{o.ClustersetZone}, reverse...) {
		stubs[z] = []string{o.Standalone}
	}
	data, err := json.Marshal(stubs)
	if err != nil {
		return nil, err
	}
	cm := configMap("kube-dns", map[string]string{"stubDomains": string(data)})
	return cm, nil
}

func configMap(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   meta.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "kube-system"},
		Data:       data,
	}
}

func toYAML(v any) (string, error) {
	out, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	// creationTimestamp: null is noise in a printed object.
	return strings.Replace(string(out), "  creationTimestamp: null\n", "", 1), nil
}

// PlatformNames lists the names --platform takes: the rows of Table.
func PlatformNames() []string {
	var names []string
	for _, r := range Table {
		names = append(names, r.Name)
	}
	return names
}

// ParsePlatform returns the form of the platform named s (gke takes
// kube-dns's).
func ParsePlatform(s string) (Platform, error) {
	if r, ok := Lookup(s); ok {
		return r.Form, nil
	}
	return "", fmt.Errorf("unknown platform %q: want one of %s", s, strings.Join(PlatformNames(), ", "))
}
