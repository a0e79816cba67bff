# The mcs set: the reference controller of sigs.k8s.io/mcs-api
# (controllers/cmd/servicecontroller), its code as its authors ship it, built
# with the main module's Kubernetes libraries (v0.37.1) and
# controller-runtime v0.25.2, the release for them, instead of the v0.32 and
# v0.20 the controller pins: it compiles unchanged, and its Kubernetes
# packages are then the ones make build compiled (../build.sh, shared sets).
# Newer tags of the controllers module are not on the module proxy this
# project builds from.
binaries=(
	"servicecontroller sigs.k8s.io/mcs-api/controllers/cmd/servicecontroller"
)
