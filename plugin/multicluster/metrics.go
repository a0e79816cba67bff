package multicluster

import (
	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Outcomes of a request, the outcome label of requestsTotal.
const (
	outcomeAnswer      = "answer"      // records in the answer section
	outcomeNodata      = "nodata"      // the name exists, not with that type
	outcomeNXDomain    = "nxdomain"    // the name does not exist
	outcomeServfail    = "servfail"    // not synced, or degraded
	outcomeFallthrough = "fallthrough" // would-be NXDOMAIN passed on by fallthrough
	outcomeLocal       = "local"       // fallback name of an import shadowed by a local Service
	outcomePassed      = "passed"      // fallback name of an import that has no such record, passed on
)

var (
	requestsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "requests_total",
		Help:      "Requests the multicluster plugin handled, by zone kind (clusterset, fallback, reverse) and outcome.",
	}, []string{"server", "zone_kind", "outcome"})

	fallbackAnswersTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "fallback_answers_total",
		Help:      "Answers in fallback (cluster-local) zones served from ServiceImports.",
	}, []string{"server"})

	failoverAnswersTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "failover_answers_total",
		Help:      "Answers in fallback zones served from ServiceImports because the local Service had no ready endpoint (failover).",
	}, []string{"server"})

	objects = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "objects",
		Help:      "Objects in the plugin's cache, by kind.",
	}, []string{"kind"})

	malformedTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "malformed_objects_total",
		Help:      "Object versions of which a part, or all, was skipped as malformed, by kind.",
	}, []string{"kind"})

	degradedGauge = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "degraded",
		Help:      "1 while the clusterset zones cannot be served because an API (CRD) or a permission (RBAC) is missing, by reason.",
	}, []string{"reason"})
)

// Object kinds; lower case, the kind label of objects and malformedTotal.
const (
	kindServiceImport = "ServiceImport"
	kindEndpointSlice = "EndpointSlice"
)
