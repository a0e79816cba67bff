# The krew set: krew and validate-krew-manifest of sigs.k8s.io/krew v0.4.3,
# the validator krew-index runs on every plugin manifest, with the module
# versions krew pins and krew's version stamped as its release builds do.
binaries=(
	"krew sigs.k8s.io/krew/cmd/krew"
	"validate-krew-manifest sigs.k8s.io/krew/cmd/validate-krew-manifest"
)
ldflags="-s -w -X sigs.k8s.io/krew/internal/version.gitTag=v0.4.3"
check() {
	KREW_ROOT="$(mktemp -d)" ./krew version 2>/dev/null | grep -i gitTag || true
}
