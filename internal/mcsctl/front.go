package mcsctl

import (
	"context"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/coredns/caddy/caddyfile"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	kubeclient "k8s.io/client-go/kubernetes"

	"github.com/coredns-mcs/coredns-mcs/internal/front"
)

// frontOptions are the flags of kubectl mcs front.
type frontOptions struct {
	platform      string
	standalone    string // namespace/name of the standalone Service
	cidrs         stringList
	clusterDomain string
	readTimeout   time.Duration
	// clustersetReadTimeout: the same in the clusterset and reverse zones.
	clustersetReadTimeout time.Duration
	version               string
	apply                 bool
	remove                bool
}

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

func (f *frontOptions) flags(fs *flag.FlagSet) {
	fs.StringVar(&f.platform, "platform", "", "the cluster DNS's platform: "+strings.Join(front.PlatformNames(), ", ")+" (default: detected)")
	fs.StringVar(&f.standalone, "standalone-service", "kube-system/coredns-mcs", "NAMESPACE/NAME of the standalone coredns-mcs Service")
	fs.Var(&f.cidrs, "clusterset-cidr", "a ClusterSetIP range whose PTR coredns-mcs answers (repeat for several)")
	fs.StringVar(&f.clusterDomain, "cluster-domain", front.DefaultClusterDomain, "the cluster's DNS domain")
	fs.DurationVar(&f.readTimeout, "read-timeout", front.DefaultReadTimeout, "how long the cluster DNS waits for coredns-mcs in the cluster domain before answering NXDOMAIN itself")
	fs.DurationVar(&f.clustersetReadTimeout, "clusterset-read-timeout", front.DefaultClustersetReadTimeout, "how long the cluster DNS waits for coredns-mcs in the clusterset and reverse zones before answering SERVFAIL itself")
	fs.StringVar(&f.version, "coredns-version", "", "the cluster DNS's CoreDNS version, e.g. 1.12.1 (default: read from its image tag)")
	fs.BoolVar(&f.apply, "apply", false, "apply the configuration instead of printing it")
	fs.BoolVar(&f.remove, "remove", false, "the configuration without coredns-mcs: what removes it")
}

// frontCmd prints, or applies, the configuration the cluster's DNS needs
// to forward to coredns-mcs standalone: for the platform detected (or
// named), with the standalone Service's current ClusterIP and the options
// of the cluster DNS's own kubernetes stanza. stdout gets the payload
// alone (the EKS add-on's JSON value, a Corefile, an object), so that it
// can be piped to jq, kubectl apply or a file:// argument; every note
// goes to stderr.
func frontCmd(ctx context.Context, o *options, f *frontOptions, stdout, stderr io.Writer) (int, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return 1, err
	}
	kube, err := kubeclient.NewForConfig(cfg)
	if err != nil {
		return 1, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return 1, err
	}
	return runFront(ctx, kube, dyn, f, stdout, stderr)
}

// runFront is frontCmd on clients.
func runFront(ctx context.Context, kube kubeclient.Interface, dyn dynamic.Interface, f *frontOptions, stdout, stderr io.Writer) (int, error) {
	row, why, err := f.detect(ctx, kube)
	if err != nil {
		return 1, err
	}
	fmt.Fprintf(stderr, "# platform: %s (%s)\n", row.Name, why)

	live, err := liveCorefile(ctx, kube, row)
	if err != nil {
		return 1, err
	}
	object, err := liveObject(ctx, dyn, row.Object, stderr)
	if err != nil {
		return 1, err
	}
	opts := front.Options{ClusterDomain: f.clusterDomain, ReverseCIDRs: f.cidrs, ReadTimeout: f.readTimeout, ClustersetReadTimeout: f.clustersetReadTimeout}
	if !f.remove {
		if opts.Standalone, err = standaloneAddress(ctx, kube, f.standalone); err != nil {
			return 1, err
		}
		fmt.Fprintf(stderr, "# standalone Service %s: %s\n", f.standalone, opts.Standalone)
	}
	if live != "" && row.Spec.ServerBlocks {
		opts.KubernetesOptions, opts.MetricsAddress = ownStanza(live, f.clusterDomain)
	}
	if !f.remove && row.Spec.ServerBlocks {
		version, from := f.version, "--coredns-version"
		if version == "" {
			version, from = dnsVersion(ctx, kube, row)
		}
		opts.CoreDNSVersion = version
		switch {
		case version == "":
			fmt.Fprintf(stderr, "# CoreDNS version: unknown (%s): no read_timeout, which CoreDNS before 1.14.5 refuses; %s (--coredns-version sets it)\n", from, oldForwardCost)
		case !opts.UsesReadTimeout():
			fmt.Fprintf(stderr, "# CoreDNS version: %s (%s): no read_timeout before 1.14.5; %s\n", version, from, oldForwardCost)
		default:
			fmt.Fprintf(stderr, "# CoreDNS version: %s (%s)\n", version, from)
		}
	}
	state := front.Live{Corefile: live, Object: object}
	if state.Target, state.TargetFound, err = targetValue(ctx, kube, row.Target); err != nil {
		return 1, err
	}
	if f.remove {
		return frontRemove(ctx, kube, row, state, opts, f.apply, stdout, stderr)
	}
	out, err := row.Render(opts, state)
	if err != nil {
		return 1, err
	}
	if !f.apply {
		fmt.Fprint(stdout, out)
		return 0, nil
	}
	return frontApply(ctx, kube, row, opts, state, stdout, stderr)
}

// liveObject reads the object whose whole value the printed form replaces
// (front.Info.Object), so that what it holds is kept. Missing (or its
// kind not served) it is nil; unreadable, front refuses to print a value
// that would replace what it could not read.
func liveObject(ctx context.Context, dyn dynamic.Interface, ref front.Ref, stderr io.Writer) (map[string]any, error) {
	if ref.Kind == "" {
		return nil, nil
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	resource := dyn.Resource(gv.WithResource(ref.Resource))
	var get dynamic.ResourceInterface = resource
	if ref.Namespace != "" {
		get = resource.Namespace(ref.Namespace)
	}
	obj, err := get.Get(ctx, ref.Name, meta.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		fmt.Fprintf(stderr, "# %s (%s): none yet\n", ref, ref.APIVersion)
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s (%s), whose value what is printed replaces whole: %w", ref, ref.APIVersion, err)
	}
	fmt.Fprintf(stderr, "# %s (%s): what it holds is kept\n", ref, ref.APIVersion)
	return obj.Object, nil
}

// oldForwardCost is what a hung standalone server costs behind a CoreDNS
// without forward's read_timeout, as test/e2e TestFrontAtShippedVersions
// measures it at every such version (docs/platforms.md).
const oldForwardCost = "a hung coredns-mcs costs a pod's lookup forward's fixed 2 s (one search-path expansion is forwarded) until two failed health checks mark it down, a few seconds; a client with resolv.conf timeout:1 can fail a lookup then (docs/platforms.md: At each CoreDNS version a platform ships). CoreDNS 1.14.5 and later keep it to the read timeout"

// detect returns the platform of --platform, else the one the cluster's
// DNS objects show (front.Detect, on front.Table), and why.
func (f *frontOptions) detect(ctx context.Context, kube kubeclient.Interface) (*front.Info, string, error) {
	if f.platform != "" {
		row, ok := front.Lookup(f.platform)
		if !ok {
			_, err := front.ParsePlatform(f.platform)
			return nil, "", err
		}
		return row, "--platform", nil
	}
	e, err := gatherEvidence(ctx, kube)
	if err != nil {
		return nil, "", err
	}
	return front.Detect(e)
}

// gatherEvidence reads the objects front.Detect recognises platforms by.
// Only the cluster DNS Deployment kube-system/coredns must be readable;
// any other object that cannot be read counts as missing.
func gatherEvidence(ctx context.Context, kube kubeclient.Interface) (*front.Evidence, error) {
	e := &front.Evidence{}
	deploys := kube.AppsV1().Deployments("kube-system")
	d, err := deploys.Get(ctx, "coredns", meta.GetOptions{})
	switch {
	case err == nil:
		e.CoreDNS = d
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("the cluster DNS Deployment kube-system/coredns: %w", err)
	}
	if cm, err := kube.CoreV1().ConfigMaps("kube-system").Get(ctx, "coredns", meta.GetOptions{}); err == nil {
		e.CoreDNSConfig = cm
	}
	if d, err := deploys.Get(ctx, "kube-dns", meta.GetOptions{}); err == nil {
		e.KubeDNS = d
	}
	if d, err := deploys.Get(ctx, "rke2-coredns-rke2-coredns", meta.GetOptions{}); err == nil {
		e.RKE2 = d
	}
	if _, err := kube.CoreV1().ConfigMaps("kube-system").Get(ctx, "kubeadm-config", meta.GetOptions{}); err == nil {
		e.KubeadmConfig = true
	}
	if ds, err := kube.AppsV1().DaemonSets("openshift-dns").Get(ctx, "dns-default", meta.GetOptions{}); err == nil {
		e.OpenShiftDNS = ds
	}
	if _, err := kube.CoreV1().Namespaces().Get(ctx, "openshift-dns", meta.GetOptions{}); err == nil {
		e.OpenShiftNSDNS = true
	}
	return e, nil
}

// dnsVersion reads the cluster DNS's CoreDNS version from the tag of the
// image of the platform's DNS workload, and says where it looked.
func dnsVersion(ctx context.Context, kube kubeclient.Interface, row *front.Info) (version, from string) {
	w := row.Workload
	var containers []corev1.Container
	switch w.Kind {
	case "Deployment":
		d, err := kube.AppsV1().Deployments(w.Namespace).Get(ctx, w.Name, meta.GetOptions{})
		if err != nil {
			return "", "no " + w.String()
		}
		containers = d.Spec.Template.Spec.Containers
	case "DaemonSet":
		d, err := kube.AppsV1().DaemonSets(w.Namespace).Get(ctx, w.Name, meta.GetOptions{})
		if err != nil {
			return "", "no " + w.String()
		}
		containers = d.Spec.Template.Spec.Containers
	default:
		return "", "no DNS workload known for " + row.Name
	}
	for _, c := range containers {
		image := c.Image
		if i := strings.LastIndex(image, "@"); i >= 0 {
			image = image[:i]
		}
		i := strings.LastIndex(image, ":")
		if i < 0 || strings.Contains(image[i:], "/") {
			continue
		}
		if v := image[i+1:]; versionTag.MatchString(v) {
			return strings.TrimPrefix(v, "v"), "image " + c.Image
		}
	}
	return "", "no version in the image tags of " + w.String()
}

var versionTag = regexp.MustCompile(`^v?\d+\.\d+\.\d+`)

// liveCorefile returns the cluster DNS's Corefile where the platform keeps
// one the cluster can show (front.Info.Corefile), or "".
func liveCorefile(ctx context.Context, kube kubeclient.Interface, row *front.Info) (string, error) {
	ref := row.Corefile
	if ref.Kind == "" {
		return "", nil
	}
	cm, err := kube.CoreV1().ConfigMaps(ref.Namespace).Get(ctx, ref.Name, meta.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) && !row.Spec.NeedsCorefile {
			return "", nil
		}
		return "", fmt.Errorf("the cluster DNS's Corefile (%s): %w", ref, err)
	}
	return cm.Data[ref.Key], nil
}

// targetValue returns the value of the key of the ConfigMap --apply writes
// (front.Info.Target), and whether the ConfigMap exists.
func targetValue(ctx context.Context, kube kubeclient.Interface, ref front.Ref) (string, bool, error) {
	if ref.Kind == "" {
		return "", false, nil
	}
	cm, err := kube.CoreV1().ConfigMaps(ref.Namespace).Get(ctx, ref.Name, meta.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("%s: %w", ref, err)
	}
	return cm.Data[ref.Key], true, nil
}

// standaloneAddress returns the ClusterIP of the standalone Service.
func standaloneAddress(ctx context.Context, kube kubeclient.Interface, name string) (string, error) {
	ns, n, err := splitName(name)
	if err != nil {
		return "", fmt.Errorf("--standalone-service %w", err)
	}
	svc, err := kube.CoreV1().Services(ns).Get(ctx, n, meta.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("the standalone Service %s: %w (install it: kubectl apply --server-side -k manifests/standalone)", name, err)
	}
	ip := svc.Spec.ClusterIP
	if ip == "" || ip == corev1.ClusterIPNone {
		return "", fmt.Errorf("the standalone Service %s has no ClusterIP (%q): the cluster's DNS forwards to an address", name, ip)
	}
	return ip, nil
}

var importLine = regexp.MustCompile(`(?m)^\s*import\s.*$`)

// ownStanza returns the options of the kubernetes stanza of the Corefile's
// block for the cluster domain (without fallthrough and what names the
// API server), and the prometheus plugin's address of that block: the
// added blocks use the same, so that local names answer as the cluster
// DNS's own block answers them and one metrics listener serves all.
func ownStanza(text, domain string) (options []string, metrics string) {
	// Imports (k3s's coredns-custom) name files of the DNS pods.
	blocks, err := caddyfile.Parse("Corefile", strings.NewReader(importLine.ReplaceAllString(front.Remove(text), "")), nil)
	if err != nil {
		return nil, ""
	}
	cf := &corefile{blocks: blocks}
	b, _, ok := cf.blockFor("x.svc." + strings.TrimSuffix(domain, ".") + ".")
	if !ok {
		return nil, ""
	}
	for _, t := range b.Tokens["prometheus"] {
		if t.Text != "prometheus" {
			metrics = t.Text
			break
		}
	}
	tokens := b.Tokens["kubernetes"]
	var line []string
	lastLine, depth := -1, 0
	flush := func() {
		if len(line) > 0 && !slices.Contains([]string{"fallthrough", "kubeconfig", "endpoint", "tls"}, line[0]) {
			options = append(options, strings.Join(line, " "))
		}
		line = nil
	}
	for _, t := range tokens {
		switch {
		case t.Text == "{":
			depth++
			continue
		case t.Text == "}":
			flush()
			depth--
			continue
		case depth == 0:
			continue // the directive and its zones
		}
		if t.Line != lastLine {
			flush()
			lastLine = t.Line
		}
		line = append(line, t.Text)
	}
	flush()
	if options == nil {
		options = []string{}
	}
	return options, metrics
}

// refuseManaged returns the error --apply gives when the object ref,
// which it would write, is kept by a platform manager (front.ManagerOf).
func refuseManaged(ctx context.Context, kube kubeclient.Interface, ref front.Ref) error {
	cm, err := kube.CoreV1().ConfigMaps(ref.Namespace).Get(ctx, ref.Name, meta.GetOptions{})
	if err != nil {
		return nil // missing (created) or unreadable (the write says why)
	}
	if m := front.ManagerOf(cm, ref); m != nil {
		return front.OwnedError(ref, m)
	}
	return nil
}

// notAnObject is the error of --apply where the platform takes its
// configuration elsewhere than an object front writes.
func notAnObject(ctx context.Context, kube kubeclient.Interface, row *front.Info, what string) error {
	err := fmt.Errorf("--apply: %s's DNS configuration is not an object kubectl mcs front writes (%s): apply %s with %s", row.Name, row.Owner, what, row.ApplyHow)
	if selfManaged(ctx, kube, row) {
		err = fmt.Errorf("%w; %s has no fields managed by %q, so if CoreDNS is self-managed (not the platform's add-on), kubectl mcs front --platform kubeadm --apply edits its ConfigMap", err, row.Corefile.Object(), row.SelfManagedUnless)
	}
	return err
}

// selfManaged reports whether the Corefile's ConfigMap of a platform whose
// manager keeps it (front.Info.SelfManagedUnless) has no field of that
// manager: a DNS the user runs, edited as kubeadm's.
func selfManaged(ctx context.Context, kube kubeclient.Interface, row *front.Info) bool {
	if row.SelfManagedUnless == "" {
		return false
	}
	cm, err := kube.CoreV1().ConfigMaps(row.Corefile.Namespace).Get(ctx, row.Corefile.Name, meta.GetOptions{})
	return err == nil && !slices.ContainsFunc(cm.ManagedFields, func(f meta.ManagedFieldsEntry) bool { return f.Manager == row.SelfManagedUnless })
}

// frontApply writes the configuration into the object the platform takes
// it from (front.Info.Target), unless a platform manager keeps that
// object; for the others it prints it and says how to apply it.
func frontApply(ctx context.Context, kube kubeclient.Interface, row *front.Info, opts front.Options, state front.Live, stdout, stderr io.Writer) (int, error) {
	if row.Target.Kind == "" {
		out, err := row.Render(opts, state)
		if err != nil {
			return 1, err
		}
		fmt.Fprint(stdout, out)
		return 1, notAnObject(ctx, kube, row, "what is printed")
	}
	if err := refuseManaged(ctx, kube, row.Target); err != nil {
		return 1, err
	}
	value, err := row.ApplyValue(opts, state)
	if err != nil {
		return 1, err
	}
	if err := setConfigMapKey(ctx, kube, row.Target, value); err != nil {
		return 1, err
	}
	fmt.Fprintln(stderr, row.Spec.Applied)
	return 0, nil
}

// frontRemove prints, or applies, the configuration without coredns-mcs.
func frontRemove(ctx context.Context, kube kubeclient.Interface, row *front.Info, state front.Live, opts front.Options, apply bool, stdout, stderr io.Writer) (int, error) {
	if !apply || row.Target.Kind == "" {
		out, err := row.Spec.Removal(opts, state)
		if err != nil {
			return 1, err
		}
		fmt.Fprint(stdout, out)
		if apply {
			return 1, notAnObject(ctx, kube, row, "what is printed")
		}
		return 0, nil
	}
	if err := refuseManaged(ctx, kube, row.Target); err != nil {
		return 1, err
	}
	value, drop, err := row.Spec.Unapply(opts, state)
	if err != nil {
		return 1, err
	}
	if drop {
		ref := row.Target
		patch := fmt.Sprintf(`[{"op":"remove","path":"/data/%s"}]`, front.JSONPointerEscape(ref.Key))
		if _, err := kube.CoreV1().ConfigMaps(ref.Namespace).Patch(ctx, ref.Name, types.JSONPatchType, []byte(patch), meta.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
			return 1, err
		}
	} else if err := setConfigMapKey(ctx, kube, row.Target, value); err != nil {
		return 1, err
	}
	fmt.Fprintln(stderr, row.Spec.Removed)
	return 0, nil
}

// setConfigMapKey sets the key of the ConfigMap ref, creating it if it is
// missing, and leaves its other keys alone.
func setConfigMapKey(ctx context.Context, kube kubeclient.Interface, ref front.Ref, value string) error {
	cms := kube.CoreV1().ConfigMaps(ref.Namespace)
	cm, err := cms.Get(ctx, ref.Name, meta.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: ref.Name, Namespace: ref.Namespace}, Data: map[string]string{ref.Key: value}}, meta.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[ref.Key] = value
	_, err = cms.Update(ctx, cm, meta.UpdateOptions{})
	return err
}
