// Package multicluster serves Kubernetes Multi-Cluster Services DNS: the
// clusterset zone of KEP-1645 from ServiceImports, and the same answers in
// cluster-local zones for names that have no local Service.
//
// # Data flow
//
// Objects flow one way, from the API server to the answers; each step has
// files of its own.
//
//  1. Informers (watch.go, importversion.go, informer.go). Per watched
//     namespace, the watcher runs an informer of ServiceImports, in the
//     version the API server serves (it follows a change of version without
//     a restart), and one of the EndpointSlices of imports; when no
//     kubernetes plugin shares its cache, one of local Services; and with
//     no cluster_id, one of the ClusterProperty that names the local cluster
//     (clusterid.go). ServiceImports are decoded field by field (imports.go),
//     so that one object Go cannot decode fails alone. Lists come in pages
//     (pages.go), each object thinned as it arrives (slim.go), so that no
//     list holds a whole resource at full size; calls the API server
//     refuses or does not answer are retried, and reported as the plugin's
//     health (informer.go, apihealth.go).
//  2. Conversion (convert.go, spec.go, specialip.go, intern.go). Each object
//     is reduced to a spec, what DNS needs of it, validated: parts that fail
//     are dropped and logged within bounds (boundedlog.go); addresses no
//     import may name are refused (specialip.go); strings and port lists
//     that repeat are shared.
//  3. Stores (sourcestore.go). The stores of the ServiceImport and
//     EndpointSlice informers are the sources' own maps, seen through the
//     interface an informer asks of a store, so that each spec is kept once.
//  4. Sources (sources.go, serviceslices.go). Per service, the import and
//     the slices of every cluster; each change rebuilds that service's view
//     and publishes it. The fallback scope (scope.go) gives each import's
//     spec its verdict as it is filed.
//  5. Views (views.go, model.go). A view is everything the answers of one
//     service need, built once per change and immutable once published:
//     readers use it without locks.
//  6. Index (index.go, reverseindex.go). The one shared state: the views by
//     service, for forward lookups, and the reverse map of which import
//     claims each address, for PTR. Publishing a view moves the zones' SOA
//     serial (serial.go) and logs changes of contested addresses
//     (conflictlog.go). Local Services' changes move it as an SOA is handed
//     out (resolver.serial): the kubernetes plugin's cache has no event hook,
//     only a change time (its controller.go). An SOA costs a few atomic
//     loads, and one compare-and-swap per change.
//  7. Resolve (resolve.go, ptr.go, records.go, capped.go). The resolver
//     turns a parsed query name (qname.go) into records and an rcode:
//     forward names from the index and from derived Services, read at query
//     time from the local cluster's Services (local.go); reverse names by
//     the trust model (ptr.go, docs/trust.md). Answers are cut to what a
//     message carries.
//  8. Handler (handler.go, decision.go, zones.go, reply.go). ServeDNS finds
//     the zone a name is in and how it is served, decides (filling a
//     decision record), counts the decision and writes the reply it names,
//     or passes the query on; before passing it on it grows the goroutine's
//     stack where that is cheap (stack.go).
//
// # Side paths
//
//   - Set-up (setup.go, corefile.go, client.go, standalone.go): the caddy
//     hooks, the Corefile stanza's parser, the API clients' configuration,
//     and the check that a standalone server never forwards its own names.
//   - Reload registry (registry.go): every running watcher, with the caddy
//     instance that started it, so that a failed reload's watchers are
//     stopped and the gauges read every running plugin.
//   - Readiness (multicluster.go, apihealth.go): ready once the caches have
//     synced, or at once when degraded (a missing CRD or RBAC rule), so
//     that the cluster-local DNS beside the plugin is never held back;
//     degraded clusterset zones answer SERVFAIL with an Extended DNS Error.
//   - Metrics (metrics.go, gauges.go): counters kept on the query path from
//     the decision record, the objects and degraded gauges kept by the
//     informers and watchers, and gauges computed when Prometheus scrapes.
//   - Explain (explain.go): runs a query through the same path as ServeDNS
//     and describes the decision record it filled.
//   - Transfer (transfer.go): AXFR and IXFR of the clusterset zones through
//     the transfer plugin, built from the resolver's own answers.
//   - The kubectl mcs API (toolapi.go): runs the plugin outside a server,
//     with the same parser and informers, for a tool that must decide
//     exactly as the server does.
package multicluster
