# The prometheus set: the Prometheus server and promtool of
# github.com/prometheus/prometheus, built with the module versions Prometheus
# itself pins. Without the builtinassets tag the server has no web UI, which
# the tests do not use: they read its HTTP API.
#
# remove_all_sd leaves out every service discovery but the static, file and
# http ones (the build constraints of plugins/plugin_*.go and
# plugins/minimum.go): the tests scrape static_configs only, and the cloud
# providers' SDKs are a sixth of the packages of a cold build.
tags=remove_all_sd
binaries=(
	"prometheus github.com/prometheus/prometheus/cmd/prometheus"
	"promtool github.com/prometheus/prometheus/cmd/promtool"
)
check() {
	./prometheus --version | head -1
	./promtool --version | head -1
}
