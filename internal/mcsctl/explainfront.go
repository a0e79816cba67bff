// This file holds kubectl mcs explain's path of a name through the front,
// in the standalone layout.

package mcsctl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/coredns/caddy/caddyfile"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	kubeclient "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/coredns-mcs/coredns-mcs/plugin/multicluster"
)

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
			// kubectl mcs front's stand-in answers NXDOMAIN in the cluster
			// domain (the block with the front's kubernetes plugin), where
			// a search path runs, and SERVFAIL elsewhere.
			answer := "SERVFAIL"
			if _, _, has := stanza(*b, "kubernetes"); has {
				answer = "NXDOMAIN"
			}
			standIn = fmt.Sprintf(" (then the stand-in %s, when it does not answer within %s: %s)", strings.Join(to[1:], " "), forwardReadTimeout(*b), answer)
		}
		say("forwarded to the standalone Service %s at its ClusterIP %s%s", l.serviceName(), ip, standIn)
	case added:
		say("forwarded to %s, not the standalone Service's ClusterIP %s (re-created?): it never reaches coredns-mcs; %s", to[0], ip, fc.fix)
	default:
		say("forwarded to %s: it never reaches coredns-mcs", strings.Join(to, " "))
	}
	return fr, nil, nil
}
