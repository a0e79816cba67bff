// Command localcluster runs a local Kubernetes API (etcd and kube-apiserver,
// see test/internal/controlplane) with the Multi-Cluster Services CRDs installed,
// applies the manifests of a directory to it, and keeps it running until
// interrupted. It backs `make run`, so coredns can be tried against a real
// API without a cluster:
//
//	go run ./test/cmd/localcluster -kubeconfig-out /tmp/mcs.kubeconfig \
//		-apply test/manifests -ready-file /tmp/mcs.ready
//
// There is no controller-manager: manifests must contain the EndpointSlices
// of their Services themselves.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/coredns-mcs/coredns-mcs/test/internal/apply"
	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "localcluster: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	kubeconfigOut := flag.String("kubeconfig-out", "", "write the admin kubeconfig to `FILE`")
	applyDir := flag.String("apply", "", "apply every YAML/JSON manifest under `DIR` (Namespaces and CRDs first)")
	readyFile := flag.String("ready-file", "", "create `FILE` once everything is applied; it is removed on exit")
	crds := flag.Bool("crds", true, "install the ServiceImport and ServiceExport CRDs")
	crdVersions := flag.String("crd-versions", "", "comma-separated CRD versions to serve, e.g. v1alpha1 (default: as shipped)")
	serviceRange := flag.String("service-cluster-ip-range", controlplane.ExamplesServiceClusterIPRange, "kube-apiserver's --service-cluster-ip-range: the `CIDRs` of ClusterIPs, one per family (the default holds the ClusterIPs of manifests/examples)")
	timeout := flag.Duration("timeout", 3*time.Minute, "give up if starting and applying take longer (a first build of the binaries is not counted)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: %s [flags]\n\nRuns etcd and kube-apiserver on 127.0.0.1 until SIGINT or SIGTERM.\n\n", filepath.Base(os.Args[0]))
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}

	// A stale ready file from an earlier run would tell a waiting script
	// that this run is ready before it is.
	if *readyFile != "" {
		if err := os.Remove(*readyFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove stale ready file: %w", err)
		}
	}

	// Read the manifests first, so a typo fails before anything starts.
	var manifests []apply.Manifest
	if *applyDir != "" {
		var err error
		if manifests, err = apply.ReadDir(*applyDir); err != nil {
			return err
		}
	}

	// Stop on SIGINT/SIGTERM, also while still starting up.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// Find (or, the first time on a machine, build) the binaries before the
	// start-up timeout begins: a cold build takes several minutes.
	assets, err := controlplane.Assets()
	if err != nil {
		return err
	}
	startCtx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	opts := controlplane.Options{InstallCRDs: *crds, AssetsDir: assets, ServiceClusterIPRange: *serviceRange}
	if *crdVersions != "" {
		opts.CRDVersions = splitList(*crdVersions)
	}
	status("starting etcd and kube-apiserver")
	began := time.Now()
	cp, err := controlplane.Start(startCtx, opts)
	if err != nil {
		return err
	}
	defer func() {
		status("stopping")
		if err := cp.Stop(); err != nil {
			status("stop: %v", err)
		}
		if *readyFile != "" {
			_ = os.Remove(*readyFile)
		}
	}()
	status("kube-apiserver ready at %s after %s (logs in %s)", cp.Host, time.Since(began).Round(time.Millisecond), cp.Dir)

	if *kubeconfigOut != "" {
		if err := copyFile(cp.Kubeconfig, *kubeconfigOut); err != nil {
			return fmt.Errorf("write kubeconfig: %w", err)
		}
		status("admin kubeconfig written to %s (contexts %q, %q)", *kubeconfigOut, controlplane.AdminContext, controlplane.OtherContext)
	}

	if *applyDir != "" {
		if err := apply.Apply(startCtx, cp.Config, manifests); err != nil {
			return err
		}
		status("applied %d objects from %s", len(manifests), *applyDir)
	}

	if *readyFile != "" {
		if err := os.WriteFile(*readyFile, []byte(cp.Host+"\n"), 0o644); err != nil {
			return fmt.Errorf("write ready file: %w", err)
		}
	}
	status("ready; press Ctrl-C to stop")
	<-ctx.Done()
	return nil
}

func status(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "localcluster: "+format+"\n", args...)
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if dir := filepath.Dir(to); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return os.WriteFile(to, data, 0o600)
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
