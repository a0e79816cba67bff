package front

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// FormSpec is how a form of the configuration is written, applied,
// removed and read back: the part of a row of Table that kubectl mcs
// front, check and explain act on, so that a platform whose configuration
// takes an existing form is one row, and a new form one FormSpec.
type FormSpec struct {
	// ServerBlocks: the form takes server blocks (the added ones, with
	// the view and the stand-in), which take the options of the front's
	// own kubernetes stanza and what its CoreDNS version allows; else it
	// takes only zones forwarded whole (stub domains, OpenShift's
	// spec.servers), with no cluster.local fallback.
	ServerBlocks bool
	// NeedsCorefile: the form is the whole Corefile (Info.Corefile), which
	// must exist to merge the blocks into.
	NeedsCorefile bool
	// MetricsAddress is the prometheus address of the front's own blocks,
	// where the Corefile is not at hand to read it ("": ":9153").
	MetricsAddress string
	// NoReadTimeout says why the form cannot set forward's read_timeout
	// ("": it sets it where the CoreDNS version has it).
	NoReadTimeout string
	// Render returns what kubectl mcs front prints: the object or value to
	// apply, with what live holds kept. servers are the added blocks
	// (nil where the form takes no server blocks).
	Render func(o Options, servers []Server, live Live) (string, error)
	// Removal returns what kubectl mcs front --remove prints, or why the
	// form cannot be removed that way.
	Removal func(o Options, live Live) (string, error)
	// Apply returns the value --apply writes into Info.Target's key (nil
	// where --apply does not write; then Info.Target has no Kind).
	Apply func(o Options, servers []Server, live Live) (string, error)
	// Unapply returns what --remove --apply writes into Info.Target's key
	// instead, or drop: take the key out.
	Unapply func(o Options, live Live) (value string, drop bool, err error)
	// Applied and Removed are what --apply and --remove --apply say once
	// done.
	Applied, Removed string
	// Review is how check and explain read the configuration back.
	Review Review
}

// Review is where check and explain find the configuration front wrote.
type Review int

const (
	// ReviewMarkers: the added blocks are in the Corefile between the
	// markers of Merge (or, written by hand or by a chart, every block but
	// the root zone's).
	ReviewMarkers Review = iota
	// ReviewTargetBlocks: the added blocks are the Corefile text of
	// Info.Target's key, which the Corefile imports.
	ReviewTargetBlocks
	// ReviewTargetStubs: Info.Target's key holds stub domains, as JSON.
	ReviewTargetStubs
	// ReviewCorefileStubs: the Corefile's blocks of a zone other than the
	// root that only forward are the forwarded zones (OpenShift's operator
	// renders spec.servers so).
	ReviewCorefileStubs
	// ReviewNotRead: the configuration is a chart's values, which the
	// cluster does not show.
	ReviewNotRead
)

// Live is what the cluster holds of the front's configuration, which the
// printed form keeps: the forms that replace a whole value (a Corefile, a
// list, a values document) merge into it.
type Live struct {
	// Corefile is the front's Corefile (Info.Corefile), needed where the
	// form is a whole Corefile (kubeadm, EKS).
	Corefile string
	// Target is the value of Info.Target's key, and whether its object
	// exists.
	Target      string
	TargetFound bool
	// Object is the object Info.Object names, as read (its unstructured
	// content), or nil where it does not exist: OpenShift's DNS resource,
	// whose spec.servers the printed list replaces; rke2's
	// HelmChartConfig, whose valuesContent the printed one replaces.
	Object map[string]any
}

// The forms, each shared by the rows of Table whose configuration takes
// it.
var (
	// corefileForm: the ConfigMap kube-system/coredns, its Corefile with
	// the blocks merged in between the markers.
	corefileForm = &FormSpec{
		ServerBlocks: true, NeedsCorefile: true, Review: ReviewMarkers,
		Render: func(o Options, servers []Server, live Live) (string, error) {
			if strings.TrimSpace(live.Corefile) == "" {
				return "", fmt.Errorf("%s: the cluster's Corefile is needed to merge the blocks into", Kubeadm)
			}
			return toYAML(configMap("coredns", map[string]string{"Corefile": Merge(live.Corefile, Corefile(servers))}))
		},
		Removal: func(_ Options, live Live) (string, error) { return Remove(live.Corefile), nil },
		Apply: func(_ Options, servers []Server, live Live) (string, error) {
			return Merge(live.Corefile, Corefile(servers)), nil
		},
		Unapply: func(_ Options, live Live) (string, bool, error) { return Remove(live.Corefile), false, nil },
		Applied: "applied: kube-system/coredns Corefile, with the blocks forwarding to coredns-mcs (CoreDNS's reload plugin picks it up within its interval; kubectl -n kube-system rollout restart deploy/coredns applies it at once)",
		Removed: "removed: the blocks forwarding to coredns-mcs from kube-system/coredns",
	}
	// eksAddonForm: the EKS add-on's configuration value, its corefile
	// the cluster's Corefile with the blocks merged in.
	eksAddonForm = &FormSpec{
		ServerBlocks: true, NeedsCorefile: true, Review: ReviewMarkers,
		Render: func(o Options, servers []Server, live Live) (string, error) {
			if strings.TrimSpace(live.Corefile) == "" {
				return "", fmt.Errorf("%s: the cluster's Corefile is needed: the add-on's corefile value replaces the whole Corefile", EKS)
			}
			return EKSValue(Merge(live.Corefile, Corefile(servers)))
		},
		// The add-on takes the same value as the install, its Corefile
		// without the blocks: aws eks update-addon cannot take a bare
		// Corefile.
		Removal: func(_ Options, live Live) (string, error) { return EKSValue(Remove(live.Corefile)) },
	}
	// customKeyForm: the key CustomKey of the ConfigMap coredns-custom,
	// whose *.server keys the Corefile imports as server blocks (k3s, AKS).
	customKeyForm = &FormSpec{
		ServerBlocks: true, Review: ReviewTargetBlocks,
		Render: func(_ Options, servers []Server, _ Live) (string, error) {
			return toYAML(configMap("coredns-custom", map[string]string{CustomKey: Corefile(servers)}))
		},
		Removal: func(Options, Live) (string, error) {
			return fmt.Sprintf("kubectl -n kube-system patch configmap coredns-custom --type json -p '[{\"op\":\"remove\",\"path\":\"/data/%s\"}]'\n", JSONPointerEscape(CustomKey)), nil
		},
		Apply:   func(_ Options, servers []Server, _ Live) (string, error) { return Corefile(servers), nil },
		Unapply: func(Options, Live) (string, bool, error) { return "", true, nil },
		// CoreDNS's reload hashes the Corefile with its imports followed
		// (parse in plugin/reload/reload.go, v1.13.1 and v1.15.0), so it
		// sees the imported key change once the kubelet updates the mount.
		Applied: "applied: kube-system/coredns-custom " + CustomKey + " (CoreDNS's reload picks it up within its interval once the kubelet has updated the mounted ConfigMap, up to a minute or two; kubectl -n kube-system rollout restart deploy/coredns applies it at once)",
		Removed: "removed: " + CustomKey + " from kube-system/coredns-custom; kubectl -n kube-system rollout restart deploy/coredns",
	}
	// chartForm: the coredns chart's servers[] values.
	chartForm = &FormSpec{
		ServerBlocks: true, MetricsAddress: "0.0.0.0:9153", Review: ReviewNotRead,
		Render: func(_ Options, servers []Server, _ Live) (string, error) {
			return toYAML(map[string]any{"servers": append([]Server{ChartDefaultServer}, servers...)})
		},
		Removal: func(Options, Live) (string, error) {
			return "", fmt.Errorf("--remove: for %s, set servers[] back to the chart's default (remove the entries after the first)", CoreDNSChart)
		},
	}
	// rke2ConfigForm: the coredns chart's servers[] in rke2's
	// HelmChartConfig, merged into the values it holds.
	rke2ConfigForm = &FormSpec{
		ServerBlocks: true, MetricsAddress: "0.0.0.0:9153", Review: ReviewNotRead,
		Render: func(o Options, servers []Server, live Live) (string, error) {
			return RKE2Config(live.Object, servers, o.withDefaults().StandInPort)
		},
		Removal: func(o Options, live Live) (string, error) {
			return RKE2Config(live.Object, nil, o.withDefaults().StandInPort)
		},
	}
	// stubDomainsForm: kube-dns's stubDomains, added to the ones it has.
	stubDomainsForm = &FormSpec{
		Review: ReviewTargetStubs,
		// Applied, the printed ConfigMap replaces stubDomains whole: it
		// holds the stub domains the cluster has, kept.
		Render: func(o Options, _ []Server, live Live) (string, error) {
			cm, err := stubDomainsOf(o, live)
			if err != nil {
				return "", err
			}
			return toYAML(cm)
		},
		Removal: func(o Options, live Live) (string, error) {
			stubs, err := stubsWithout(o, live)
			if err != nil {
				return "", err
			}
			return "stubDomains: " + stubs + "\n", nil
		},
		Apply: func(o Options, _ []Server, live Live) (string, error) {
			cm, err := stubDomainsOf(o, live)
			if err != nil {
				return "", err
			}
			return cm.Data["stubDomains"], nil
		},
		Unapply: func(o Options, live Live) (string, bool, error) {
			stubs, err := stubsWithout(o, live)
			return stubs, false, err
		},
		Applied: "applied: kube-system/kube-dns stubDomains",
		Removed: "removed: coredns-mcs's stub domains from kube-system/kube-dns",
	}
	// openShiftForm: spec.servers of OpenShift's DNS resource, merged into
	// the list it holds.
	openShiftForm = &FormSpec{
		Review: ReviewCorefileStubs, NoReadTimeout: "not settable in `spec.servers`",
		Render: func(o Options, _ []Server, live Live) (string, error) {
			server, err := OpenShiftServer(o)
			if err != nil {
				return "", err
			}
			return OpenShiftDNS(live.Object, server)
		},
		Removal: func(_ Options, live Live) (string, error) { return OpenShiftDNS(live.Object, nil) },
	}
)

func parseStubs(text string) (map[string][]string, error) {
	stubs := map[string][]string{}
	if text == "" {
		return stubs, nil
	}
	if err := json.Unmarshal([]byte(text), &stubs); err != nil {
		return nil, fmt.Errorf("kube-system/kube-dns stubDomains: %w", err)
	}
	return stubs, nil
}

// stubsWithout returns the stub domains of live.Target without the zones
// front adds: the clusterset zone and the reverse zones of o.
func stubsWithout(o Options, live Live) (string, error) {
	if !live.TargetFound {
		return "", fmt.Errorf("%s: not found", kubeDNSConfig.Object())
	}
	stubs, err := parseStubs(live.Target)
	if err != nil {
		return "", err
	}
	zones, err := o.ReverseZones()
	if err != nil {
		return "", err
	}
	for _, z := range append(zones, DefaultClustersetZone) {
		delete(stubs, z)
	}
	data, err := json.Marshal(stubs)
	return string(data), err
}

// JSONPointerEscape escapes s for a JSON pointer's reference token (RFC
// 6901: ~ as ~0, / as ~1).
func JSONPointerEscape(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// Render returns the configuration of the row as the object (YAML) or
// value (JSON, EKS) to apply, with what live holds kept.
func (r *Info) Render(o Options, live Live) (string, error) {
	servers, err := r.servers(o)
	if err != nil {
		return "", err
	}
	return r.Spec.Render(o, servers, live)
}

// ApplyValue returns the value --apply writes into r.Target's key.
func (r *Info) ApplyValue(o Options, live Live) (string, error) {
	if r.Spec.Apply == nil {
		return "", fmt.Errorf("--apply: no writer for %s", r.Name)
	}
	servers, err := r.servers(o)
	if err != nil {
		return "", err
	}
	return r.Spec.Apply(o, servers, live)
}

// servers returns the added blocks for the row's form, with the defaults
// of its platform where the cluster's Corefile did not give them; nil
// where the form takes none (its options still validated).
func (r *Info) servers(o Options) ([]Server, error) {
	if !r.Spec.ServerBlocks {
		_, _, err := o.prepare()
		return nil, err
	}
	if o.MetricsAddress == "" {
		o.MetricsAddress = r.Spec.MetricsAddress
	}
	if o.KubernetesOptions == nil {
		o.KubernetesOptions = r.OwnOptions
	}
	return o.Servers()
}

// stubDomainsOf is kube-dns's ConfigMap with coredns-mcs's stub domains
// added to those live's holds.
func stubDomainsOf(o Options, live Live) (*corev1.ConfigMap, error) {
	existing, err := parseStubs(live.Target)
	if err != nil {
		return nil, err
	}
	return StubDomains(o, existing)
}
