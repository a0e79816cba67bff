# The conformance set: the [sig-network] specs of Kubernetes v1.37.1's own
# end-to-end suite (dnsconformance, a main of this module that links
# k8s.io/kubernetes/test/e2e and its network package), and agnhost, the
# suite's test image binary (test/images/agnhost of the same module), for
# the images test/conformance builds. The module graph is the kube set's,
# with what the e2e framework adds (see ../build.sh).
binaries=(
	"dnsconformance ./dnsconformance"
	"agnhost k8s.io/kubernetes/test/images/agnhost"
)

check() {
	./dnsconformance --help 2>&1 | grep -c ginkgo.focus >/dev/null
}
