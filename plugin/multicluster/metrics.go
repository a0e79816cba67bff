// Metrics kept as the plugin runs: the query counters, which remember
// their last server's child so that counting costs no allocation, and the
// objects, malformed and degraded series.

package multicluster

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// outcome is what became of a request, the outcome label of requestsTotal.
type outcome uint8

const (
	outcomeAnswer      outcome = iota // records in the answer section
	outcomeNodata                     // the name exists, not with that type
	outcomeNXDomain                   // the name does not exist
	outcomeServfail                   // not synced, or degraded
	outcomeFallthrough                // would-be NXDOMAIN passed on by fallthrough
	outcomeLocal                      // fallback name of an import shadowed by a local Service
	outcomePassed                     // fallback name of an import that has no such record, passed on
	outcomeRefused                    // another class, or a zone transfer without the transfer plugin
	outcomes
)

var outcomeNames = [outcomes]string{"answer", "nodata", "nxdomain", "servfail", "fallthrough", "local", "passed", "refused"}

func (o outcome) String() string { return outcomeNames[o] }

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

	policyTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "policy_decisions_total",
		Help:      "Queries whose answer a traffic or fallback policy decided, by rule: local_preferred (only the local cluster's endpoints, for an import that prefers close ones), failover_service (a fallback name failed over because its import prefers close endpoints), scope_refused (a fallback name the fallback scope keeps local), system_refused (a fallback name of a system namespace, kept local), ptr_conflict (a PTR query passed on because imports of several namespaces claim the address), ptr_out_of_range (a PTR query for an address an import claims, passed on because it is outside reverse_ranges), ptr_local_conflict (a PTR query for the address of a local Service or endpoint that imports of another namespace claim, passed on to the cluster's own answer).",
	}, []string{"server", "rule"})

	cappedAnswersTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "capped_answers_total",
		Help:      "Answers cut to a subset of their records because the whole would not fit a DNS message over TCP (more than 2,000 records in a section, or 64 KiB), by query type.",
	}, []string{"server", "type"})

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

	_ = promauto.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "addresses_dropped",
		Help:      "Distinct addresses of ServiceImports' EndpointSlices left out of their answers: past the 2,000 of each family an import answers with from its slices (a ClusterSetIP import without spec.ips, a headless import whose slices repeat addresses). The most of the running plugins.",
	}, func() float64 { return float64(maxDropped(running.plugins())) })

	degradedGauge = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "degraded",
		Help:      "1 while the clusterset zones cannot be served because an API (CRD) or a permission (RBAC) is missing, by reason.",
	}, []string{"reason"})
)

func maxDropped(ms []*Multicluster) int64 {
	var n int64
	for _, m := range ms {
		n = max(n, m.index.dropped.Load())
	}
	return n
}

// Series of a known label set exist from the start, at 0: a counter that
// appears only at its first increment shows no increase() in Prometheus,
// and the dashboard would have nothing to draw before the first problem.
func init() {
	for _, kind := range []string{kindServiceImport, kindEndpointSlice} {
		malformedTotal.WithLabelValues(strings.ToLower(kind))
	}
	for _, reason := range []string{reasonCRD, reasonImportRBAC, reasonSliceRBAC, reasonServiceRBAC} {
		degradedGauge.WithLabelValues(reason)
	}
}

// degradedReasons sets degradedGauge from the degraded reasons of every
// running watcher: a reason is 1 while any of them has it. The gauge is one
// per process, but watchers are one per server block, and in a reload the
// new instance's start before the old one's stop: no watcher may set or
// zero the gauge on its own, or a reason the old instance had would outlive
// it, and a new instance's would be zeroed by the old one's stop.
var degradedReasons = &degradedBoard{reasons: map[*health]map[string]bool{}}

type degradedBoard struct {
	mu      sync.Mutex
	reasons map[*health]map[string]bool // by running watcher's health
}

// join counts h's reasons from now on.
func (b *degradedBoard) join(h *health) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.reasons[h]; !ok {
		b.reasons[h] = map[string]bool{}
	}
}

// leave stops counting h: its watcher has stopped.
func (b *degradedBoard) leave(h *health) {
	b.mu.Lock()
	defer b.mu.Unlock()
	had, ok := b.reasons[h]
	if !ok {
		return
	}
	delete(b.reasons, h)
	for reason := range had {
		b.publishLocked(reason)
	}
}

// update records whether h has reason; a health that has not joined, or has
// left, changes nothing.
func (b *degradedBoard) update(h *health, reason string, on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	mine, ok := b.reasons[h]
	if !ok {
		return
	}
	if on {
		mine[reason] = true
	} else {
		delete(mine, reason)
	}
	b.publishLocked(reason)
}

func (b *degradedBoard) publishLocked(reason string) {
	v := 0.0
	for _, reasons := range b.reasons {
		if reasons[reason] {
			v = 1
			break
		}
	}
	degradedGauge.WithLabelValues(reason).Set(v)
}

// Object kinds; lower case, the kind label of objects and malformedTotal.
const (
	kindServiceImport = "ServiceImport"
	kindEndpointSlice = "EndpointSlice"
)

// counter is one child of a counter vector whose first label is the server.
// Looking a child up with WithLabelValues hashes the labels and allocates
// their slice; on the query path, counter remembers the child of the server
// it saw last (a plugin instance nearly always serves one), so that counting
// costs an atomic load and a string comparison.
type counter struct {
	vec    *prometheus.CounterVec
	labels []string // the labels after the server
	last   atomic.Pointer[serverCounter]
}

type serverCounter struct {
	server string
	c      prometheus.Counter
}

func newCounter(vec *prometheus.CounterVec, labels ...string) *counter {
	return &counter{vec: vec, labels: labels}
}

func (c *counter) inc(server string) {
	if last := c.last.Load(); last != nil && last.server == server {
		last.c.Inc()
		return
	}
	child := c.vec.WithLabelValues(append([]string{server}, c.labels...)...)
	c.last.Store(&serverCounter{server: server, c: child})
	child.Inc()
}

// rule is a policy that decided an answer, the rule label of policyTotal.
type rule uint8

const (
	ruleLocalPreferred  rule = iota // only the local cluster's endpoints (trafficDistribution)
	ruleFailoverService             // a fallback name failed over for its import's trafficDistribution
	ruleScopeRefused                // a fallback name the fallback scope keeps local
	ruleSystemRefused               // a fallback name of a system namespace, kept local
	rulePTRConflict                 // a PTR passed on: imports of several namespaces claim the address
	rulePTROutOfRange               // a PTR passed on: an import claims the address, outside reverse_ranges
	// A PTR passed on to the cluster's own answer: a local Service or
	// endpoint holds the address, and imports of another namespace claim it.
	rulePTRLocalConflict
	rules
)

var ruleNames = [rules]string{"local_preferred", "failover_service", "scope_refused", "system_refused", "ptr_conflict", "ptr_out_of_range", "ptr_local_conflict"}

// queryCounters are the counters of the query path.
type queryCounters struct {
	requests        [zoneKinds][outcomes]*counter
	policies        [rules]*counter
	fallbackAnswers *counter
	failoverAnswers *counter
}

func newQueryCounters() *queryCounters {
	q := &queryCounters{
		fallbackAnswers: newCounter(fallbackAnswersTotal),
		failoverAnswers: newCounter(failoverAnswersTotal),
	}
	for k := range zoneKinds {
		for o := range outcomes {
			q.requests[k][o] = newCounter(requestsTotal, k.String(), o.String())
		}
	}
	for r := range rules {
		q.policies[r] = newCounter(policyTotal, ruleNames[r])
	}
	return q
}

func (q *queryCounters) policy(server string, r rule) {
	q.policies[r].inc(server)
}

func (q *queryCounters) request(server string, kind zoneKind, o outcome) {
	q.requests[kind][o].inc(server)
}
