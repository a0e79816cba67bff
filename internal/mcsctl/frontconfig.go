// This file reads back the front's configuration (what kubectl mcs front
// wrote), for check's review of it and explain's path through it, on the
// platform's form (front.Table).

package mcsctl

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/coredns/caddy/caddyfile"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeclient "k8s.io/client-go/kubernetes"

	"github.com/coredns-mcs/coredns-mcs/internal/front"
)

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
