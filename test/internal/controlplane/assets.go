package controlplane

import (
	"github.com/coredns-mcs/coredns-mcs/test/internal/testbin"
)

// AssetsEnv names the directory with the kube-apiserver and etcd binaries, as
// in envtest-based tooling, so an existing setup can be reused.
const AssetsEnv = testbin.KubebuilderAssets

// buildScript is the script, relative to the repository root, that builds
// the binaries and prints their directory.
const buildScript = testbin.Script

// Assets returns the directory with the kube-apiserver and etcd binaries:
// $KUBEBUILDER_ASSETS (or $TESTBIN_KUBE) if set, otherwise the directory of
// the kube set of test/testbin/build.sh, which returns a cached build at once
// but needs several minutes and the Go module proxy the first time on a
// machine. Build progress goes to stderr.
func Assets() (string, error) {
	return testbin.Dir("kube", "kube-apiserver", "etcd")
}

// checkAssets reports whether dir holds executable kube-apiserver and etcd
// binaries.
func checkAssets(dir string) error {
	return testbin.Check(dir, "kube-apiserver", "etcd")
}
