# The helm set: the helm command of helm.sh/helm/v3, built with the module
# versions Helm itself pins, and its version stamped as Helm's release
# builds stamp it (internal/version).
binaries=(
	"helm helm.sh/helm/v3/cmd/helm"
)
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=v3.22.0"
check() {
	./helm version --short
}
