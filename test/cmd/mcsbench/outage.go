package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"syscall"
	"time"

	meta "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-mcs/coredns-mcs/internal/front"
	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/outage"
)

// The standalone server away (docs/platforms.md, "Never worse than the
// cluster DNS alone"): stock CoreDNS with kubeadm's Corefile and what
// kubectl mcs front adds, in front of coredns-mcs standalone, while the
// standalone server runs, hangs (SIGSTOP), resumes, is killed and starts
// again, under steady lookups; each compared with stock CoreDNS with
// kubeadm's Corefile alone.

const nsOutage = "bench-outage"

// frontCorefiles returns what kubectl mcs front writes for kubeadm (for a
// standalone server at standalone, with the read timeout readTimeout), and
// kubeadm's Corefile alone, both as templates of startServer: on loopback,
// against the bench's API server and upstream.
func frontCorefiles(standalone, upstream string, readTimeout time.Duration, standInPort int) (withFront, alone string, err error) {
	// Stock CoreDNS is built from this module's graph: CoreDNS 1.15.0.
	servers, err := front.Options{Standalone: standalone, KubernetesOptions: front.KubernetesOptions(front.Kubeadm), ReadTimeout: readTimeout, CoreDNSVersion: "1.15.0"}.Servers()
	if err != nil {
		return "", "", err
	}
	local := func(c string) string {
		c = regexp.MustCompile(`(?m)^(\S+):53 \{$`).ReplaceAllString(c, "${1}:{{.Port}} {")
		c = regexp.MustCompile(`(?m)^    health \{\n.*\n    \}\n`).ReplaceAllString(c, "")
		c = strings.Replace(c, "    ready\n", "    ready 127.0.0.1:{{.ReadyPort}}\n    pprof 127.0.0.1:{{.PprofPort}}\n", 1)
		c = strings.ReplaceAll(c, "prometheus :9153", "prometheus 127.0.0.1:{{.MetricsPort}}")
		c = regexp.MustCompile(`(?m)^(\s+)kubernetes ([^{\n]*)\{$`).ReplaceAllString(c, "${1}kubernetes ${2}{\n${1}    kubeconfig {{.Kubeconfig}}")
		c = strings.ReplaceAll(c, "forward . /etc/resolv.conf", "forward . "+upstream)
		return strings.ReplaceAll(c, fmt.Sprintf(":%d", front.DefaultStandInPort), fmt.Sprintf(":%d", standInPort))
	}
	return local(front.Merge(front.KubeadmCorefile, front.Corefile(servers))), local(front.KubeadmCorefile), nil
}

// outageResults are the phases of the outage section.
type outageResults struct {
	phases      []outage.Phase
	readTimeout time.Duration
	failures    int
}

// outage measures the cluster DNS with the configuration of kubectl mcs
// front while the standalone server is away.
func (b *bench) outage(ctx context.Context, serverCPU string) error {
	if b.cfg.stock == "" {
		status("no stock CoreDNS (-stock): the outage is not measured")
		return nil
	}
	b.phase("outage: objects")
	if err := b.c.namespace(ctx, nsOutage); err != nil {
		return err
	}
	defer func() { _ = b.c.deleteAll(context.Background(), nsOutage) }()
	if err := b.c.createServices(ctx, nsOutage, "web", 0, 1, false); err != nil {
		return err
	}
	if err := b.c.createImports(ctx, nsOutage, "remote", 0, 1); err != nil {
		return err
	}
	web, err := b.c.kube.CoreV1().Services(nsOutage).Get(ctx, objectName("web", 0), meta.GetOptions{})
	if err != nil {
		return err
	}
	upstream, stopUpstream, err := fakeUpstream()
	if err != nil {
		return err
	}
	defer stopUpstream()

	ports, err := harness.FreePorts(5)
	if err != nil {
		return err
	}
	standaloneOpts := serverOptions{binary: b.cfg.coredns, dir: b.dir, name: "outage-standalone", corefile: corefileStandalone,
		kubeconfig: b.cp.Kubeconfig, cpus: serverCPU, readyTimeout: 2 * time.Minute, ports: ports[:4]}
	standalone, err := startServer(ctx, standaloneOpts)
	if err != nil {
		return err
	}
	defer func() { _ = standalone.stop() }()
	withFront, alone, err := frontCorefiles(standalone.addr, upstream, front.DefaultReadTimeout, ports[4])
	if err != nil {
		return err
	}
	start := func(name, corefile string) (*server, error) {
		return startServer(ctx, serverOptions{binary: b.cfg.stock, dir: b.dir, name: name, corefile: corefile,
			kubeconfig: b.cp.Kubeconfig, cpus: serverCPU, readyTimeout: 2 * time.Minute})
	}
	frontServer, err := start("outage-front", withFront)
	if err != nil {
		return err
	}
	defer func() { _ = frontServer.stop() }()
	plain, err := start("outage-alone", alone)
	if err != nil {
		return err
	}
	defer func() { _ = plain.stop() }()

	cfg := outage.Config{
		Front: frontServer.addr, Alone: plain.addr, Namespace: nsOutage,
		Local: objectName("web", 0) + "." + nsOutage + ".svc.cluster.local.", PTR: reverseName(web.Spec.ClusterIP),
		Import: objectName("remote", 0) + "." + nsOutage + ".svc.cluster.local.", ImportAddress: importIP(0),
	}
	answers := func() error {
		deadline := time.Now().Add(30 * time.Second)
		for {
			got := outage.Run(cfg, time.Millisecond) // one round
			for _, r := range got {
				if r.Kind == outage.Import && r.Answered {
					return nil
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the import %s does not answer %s through the front", cfg.Import, cfg.ImportAddress)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if err := answers(); err != nil {
		return err
	}
	const phase = 10 * time.Second
	res := &outageResults{readTimeout: front.DefaultReadTimeout}
	run := func(name string, split time.Duration, first string) {
		b.phase("outage: " + name)
		status("  outage: %s", name)
		res.phases = append(res.phases, outage.Phases(name, outage.Run(cfg, phase), split, first)...)
	}
	signal := func(sig syscall.Signal) error { return syscall.Kill(standalone.proc.Pid, sig) }

	run("up", 0, "")
	if err := signal(syscall.SIGSTOP); err != nil {
		return err
	}
	run("hung (SIGSTOP), from 3 s on", 3*time.Second, "hung (SIGSTOP), first 3 s")
	if err := signal(syscall.SIGCONT); err != nil {
		return err
	}
	if err := answers(); err != nil {
		return err
	}
	run("resumed", 0, "")
	if err := signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-standalone.proc.Done()
	run("down (killed)", 0, "")
	if standalone, err = startServer(ctx, standaloneOpts); err != nil {
		return err
	}
	if err := answers(); err != nil {
		return err
	}
	run("restarted", 0, "")
	for _, p := range res.phases {
		for _, r := range p.Results {
			if r.Failure != "" {
				res.failures++
				if res.failures <= 5 {
					status("  outage: %s: %s %s: %s", p.Name, r.Kind, r.Description, r.Failure)
				}
			}
		}
	}
	b.res.outage = res
	return nil
}

// reverseName is the PTR name of an IPv4 address.
func reverseName(ip string) string {
	parts := strings.Split(ip, ".")
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, ".") + ".in-addr.arpa."
}

// writeOutage reports the standalone server away.
func (r *results) writeOutage(p func(string, ...any)) {
	o := r.outage
	if o == nil {
		return
	}
	p("## The standalone server away\n\n")
	p("Stock CoreDNS with kubeadm's Corefile and the server blocks `kubectl mcs front` adds (docs/platforms.md: a view narrows what is forwarded, `forward` to coredns-mcs standalone then to a stand-in on loopback that answers NXDOMAIN, `policy sequential`, `read_timeout %s`, `max_fails 1`), ", o.readTimeout)
	p("in front of coredns-mcs standalone (manifests/standalone's Corefile), against stock CoreDNS with kubeadm's Corefile alone. ")
	p("Every 20 ms a round of lookups starts, each in a goroutine of its own, as pods ask (an open loop): an external name through a pod's search path (`ndots:5`: three cluster.local expansions, then the name, which the upstream answers), ")
	p("a local Service's A and its ClusterIP's PTR, each asked of both servers and compared (rcode and records), and an import-only cluster.local name through the front. One attempt per question, a 5 s time-out, as a stub resolver. ")
	p("A failure is a time-out, a SERVFAIL, or an answer other than the cluster DNS alone gives; an import may answer NXDOMAIN while the standalone server is away. Each phase lasts 10 s; the hang's first 3 s, while forward's health checks (two failed checks of 1 s) have not yet marked the standalone server down, are a row of their own.\n\n")
	p("%s\n", outage.Table(o.phases))
	p("Failures in all: %d (target 0: %s). ", o.failures, map[bool]string{true: "met", false: "**missed**"}[o.failures == 0])
	worst := time.Duration(0)
	for _, ph := range o.phases {
		var front, alone []time.Duration
		for _, res := range ph.Results {
			if res.Kind == outage.External {
				front, alone = append(front, res.Front), append(alone, res.Alone)
			}
		}
		_, fp99 := outage.Quantiles(front)
		_, ap99 := outage.Quantiles(alone)
		if strings.HasPrefix(ph.Name, "hung") || strings.HasPrefix(ph.Name, "down") {
			worst = max(worst, fp99-ap99)
		}
	}
	p("Largest p99 an external lookup adds while the standalone server is hung or down: %.1f ms (target <= 50 ms: %s); ", float64(worst.Microseconds())/1000, map[bool]string{true: "met", false: "**missed**"}[worst <= 50*time.Millisecond])
	p("an external lookup forwards two names (the view keeps `NAME.cluster.local` in the cluster DNS's own block), each of which waits the read timeout until the health checks mark the standalone server down.\n\n")
}
