# The prometheus set: the Prometheus server and promtool of
# github.com/prometheus/prometheus, built with the module versions Prometheus
# itself pins. Without the builtinassets tag the server has no web UI, which
# the tests do not use: they read its HTTP API.
binaries=(
	"prometheus github.com/prometheus/prometheus/cmd/prometheus"
	"promtool github.com/prometheus/prometheus/cmd/promtool"
)
check() {
	./prometheus --version | head -1
	./promtool --version | head -1
}
