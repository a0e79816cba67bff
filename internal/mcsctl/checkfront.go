// This file holds kubectl mcs check's review of the standalone layout: the
// front's blocks forwarding to coredns-mcs, and the standalone server passing
// nothing back.

package mcsctl

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/coredns/caddy/caddyfile"
	corev1 "k8s.io/api/core/v1"
	kubeclient "k8s.io/client-go/kubernetes"

	"github.com/coredns-mcs/coredns-mcs/internal/front"
	"github.com/coredns-mcs/coredns-mcs/plugin/multicluster"
)

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
		c.add(fail, "front", "%s: no stand-in block (127.0.0.1:%d, template NXDOMAIN in the cluster domain): while coredns-mcs is down or hung, forwarded names of the cluster domain answer SERVFAIL instead of the front's own NXDOMAIN, which stops a pod's search path; %s", fc.source, front.DefaultStandInPort, fix)
	case len(noStandIn) > 0 || !standIns["127.0.0.1:"+strconv.Itoa(portOf(*standIn))]:
		c.add(fail, "front", "%s: the stand-in block %s is not the second address of every forward (%s): %s", fc.source, strings.Join(standIn.Keys, " "), few(noStandIn), fix)
	default:
		c.add(ok, "front", "%s: stand-in %s answers while coredns-mcs does not (NXDOMAIN in the cluster domain, SERVFAIL in the clusterset and reverse zones)", fc.source, strings.Join(standIn.Keys, " "))
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
//
// It also says what the path costs: behind a CoreDNS without read_timeout
// (a known version before 1.14.5), a hang costs forward's fixed 2 s, and
// only the swap layout avoids that.
func checkReadTimeout(ctx context.Context, c *checker, kube kubeclient.Interface, fc *frontConfig, forwarding []caddyfile.ServerBlock, fix string) {
	version, from := dnsVersion(ctx, kube, fc.row)
	if !(front.Options{CoreDNSVersion: version}).UsesReadTimeout() {
		if version != "" {
			c.add(warn, "front", "the standalone path behind CoreDNS %s (%s), which has no read_timeout (1.14.5 and later): %s; swapping the image instead (docs/deploy.md: Swap on k3s, EKS and rke2) avoids it", version, from, oldForwardCost)
		}
		return
	}
	var without []string
	for _, b := range forwarding {
		if _, has := forwardTargets(b); has && !hasReadTimeout(b) {
			without = append(without, strings.Join(b.Keys, " "))
		}
	}
	if len(without) == 0 {
		c.add(ok, "front", "the standalone path behind CoreDNS %s (%s), with read_timeout: a hung coredns-mcs costs a forwarded name the read timeout (cluster.local %s, clusterset.local %s) until the health checks mark it down", version, from, front.DefaultReadTimeout, front.DefaultClustersetReadTimeout)
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
