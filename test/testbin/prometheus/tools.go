//go:build tools

// Package prometheus pins the Prometheus server and promtool, which the
// monitoring tests run: promtool checks and unit-tests the alerting rules, the
// server scrapes a real coredns-mcs and evaluates them.
package prometheus

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
