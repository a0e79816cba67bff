package multicluster

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	core "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The reverse map (reverseindex.go) is kept up to date change by change.
// TestReverseMapAgainstModel applies random sequences of changes of imports,
// slices and local Services to the plugin, and to a model that keeps the
// objects alone and works every PTR answer out from scratch (docs/trust.md);
// after each change, every address of the universe must get the same answer
// from both, and the reverse map and the conflicts gauge must hold as many
// addresses as the model finds claimed, and contested.

// The universe: two namespaces, two services each, and the addresses
// their objects may hold: private ones of both families, and a public one
// of each, outside the default reverse ranges.
var (
	modelNamespaces = []string{"a", "b"}
	modelServices   = []string{"x", "y"}
	modelClusters   = []string{"east", "west", ""}
	modelV4         = []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "8.8.8.8"}
	modelV6         = []string{"fd00::1", "fd00::2", "2001:4860::1"}
	modelHosts      = []string{"h1", "h2", ""}
	// modelLocalNames are the local Services: a service's own name, the
	// names derived-service annotations give, derived_prefix's name of x.
	modelLocalNames = []string{"x", "y", "d1", "d2", "derived-x"}
	modelSlices     = []string{"s1", "s2", "s3"}
)

type modelImport struct {
	headless, copy bool
	ips            []string
	derived        string
}

type modelEndpoint struct {
	ip, host string
	ready    bool
}

type modelSlice struct {
	service, cluster string
	v6               bool
	endpoints        []modelEndpoint
}

type modelLocal struct {
	ips []string
}

// reverseModel is every object, as given, and nothing derived from them.
type reverseModel struct {
	prefix    string
	imports   map[serviceKey]modelImport
	slices    map[sliceID]modelSlice
	local     map[serviceKey]modelLocal
	endpoints map[string][]localEndpoint // local endpoints, by address
}

// served returns the import key as served: nil for none, or a
// per-cluster copy.
func (md *reverseModel) served(key serviceKey) *modelImport {
	imp, ok := md.imports[key]
	if !ok || imp.copy {
		return nil
	}
	return &imp
}

// slicesOf returns the slices labelled for key.
func (md *reverseModel) slicesOf(key serviceKey) []modelSlice {
	var out []modelSlice
	for id, s := range md.slices {
		if id.namespace == key.namespace && s.service == key.name {
			out = append(out, s)
		}
	}
	return out
}

// claims returns what addr points back to, found by walking every object.
func (md *reverseModel) claims(addr netip.Addr) []ptrTarget {
	var out []ptrTarget
	for key := range md.imports {
		imp := md.served(key)
		if imp == nil {
			continue
		}
		if !imp.headless {
			// spec.ips, or without any, the ready addresses of its slices.
			ips := imp.ips
			if len(ips) == 0 {
				for _, s := range md.slicesOf(key) {
					for _, e := range s.endpoints {
						if e.ready {
							ips = append(ips, e.ip)
						}
					}
				}
			}
			if slices.ContainsFunc(ips, func(ip string) bool { return netip.MustParseAddr(ip) == addr }) {
				out = append(out, ptrTarget{key: key})
			}
			continue
		}
		for _, s := range md.slicesOf(key) {
			for _, e := range s.endpoints {
				if !e.ready || netip.MustParseAddr(e.ip) != addr {
					continue
				}
				switch {
				case s.cluster == "":
					out = append(out, ptrTarget{key: key})
				case e.host == "":
					out = append(out, ptrTarget{key: key, host: dashedIP(e.ip), cluster: s.cluster})
				default:
					out = append(out, ptrTarget{key: key, host: e.host, cluster: s.cluster})
				}
			}
		}
	}
	return out
}

// derivedImports returns the ClusterSetIP imports whose derived Service is
// the local Service key: by annotation, or by derived_prefix.
func (md *reverseModel) derivedImports(key serviceKey) []serviceKey {
	var out []serviceKey
	for k := range md.imports {
		if imp := md.served(k); imp != nil && !imp.headless && k.namespace == key.namespace && imp.derived == key.name {
			out = append(out, k)
		}
	}
	if base, ok := strings.CutPrefix(key.name, md.prefix); ok && md.prefix != "" && base != "" {
		k := serviceKey{namespace: key.namespace, name: base}
		if imp := md.served(k); imp != nil && !imp.headless && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// anyDerived reports whether some import may be named by a local
// Service's address.
func (md *reverseModel) anyDerived() bool {
	if md.prefix != "" {
		return true
	}
	for k := range md.imports {
		if imp := md.served(k); imp != nil && !imp.headless && imp.derived != "" {
			return true
		}
	}
	return false
}

// namespacesOf returns the namespaces of claims, each once.
func namespacesOf(claims []ptrTarget) []string {
	var out []string
	for _, c := range claims {
		if !slices.Contains(out, c.key.namespace) {
			out = append(out, c.key.namespace)
		}
	}
	return out
}

// first returns the name an address of several names answers: a
// service's own before an endpoint's, then by namespace, service, cluster
// and host.
func first(targets []ptrTarget) ptrTarget {
	named := func(t ptrTarget) int {
		if t.host == "" {
			return 0
		}
		return 1
	}
	return slices.MinFunc(targets, func(a, b ptrTarget) int {
		return cmp.Or(cmp.Compare(named(a), named(b)), cmp.Compare(a.key.namespace, b.key.namespace),
			cmp.Compare(a.key.name, b.key.name), cmp.Compare(a.cluster, b.cluster), cmp.Compare(a.host, b.host))
	})
}

// pointer is the model's answer for addr: the name it answers, or why
// not.
func (md *reverseModel) pointer(addr netip.Addr, zone string) (string, ptrVerdict) {
	claims := md.claims(addr)
	if len(claims) == 0 && !md.anyDerived() {
		return "", ptrUnknown
	}
	inRange := inRanges(defaultReverseRanges, addr)
	if !inRange && len(claims) > 0 {
		return "", ptrOutOfRange
	}
	var svcs []serviceKey
	for key, l := range md.local {
		if slices.Contains(l.ips, addr.String()) {
			svcs = append(svcs, key)
		}
	}
	if !inRange {
		for _, svc := range svcs {
			if len(md.derivedImports(svc)) > 0 {
				return "", ptrOutOfRange
			}
		}
		return "", ptrUnknown
	}
	if len(svcs) > 0 {
		// A local Service's ClusterIP: its own, unless it is the derived
		// Service of imports, and no other namespace claims it.
		var named []ptrTarget
		for _, svc := range svcs {
			if slices.ContainsFunc(claims, func(c ptrTarget) bool { return c.key.namespace != svc.namespace }) {
				return "", ptrLocalConflict
			}
			imports := md.derivedImports(svc)
			if len(imports) == 0 {
				return "", ptrLocal
			}
			for _, k := range imports {
				named = append(named, ptrTarget{key: k})
			}
		}
		return serviceName(first(named).key, zone), ptrAnswered
	}
	if len(claims) == 0 {
		return "", ptrUnknown
	}
	eps := md.endpoints[addr.String()]
	for _, e := range eps {
		if len(md.derivedImports(e.key)) > 0 {
			continue // its import's claims decide
		}
		for _, ns := range namespacesOf(claims) {
			if !slices.ContainsFunc(eps, func(e localEndpoint) bool { return e.key.namespace == ns }) {
				return "", ptrLocalConflict
			}
		}
		return "", ptrLocal
	}
	if len(namespacesOf(claims)) > 1 {
		return "", ptrConflict
	}
	best := first(claims)
	if best.host == "" {
		return serviceName(best.key, zone), ptrAnswered
	}
	return hostName(best.host, best.cluster, best.key, zone), ptrAnswered
}

// conflicts counts the addresses that imports of several namespaces claim.
func (md *reverseModel) conflicts(universe []netip.Addr) int64 {
	var n int64
	for _, addr := range universe {
		if len(namespacesOf(md.claims(addr))) > 1 {
			n++
		}
	}
	return n
}

// claimed counts the addresses some import claims.
func (md *reverseModel) claimed(universe []netip.Addr) int {
	n := 0
	for _, addr := range universe {
		if len(md.claims(addr)) > 0 {
			n++
		}
	}
	return n
}

// reverseStep makes one random change to the plugin m, its local cluster
// and the model alike, and says what it did.
func reverseStep(t *testing.T, rng *rand.Rand, m *Multicluster, local *fakeCluster, md *reverseModel) string {
	t.Helper()
	pick := func(list []string) string { return list[rng.IntN(len(list))] }
	some := func(list []string, most int) []string {
		var out []string
		for range rng.IntN(most + 1) {
			if ip := pick(list); !slices.Contains(out, ip) {
				out = append(out, ip)
			}
		}
		return out
	}
	ns := pick(modelNamespaces)
	switch op := rng.IntN(100); {
	case op < 25: // an import comes or changes
		key := serviceKey{namespace: ns, name: pick(modelServices)}
		imp := modelImport{headless: rng.IntN(3) == 0, copy: rng.IntN(10) == 0}
		d := importDef{ns: key.namespace, name: key.name, typ: "ClusterSetIP", copy: imp.copy}
		if imp.headless {
			d.typ = "Headless"
		} else {
			imp.ips = some(append(slices.Clone(modelV4), modelV6...), 2)
			if rng.IntN(2) == 0 {
				imp.derived = pick([]string{"d1", "d2"})
			}
			d.ips, d.derived = imp.ips, imp.derived
		}
		spec, _, err := newImportSpec(d.fields())
		if err != nil {
			t.Fatal(err)
		}
		m.sources.setImport(spec)
		md.imports[key] = imp
		return fmt.Sprintf("import %s %+v", key, imp)
	case op < 35: // an import goes
		key := serviceKey{namespace: ns, name: pick(modelServices)}
		m.sources.deleteImport(key)
		delete(md.imports, key)
		return fmt.Sprintf("delete import %s", key)
	case op < 65: // a slice comes or changes, perhaps to another service
		id := sliceID{namespace: ns, name: pick(modelSlices)}
		s := modelSlice{service: pick(modelServices), cluster: pick(modelClusters), v6: rng.IntN(3) == 0}
		family, addrs := discovery.AddressTypeIPv4, modelV4
		if s.v6 {
			family, addrs = discovery.AddressTypeIPv6, modelV6
		}
		var eps []discovery.Endpoint
		for range rng.IntN(4) {
			e := modelEndpoint{ip: pick(addrs), host: pick(modelHosts), ready: rng.IntN(5) > 0}
			s.endpoints = append(s.endpoints, e)
			ready := e.ready
			eps = append(eps, ep(e.ip, e.host, &ready))
		}
		labels := map[string]string{labelServiceName: s.service}
		if s.cluster != "" {
			labels[labelSourceCluster] = s.cluster
		}
		spec, _, err := newSliceSpec(&discovery.EndpointSlice{
			ObjectMeta:  meta.ObjectMeta{Namespace: id.namespace, Name: id.name, Labels: labels},
			AddressType: family,
			Endpoints:   eps,
		}, len(defaultZone))
		if err != nil {
			t.Fatal(err)
		}
		m.sources.setSlice(spec)
		md.slices[id] = s
		return fmt.Sprintf("slice %s %+v", id, s)
	case op < 75: // a slice goes
		id := sliceID{namespace: ns, name: pick(modelSlices)}
		m.sources.deleteSlice(id.namespace, id.name)
		delete(md.slices, id)
		return fmt.Sprintf("delete slice %s", id)
	case op < 87: // a local Service comes or changes
		key := serviceKey{namespace: ns, name: pick(modelLocalNames)}
		// The API server gives a ClusterIP to one Service alone.
		ips := slices.DeleteFunc(some(append(slices.Clone(modelV4), modelV6...), 2), func(ip string) bool {
			for other, l := range md.local {
				if other != key && slices.Contains(l.ips, ip) {
					return true
				}
			}
			return false
		})
		local.add(key.namespace, key.name, core.ServiceTypeClusterIP, true, ips...)
		md.local[key] = modelLocal{ips: ips}
		return fmt.Sprintf("local Service %s %v", key, ips)
	case op < 94: // a local Service goes
		key := serviceKey{namespace: ns, name: pick(modelLocalNames)}
		delete(local.services, key)
		local.changes++
		delete(md.local, key)
		return fmt.Sprintf("delete local Service %s", key)
	default: // the local endpoints at an address change
		ip := pick(append(slices.Clone(modelV4), modelV6...))
		var eps []localEndpoint
		for range rng.IntN(3) {
			eps = append(eps, localEndpoint{key: serviceKey{namespace: pick(modelNamespaces), name: pick(modelLocalNames)}})
		}
		local.endpoints[ip] = eps
		md.endpoints[ip] = eps
		return fmt.Sprintf("local endpoints at %s: %v", ip, eps)
	}
}

func TestReverseMapAgainstModel(t *testing.T) {
	const zone = "clusterset.local."
	var universe []netip.Addr
	for _, ip := range append(slices.Clone(modelV4), modelV6...) {
		universe = append(universe, netip.MustParseAddr(ip))
	}
	quietLogs(t)
	runs, steps := 200, 120
	if testing.Short() {
		runs = 20
	}
	for run := range runs {
		seed := uint64(run)
		rng := rand.New(rand.NewPCG(seed, 0x5eed))
		local := newFakeCluster()
		local.endpoints = map[string][]localEndpoint{}
		m, next := newTestPlugin(t, nil, local)
		md := &reverseModel{imports: map[serviceKey]modelImport{}, slices: map[sliceID]modelSlice{},
			local: map[serviceKey]modelLocal{}, endpoints: map[string][]localEndpoint{}}
		if run%2 == 1 {
			m.derivedPrefix, md.prefix = "derived-", "derived-"
		}
		var history []string
		for step := range steps {
			history = append(history, reverseStep(t, rng, m, local, md))
			for _, addr := range universe {
				owner, _ := dns.ReverseAddr(addr.String())
				want, wantVerdict := md.pointer(addr, zone)
				a, verdict := m.pointer(addr, owner, zone)
				got := ""
				if len(a.answer) == 1 {
					got = a.answer[0].(*dns.PTR).Ptr
				}
				// And as ServeDNS answers: the name, or passed on.
				r := new(dns.Msg).SetQuestion(owner, dns.TypePTR)
				calls := next.calls
				msg := serveMsg(t, m, r)
				served := ""
				if next.calls == calls && msg != nil && len(msg.Answer) == 1 {
					served = msg.Answer[0].(*dns.PTR).Ptr
				}
				if got != want || verdict != wantVerdict || served != want {
					t.Fatalf("seed %d, step %d: PTR %s answers %q (verdict %d, ServeDNS %q), the model %q (verdict %d); claims %v\nchanges:\n  %s",
						seed, step, addr, got, verdict, served, want, wantVerdict, md.claims(addr), strings.Join(history, "\n  "))
				}
			}
			if got, want := m.index.conflicts.Load(), md.conflicts(universe); got != want {
				t.Fatalf("seed %d, step %d: %d addresses in conflict, the model counts %d\nchanges:\n  %s", seed, step, got, want, strings.Join(history, "\n  "))
			}
			if got, want := m.index.reverseLen(), md.claimed(universe); got != want {
				t.Fatalf("seed %d, step %d: %d addresses in the reverse map, the model claims %d\nchanges:\n  %s", seed, step, got, want, strings.Join(history, "\n  "))
			}
		}
	}
}

// quietLogs swaps the bounded logs of conflicts and of objects for ones
// that write nothing, for the rest of the test: the changes of a random
// sequence would spend the lines the global logs have for a minute, which
// other tests count on.
func quietLogs(t *testing.T) {
	t.Helper()
	never := func() time.Time { return time.Unix(1000, 0) }
	savedConflicts, savedLocal, savedObjects := conflictLogger, localConflictLogger, objectLog
	conflictLogger = &conflictLog{logWindow: logWindow{window: time.Minute, now: never}}
	localConflictLogger = &localConflictLog{logWindow: logWindow{window: time.Minute, now: never}}
	objectLog = newBoundedLog("lines about skipped objects", 0, func(string) {})
	t.Cleanup(func() { conflictLogger, localConflictLogger, objectLog = savedConflicts, savedLocal, savedObjects })
}
