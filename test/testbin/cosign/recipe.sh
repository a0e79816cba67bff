# The cosign set: the cosign command of github.com/sigstore/cosign/v2, with
# the module versions cosign pins, its version stamped as cosign's release
# builds stamp it (sigs.k8s.io/release-utils/version).
binaries=(
	"cosign github.com/sigstore/cosign/v2/cmd/cosign"
)
ldflags="-s -w -X sigs.k8s.io/release-utils/version.gitVersion=v2.6.5 -X sigs.k8s.io/release-utils/version.gitTreeState=clean"
check() {
	./cosign version 2>&1 | grep -i '^GitVersion'
}
