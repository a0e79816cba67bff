// Gauges computed when Prometheus scrapes, from the plugins whose watchers
// run (registry.go), so that nothing on the query or event path keeps them.

package multicluster

import (
	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// The state gauges are read when Prometheus scrapes, from the plugins whose
// watchers run (running, registry.go), so that no code on the query or event
// path keeps them. With several server blocks, or during a reload while the
// old instance still runs, they say the worst of the running plugins.
var (
	_ = promauto.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "synced",
		Help:      "1 when the caches of every running multicluster plugin have synced; 0 before, and while none runs.",
	}, func() float64 { return boolGauge(allSynced(running.plugins())) })

	_ = promauto.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "api_unreachable",
		Help:      "1 while the last list or watch of some resource got no answer from the Kubernetes API server (the plugin answers from what its cache holds).",
	}, func() float64 { return boolGauge(anyUnreachable(running.plugins())) })

	_ = promauto.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "imports_without_addresses",
		Help:      "ClusterSetIP ServiceImports that have no address to answer with (no valid spec.ips, no derived Service with a ClusterIP, no ready endpoint): their names answer NODATA.",
	}, func() float64 { return float64(maxWithoutAddresses(running.plugins())) })

	_ = promauto.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "imports_endpointslices_absent",
		Help:      "ServiceImports whose controller writes no EndpointSlices for them (status.endpointSliceObjects: Absent): without an address, their names are denied with the zone's negative TTL, not as pending.",
	}, func() float64 { return float64(maxSlicesAbsent(running.plugins())) })

	_ = promauto.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "reverse_conflicts",
		Help:      "Addresses that ServiceImports of more than one namespace claim: their reverse names are passed on, not answered from imports.",
	}, func() float64 { return float64(maxConflicts(running.plugins())) })
)

func maxConflicts(ms []*Multicluster) int64 {
	var n int64
	for _, m := range ms {
		n = max(n, m.index.conflicts.Load())
	}
	return n
}

func maxSlicesAbsent(ms []*Multicluster) int {
	n := 0
	for _, m := range ms {
		c := 0
		for _, v := range m.index.snapshot() {
			if v.slicesAbsent {
				c++
			}
		}
		n = max(n, c)
	}
	return n
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func allSynced(ms []*Multicluster) bool {
	for _, m := range ms {
		if !m.synced.Load() {
			return false
		}
	}
	return len(ms) > 0
}

func anyUnreachable(ms []*Multicluster) bool {
	for _, m := range ms {
		if m.watch != nil && m.watch.apiUnreachable() {
			return true
		}
	}
	return false
}

func maxWithoutAddresses(ms []*Multicluster) int {
	n := 0
	for _, m := range ms {
		n = max(n, m.withoutAddresses())
	}
	return n
}

// withoutAddresses counts the ClusterSetIP imports that would answer A and
// AAAA with no record: the resolver's own choice of addresses, made for
// every import, when Prometheus asks.
func (m *Multicluster) withoutAddresses() int {
	n := 0
	for _, v := range m.index.snapshot() {
		if v.headless {
			continue
		}
		if v4, v6, _, _ := m.clusterSetIPs(v); len(v4)+len(v6) == 0 {
			n++
		}
	}
	return n
}
