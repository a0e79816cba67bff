# The mcs set: the reference controller of sigs.k8s.io/mcs-api
# (controllers/cmd/servicecontroller), built with the module versions that
# controller itself pins (controller-runtime v0.20, client-go v0.32), so the
# tests run it as its authors ship it. Newer tags of the controllers module
# are not on the module proxy this project builds from.
binaries=(
	"servicecontroller sigs.k8s.io/mcs-api/controllers/cmd/servicecontroller"
)
