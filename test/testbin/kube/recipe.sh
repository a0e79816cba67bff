# The kube set: a single-node Kubernetes v1.37.1 and its etcd, built from the
# module graph pinned in this directory (see ../build.sh). go.mod requires
# k8s.io/kubernetes and replaces every k8s.io staging module with the release
# of the same minor version, as kubernetes' own go.mod points them at
# ./staging; the replace list comes from that go.mod
# (grep '=> ./staging' in the module cache's k8s.io/kubernetes/@v/v1.37.1.mod).
KUBE_VERSION=v1.37.1

# kube-apiserver and etcd come first: every integration test needs them.
binaries=(
	"kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver"
	# `go install go.etcd.io/etcd/server/v3@v3.7.2` refuses to work because
	# the etcd server module has replace directives: build it from this graph.
	"etcd go.etcd.io/etcd/server/v3"
	"kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager"
	"kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler"
	"kubelet k8s.io/kubernetes/cmd/kubelet"
	"kube-proxy k8s.io/kubernetes/cmd/kube-proxy"
	"kubectl k8s.io/kubernetes/cmd/kubectl"
)

# What the Kubernetes release build stamps, so that --version and the API
# server's /version say v1.37.1 rather than v0.0.0.
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37"

check() {
	./kube-apiserver --version
	./etcd --version | head -1
	./kubelet --version
	./kubectl version --client | head -1
}
