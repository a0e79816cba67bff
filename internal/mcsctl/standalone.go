package mcsctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/coredns/caddy/caddyfile"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeclient "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/coredns-mcs/coredns-mcs/internal/front"
	"github.com/coredns-mcs/coredns-mcs/plugin/multicluster"
)

// The standalone layout: coredns-mcs runs as kube-system/coredns-mcs
// (manifests/standalone), behind the cluster's own DNS (the front), which
// forwards to its Service what kubectl mcs front configured it to.
const (
	standaloneNamespace = "kube-system"
	standaloneName      = "coredns-mcs"
	componentLabel      = "app.kubernetes.io/component"
	standaloneComponent = "standalone-dns"
	swapName            = "coredns"
)

// layout is where the server's Corefile and Deployment are, and, in the
// standalone layout, its Service.
type layout struct {
	standalone bool
	why        string
	service    *corev1.Service // the standalone Service, if it exists
}

func (l layout) serviceName() string { return standaloneNamespace + "/" + standaloneName }

// detectLayout finds the standalone layout by its objects: the Service or
// the Deployment kube-system/coredns-mcs, labelled as manifests/standalone
// labels them. Anything else is the swap layout (coredns-mcs is
// kube-system/coredns).
func detectLayout(ctx context.Context, kube kubeclient.Interface) layout {
	var l layout
	if svc, err := kube.CoreV1().Services(standaloneNamespace).Get(ctx, standaloneName, meta.GetOptions{}); err == nil && svc.Labels[componentLabel] == standaloneComponent {
		l = layout{standalone: true, why: fmt.Sprintf("the Service %s/%s (%s: %s) exists", standaloneNamespace, standaloneName, componentLabel, standaloneComponent), service: svc}
	}
	if !l.standalone {
		if d, err := kube.AppsV1().Deployments(standaloneNamespace).Get(ctx, standaloneName, meta.GetOptions{}); err == nil && d.Labels[componentLabel] == standaloneComponent {
			l = layout{standalone: true, why: fmt.Sprintf("the Deployment %s/%s (%s: %s) exists", standaloneNamespace, standaloneName, componentLabel, standaloneComponent)}
		}
	}
	return l
}

// resolve fills the flags left unset with the layout's objects: the flags
// override what the detection finds.
func (o *options) resolve(l layout) {
	name := standaloneNamespace + "/" + swapName
	if l.standalone {
		name = standaloneNamespace + "/" + standaloneName
	}
	if o.configMap == "" {
		o.configMap = name
	}
	if o.deployment == "" {
		o.deployment = name
	}
}

// rbacFix is what grants the server's service account its rules.
func (l layout) rbacFix() string {
	if l.standalone {
		return "apply manifests/standalone (rbac.yaml)"
	}
	return "apply manifests/rbac"
}

// frontConfig is the front's configuration: the blocks kubectl mcs front
// adds, and its whole Corefile, as CoreDNS reads them.
type frontConfig struct {
	row    *front.Info
	source string                  // where the added blocks are
	added  []caddyfile.ServerBlock // the blocks forwarding to coredns-mcs
	all    []caddyfile.ServerBlock // every block of the front, the added ones included
	own    string                  // where the front's own Corefile is
	// stubs: the zones a stub-domain form (kube-dns, OpenShift's
	// spec.servers) sends elsewhere, and where; nil for the others.
	stubs map[string][]string
	// fix is what puts the front's configuration right on this platform:
	// kubectl mcs front --apply where it may write it, else the platform's
	// supported way (never --apply on an object a manager keeps).
	fix string
}

// frontFix is what check and explain recommend to put the front's
// configuration right on the platform of row.
func frontFix(ctx context.Context, kube kubeclient.Interface, row *front.Info) string {
	if row.Target.Kind == "" {
		fix := row.HowToApply()
		if selfManaged(ctx, kube, row) {
			return fmt.Sprintf("kubectl mcs front --platform kubeadm --apply (a self-managed CoreDNS: no fields of %s are managed by %q), or for the add-on %s", row.Corefile.Object(), row.SelfManagedUnless, fix)
		}
		return fix
	}
	ref := row.Target
	if cm, err := kube.CoreV1().ConfigMaps(ref.Namespace).Get(ctx, ref.Name, meta.GetOptions{}); err == nil {
		if m := front.ManagerOf(cm, ref); m != nil {
			return m.Instead
		}
	}
	return "kubectl mcs front --apply"
}

// loadFront reads the front's configuration for its platform.
func loadFront(ctx context.Context, kube kubeclient.Interface) (*frontConfig, error) {
	f := &frontOptions{}
	row, _, err := f.detect(ctx, kube)
	if err != nil {
		return nil, err
	}
	fc := &frontConfig{row: row, fix: frontFix(ctx, kube, row)}
	parse := func(source, text string) ([]caddyfile.ServerBlock, error) {
		// Imports (k3s's coredns-custom) name files of the DNS pods.
		blocks, err := caddyfile.Parse(source, strings.NewReader(importLine.ReplaceAllString(text, "")), nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		return blocks, nil
	}
	targetBlocks := func() ([]caddyfile.ServerBlock, error) {
		value, found, err := targetValue(ctx, kube, row.Target)
		if err != nil || !found || value == "" {
			return nil, err
		}
		return parse(fc.source, value)
	}
	switch row.Spec.Review {
	case front.ReviewNotRead:
		return nil, fmt.Errorf("the front's configuration (%s) is a chart's values, not read here: compare it with kubectl mcs front --platform %s", row.Name, row.Name)
	case front.ReviewTargetStubs:
		fc.source = row.Target.Object() + " " + row.Target.Key
		value, _, err := targetValue(ctx, kube, row.Target)
		if err != nil {
			return nil, err
		}
		fc.stubs = map[string][]string{}
		if value != "" {
			if err := json.Unmarshal([]byte(value), &fc.stubs); err != nil {
				return nil, fmt.Errorf("%s: %w", fc.source, err)
			}
		}
		return fc, nil
	}
	live, err := liveCorefile(ctx, kube, row)
	if err != nil {
		return nil, err
	}
	switch row.Spec.Review {
	case front.ReviewCorefileStubs:
		// The operator renders spec.servers into the Corefile of its
		// ConfigMap: a block per server, its zones on port 5353, forward
		// to the upstreams (controller_dns_configmap.go).
		fc.source = "spec.servers of dns.operator.openshift.io/default (" + row.Corefile.String() + ")"
		blocks, err := parse(row.Corefile.String(), live)
		if err != nil {
			return nil, err
		}
		fc.stubs = map[string][]string{}
		for _, b := range blocks {
			if to, ok := forwardTargets(b); ok && !slices.Contains(zonesOf(b), ".") {
				for _, z := range zonesOf(b) {
					fc.stubs[strings.TrimSuffix(z, ".")] = to
				}
			}
		}
		return fc, nil
	case front.ReviewTargetBlocks:
		fc.own = row.Corefile.Object()
		if fc.all, err = parse(fc.own, live); err != nil {
			return nil, err
		}
		fc.source = row.Target.String()
		if fc.added, err = targetBlocks(); err != nil {
			return nil, err
		}
		fc.all = append(fc.all, fc.added...)
		return fc, nil
	}
	fc.own = row.Corefile.Object()
	if fc.all, err = parse(fc.own, live); err != nil {
		return nil, err
	}
	fc.source = fc.own
	if section := addedSectionOf(live); section != "" {
		fc.source += " (between the coredns-mcs markers)"
		fc.added, err = parse(fc.source, section)
		return fc, err
	}
	// Written by hand, or by a chart: every block but the front's own.
	for _, b := range fc.all {
		if !slices.Contains(zonesOf(b), ".") {
			fc.added = append(fc.added, b)
		}
	}
	return fc, nil
}

// addedSectionOf returns the blocks between the markers of front.Merge.
func addedSectionOf(corefile string) string {
	_, rest, ok := strings.Cut(corefile, front.BeginMarker+"\n")
	if !ok {
		return ""
	}
	section, _, _ := strings.Cut(rest, front.EndMarker)
	return section
}

// portOf returns the port of a server block (53 when its keys name none).
func portOf(b caddyfile.ServerBlock) int {
	for _, k := range b.Keys {
		k = strings.TrimPrefix(k, "dns://")
		if i := strings.LastIndex(k, ":"); i >= 0 {
			if p, err := strconv.Atoi(k[i+1:]); err == nil {
				return p
			}
		}
	}
	return 53
}

// forwardTargets returns the addresses of a block's forward (the first
// forward stanza), and whether it has one.
func forwardTargets(b caddyfile.ServerBlock) ([]string, bool) {
	tokens := b.Tokens["forward"]
	if len(tokens) < 2 {
		return nil, false
	}
	var to []string
	line := tokens[0].Line
	for _, t := range tokens[2:] { // forward FROM TO...
		if t.Line != line || t.Text == "{" {
			break
		}
		to = append(to, strings.TrimPrefix(t.Text, "dns://"))
	}
	return to, true
}

// forwardReadTimeout is how long the forward of b waits for an upstream's
// answer before it asks the next: its read_timeout, else the 2 s forward
// waits without one (defaultReadTimeout in plugin/forward/forward.go of
// CoreDNS v1.15.0; before read_timeout existed, readTimeout in
// plugin/pkg/proxy/proxy.go of v1.13.1).
func forwardReadTimeout(b caddyfile.ServerBlock) string {
	tokens := b.Tokens["forward"]
	for i, t := range tokens {
		if t.Text == "read_timeout" && i+1 < len(tokens) && tokens[i+1].Line == t.Line {
			return tokens[i+1].Text
		}
	}
	return "2s"
}

// hostOf returns the address of a forward target without its port.
func hostOf(target string) string {
	if h, _, err := net.SplitHostPort(target); err == nil {
		return h
	}
	return target
}

var viewExpr = regexp.MustCompile(`^name\(\)\s+matches\s+'(.*)'$`)

// viewOf returns the view of a block: its name, its expression, and the
// regular expression of an expression `name() matches '...'`, the form
// kubectl mcs front writes.
func viewOf(b caddyfile.ServerBlock) (name, expr string, re *regexp.Regexp, has bool, err error) {
	tokens := b.Tokens["view"]
	if len(tokens) == 0 {
		return "", "", nil, false, nil
	}
	var words []string
	for i, t := range tokens {
		switch {
		case i == 0:
		case i == 1 && t.Text != "{":
			name = t.Text
		case t.Text == "{" || t.Text == "}" || t.Text == "expr":
		default:
			words = append(words, t.Text)
		}
	}
	expr = strings.Join(words, " ")
	m := viewExpr.FindStringSubmatch(expr)
	if m == nil {
		return name, expr, nil, true, fmt.Errorf("the view's expression %q is not of the form name() matches '...'", expr)
	}
	// The view plugin evaluates matches with Go's regexp.
	re, err = regexp.Compile(m[1])
	return name, expr, re, true, err
}

// frontReview checks the front: the blocks kubectl mcs front adds, as the
// standalone server's zones need them, each forwarding to the standalone
// Service's current ClusterIP, then to the stand-in.
func frontReview(ctx context.Context, c *checker, kube kubeclient.Interface, l layout, server *corefile) {
	// What puts the front right: --apply only where it may write the
	// front's configuration (frontFix).
	fc, loadErr := loadFront(ctx, kube)
	fix := "kubectl mcs front --apply"
	if loadErr == nil {
		fix = fc.fix
	}
	if l.service == nil {
		c.add(fail, "front", "no Service %s: the front has nothing to forward to; apply manifests/standalone, then %s", l.serviceName(), fix)
		return
	}
	ip := l.service.Spec.ClusterIP
	if ip == "" || ip == corev1.ClusterIPNone {
		c.add(fail, "front", "the Service %s has no ClusterIP (%q): the front forwards to an address; re-create it from manifests/standalone, then %s", l.serviceName(), ip, fix)
		return
	}
	if loadErr != nil {
		c.add(warn, "front", "%v", loadErr)
		return
	}
	clustersetZones, fallbackZones := standaloneZones(server)
	if fc.stubs != nil {
		for _, z := range clustersetZones {
			stub := fc.stubs[strings.TrimSuffix(z, ".")]
			switch {
			case len(stub) == 0:
				c.add(fail, "front", "%s has no stub domain %s: clusterset names do not reach coredns-mcs; %s", fc.source, z, fix)
			case hostOf(stub[0]) != ip:
				c.add(fail, "front", "%s sends %s to %s, not the standalone Service's ClusterIP %s (was the Service re-created?): %s", fc.source, z, stub[0], ip, fix)
			default:
				c.add(ok, "front", "%s sends %s to the standalone Service's ClusterIP %s (%s has no cluster.local fallback)", fc.source, z, ip, fc.row.Name)
			}
		}
		return
	}
	if len(fc.added) == 0 {
		c.add(fail, "front", "%s has no server blocks forwarding to coredns-mcs: clusterset.local and import-only cluster.local names never reach it; %s", fc.source, fix)
		return
	}
	find := func(zone string) *caddyfile.ServerBlock {
		for i, b := range fc.added {
			if portOf(b) == 53 && slices.Contains(zonesOf(b), zone) {
				return &fc.added[i]
			}
		}
		return nil
	}
	var forwarding []caddyfile.ServerBlock
	for _, z := range fallbackZones {
		b := find(z)
		if b == nil {
			c.add(fail, "front", "%s: no block for %s: import-only names of %s answer NXDOMAIN from the front; %s", fc.source, z, z, fix)
			continue
		}
		name, expr, _, has, err := viewOf(*b)
		switch {
		case !has:
			c.add(fail, "front", "%s: the block %s has no view: every name of %s would reach its kubernetes plugin with fallthrough, pods and search-path expansions included; %s", fc.source, strings.Join(b.Keys, " "), z, fix)
		case err != nil:
			c.add(fail, "front", "%s: the block %s: %v; %s", fc.source, strings.Join(b.Keys, " "), err, fix)
		default:
			c.add(ok, "front", "%s: block %s takes the service names of %s (view %s: %s)", fc.source, strings.Join(b.Keys, " "), z, name, expr)
		}
		forwarding = append(forwarding, *b)
	}
	for _, z := range clustersetZones {
		if b := find(z); b != nil {
			forwarding = append(forwarding, *b)
		} else {
			c.add(fail, "front", "%s: no block for %s: clusterset names never reach coredns-mcs; %s", fc.source, z, fix)
		}
	}
	var reverse []string
	for _, b := range fc.added {
		zones := zonesOf(b)
		if portOf(b) == 53 && len(zones) > 0 && multicluster.IsReverseZone(zones[0]) {
			forwarding = append(forwarding, b)
			reverse = append(reverse, zones...)
		}
	}
	if len(reverse) > 0 {
		c.add(ok, "front", "%s: the reverse zones %s go to coredns-mcs (PTR of ClusterSetIPs)", fc.source, few(reverse))
	} else {
		c.add(warn, "front", "%s: no reverse zone goes to coredns-mcs: PTR of ClusterSetIPs answer NXDOMAIN; %s, with --clusterset-cidr RANGE", fc.source, fix)
	}

	// Where they forward: the Service's ClusterIP, then the stand-in.
	var stale, noForward, noStandIn []string
	standIns := map[string]bool{}
	seen := map[string]string{}
	for _, b := range forwarding {
		keys := strings.Join(b.Keys, " ")
		to, has := forwardTargets(b)
		switch {
		case !has || len(to) == 0:
			noForward = append(noForward, keys)
			continue
		case hostOf(to[0]) != ip:
			stale = append(stale, keys)
			seen[keys] = to[0]
		}
		if len(to) < 2 || hostOf(to[1]) != "127.0.0.1" {
			noStandIn = append(noStandIn, keys)
		} else {
			standIns[to[1]] = true
		}
	}
	switch {
	case len(stale) > 0:
		var at []string
		for _, k := range stale {
			at = append(at, k+" -> "+seen[k])
		}
		c.add(fail, "front", "%s: %s forward to an address that is not the standalone Service's ClusterIP %s (the Service was re-created?): %s", fc.source, few(at), ip, fix)
	case len(noForward) == 0:
		c.add(ok, "front", "%s: %d blocks forward to the standalone Service %s at its ClusterIP %s", fc.source, len(forwarding), l.serviceName(), ip)
	}
	if len(noForward) > 0 {
		c.add(fail, "front", "%s: %s have no forward to coredns-mcs; %s", fc.source, few(noForward), fix)
	}
	checkReadTimeout(ctx, c, kube, fc, forwarding, fix)

	// The stand-in: what answers while coredns-mcs does not.
	var standIn *caddyfile.ServerBlock
	for i, b := range fc.added {
		if len(b.Tokens["template"]) > 0 && len(b.Tokens["forward"]) == 0 && portOf(b) != 53 {
			standIn = &fc.added[i]
		}
	}
	switch {
	case standIn == nil:
		c.add(fail, "front", "%s: no stand-in block (127.0.0.1:%d, template NXDOMAIN): while coredns-mcs is down or hung, forwarded names answer SERVFAIL instead of the front's own NXDOMAIN; %s", fc.source, front.DefaultStandInPort, fix)
	case len(noStandIn) > 0 || !standIns["127.0.0.1:"+strconv.Itoa(portOf(*standIn))]:
		c.add(fail, "front", "%s: the stand-in block %s is not the second address of every forward (%s): %s", fc.source, strings.Join(standIn.Keys, " "), few(noStandIn), fix)
	default:
		c.add(ok, "front", "%s: stand-in %s answers NXDOMAIN while coredns-mcs does not answer", fc.source, strings.Join(standIn.Keys, " "))
	}

	// prometheus in every added block: the front's metrics count them.
	var unmetered []string
	for _, b := range fc.added {
		if len(b.Tokens["prometheus"]) == 0 {
			unmetered = append(unmetered, strings.Join(b.Keys, " "))
		}
	}
	if len(unmetered) > 0 {
		c.add(fail, "front", "%s: %s have no prometheus: the front's coredns_dns_* metrics do not count the queries they take; %s", fc.source, few(unmetered), fix)
	} else {
		c.add(ok, "front", "%s: prometheus in every added block", fc.source)
	}
}

// checkReadTimeout warns where the front's CoreDNS has forward's
// read_timeout (front.Options.UsesReadTimeout: 1.14.5 and later) but the
// blocks forwarding to coredns-mcs do not set it: a hung coredns-mcs then
// costs each forwarded name forward's fixed 2 s instead of the read
// timeout, until the health checks mark it down. The version is the one
// kubectl mcs front reads, the DNS workload's image tag.
func checkReadTimeout(ctx context.Context, c *checker, kube kubeclient.Interface, fc *frontConfig, forwarding []caddyfile.ServerBlock, fix string) {
	version, from := dnsVersion(ctx, kube, fc.row)
	if !(front.Options{CoreDNSVersion: version}).UsesReadTimeout() {
		return
	}
	var without []string
	for _, b := range forwarding {
		if _, has := forwardTargets(b); has && !hasReadTimeout(b) {
			without = append(without, strings.Join(b.Keys, " "))
		}
	}
	if len(without) == 0 {
		return
	}
	// The fix names the version, which writes read_timeout.
	withVersion := "kubectl mcs front --coredns-version " + version
	if strings.Contains(fix, "kubectl mcs front") {
		fix = strings.Replace(fix, "kubectl mcs front", withVersion, 1)
	} else {
		fix += " (" + withVersion + " writes it)"
	}
	c.add(warn, "front", "%s: %s forward to coredns-mcs without read_timeout, which CoreDNS %s (%s) has: a hung coredns-mcs costs each forwarded name forward's fixed 2 s, not %s, until the health checks mark it down; %s", fc.source, few(without), version, from, front.DefaultReadTimeout, fix)
}

// hasReadTimeout reports whether the forward of b sets read_timeout.
func hasReadTimeout(b caddyfile.ServerBlock) bool {
	return slices.ContainsFunc(b.Tokens["forward"], func(t caddyfile.Token) bool { return t.Text == "read_timeout" })
}

// standaloneZones returns the zones the front must send to the standalone
// server: its multicluster plugin's clusterset zones (not the reverse ones,
// which the front sends by range) and fallback zones.
func standaloneZones(server *corefile) (clusterset, fallback []string) {
	if server != nil {
		for _, b := range server.blocks {
			st, _, has := stanza(b, "multicluster")
			if !has {
				continue
			}
			mc, err := multicluster.ParseStanza(st)
			if err != nil {
				continue
			}
			for _, z := range mc.Zones {
				if !multicluster.IsReverseZone(z) && z != "." {
					clusterset = append(clusterset, z)
				}
			}
			fallback = append(fallback, mc.Fallback...)
			break
		}
	}
	if len(clusterset) == 0 {
		clusterset = []string{front.DefaultClustersetZone + "."}
	}
	if len(fallback) == 0 {
		fallback = []string{front.DefaultClusterDomain + "."}
	}
	return clusterset, fallback
}

// checkNoLoop checks that the standalone server passes nothing on: no
// forward, and the standalone option, which refuses at start-up a block
// that would.
func checkNoLoop(c *checker, cf *corefile) {
	const fix = "manifests/standalone/configmap.yaml"
	var forwards []string
	for _, b := range cf.blocks {
		if len(b.Tokens["forward"]) > 0 {
			forwards = append(forwards, strings.Join(b.Keys, " "))
		}
	}
	if len(forwards) > 0 {
		c.add(fail, "loop", "%s: server block %s has forward: what the standalone server passes on goes back to the front, which forwards it here (a loop), or off the cluster; remove it (%s)", cf.source, few(forwards), fix)
	}
	for _, b := range cf.blocks {
		st, _, has := stanza(b, "multicluster")
		if !has {
			continue
		}
		mc, err := multicluster.ParseStanza(st)
		if err != nil {
			return // the corefile line says why
		}
		if !mc.Standalone() {
			c.add(fail, "loop", "%s: the multicluster stanza of server block %s has no standalone option: start-up does not refuse a block that would pass names back to the front; add it (%s)", cf.source, strings.Join(b.Keys, " "), fix)
		} else if len(forwards) == 0 {
			c.add(ok, "loop", "%s: no forward, and the standalone option: nothing goes back to the front", cf.source)
		}
		return
	}
}

// zoneMatches reports whether name is in zone (both lower case, fully
// qualified).
func zoneMatches(zone, name string) bool { return plugin.Name(zone).Matches(name) }

// FrontResult is the path of a query through the front, in the standalone
// layout: the block that takes it, what its kubernetes plugin does, and
// whether it is forwarded to the standalone server.
type FrontResult struct {
	Corefile  string   `json:"corefile"`
	Block     string   `json:"serverBlock"`
	Steps     []string `json:"steps"`
	Forwarded bool     `json:"forwarded"`
}

// takeBlock returns the front's block (on port 53) that takes name, as
// CoreDNS picks it: the longest zone first, in it the first block whose
// view's expression is true or that has no view, the root zone last; and
// the steps of the views weighed.
func takeBlock(blocks []caddyfile.ServerBlock, name string) (*caddyfile.ServerBlock, []string) {
	name = strings.ToLower(dns.Fqdn(name))
	var steps []string
	try := func(zone string) *caddyfile.ServerBlock {
		for i, b := range blocks {
			if portOf(b) != 53 || !slices.Contains(zonesOf(b), zone) {
				continue
			}
			view, expr, re, has, err := viewOf(b)
			switch {
			case !has:
				return &blocks[i]
			case err != nil:
				steps = append(steps, fmt.Sprintf("block %s, view %s: %v: not evaluated here, taken as false", strings.Join(b.Keys, " "), view, err))
			case re.MatchString(name):
				steps = append(steps, fmt.Sprintf("block %s, view %s: %s is true for %s (Go's regexp, as the view plugin's expr evaluates matches)", strings.Join(b.Keys, " "), view, expr, name))
				return &blocks[i]
			default:
				steps = append(steps, fmt.Sprintf("block %s, view %s: %s is false for %s (Go's regexp, as the view plugin's expr evaluates matches): not this block", strings.Join(b.Keys, " "), view, expr, name))
			}
		}
		return nil
	}
	for off, end := 0, false; !end; off, end = dns.NextLabel(name, off) {
		if b := try(name[off:]); b != nil {
			return b, steps
		}
	}
	return try("."), steps
}

// explainFront follows the query r through the front. It returns the path,
// and the front's answer when the front answers it itself.
func explainFront(ctx context.Context, kube kubeclient.Interface, l layout, r *dns.Msg, cc clientcmd.ClientConfig) (*FrontResult, *dns.Msg, error) {
	name := strings.ToLower(r.Question[0].Name)
	fr := &FrontResult{}
	say := func(format string, args ...any) { fr.Steps = append(fr.Steps, fmt.Sprintf(format, args...)) }
	if l.service == nil || l.service.Spec.ClusterIP == "" || l.service.Spec.ClusterIP == corev1.ClusterIPNone {
		return nil, nil, fmt.Errorf("the standalone Service %s has no ClusterIP: the front cannot forward to it (kubectl mcs check)", l.serviceName())
	}
	ip := l.service.Spec.ClusterIP
	fc, err := loadFront(ctx, kube)
	if err != nil {
		return nil, nil, fmt.Errorf("the front: %w", err)
	}
	if fc.stubs != nil {
		fr.Corefile = fc.source
		for zone, to := range fc.stubs {
			if zoneMatches(dns.Fqdn(zone), name) && len(to) > 0 {
				fr.Block = zone
				if hostOf(to[0]) == ip {
					say("%s: the zone %s goes to the standalone Service %s (%s)", fc.row.Name, zone, l.serviceName(), ip)
					fr.Forwarded = true
				} else {
					say("%s: the zone %s goes to %s, not to the standalone Service's ClusterIP %s: %s", fc.row.Name, zone, to[0], ip, fc.fix)
				}
				return fr, nil, nil
			}
		}
		say("%s answers it itself: only the zones it forwards reach coredns-mcs (no cluster.local fallback)", fc.row.Name)
		return fr, nil, nil
	}
	fr.Corefile = fc.own
	b, steps := takeBlock(fc.all, name)
	fr.Steps = steps
	if b == nil {
		say("no block of the front serves %s: the front answers REFUSED", name)
		return fr, nil, nil
	}
	keys := strings.Join(b.Keys, " ")
	fr.Block = keys
	added := slices.ContainsFunc(fc.added, func(a caddyfile.ServerBlock) bool { return strings.Join(a.Keys, " ") == keys })
	if added {
		fr.Corefile = fc.source
		say("the front's block %s (written by kubectl mcs front) takes it", keys)
	} else {
		say("the front's own server block %s takes it", keys)
	}
	if _, _, has := stanza(*b, "kubernetes"); has {
		k, stop, err := startKubernetes(ctx, &corefile{source: fr.Corefile}, *b, cc)
		if err != nil {
			return nil, nil, fmt.Errorf("the front's kubernetes plugin: %w", err)
		}
		defer stop()
		if plugin.Zones(k.Zones).Matches(name) == "" {
			say("%s is not in the zones of the front's kubernetes plugin (%s)", name, strings.Join(k.Zones, " "))
		} else {
			rec := dnstest.NewRecorder(multicluster.OfflineWriter{})
			_, err := k.ServeDNS(context.Background(), rec, r)
			switch {
			case errors.Is(err, errPassedOn):
				say("the front's kubernetes plugin has no such name and falls through (fallthrough %s)", strings.Join(k.Fall.Zones, " "))
			case rec.Msg != nil:
				say("the front's kubernetes plugin answers it (%s): it never reaches coredns-mcs", dns.RcodeToString[rec.Msg.Rcode])
				return fr, rec.Msg, nil
			default:
				say("the front's kubernetes plugin wrote nothing (%v)", err)
				return fr, nil, nil
			}
		}
	}
	to, has := forwardTargets(*b)
	switch {
	case !has || len(to) == 0:
		say("the block has no forward: the front's next plugin answers it, never coredns-mcs")
	case hostOf(to[0]) == ip:
		fr.Forwarded = true
		standIn := ""
		if len(to) > 1 {
			standIn = fmt.Sprintf(" (then the stand-in %s, when it does not answer within %s: NXDOMAIN)", strings.Join(to[1:], " "), forwardReadTimeout(*b))
		}
		say("forwarded to the standalone Service %s at its ClusterIP %s%s", l.serviceName(), ip, standIn)
	case added:
		say("forwarded to %s, not the standalone Service's ClusterIP %s (re-created?): it never reaches coredns-mcs; %s", to[0], ip, fc.fix)
	default:
		say("forwarded to %s: it never reaches coredns-mcs", strings.Join(to, " "))
	}
	return fr, nil, nil
}
