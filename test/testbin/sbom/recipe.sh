# The sbom set: cyclonedx-gomod, with the module versions it pins (it reads
# its own version from the build information).
binaries=(
	"cyclonedx-gomod github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod"
)

check() {
	./cyclonedx-gomod version | head -1
}
