// Package mcsctl is kubectl mcs (cmd/kubectl-mcs): explain runs the
// multicluster plugin's own code, and the kubernetes plugin's for what it
// passes on, on the objects of a cluster with the options of its Corefile;
// check reviews a cluster's setup. See docs/kubectl-mcs.md.
package mcsctl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

// Version is the version the command reports and sends in its user agent;
// cmd/kubectl-mcs sets it from the one make stamps.
var Version = "dev"

const usage = `kubectl mcs: explain and check multicluster DNS (coredns-mcs)

Usage:
  kubectl mcs explain NAME [TYPE]   the decision and records for NAME (A, AAAA, SRV; an IP address: PTR)
  kubectl mcs check                 the cluster's setup, one line per check; exit 1 when something is wrong
  kubectl mcs front [--apply] [--remove]
                                    the cluster DNS's configuration that forwards to coredns-mcs standalone,
                                    for its platform, with the standalone Service's current address
  kubectl mcs version

kubectl mcs COMMAND --help lists the flags of COMMAND.
`

// commandUsage is the usage line of each command, for COMMAND --help.
var commandUsage = map[string]string{
	"explain": "kubectl mcs explain NAME [TYPE]: the decision and records for NAME (A, AAAA, SRV; an IP address: PTR)",
	"check":   "kubectl mcs check: the cluster's setup, one line per check; exit 1 when something is wrong",
	"front":   "kubectl mcs front [--apply] [--remove]: the cluster DNS's configuration that forwards to coredns-mcs standalone",
	"version": "kubectl mcs version: the version of kubectl mcs",
}

// options are the flags of the commands; each command takes those flags
// registers for it.
type options struct {
	kubeconfig string
	context    string
	configMap  string // namespace/name of the Corefile's ConfigMap
	corefile   string // a Corefile file instead of the ConfigMap
	deployment string // namespace/name of the coredns Deployment (check)
	output     string
	timeout    time.Duration
	verbose    bool
}

// flags registers the flags of cmd: the API server's for every command
// that asks it, the Corefile's for the commands that read it.
func (o *options) flags(fs *flag.FlagSet, cmd string) {
	o.output, o.timeout = "text", 30*time.Second
	if cmd == "version" {
		return
	}
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&o.context, "context", "", "the kubeconfig context to use")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "how long to wait for the API server and the caches")
	fs.BoolVar(&o.verbose, "v", false, "print the plugins' own log lines (to stderr)")
	if cmd == "front" {
		return
	}
	fs.StringVar(&o.configMap, "corefile-configmap", "", "NAMESPACE/NAME of the ConfigMap that holds the Corefile (key Corefile) (default: kube-system/coredns-mcs in the standalone layout, else kube-system/coredns)")
	fs.StringVar(&o.corefile, "corefile", "", "read the Corefile from this file instead of the ConfigMap")
	fs.StringVar(&o.output, "o", "text", "output format: text or json")
	if cmd == "check" {
		fs.StringVar(&o.deployment, "deployment", "", "NAMESPACE/NAME of the coredns-mcs Deployment (default: kube-system/coredns-mcs in the standalone layout, else kube-system/coredns)")
	}
}

// clientConfig is the kubeconfig loader of kubectl: --kubeconfig, else
// $KUBECONFIG, else ~/.kube/config; --context.
func (o *options) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.kubeconfig != "" {
		rules.ExplicitPath = o.kubeconfig
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.context})
}

func (o *options) restConfig() (*rest.Config, error) {
	cfg, err := o.clientConfig().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.UserAgent = "kubectl-mcs/" + Version
	return cfg, nil
}

// errUsage is a command line that cannot run; the usage follows it.
var errUsage = errors.New("usage")

// Run runs kubectl mcs with args (without the program name) and returns its
// exit status: 0, 1 when something is wrong (check) or failed, 2 for a bad
// command line.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, rest := args[0], args[1:]
	line, known := commandUsage[cmd]
	if !known {
		fmt.Fprintf(stderr, "kubectl mcs: unknown command %q\n\n", cmd)
		printUsage(stderr)
		return 2
	}
	var o options
	var f frontOptions
	fs := flag.NewFlagSet("kubectl mcs "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s\n", line)
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprint(stderr, "\nFlags:\n")
			fs.PrintDefaults()
		}
	}
	o.flags(fs, cmd)
	if cmd == "front" {
		f.flags(fs)
	}
	// Flags may come before or after the arguments, as kubectl's do.
	var positional []string
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if o.output != "text" && o.output != "json" {
		fmt.Fprintf(stderr, "-o %s: want text or json\n", o.output)
		return 2
	}
	if !o.verbose {
		// The plugins log as they would in a server: start-up, syncs.
		clog.Discard()
		klog.SetOutput(io.Discard)
		klog.LogToStderr(false)
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	var err error
	code := 0
	switch cmd {
	case "explain":
		code, err = explain(ctx, &o, positional, stdout)
	case "check":
		if len(positional) > 0 {
			err = fmt.Errorf("%w: check takes no arguments", errUsage)
			break
		}
		code, err = check(ctx, &o, stdout)
	case "front":
		if len(positional) > 0 {
			err = fmt.Errorf("%w: front takes no arguments", errUsage)
			break
		}
		code, err = frontCmd(ctx, &o, &f, stdout, stderr)
	case "version":
		fmt.Fprintf(stdout, "kubectl-mcs %s\n", Version)
	}
	switch {
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "kubectl mcs: %s\n\n", strings.TrimPrefix(err.Error(), "usage: "))
		printUsage(stderr)
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "kubectl mcs %s: %v\n", cmd, err)
		return 1
	}
	return code
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, usage)
}
