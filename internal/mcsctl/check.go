package mcsctl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/coredns-mcs/coredns-mcs/plugin/multicluster"
	"github.com/coredns/caddy"
	"github.com/coredns/caddy/caddyfile"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/dynamic"
	kubeclient "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// status of one check line.
type status string

const (
	ok   status = "OK"
	warn status = "WARN" // works, with a limit worth knowing
	fail status = "FAIL" // something to fix: check exits 1
)

// Line is one line of check.
type Line struct {
	Status  status `json:"status"`
	Check   string `json:"check"`
	Message string `json:"message"`
}

type checker struct {
	lines []Line
}

func (c *checker) add(s status, check, format string, args ...any) {
	c.lines = append(c.lines, Line{Status: s, Check: check, Message: fmt.Sprintf(format, args...)})
}

// permission is a verb on a resource the server's service account needs.
type permission struct {
	group, resource string
	optional        string // why it may be missing, for a WARN; empty: FAIL
}

// needed is what coredns-mcs reads: the kubernetes plugin's resources and
// the multicluster plugin's (manifests/rbac, manifests/install).
var needed = []permission{
	{"", "services", ""},
	{"", "namespaces", ""},
	{"discovery.k8s.io", "endpointslices", ""},
	{"multicluster.x-k8s.io", "serviceimports", ""},
	{"about.k8s.io", "clusterproperties", "without it answers do not prefer the local cluster (trafficDistribution)"},
}

// check reviews the cluster for coredns-mcs, a line per finding, and
// exits 1 if any line is FAIL.
func check(ctx context.Context, o *options, stdout io.Writer) (int, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return 0, err
	}
	kube, err := kubeclient.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	c := &checker{}
	l := detectLayout(ctx, kube)
	o.resolve(l)
	if l.standalone {
		c.add(ok, "layout", "standalone: %s; reviewing Deployment %s, ConfigMap %s and the cluster's DNS in front of it", l.why, o.deployment, o.configMap)
	} else {
		c.add(ok, "layout", "swap: no standalone coredns-mcs (kube-system/coredns-mcs); reviewing Deployment %s and ConfigMap %s", o.deployment, o.configMap)
	}
	importVersions, propertyVersions := checkCRDs(c, kube)
	user, err := checkImage(ctx, c, kube, o, l)
	if err != nil {
		return 0, err
	}
	if user != "" {
		checkRBAC(ctx, c, kube, user, l)
	}
	if !l.standalone {
		checkSwapOwner(ctx, c, kube, o)
	}
	cf, mcBlock := checkServerCorefile(ctx, c, kube, o, l)
	if l.standalone {
		frontReview(ctx, c, kube, l, cf)
	}
	if _, err := kube.AppsV1().DaemonSets("kube-system").Get(ctx, "node-local-dns", meta.GetOptions{}); err == nil {
		checkNodeLocal(ctx, c, kube)
	}
	if len(propertyVersions) > 0 {
		if err := checkClusterPropertyObject(ctx, c, cfg, propertyVersions[0]); err != nil {
			return 0, err
		}
	}
	if mcBlock != nil && len(importVersions) > 0 {
		checkServedImports(ctx, c, o, cfg, cf, *mcBlock)
	}
	return printLines(c.lines, o.output, stdout)
}

// checkCRDs checks that the API server serves the ServiceImport and
// ClusterProperty kinds, and returns the versions it serves of each.
func checkCRDs(c *checker, kube kubeclient.Interface) (importVersions, propertyVersions []string) {
	importVersions = servedVersions(kube, "multicluster.x-k8s.io", "serviceimports", multicluster.APIVersions()...)
	if len(importVersions) == 0 {
		c.add(fail, "crd", "ServiceImport (serviceimports.multicluster.x-k8s.io) is not served: clusterset names answer SERVFAIL; apply manifests/crds")
	} else {
		c.add(ok, "crd", "ServiceImport served at %s (the plugin watches %s)", strings.Join(importVersions, ", "), importVersions[0])
	}
	propertyVersions = servedVersions(kube, "about.k8s.io", "clusterproperties", multicluster.APIVersions()...)
	if len(propertyVersions) == 0 {
		c.add(warn, "crd", "ClusterProperty (clusterproperties.about.k8s.io) is not served: the local cluster id is unknown unless the Corefile sets cluster_id; apply manifests/crds")
	} else {
		c.add(ok, "crd", "ClusterProperty served at %s", strings.Join(propertyVersions, ", "))
	}
	return importVersions, propertyVersions
}

// checkImage checks that the server's Deployment runs coredns-mcs (and,
// standalone, has a ready pod), and returns the user its service account
// acts as ("" when the Deployment cannot be read).
func checkImage(ctx context.Context, c *checker, kube kubeclient.Interface, o *options, l layout) (user string, err error) {
	depNS, depName, err := splitName(o.deployment)
	if err != nil {
		return "", fmt.Errorf("--deployment %w", err)
	}
	dep, err := kube.AppsV1().Deployments(depNS).Get(ctx, depName, meta.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		c.add(fail, "image", "no Deployment %s: install coredns-mcs (docs/deploy.md; standalone: manifests/standalone) or name it with --deployment", o.deployment)
		return "", nil
	case err != nil:
		c.add(fail, "image", "Deployment %s: %v", o.deployment, err)
		return "", nil
	}
	serviceAccount := dep.Spec.Template.Spec.ServiceAccountName
	if serviceAccount == "" {
		serviceAccount = "default"
	}
	var images []string
	for _, ct := range dep.Spec.Template.Spec.Containers {
		images = append(images, ct.Image)
	}
	if i := slices.IndexFunc(images, func(s string) bool { return strings.Contains(s, "coredns-mcs") }); i >= 0 {
		tag := "(no tag)"
		if _, t, ok := strings.Cut(lastPathElement(images[i]), ":"); ok {
			tag = t
		}
		c.add(ok, "image", "Deployment %s runs %s, version %s", o.deployment, images[i], tag)
	} else {
		how := "set the image: docs/deploy.md"
		if l.standalone {
			how = "set the image: kubectl apply --server-side -k manifests/standalone"
		}
		c.add(fail, "image", "Deployment %s runs %s, which is not coredns-mcs: stock CoreDNS has no multicluster plugin (%s)", o.deployment, strings.Join(images, ", "), how)
	}
	if l.standalone {
		checkReady(c, o.deployment, dep)
	}
	return "system:serviceaccount:" + depNS + ":" + serviceAccount, nil
}

// checkRBAC checks what the server's service account user may list and
// watch: a line per permission it has, one line for those it lacks.
func checkRBAC(ctx context.Context, c *checker, kube kubeclient.Interface, user string, l layout) {
	var missing, optional, why []string
	for _, p := range needed {
		for _, verb := range []string{"list", "watch"} {
			allowed, err := canI(ctx, kube, user, verb, p.group, p.resource)
			resource := p.resource
			if p.group != "" {
				resource += "." + p.group
			}
			switch {
			case err != nil:
				c.add(warn, "rbac", "cannot ask whether %s may %s %s: %v (needs create on subjectaccessreviews.authorization.k8s.io)", user, verb, resource, err)
			case allowed:
				c.add(ok, "rbac", "%s may %s %s", user, verb, resource)
			case p.optional != "":
				optional = append(optional, verb+" "+resource)
				if !slices.Contains(why, p.optional) {
					why = append(why, p.optional)
				}
			default:
				missing = append(missing, verb+" "+resource)
			}
		}
	}
	if len(missing) > 0 {
		c.add(fail, "rbac", "%s may not %s: %s", user, strings.Join(missing, ", "), l.rbacFix())
	}
	if len(optional) > 0 {
		c.add(warn, "rbac", "%s may not %s: %s; %s", user, strings.Join(optional, ", "), strings.Join(why, "; "), l.rbacFix())
	}
}

// checkServerCorefile checks the server's Corefile (standalone: that it
// passes nothing back to the front), and returns it and its block with a
// multicluster stanza (nil if none).
func checkServerCorefile(ctx context.Context, c *checker, kube kubeclient.Interface, o *options, l layout) (*corefile, *caddyfile.ServerBlock) {
	cf, err := loadCorefile(ctx, o, kube)
	if err != nil {
		c.add(fail, "corefile", "%v", err)
		return cf, nil
	}
	mcBlock := checkCorefile(c, cf)
	if l.standalone {
		checkNoLoop(c, cf)
	}
	return cf, mcBlock
}

// checkClusterPropertyObject reads the ClusterProperty
// cluster.clusterset.k8s.io at version and checks the cluster id it gives.
func checkClusterPropertyObject(ctx context.Context, c *checker, cfg *rest.Config, version string) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	prop, err := dyn.Resource(schema.GroupVersionResource{Group: "about.k8s.io", Version: version, Resource: "clusterproperties"}).Get(ctx, "cluster.clusterset.k8s.io", meta.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		c.add(warn, "clusterproperty", "no ClusterProperty cluster.clusterset.k8s.io: answers do not prefer the local cluster unless the Corefile sets cluster_id")
	case err != nil:
		c.add(warn, "clusterproperty", "ClusterProperty cluster.clusterset.k8s.io: %v", err)
	default:
		checkClusterProperty(c, prop)
	}
	return nil
}

// checkServedImports runs the plugin of the block mcBlock as the server
// does and checks the imports it serves, and those it skips or serves in
// part.
func checkServedImports(ctx context.Context, c *checker, o *options, cfg *rest.Config, cf *corefile, mcBlock caddyfile.ServerBlock) {
	if err := checkReadAccess(ctx, cfg); err != nil {
		c.add(warn, "imports", "%v", err)
		return
	}
	e, err := startEngine(ctx, cf, mcBlock, cfg, o.clientConfig())
	if err != nil {
		c.add(fail, "imports", "running the plugin: %v", err)
		return
	}
	defer e.Stop()
	if checkImports(c, e.mc) {
		if r, err := readImports(ctx, cfg, e.mc.WatchedNamespaces()); err != nil {
			c.add(warn, "imports", "listing the ServiceImports as the server reads them: %v", err)
		} else {
			r.lines(c)
		}
	}
}

// printLines prints the lines (as JSON with output json), and returns 1
// if any is FAIL.
func printLines(lines []Line, output string, stdout io.Writer) (int, error) {
	if output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(lines); err != nil {
			return 0, err
		}
	} else {
		for _, l := range lines {
			fmt.Fprintf(stdout, "%-4s  %-15s %s\n", l.Status, l.Check, l.Message)
		}
	}
	if slices.ContainsFunc(lines, func(l Line) bool { return l.Status == fail }) {
		return 1, nil
	}
	return 0, nil
}

// checkReady checks that the standalone server has a ready pod: without
// one every name the front forwards goes to its stand-in, so imports
// answer NXDOMAIN in cluster.local and SERVFAIL in clusterset.local,
// whatever the rest of the setup says.
func checkReady(c *checker, name string, dep *appsv1.Deployment) {
	want := int32(1)
	if dep.Spec.Replicas != nil {
		want = *dep.Spec.Replicas
	}
	ready := dep.Status.ReadyReplicas
	switch {
	case want == 0:
		c.add(fail, "ready", "Deployment %s is scaled to 0: the front answers every forwarded name with its stand-in (imports: NXDOMAIN in cluster.local, SERVFAIL in clusterset.local); kubectl -n %s scale deployment %s --replicas 2", name, dep.Namespace, dep.Name)
	case ready == 0:
		c.add(fail, "ready", "Deployment %s has 0 of %d pods ready: the front answers every forwarded name with its stand-in (imports: NXDOMAIN in cluster.local, SERVFAIL in clusterset.local); kubectl -n %s describe deployment %s", name, want, dep.Namespace, dep.Name)
	case ready < want:
		c.add(warn, "ready", "Deployment %s has %d of %d pods ready: a pod less to fail over to", name, ready, want)
	default:
		c.add(ok, "ready", "Deployment %s has %d of %d pods ready", name, ready, want)
	}
}

// checkClusterProperty says which cluster id the server takes from the
// ClusterProperty prop, reading it as the server does: a value that is no
// cluster id is taken as none.
func checkClusterProperty(c *checker, prop *unstructured.Unstructured) {
	if id, problem := multicluster.ClusterIDOf(prop); problem != "" {
		c.add(warn, "clusterproperty", "ClusterProperty cluster.clusterset.k8s.io: %s: answers do not prefer the local cluster unless the Corefile sets cluster_id", clip(problem, 2*maxReason))
	} else {
		c.add(ok, "clusterproperty", "this cluster's id is %q (ClusterProperty cluster.clusterset.k8s.io)", id)
	}
}

func lastPathElement(image string) string {
	return image[strings.LastIndex(image, "/")+1:]
}

// servedVersions returns the versions of group, of those given, in which
// the API server serves resource.
func servedVersions(kube kubeclient.Interface, group, resource string, versions ...string) []string {
	var served []string
	for _, v := range versions {
		list, err := kube.Discovery().ServerResourcesForGroupVersion(group + "/" + v)
		if err != nil {
			continue
		}
		if slices.ContainsFunc(list.APIResources, func(r meta.APIResource) bool { return r.Name == resource }) {
			served = append(served, v)
		}
	}
	return served
}

func canI(ctx context.Context, kube kubeclient.Interface, user, verb, group, resource string) (bool, error) {
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               user,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + strings.Split(user, ":")[2], "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource},
	}}
	out, err := kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, meta.CreateOptions{})
	if err != nil {
		return false, err
	}
	return out.Status.Allowed, nil
}

// checkCorefile checks the server blocks and returns the one whose
// multicluster stanza serves clusterset.local, if any.
func checkCorefile(c *checker, cf *corefile) *caddyfile.ServerBlock {
	var found *caddyfile.ServerBlock
	for i, b := range cf.blocks {
		keys := strings.Join(b.Keys, " ")
		st, line, has := stanza(b, "multicluster")
		if !has {
			continue
		}
		mc, err := multicluster.ParseStanza(st)
		if err != nil {
			c.add(fail, "corefile", "the multicluster stanza of server block %s at line %d: %s", keys, line, stanzaError(cf.source, err))
			continue
		}
		zones, fallback := mc.Zones, mc.Fallback
		c.add(ok, "corefile", "%s: server block %s has multicluster for %s", cf.source, keys, strings.Join(zones, " "))
		if !slices.Contains(zones, "clusterset.local.") {
			c.add(warn, "corefile", "server block %s: multicluster does not serve clusterset.local.", keys)
		}
		if len(fallback) == 0 {
			c.add(warn, "corefile", "server block %s: no fallback zone, so foo.ns.svc.cluster.local does not answer imports (add fallback cluster.local)", keys)
		} else {
			c.add(ok, "corefile", "server block %s: fallback %s (local Services win)", keys, strings.Join(fallback, " "))
		}
		if kst, _, hasK := stanza(b, "kubernetes"); !hasK {
			if len(fallback) > 0 {
				c.add(fail, "corefile", "server block %s has multicluster with fallback but no kubernetes plugin: local Services would not win; add the kubernetes stanza", keys)
			}
		} else {
			c.add(ok, "corefile", "server block %s: kubernetes in the same block; the image's plugin.cfg runs multicluster before it", keys)
			if leavesOutImported(kst) {
				c.add(ok, "corefile", "server block %s: kubernetes leaves out the objects labelled %s, which multicluster caches itself", keys, mcsv1beta1.LabelSourceCluster)
			} else {
				c.add(warn, "corefile", "server block %s: kubernetes also caches the EndpointSlices labelled %s, a second, full copy of what multicluster caches (most of the memory with many imported endpoints): add \"labels !%s\" to its stanza, or join it to its labels with a comma (docs/deploy.md)", keys, mcsv1beta1.LabelSourceCluster, mcsv1beta1.LabelSourceCluster)
			}
		}
		if found == nil {
			found = &cf.blocks[i]
		}
	}
	if found == nil {
		c.add(fail, "corefile", "%s: no server block has a multicluster stanza: add it before kubernetes (README, Corefile)", cf.source)
	}
	return found
}

// leavesOutImported reports whether the kubernetes stanza k has a labels
// selector that requires the source-cluster label to be absent: the
// kubernetes plugin applies it to Services, EndpointSlices and Pods
// (plugin/kubernetes/controller.go in CoreDNS v1.15.0), so it does not cache
// the objects MCS controllers import from other clusters.
func leavesOutImported(k *caddy.Controller) bool {
	for k.Next() {
		k.RemainingArgs() // zones
		for k.NextBlock() {
			if k.Val() != "labels" {
				continue
			}
			sel, err := labels.Parse(strings.Join(k.RemainingArgs(), " "))
			if err != nil {
				return false // the kubernetes plugin refuses it: the server does not start
			}
			reqs, _ := sel.Requirements()
			for _, r := range reqs {
				if r.Key() == mcsv1beta1.LabelSourceCluster && r.Operator() == selection.DoesNotExist {
					return true
				}
			}
		}
	}
	return false
}

// checkNodeLocal checks that NodeLocal DNSCache sends clusterset.local to
// the cluster DNS (docs/nodelocaldns.md): otherwise it forwards it upstream.
func checkNodeLocal(ctx context.Context, c *checker, kube kubeclient.Interface) {
	cm, err := kube.CoreV1().ConfigMaps("kube-system").Get(ctx, "node-local-dns", meta.GetOptions{})
	if err != nil {
		c.add(fail, "nodelocaldns", "node-local-dns runs, but its ConfigMap: %v", err)
		return
	}
	cf, err := parseCorefile("ConfigMap kube-system/node-local-dns", cm.Data["Corefile"])
	if err != nil {
		c.add(fail, "nodelocaldns", "%v", err)
		return
	}
	for _, b := range cf.blocks {
		if slices.Contains(zonesOf(b), "clusterset.local.") {
			c.add(ok, "nodelocaldns", "node-local-dns has a clusterset.local server block (%s)", strings.Join(b.Keys, " "))
			return
		}
	}
	c.add(fail, "nodelocaldns", "node-local-dns runs without a clusterset.local server block: it sends clusterset names upstream; apply manifests/nodelocaldns (docs/nodelocaldns.md)")
}

// checkImports checks the imports the plugin serves, and reports whether
// it serves any (it is not degraded).
func checkImports(c *checker, mc *multicluster.Multicluster) bool {
	if d := mc.Degraded(); d != "" {
		c.add(fail, "imports", "the plugin is degraded: %s", d)
		return false
	}
	imports := mc.Imports()
	var empty Sample
	for _, imp := range imports {
		if !imp.Headless && len(imp.Addresses) == 0 {
			empty.add(imp.Namespace + "/" + imp.Name)
		}
	}
	c.add(ok, "imports", "%d ServiceImports served", len(imports))
	if empty.Count > 0 {
		c.add(fail, "imports", "%d ClusterSetIP imports have no address and answer NODATA: %s (docs/runbooks.md#corednsmulticlusterimportswithoutaddresses)", empty.Count, empty)
	}
	if copies := mc.PerClusterCopies(); len(copies) > 0 {
		c.add(warn, "imports", "%d per-cluster copies (labelled multicluster.kubernetes.io/service-name) are not served: %s; expected with Lighthouse", len(copies), few(copies))
	}
	return true
}
