package front

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// This file is the one table of the platforms kubectl mcs front, check and
// explain know: what DNS server each ships, at which versions (each with
// the file it was read from), where its configuration lives, who owns it,
// and how it is recognised. docs/platforms.md's table is generated from it
// (TestPlatformTable).

// Shipped is a DNS server version a platform ships.
type Shipped struct {
	// Release is the platform's release ("Kubernetes 1.35").
	Release string
	// Server is the DNS server and its version ("CoreDNS 1.13.1"), or
	// what is known of it.
	Server string
	// CoreDNS is the CoreDNS version ("1.13.1"), "" where the server is
	// not CoreDNS or the version was not found.
	CoreDNS string
	// Source is the file (repository, path, commit or tag) or page the
	// version was read from.
	Source string
}

// HungCost says what a hung standalone server costs a lookup at this
// version: test/e2e TestFrontAtShippedVersions measures it for every
// CoreDNS version of the table, and docs/platforms.md has its figures
// ("At each CoreDNS version a platform ships").
func (s Shipped) HungCost() string {
	switch {
	case s.CoreDNS == "":
		return "kube-dns has no stand-in: clusterset names fail while it is away"
	case s.ReadTimeout():
		return "the read timeout (" + DefaultReadTimeout.String() + ") per forwarded name, until the health checks mark it down"
	}
	return "2 s per forwarded name (forward's fixed read timeout) in the first seconds of a hang, and in a cluster of any outage until kube-proxy's rules follow; a client with `timeout:1` can fail a lookup then"
}

// ShippedCoreDNS returns the CoreDNS versions of the table, each once, in
// ascending order.
func ShippedCoreDNS() []string {
	var versions []string
	for _, r := range Table {
		for _, v := range r.Versions {
			if v.CoreDNS != "" && !slices.Contains(versions, v.CoreDNS) {
				versions = append(versions, v.CoreDNS)
			}
		}
	}
	slices.SortFunc(versions, func(a, b string) int {
		va, _ := parseVersion(a)
		vb, _ := parseVersion(b)
		return slices.Compare(va[:], vb[:])
	})
	return versions
}

// ShipsCoreDNS reports whether a platform of form p ships CoreDNS version.
func ShipsCoreDNS(p Platform, version string) bool {
	for _, r := range Table {
		if r.Form != p {
			continue
		}
		for _, v := range r.Versions {
			if v.CoreDNS == version {
				return true
			}
		}
	}
	return false
}

// ReadTimeout reports whether this CoreDNS has forward's read_timeout,
// which bounds what a hung standalone server costs (readTimeoutVersion).
func (s Shipped) ReadTimeout() bool {
	v, ok := parseVersion(s.CoreDNS)
	return ok && atLeast(v, readTimeoutVersion)
}

// Ref names an object of the cluster.
type Ref struct {
	Kind      string // ConfigMap, Deployment, DaemonSet, DNS
	Namespace string
	Name      string
	Key       string // the ConfigMap key, if one
	// APIVersion and Resource name an object outside the built-in kinds,
	// which kubectl mcs reads through the dynamic client.
	APIVersion string
	Resource   string
}

func (r Ref) String() string {
	if r.Key != "" {
		return r.Object() + " key " + r.Key
	}
	return r.Object()
}

// Object names the object alone, without the key.
func (r Ref) Object() string {
	s := r.Kind + " "
	if r.Namespace != "" {
		s += r.Namespace + "/"
	}
	return s + r.Name
}

// Info is a row of the table.
type Info struct {
	// Name is what --platform takes.
	Name string
	// Form is how kubectl mcs front writes the configuration.
	Form Platform
	// Title names the platform in the docs.
	Title string
	// Server is the DNS server the platform runs.
	Server string
	// Versions are the versions it ships, with their sources.
	Versions []Shipped
	// Config says where the DNS configuration lives.
	Config string
	// Owner says who owns it, and whether kubectl mcs front may write it.
	Owner string
	// Detect says how kubectl mcs front recognises the platform.
	Detect string
	// Writes says what kubectl mcs front writes.
	Writes string
	// Fallback: the form can send cluster.local names the front's own
	// kubernetes plugin does not know to the standalone server.
	Fallback bool
	// Workload runs the DNS server; its image tag gives the version.
	Workload Ref
	// Corefile is where the live Corefile is read (Kind "" if none).
	Corefile Ref
	// Target is the object --apply writes (Kind "" if --apply cannot).
	Target Ref
	// Object is the object whose whole value the printed form replaces
	// (Kind "" if none): front reads it and keeps what it holds (Live).
	Object Ref
	// Spec is how the configuration's form is written, applied, removed
	// and read back.
	Spec *FormSpec
	// OwnOptions are the options of the platform's own kubernetes stanza,
	// where the cluster's Corefile is not at hand to read them from.
	OwnOptions []string
	// SelfManagedUnless is the field manager that keeps the Corefile's
	// ConfigMap when the platform's manager runs the DNS ("" if none):
	// where no field of it is managed by it, the DNS is self-managed and
	// kubectl mcs front --platform kubeadm --apply edits it.
	SelfManagedUnless string
	// ApplyHow is the supported way to apply what is printed, where
	// --apply does not write it.
	ApplyHow string
	// PrintedAs is the file ApplyHow reads what is printed from ("": it
	// reads it from stdin, piped).
	PrintedAs string
	// match recognises the platform on the cluster's objects.
	match func(e *Evidence) (why string, ok bool)
}

// Label and annotation keys the platforms put on their DNS objects.
const (
	// The Kubernetes addon manager reconciles objects labelled Reconcile
	// and only creates those labelled EnsureExists
	// (cluster/addons/addon-manager/README.md of Kubernetes v1.37.1). The
	// CoreDNS and kube-dns addons label their ConfigMap EnsureExists and
	// their Deployment Reconcile (cluster/addons/dns/coredns/coredns.yaml.in,
	// cluster/addons/dns/kube-dns/kube-dns.yaml.in, Kubernetes v1.37.1).
	AddonManagerLabel = "addonmanager.kubernetes.io/mode"
	// EKS: its CoreDNS pods carry eks.amazonaws.com/component=coredns
	// (awsdocs/amazon-eks-user-guide doc_source/coredns.md selects them by
	// it); the add-on's fields are managed by the field manager "eks"
	// (latest/ug/workloads/kubernetes-field-management.adoc: "Both types of
	// fields are tagged with manager: eks").
	EKSComponentLabel = "eks.amazonaws.com/component"
	EKSFieldManager   = "eks"
	// AKS: "Label kubernetes.azure.com/managedby: aks has been introduced
	// to all managed addon components on cluster" (Azure/AKS CHANGELOG.md).
	AKSManagedByLabel = "kubernetes.azure.com/managedby"
	// k3s applies its manifests (manifests/coredns.yaml) with wrangler's
	// apply, owned by an Addon (pkg/deploy/controller.go of k3s:
	// w.apply.WithOwner(&addon)), which annotates every object with its
	// owner's GVK and name (rancher/wrangler pkg/apply/desiredset_apply.go:
	// objectset.rio.cattle.io/owner-gvk, owner-name).
	WranglerOwnerGVK  = "objectset.rio.cattle.io/owner-gvk"
	WranglerOwnerName = "objectset.rio.cattle.io/owner-name"
	K3sAddonGVK       = "k3s.cattle.io/v1, Kind=Addon"
	// Helm charts label what they install app.kubernetes.io/managed-by:
	// Helm and helm.sh/chart: NAME-VERSION (the coredns chart's
	// coredns.labels, charts/coredns/templates/_helpers.tpl of
	// github.com/coredns/helm).
	HelmManagedByLabel = "app.kubernetes.io/managed-by"
	HelmChartLabel     = "helm.sh/chart"
)

// Evidence is what detection reads of the cluster: each field nil or
// false where the object does not exist.
type Evidence struct {
	CoreDNS        *appsv1.Deployment // kube-system/coredns
	CoreDNSConfig  *corev1.ConfigMap  // kube-system/coredns
	KubeDNS        *appsv1.Deployment // kube-system/kube-dns
	RKE2           *appsv1.Deployment // kube-system/rke2-coredns-rke2-coredns
	OpenShiftDNS   *appsv1.DaemonSet  // openshift-dns/dns-default
	KubeadmConfig  bool               // kube-system/kubeadm-config
	OpenShiftNSDNS bool               // the namespace openshift-dns
}

func labelsOf(objs ...meta.Object) []map[string]string {
	var out []map[string]string
	for _, o := range objs {
		if o != nil && !isNil(o) {
			out = append(out, o.GetLabels())
		}
	}
	return out
}

func isNil(o meta.Object) bool {
	switch v := o.(type) {
	case *appsv1.Deployment:
		return v == nil
	case *corev1.ConfigMap:
		return v == nil
	case *appsv1.DaemonSet:
		return v == nil
	}
	return false
}

func (e *Evidence) coreDNSObjects() []meta.Object {
	var objs []meta.Object
	if e.CoreDNS != nil {
		objs = append(objs, e.CoreDNS, &meta.ObjectMeta{Labels: e.CoreDNS.Spec.Template.Labels})
	}
	if e.CoreDNSConfig != nil {
		objs = append(objs, e.CoreDNSConfig)
	}
	return objs
}

func hasLabel(objs []meta.Object, key, value string) bool {
	for _, l := range labelsOf(objs...) {
		if v, ok := l[key]; ok && (value == "" || v == value) {
			return true
		}
	}
	return false
}

func managedBy(o meta.Object, manager string) bool {
	if o == nil || isNil(o) {
		return false
	}
	return slices.ContainsFunc(o.GetManagedFields(), func(f meta.ManagedFieldsEntry) bool { return f.Manager == manager })
}

func (e *Evidence) mountsCustom() bool {
	if e.CoreDNS == nil {
		return false
	}
	return slices.ContainsFunc(e.CoreDNS.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
		return v.ConfigMap != nil && v.ConfigMap.Name == "coredns-custom"
	})
}

var (
	kubeSystem    = "kube-system"
	coreDNSDeploy = Ref{Kind: "Deployment", Namespace: kubeSystem, Name: "coredns"}
	coreDNSConfig = Ref{Kind: "ConfigMap", Namespace: kubeSystem, Name: "coredns", Key: "Corefile"}
	customConfig  = Ref{Kind: "ConfigMap", Namespace: kubeSystem, Name: "coredns-custom", Key: CustomKey}
	kubeDNSDeploy = Ref{Kind: "Deployment", Namespace: kubeSystem, Name: "kube-dns"}
	kubeDNSConfig = Ref{Kind: "ConfigMap", Namespace: kubeSystem, Name: "kube-dns", Key: "stubDomains"}
	rke2Deploy    = Ref{Kind: "Deployment", Namespace: kubeSystem, Name: "rke2-coredns-rke2-coredns"}
	openShiftDS   = Ref{Kind: "DaemonSet", Namespace: "openshift-dns", Name: "dns-default"}
	openShiftCM   = Ref{Kind: "ConfigMap", Namespace: "openshift-dns", Name: "dns-default", Key: "Corefile"}
	// The DNS resource's plural, dnses, is its kubebuilder resource path
	// (operator/v1/types_dns.go of openshift/api).
	openShiftDNSCR = Ref{Kind: "DNS", Name: "default", APIVersion: "operator.openshift.io/v1", Resource: "dnses"}
	// The HelmChartConfig rke2 documents for rke2-coredns's values
	// (docs/networking/networking_services.md of rancher/rke2-docs).
	rke2Config = Ref{Kind: "HelmChartConfig", Namespace: kubeSystem, Name: "rke2-coredns", APIVersion: "helm.cattle.io/v1", Resource: "helmchartconfigs"}
)

// Sources of the versions below.
const (
	kubeadmSource   = "CoreDNSVersion in cmd/kubeadm/app/constants/constants.go of k8s.io/kubernetes "
	k3sSource       = "Embedded Component Versions of the k3s release notes, github.com/k3s-io/k3s/releases/tag/"
	rke2Source      = "rancher/rke2 scripts/build-images (hardened-coredns tag) and charts/chart_versions.yaml (rke2-coredns 1.47.003), branch "
	eksDocsSource   = "the CoreDNS versions table of docs.aws.amazon.com/eks/latest/userguide/managing-coredns.html (the stored copy lists up to 1.34)"
	eksDistroSource = "aws/eks-distro projects/coredns/coredns/%s/GIT_TAG at 178844623f23 (EKS Distro's build, not the add-on's version, which was not found for this minor)"
	aksSource       = "Azure/AKS CHANGELOG.md at 8d1c890900df"
	openShiftSource = "CoreVersion in coremain/version.go of openshift/coredns, branch "
)

// Table is the platforms, in the order detection tries them (and the docs
// list them): the first whose match is true on a cluster's objects is its
// platform, so a platform whose manager marks its objects comes before the
// forms any CoreDNS could take (EKS and AKS before kubeadm).
var Table = []Info{
	{
		Name: "openshift", Form: OpenShift, Title: "OpenShift (DNS operator)",
		Server: "CoreDNS (openshift/coredns), a DaemonSet openshift-dns/dns-default the operator writes",
		Versions: []Shipped{
			{Release: "OpenShift 4.19, 4.20", Server: "CoreDNS 1.11.3", CoreDNS: "1.11.3", Source: openShiftSource + "release-4.19, release-4.20"},
			{Release: "OpenShift 4.21, 4.22, 4.23", Server: "CoreDNS 1.13.1", CoreDNS: "1.13.1", Source: openShiftSource + "release-4.21 to release-4.23 (main: the same)"},
		},
		Config:   "`spec.servers` of `dns.operator.openshift.io/default`, which the operator renders into ConfigMap openshift-dns/dns-default (openshift/cluster-dns-operator pkg/operator/controller/controller_dns_configmap.go)",
		Owner:    "the DNS operator owns openshift-dns; the DNS resource `default` is the cluster admin's, and `spec.servers` is the supported way (each entry a server block that only forwards)",
		Detect:   "the DaemonSet openshift-dns/dns-default, or the namespace openshift-dns (pkg/operator/controller/names.go: DefaultOperandNamespace, \"dns-\" + the DNS's name)",
		Writes:   "the DNS resource with `spec.servers` whole: the entries it has, kept, and an entry `coredns-mcs` forwarding clusterset.local and the reverse zones to the standalone Service (`kubectl apply -f -`)",
		Workload: openShiftDS, Corefile: openShiftCM, Object: openShiftDNSCR, Spec: openShiftForm,
		ApplyHow: "kubectl apply -f - (what is printed holds spec.servers whole: the entries read from dns.operator.openshift.io/default, kept, and coredns-mcs's)",
		match: func(e *Evidence) (string, bool) {
			if e.OpenShiftDNS != nil {
				return "the DaemonSet openshift-dns/dns-default runs (OpenShift's DNS operator)", true
			}
			return "the namespace openshift-dns exists (OpenShift's DNS operator)", e.OpenShiftNSDNS
		},
	},
	{
		Name: "eks", Form: EKS, Title: "EKS CoreDNS add-on",
		Server: "CoreDNS (the add-on's eksbuild images)",
		Versions: []Shipped{
			{Release: "EKS 1.33, 1.34 (add-on)", Server: "CoreDNS 1.12.4 (v1.12.4-eksbuild.1)", CoreDNS: "1.12.4", Source: eksDocsSource},
			{Release: "EKS 1.35 (EKS Distro)", Server: "CoreDNS 1.14.3", CoreDNS: "1.14.3", Source: fmt.Sprintf(eksDistroSource, "1-35")},
			{Release: "EKS 1.36 (EKS Distro)", Server: "CoreDNS 1.14.3", CoreDNS: "1.14.3", Source: fmt.Sprintf(eksDistroSource, "1-36")},
		},
		Config:   "the add-on's configuration value `corefile` (`aws eks update-addon --configuration-values`), which the add-on writes into ConfigMap kube-system/coredns",
		Owner:    "the EKS add-on manager (field manager `eks`) owns kube-system/coredns and reverts edits to its fields: `--apply` refuses; a self-managed CoreDNS (no `eks` manager) is yours, edited as kubeadm's (`--platform kubeadm --apply`)",
		Detect:   "kube-system/coredns (its labels or its pods') labelled `eks.amazonaws.com/component`, or fields of it or its ConfigMap managed by `eks`",
		Writes:   "the add-on configuration as JSON: `{\"corefile\": ...}`, the cluster's Corefile with the blocks merged in",
		Fallback: true,
		Workload: coreDNSDeploy, Corefile: coreDNSConfig, Spec: eksAddonForm, OwnOptions: kubeadmOptions,
		SelfManagedUnless: EKSFieldManager, PrintedAs: "value.json",
		ApplyHow: "aws eks update-addon --cluster-name CLUSTER --addon-name coredns --configuration-values file://value.json (value.json: what kubectl mcs front --platform eks prints)",
		match: func(e *Evidence) (string, bool) {
			if managedBy(e.CoreDNS, EKSFieldManager) || managedBy(e.CoreDNSConfig, EKSFieldManager) {
				return "fields of kube-system/coredns are managed by \"eks\" (the EKS add-on)", true
			}
			if hasLabel(e.coreDNSObjects(), EKSComponentLabel, "") {
				return "kube-system/coredns is labelled " + EKSComponentLabel + " (EKS)", true
			}
			return "", false
		},
	},
	{
		Name: "aks", Form: AKS, Title: "AKS",
		Server: "CoreDNS (mcr.microsoft.com/oss/v2/kubernetes/coredns images)",
		Versions: []Shipped{
			{Release: "AKS, Kubernetes 1.34 and later", Server: "CoreDNS 1.13.1 (v1.13.1-1)", CoreDNS: "1.13.1", Source: aksSource + " (\"CoreDNS image on AKS clusters with version >= 1.34.0 updated to v1.13.1-1\")"},
			{Release: "AKS release v20260717 (Kubernetes minors not stated)", Server: "CoreDNS 1.14.3 (v1.14.3-11), besides 1.11.3, 1.12.1, 1.13.1", CoreDNS: "1.14.3", Source: aksSource + " (release notes 2026-07-17: CoreDNS images updated)"},
		},
		Config:   "the keys of ConfigMap kube-system/coredns-custom: `*.server` are server blocks of their own (\"Customize CoreDNS with Azure Kubernetes Service\")",
		Owner:    "AKS owns kube-system/coredns (labelled `kubernetes.azure.com/managedby: aks`); coredns-custom is yours: `--apply` writes its key",
		Detect:   "kube-system/coredns labelled `kubernetes.azure.com/managedby: aks`",
		Writes:   "the key `multicluster.server` of ConfigMap kube-system/coredns-custom",
		Fallback: true,
		Workload: coreDNSDeploy, Corefile: coreDNSConfig, Target: customConfig, Spec: customKeyForm, OwnOptions: kubeadmOptions,
		match: func(e *Evidence) (string, bool) {
			return "kube-system/coredns is labelled " + AKSManagedByLabel + ": aks (AKS)", hasLabel(e.coreDNSObjects(), AKSManagedByLabel, "aks")
		},
	},
	{
		Name: "k3s", Form: K3s, Title: "k3s",
		Server: "CoreDNS (rancher/mirrored-coredns-coredns)",
		Versions: []Shipped{
			{Release: "k3s v1.35.6+k3s1", Server: "CoreDNS 1.14.4", CoreDNS: "1.14.4", Source: k3sSource + "v1.35.6+k3s1"},
			{Release: "k3s v1.36.1+k3s1", Server: "CoreDNS 1.14.3", CoreDNS: "1.14.3", Source: k3sSource + "v1.36.1+k3s1"},
			{Release: "k3s v1.36.2+k3s1 (pre-release)", Server: "CoreDNS 1.14.4", CoreDNS: "1.14.4", Source: k3sSource + "v1.36.2+k3s1"},
		},
		Config:   "ConfigMap kube-system/coredns-custom: its Corefile imports `/etc/coredns/custom/*.server` at the top level and `*.override` in `.:53` from that optional ConfigMap (manifests/coredns.yaml of k3s)",
		Owner:    "k3s's deploy controller owns kube-system/coredns and rewrites it from its manifest; coredns-custom is yours: `--apply` writes its key",
		Detect:   "kube-system/coredns annotated `objectset.rio.cattle.io/owner-gvk: k3s.cattle.io/v1, Kind=Addon`, or mounting the ConfigMap coredns-custom",
		Writes:   "the key `multicluster.server` of ConfigMap kube-system/coredns-custom",
		Fallback: true,
		Workload: coreDNSDeploy, Corefile: coreDNSConfig, Target: customConfig, Spec: customKeyForm,
		// manifests/coredns.yaml of k3s: pods insecure, no ttl.
		OwnOptions: []string{"pods insecure"},
		match: func(e *Evidence) (string, bool) {
			if e.CoreDNS != nil && e.CoreDNS.Annotations[WranglerOwnerGVK] == K3sAddonGVK {
				return "kube-system/coredns is applied by k3s's deploy controller (" + WranglerOwnerGVK + ": " + K3sAddonGVK + ")", true
			}
			return "kube-system/coredns mounts the ConfigMap coredns-custom (k3s's form; AKS's too: --platform aks)", e.mountsCustom()
		},
	},
	{
		Name: "rke2", Form: RKE2, Title: "rke2",
		Server: "CoreDNS (rancher/hardened-coredns), chart rke2-coredns",
		Versions: []Shipped{
			{Release: "rke2 1.35", Server: "CoreDNS 1.14.7 (v1.14.7-build20260819)", CoreDNS: "1.14.7", Source: rke2Source + "release-1.35 at 624a9190708b"},
			{Release: "rke2 1.36", Server: "CoreDNS 1.14.7 (v1.14.7-build20260819)", CoreDNS: "1.14.7", Source: rke2Source + "release-1.36 at d9ca309c023e"},
		},
		Config:   "the values of the HelmChart kube-system/rke2-coredns, given by a HelmChartConfig of that name",
		Owner:    "rke2's helm-controller owns the chart's objects and rewrites them from the chart: `--apply` prints the HelmChartConfig to apply",
		Detect:   "the Deployment kube-system/rke2-coredns-rke2-coredns (rancher/rke2 tests/client.go)",
		Writes:   "the HelmChartConfig kube-system/rke2-coredns: the values it has, kept, with `servers[]` (the coredns chart's form) holding its servers (else the chart's default) and the added ones",
		Fallback: true,
		Workload: rke2Deploy, Object: rke2Config, Spec: rke2ConfigForm, OwnOptions: kubeadmOptions,
		ApplyHow: "kubectl apply -f - (what is printed holds valuesContent whole: the values read from HelmChartConfig kube-system/rke2-coredns, kept; rke2 then upgrades its rke2-coredns chart)",
		match: func(e *Evidence) (string, bool) {
			return "kube-system/rke2-coredns-rke2-coredns runs", e.RKE2 != nil
		},
	},
	{
		Name: "coredns-chart", Form: CoreDNSChart, Title: "coredns Helm chart",
		Server: "CoreDNS (the chart's appVersion unless its values set image.tag)",
		Versions: []Shipped{
			{Release: "chart 1.46.2", Server: "CoreDNS 1.13.1 (appVersion)", CoreDNS: "1.13.1", Source: "charts/coredns/Chart.yaml of coredns/helm at caac03169738"},
		},
		Config:   "the release's values: `servers[]` (charts/coredns/values.yaml of coredns/helm)",
		Owner:    "Helm owns the ConfigMap it renders (`app.kubernetes.io/managed-by: Helm`): `--apply` prints the values for `helm upgrade`",
		Detect:   "kube-system/coredns labelled `app.kubernetes.io/managed-by: Helm` and `helm.sh/chart: coredns-...`",
		Writes:   "`servers[]`: the chart's default server, then the added ones",
		Fallback: true,
		Workload: coreDNSDeploy, Spec: chartForm, OwnOptions: kubeadmOptions, PrintedAs: "values.yaml",
		ApplyHow: "helm upgrade RELEASE coredns/coredns --reuse-values -f values.yaml (values.yaml: what kubectl mcs front --platform coredns-chart prints)",
		match: func(e *Evidence) (string, bool) {
			if e.CoreDNS == nil || e.CoreDNS.Labels[HelmManagedByLabel] != "Helm" || !strings.HasPrefix(e.CoreDNS.Labels[HelmChartLabel], "coredns-") {
				return "", false
			}
			return "kube-system/coredns is the coredns Helm chart's (" + HelmChartLabel + ": " + e.CoreDNS.Labels[HelmChartLabel] + ")", true
		},
	},
	{
		Name: "kubeadm", Form: Kubeadm, Title: "kubeadm, and any CoreDNS whose Corefile you may edit",
		Server: "CoreDNS (registry.k8s.io/coredns/coredns)",
		Versions: []Shipped{
			{Release: "Kubernetes 1.35", Server: "CoreDNS 1.13.1", CoreDNS: "1.13.1", Source: kubeadmSource + "v1.35.0 and v1.35.4"},
			{Release: "Kubernetes 1.36", Server: "CoreDNS 1.14.2", CoreDNS: "1.14.2", Source: kubeadmSource + "v1.36.0 and v1.36.3"},
			{Release: "Kubernetes 1.37", Server: "CoreDNS " + KubeadmCoreDNSVersion, CoreDNS: KubeadmCoreDNSVersion, Source: kubeadmSource + "v1.37.1 and v1.37.2"},
		},
		Config:   "ConfigMap kube-system/coredns key Corefile (cmd/kubeadm/app/phases/addons/dns/manifests.go)",
		Owner:    "the cluster admin: kubeadm writes it at init and upgrade only; `--apply` writes it",
		Detect:   "the ConfigMap kube-system/kubeadm-config; any other kube-system/coredns no manager claims is edited the same way",
		Writes:   "the Corefile with the added blocks merged in between two markers",
		Fallback: true,
		Workload: coreDNSDeploy, Corefile: coreDNSConfig, Target: coreDNSConfig, Spec: corefileForm, OwnOptions: kubeadmOptions,
		match: func(e *Evidence) (string, bool) {
			return "kube-system/kubeadm-config exists", e.CoreDNS != nil && e.KubeadmConfig
		},
	},
	{
		Name: "gke", Form: KubeDNS, Title: "GKE (kube-dns)",
		Server: "kube-dns (GKE Standard's default; Autopilot uses Cloud DNS for GKE)",
		Versions: []Shipped{
			{Release: "GKE", Server: "kube-dns (GKE's version was not found); not CoreDNS", Source: "cloud.google.com/kubernetes-engine/docs/how-to/kube-dns"},
		},
		Config:   "`stubDomains` of ConfigMap kube-system/kube-dns (labelled `addonmanager.kubernetes.io/mode: EnsureExists`: the addon manager creates it and leaves edits alone). With Cloud DNS for GKE (Autopilot's default) kube-dns does not answer, and whether Cloud DNS honours those stub domains was not found",
		Owner:    "GKE's addon manager owns the kube-dns Deployment (Reconcile), not its ConfigMap: `--apply` writes the stub domains (not on Autopilot, where kube-dns's configuration may not be changed)",
		Detect:   "the Deployment kube-system/kube-dns labelled `addonmanager.kubernetes.io/mode: Reconcile`, without kube-system/coredns",
		Writes:   "`stubDomains` for clusterset.local and the reverse zones, added to the ones it has (no cluster.local fallback)",
		Workload: kubeDNSDeploy, Target: kubeDNSConfig, Spec: stubDomainsForm,
		match: func(e *Evidence) (string, bool) {
			return "kube-system/kube-dns runs, reconciled by the addon manager, no kube-system/coredns (GKE)", e.CoreDNS == nil && e.KubeDNS != nil && e.KubeDNS.Labels[AddonManagerLabel] == "Reconcile"
		},
	},
	{
		Name: "kube-dns", Form: KubeDNS, Title: "kube-dns instead of CoreDNS",
		Server: "kube-dns",
		Versions: []Shipped{
			{Release: "the Kubernetes addon, v1.37.1", Server: "kube-dns 1.26.8 (k8s-dns-kube-dns); not CoreDNS", Source: "cluster/addons/dns/kube-dns/kube-dns.yaml.in of Kubernetes v1.37.1"},
		},
		Config:   "`stubDomains` of ConfigMap kube-system/kube-dns",
		Owner:    "the cluster admin (the addon's ConfigMap is EnsureExists): `--apply` writes it",
		Detect:   "the Deployment kube-system/kube-dns, without kube-system/coredns",
		Writes:   "`stubDomains` for clusterset.local and the reverse zones, added to the ones it has (no cluster.local fallback)",
		Workload: kubeDNSDeploy, Target: kubeDNSConfig, Spec: stubDomainsForm,
		match: func(e *Evidence) (string, bool) {
			return "kube-system/kube-dns runs, no kube-system/coredns", e.CoreDNS == nil && e.KubeDNS != nil
		},
	},
}

// kubeadmAny is how any other kube-system/coredns is taken: kubeadm's
// form, its ConfigMap edited.
func kubeadmAny(e *Evidence) (string, bool) {
	return "kube-system/coredns reads the ConfigMap coredns, which no manager claims; name --platform eks or coredns-chart if its Corefile is managed elsewhere", e.CoreDNS != nil
}

// HowToApply is the supported way to apply what kubectl mcs front prints
// for the row, where --apply does not write it.
func (r *Info) HowToApply() string {
	if r.PrintedAs == "" {
		return "kubectl mcs front --platform " + r.Name + " | " + r.ApplyHow
	}
	return "kubectl mcs front --platform " + r.Name + " > " + r.PrintedAs + ", then " + r.ApplyHow
}

// Lookup returns the row named name (--platform).
func Lookup(name string) (*Info, bool) {
	for i := range Table {
		if Table[i].Name == name {
			return &Table[i], true
		}
	}
	return nil, false
}

// RowOf returns the row of a form: the one named after it.
func RowOf(p Platform) *Info {
	if r, ok := Lookup(string(p)); ok {
		return r
	}
	r, _ := Lookup(string(Kubeadm))
	return r
}

// Detect returns the row of the platform whose objects e shows, and why.
func Detect(e *Evidence) (*Info, string, error) {
	for i := range Table {
		if why, ok := Table[i].match(e); ok {
			return &Table[i], why, nil
		}
	}
	if why, ok := kubeadmAny(e); ok {
		r, _ := Lookup("kubeadm")
		return r, why, nil
	}
	return nil, "", fmt.Errorf("no cluster DNS found (kube-system/coredns, kube-dns, rke2-coredns-rke2-coredns, openshift-dns/dns-default): name it with --platform")
}

// Manager is who keeps an object that kubectl mcs front would write, when
// it is not the cluster admin: a change there is reverted, or takes the
// object from its manager.
type Manager struct {
	Who     string // who keeps it
	Because string // the label, annotation or field manager that says so
	Instead string // the supported way to get the blocks in
}

// ManagerOf returns who keeps obj (the object at ref), or nil when no
// platform manager claims it and it may be written.
func ManagerOf(obj meta.Object, ref Ref) *Manager {
	if obj == nil || isNil(obj) {
		return nil
	}
	l, a := obj.GetLabels(), obj.GetAnnotations()
	switch {
	case managedBy(obj, EKSFieldManager):
		return &Manager{Who: "the Amazon EKS add-on", Because: "fields managed by \"eks\"", Instead: RowOf(EKS).HowToApply()}
	case a[WranglerOwnerGVK] == K3sAddonGVK:
		return &Manager{Who: "k3s's deploy controller (Addon " + a[WranglerOwnerName] + ")", Because: WranglerOwnerGVK + ": " + K3sAddonGVK, Instead: "kubectl mcs front --platform k3s --apply (the ConfigMap coredns-custom, which k3s imports and leaves alone)"}
	case l[AddonManagerLabel] == "Reconcile":
		return &Manager{Who: "the addon manager", Because: AddonManagerLabel + ": Reconcile", Instead: "the platform's own way of configuring its DNS (docs/platforms.md)"}
	case l[AKSManagedByLabel] == "aks" && ref.Name != customConfig.Name:
		// AKS documents coredns-custom as the place for the user's blocks.
		return &Manager{Who: "AKS", Because: AKSManagedByLabel + ": aks", Instead: "kubectl mcs front --platform aks --apply (the ConfigMap coredns-custom)"}
	case l[HelmManagedByLabel] == "Helm":
		chart := l[HelmChartLabel]
		instead := "the chart's values (" + RowOf(CoreDNSChart).HowToApply() + ")"
		if strings.HasPrefix(chart, "rke2-coredns") {
			instead = RowOf(RKE2).HowToApply()
		}
		return &Manager{Who: "Helm (chart " + chart + ")", Because: HelmManagedByLabel + ": Helm", Instead: instead}
	}
	return nil
}

// OwnedError is what --apply says when the object it would write is kept
// by a manager.
func OwnedError(ref Ref, m *Manager) error {
	return fmt.Errorf("--apply: %s is kept by %s (%s): a change there would be reverted or would take it from its manager; instead: %s", ref, m.Who, m.Because, m.Instead)
}

// Markdown renders Table as the two tables of docs/platforms.md: the
// platforms, then the versions each ships with their sources.
func Markdown() string {
	var b strings.Builder
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	b.WriteString("| platform (`--platform`) | DNS server | its DNS configuration | owner: may `kubectl mcs front --apply` write it? | detected by | `kubectl mcs front` writes | `cluster.local` fallback |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, r := range Table {
		fallback := "no: `clusterset.local` and PTR only"
		if r.Fallback {
			fallback = "yes"
		}
		fmt.Fprintf(&b, "| %s (`%s`) | %s | %s | %s | %s | %s | %s |\n", cell(r.Title), r.Name, cell(r.Server), cell(r.Config), cell(r.Owner), cell(r.Detect), cell(r.Writes), fallback)
	}
	b.WriteString("\n| platform | release | DNS server | read from | forward's `read_timeout` (CoreDNS 1.14.5 on) | a hung standalone server costs, per forwarded name |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, r := range Table {
		for _, v := range r.Versions {
			rt := "no"
			switch {
			case v.CoreDNS == "":
				rt = "not CoreDNS"
			case r.Spec.NoReadTimeout != "":
				rt = r.Spec.NoReadTimeout
			case v.ReadTimeout():
				rt = "yes"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", r.Name, cell(v.Release), cell(v.Server), cell(v.Source), rt, cell(v.HungCost()))
		}
	}
	return b.String()
}
