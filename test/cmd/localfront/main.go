// Command localfront writes the Corefiles of make run-front: coredns-mcs
// standalone (the Corefile of manifests/standalone/configmap.yaml) and, in
// front of it, stock CoreDNS with a platform's default Corefile and the
// server blocks internal/front writes for that CoreDNS version (what kubectl
// mcs front adds), all on 127.0.0.1 against a local API server
// (test/cmd/localcluster):
//
//	localfront -dir DIR -kubeconfig FILE -platform kubeadm -coredns-version 1.14.6 \
//		-port 1053 -standalone-port 1054 -stand-in-port 5301 ...
//
// It writes DIR/standalone/Corefile and DIR/front/Corefile (k3s: also
// DIR/front/custom/multicluster.server, which k3s's Corefile imports, and
// DIR/front/NodeHosts), and prints shell assignments for the script that
// runs them: the two paths, and forward's read_timeout ("" where the
// version has none).
//
// The ports of the platform's Corefile and of the standalone manifest (53,
// health's 8080, ready's 8181, prometheus's 9153, the stand-in's 5301) become
// the ones given, every server block binds 127.0.0.1, and every kubernetes
// and multicluster stanza reads the kubeconfig. forward . /etc/resolv.conf
// stays as it is: the front's upstream is this machine's resolver, as a
// cluster DNS's is its node's.
//
//	localfront -lookup NAME -server 127.0.0.1:1053
//	                               looks NAME up as a pod in the namespace demo
//	                               does (its search list, ndots:5) and prints
//	                               each name asked, its status and time
//	localfront -default-version    prints the CoreDNS version kubeadm ships
//	localfront -stock VERSION      prints the path of stock CoreDNS at VERSION,
//	                               building it first if it is not cached
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/coredns-mcs/coredns-mcs/internal/front"
	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "localfront: %v\n", err)
		os.Exit(1)
	}
}

// config is what the Corefiles are written for.
type config struct {
	dir, kubeconfig, standaloneManifest string
	platform                            front.Platform
	version                             string // without a leading v
	clustersetCIDRs                     []string

	port, health, ready, metrics, standIn int // the front's
	standalonePort, standaloneHealth      int
	standaloneReady, standaloneMetrics    int
}

func run() error {
	var c config
	defaultVersion := flag.Bool("default-version", false, "print the CoreDNS version kubeadm ships (internal/front's KubeadmCoreDNSVersion) and exit")
	lookupName := flag.String("lookup", "", "look `NAME` up as a pod in the namespace demo does (search "+strings.Join(podSearch, " ")+", ndots:5), print each name asked with its status and time, and exit")
	server := flag.String("server", "127.0.0.1:1053", "the DNS `ADDRESS` -lookup asks")
	lookupTimeout := flag.Duration("timeout", 3*time.Second, "how long -lookup waits for each answer")
	stock := flag.String("stock", "", "print the path of stock CoreDNS at `VERSION` (go install github.com/coredns/coredns@vVERSION, cached as the tests cache it), building it first if needed, and exit")
	flag.StringVar(&c.dir, "dir", "", "write the Corefiles under `DIR`")
	flag.StringVar(&c.kubeconfig, "kubeconfig", "", "the API server's kubeconfig `FILE`")
	flag.StringVar(&c.standaloneManifest, "standalone-config", "manifests/standalone/configmap.yaml", "the standalone ConfigMap `FILE` whose Corefile to run")
	platform := flag.String("platform", string(front.Kubeadm), "the front's platform: kubeadm or k3s (its default Corefile)")
	flag.StringVar(&c.version, "coredns-version", front.KubeadmCoreDNSVersion, "the front's CoreDNS `VERSION`, which decides what the added blocks use")
	cidrs := flag.String("clusterset-cidr", "10.42.0.0/16", "the ClusterSetIP `RANGES` (comma-separated) whose reverse zones go to the standalone server (the examples' imports are in 10.42.0.0/16)")
	flag.IntVar(&c.port, "port", 1053, "the front's DNS port")
	flag.IntVar(&c.health, "health-port", 0, "the front's health port")
	flag.IntVar(&c.ready, "ready-port", 0, "the front's ready port")
	flag.IntVar(&c.metrics, "metrics-port", 0, "the front's metrics port")
	flag.IntVar(&c.standIn, "stand-in-port", front.DefaultStandInPort, "the front's stand-in port")
	flag.IntVar(&c.standalonePort, "standalone-port", 1054, "the standalone server's DNS port")
	flag.IntVar(&c.standaloneHealth, "standalone-health-port", 0, "the standalone server's health port")
	flag.IntVar(&c.standaloneReady, "standalone-ready-port", 0, "the standalone server's ready port")
	flag.IntVar(&c.standaloneMetrics, "standalone-metrics-port", 0, "the standalone server's metrics port")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	switch {
	case *lookupName != "":
		fmt.Println(lookup(*lookupName, *server, *lookupTimeout))
		return nil
	case *defaultVersion:
		fmt.Println(front.KubeadmCoreDNSVersion)
		return nil
	case *stock != "":
		bin, err := stockCoreDNS(*stock)
		if err != nil {
			return err
		}
		fmt.Println(bin)
		return nil
	}
	c.version = strings.TrimPrefix(c.version, "v")
	var err error
	if c.platform, err = front.ParsePlatform(*platform); err != nil {
		return err
	}
	if c.platform != front.Kubeadm && c.platform != front.K3s {
		return fmt.Errorf("platform %s: make run-front runs kubeadm's or k3s's Corefile", c.platform)
	}
	for _, s := range strings.Split(*cidrs, ",") {
		if s = strings.TrimSpace(s); s != "" {
			c.clustersetCIDRs = append(c.clustersetCIDRs, s)
		}
	}
	if c.dir == "" || c.kubeconfig == "" {
		return errors.New("-dir and -kubeconfig are needed")
	}
	for name, p := range map[string]int{
		"-port": c.port, "-health-port": c.health, "-ready-port": c.ready, "-metrics-port": c.metrics, "-stand-in-port": c.standIn,
		"-standalone-port": c.standalonePort, "-standalone-health-port": c.standaloneHealth,
		"-standalone-ready-port": c.standaloneReady, "-standalone-metrics-port": c.standaloneMetrics,
	} {
		if p < 1 || p > 65535 {
			return fmt.Errorf("%s %d: want a port from 1 to 65535", name, p)
		}
	}
	standalone, err := c.writeStandalone()
	if err != nil {
		return err
	}
	corefile, readTimeout, err := c.writeFront()
	if err != nil {
		return err
	}
	fmt.Printf("standalone_corefile=%s\nfront_corefile=%s\nread_timeout=%s\n",
		quote(standalone), quote(corefile), quote(readTimeout))
	return nil
}

// stockCoreDNS returns stock CoreDNS at version, saying on stderr when it
// has to build it.
func stockCoreDNS(version string) (string, error) {
	// A version the added blocks cannot serve (before the view plugin)
	// fails here, before a build.
	if _, err := (front.Options{Standalone: "127.0.0.1", CoreDNSVersion: version}).Servers(); err != nil {
		return "", err
	}
	version = "v" + strings.TrimPrefix(version, "v")
	bin, err := harness.StockCoreDNSPath(version)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(bin); err != nil {
		// Measured on a 2-core machine busy with other builds: with empty
		// Go module and build caches, 14m42s (10 minutes of CPU, and 1.6
		// GB of modules downloaded); with the caches of an earlier build
		// of another version, about 10 s.
		fmt.Fprintf(os.Stderr, "Building stock CoreDNS %s once (go install github.com/coredns/coredns@%s, with that release's own dependencies: up to 15 minutes on 2 cores with empty Go caches, seconds with warm ones), into %s...\n", version, version, filepath.Dir(bin))
	}
	return harness.StockCoreDNS(version)
}

// writeStandalone writes the standalone manifest's Corefile, on loopback.
func (c config) writeStandalone() (string, error) {
	data, err := os.ReadFile(c.standaloneManifest)
	if err != nil {
		return "", err
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(data, &cm); err != nil {
		return "", fmt.Errorf("%s: %w", c.standaloneManifest, err)
	}
	corefile := cm.Data["Corefile"]
	if corefile == "" {
		return "", fmt.Errorf("%s: no Corefile", c.standaloneManifest)
	}
	if c.platform == front.K3s {
		// As docs/platforms.md tells k3s users: the standalone server's
		// kubernetes stanza as k3s's own, which has no ttl.
		if !strings.Contains(corefile, "        ttl 30\n") {
			return "", fmt.Errorf("%s: no ttl 30 line to remove for k3s", c.standaloneManifest)
		}
		corefile = strings.Replace(corefile, "        ttl 30\n", "", 1)
	}
	corefile, err = c.localize(corefile, c.standalonePort, c.standaloneHealth, c.standaloneReady, c.standaloneMetrics)
	if err != nil {
		return "", fmt.Errorf("%s: %w", c.standaloneManifest, err)
	}
	return write(filepath.Join(c.dir, "standalone", "Corefile"), corefile)
}

// writeFront writes the platform's Corefile with the blocks internal/front
// writes for the version, and returns its path and forward's read_timeout.
func (c config) writeFront() (path, readTimeout string, err error) {
	o := front.Options{
		Standalone:        fmt.Sprintf("127.0.0.1:%d", c.standalonePort),
		ReverseCIDRs:      c.clustersetCIDRs,
		KubernetesOptions: front.KubernetesOptions(c.platform),
		StandInPort:       c.standIn,
		MetricsAddress:    fmt.Sprintf("127.0.0.1:%d", c.metrics),
		CoreDNSVersion:    c.version,
	}
	servers, err := o.Servers()
	if err != nil {
		return "", "", err
	}
	if o.UsesReadTimeout() {
		readTimeout = front.DefaultReadTimeout.String()
	}
	// The blocks on the front's port 53: on the front's loopback port, and
	// the added kubernetes stanza reads the local API server (in a cluster
	// it uses the pod's service account, as the front's own).
	for i := range servers {
		s := &servers[i]
		if s.Port != 53 {
			continue
		}
		s.Port = c.port
		s.Plugins = append([]front.Plugin{{Name: "bind", Parameters: "127.0.0.1"}}, s.Plugins...)
		for j := range s.Plugins {
			if p := &s.Plugins[j]; p.Name == "kubernetes" {
				p.ConfigBlock = "kubeconfig " + c.kubeconfig + "\n" + p.ConfigBlock
			}
		}
	}
	blocks := front.Corefile(servers)
	frontDir := filepath.Join(c.dir, "front")
	var corefile string
	switch c.platform {
	case front.Kubeadm:
		corefile = front.KubeadmCorefile
	case front.K3s:
		// k3s's Corefile imports the *.server keys of coredns-custom,
		// mounted at /etc/coredns/custom (manifests/coredns.yaml of k3s),
		// and reads the node's hosts from /etc/coredns/NodeHosts.
		corefile = strings.ReplaceAll(front.K3sCorefile, "/etc/coredns/", frontDir+"/")
		if _, err := write(filepath.Join(frontDir, "NodeHosts"), ""); err != nil {
			return "", "", err
		}
		if _, err := write(filepath.Join(frontDir, "custom", front.CustomKey), blocks); err != nil {
			return "", "", err
		}
	}
	if corefile, err = c.localize(corefile, c.port, c.health, c.ready, c.metrics); err != nil {
		return "", "", fmt.Errorf("%s's Corefile: %w", c.platform, err)
	}
	if c.platform == front.Kubeadm {
		corefile = front.Merge(corefile, blocks)
	}
	path, err = write(filepath.Join(frontDir, "Corefile"), corefile)
	return path, readTimeout, err
}

var (
	serverPort   = regexp.MustCompile(`(?m)^(\S+):53 \{$`)
	healthLine   = regexp.MustCompile(`(?m)^(\s+)health( \{)?$`)
	readyLine    = regexp.MustCompile(`(?m)^(\s+)ready$`)
	metricsLine  = regexp.MustCompile(`(?m)^(\s+)prometheus :9153$`)
	kubeStanza   = regexp.MustCompile(`(?m)^(\s+)(kubernetes|multicluster)( [^{\n]*)\{\n(\s+)`)
	leftOn53     = regexp.MustCompile(`(?m):53 \{$|:9153$|^\s+(health|ready)( \{)?$`)
	kubeconfigIn = regexp.MustCompile(`(?m)^\s+kubeconfig `)
)

// localize puts a Corefile written for a pod on loopback: its server
// blocks of port 53 on port, bound to 127.0.0.1, health, ready and
// prometheus on the given ports of 127.0.0.1, and every kubernetes and
// multicluster stanza reading the kubeconfig. It fails on a Corefile it
// would leave something of the pod's in.
func (c config) localize(corefile string, port, health, ready, metrics int) (string, error) {
	if kubeconfigIn.MatchString(corefile) {
		return "", errors.New("it has a kubeconfig line already")
	}
	if !serverPort.MatchString(corefile) {
		return "", errors.New("no server block on port 53")
	}
	out := serverPort.ReplaceAllString(corefile, fmt.Sprintf("${1}:%d {\n    bind 127.0.0.1", port))
	out = healthLine.ReplaceAllString(out, fmt.Sprintf("${1}health 127.0.0.1:%d${2}", health))
	out = readyLine.ReplaceAllString(out, fmt.Sprintf("${1}ready 127.0.0.1:%d", ready))
	out = metricsLine.ReplaceAllString(out, fmt.Sprintf("${1}prometheus 127.0.0.1:%d", metrics))
	out = kubeStanza.ReplaceAllString(out, "${1}${2}${3}{\n${4}kubeconfig "+c.kubeconfig+"\n${4}")
	if m := leftOn53.FindString(out); m != "" {
		return "", fmt.Errorf("left %q on the pod's ports", strings.TrimSpace(m))
	}
	return out, nil
}

func write(path, content string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, []byte(content), 0o644)
}

// quote quotes s for the shell.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
