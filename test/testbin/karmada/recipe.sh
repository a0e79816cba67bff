# The karmada set: the Karmada v1.18.2 control plane that test/internal/karmada runs
# beside kube-apiserver and etcd of the kube set (which serve as
# karmada-apiserver and its etcd, and as the member clusters). go.mod requires
# github.com/karmada-io/karmada v1.18.2 and nothing else, so the module graph
# is Karmada's own (k8s.io v0.35.3, controller-runtime v0.23.1), as its go.mod
# pins it; that is a separate compile of the Kubernetes libraries from the kube
# set's v0.37.1.
KARMADA_VERSION=v1.18.2

binaries=(
	# Serves cluster.karmada.io through an APIService: `Cluster` objects
	# are not a CRD (cmd/aggregated-apiserver).
	"karmada-aggregated-apiserver github.com/karmada-io/karmada/cmd/aggregated-apiserver"
	# The controllers that move Services, ServiceExports, ServiceImports and
	# EndpointSlices between clusters (cmd/controller-manager).
	"karmada-controller-manager github.com/karmada-io/karmada/cmd/controller-manager"
	"karmada-scheduler github.com/karmada-io/karmada/cmd/scheduler"
	# Optional for the tests; built so that they can run with it.
	"karmada-webhook github.com/karmada-io/karmada/cmd/webhook"
)

# What hack/util.sh (util::version_ldflags) stamps in Karmada's release
# builds, so that --version says v1.18.2 rather than v0.0.0-master.
ldflags="-s -w -X github.com/karmada-io/karmada/pkg/version.gitVersion=$KARMADA_VERSION -X github.com/karmada-io/karmada/pkg/version.gitTreeState=clean"

# Karmada's binaries print their version with a subcommand, not a flag.
check() {
	./karmada-controller-manager version
	./karmada-aggregated-apiserver version
}
