// Package e2e runs the coredns binary against a real kube-apiserver and etcd
// and queries it over UDP and TCP, as a user with dig does.
package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"
	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"k8s.io/client-go/kubernetes"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"
)

// Shared by the package's tests; each test works in namespaces of its own.
var (
	cp      *controlplane.ControlPlane
	kube    kubernetes.Interface
	mcs     mcsclient.Interface
	binary  string
	workDir string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ci := os.Getenv("CI") == "true"
	assets, err := controlplane.Assets()
	if err != nil {
		if ci {
			fmt.Fprintf(os.Stderr, "FAIL: kube-apiserver and etcd are required in CI: %v\n", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "SKIP: end-to-end tests need kube-apiserver and etcd (make testbin): %v\n", err)
		return 0
	}
	workDir, err = os.MkdirTemp("", "coredns-mcs-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(workDir)

	if binary, err = harness.CoreDNSBinary(workDir); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: coredns binary: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp, err = controlplane.Start(ctx, controlplane.Options{InstallCRDs: true, AssetsDir: assets})
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: start control plane: %v\n", err)
		return 1
	}
	defer cp.Stop()
	kube = kubernetes.NewForConfigOrDie(cp.Config)
	mcs = mcsclient.NewForConfigOrDie(cp.Config)
	return m.Run()
}
