# The registry set: the registry of github.com/distribution/distribution/v3
# (the image registry Docker's and most others are), with the module versions
# it pins and its version stamped as its release builds stamp it.
binaries=(
	"registry github.com/distribution/distribution/v3/cmd/registry"
)
ldflags="-s -w -X github.com/distribution/distribution/v3/version.version=v3.1.2"
check() {
	./registry --version
}
