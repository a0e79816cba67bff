package multicluster

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"
)

// Who may make the plugin answer the reverse name of an address: the rules
// of the trust model (docs/trust.md) that PTR answers follow.

// defaultReverseRanges are the addresses whose reverse names the plugin
// answers unless reverse_ranges names others: those no one can hold on the
// Internet, where Service, Pod and ClusterSetIP ranges are drawn from. A
// public address gets no reverse answer from an import by default, so that
// no ServiceImport can make a cluster's clients believe that 8.8.8.8 is one
// of its services.
var defaultReverseRanges = mustPrefixes(
	"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", // private use, RFC 1918
	"100.64.0.0/10",   // shared address space, RFC 6598
	"198.18.0.0/15",   // benchmarking, RFC 2544
	"192.0.2.0/24",    // documentation, RFC 5737
	"198.51.100.0/24", // documentation, RFC 5737
	"203.0.113.0/24",  // documentation, RFC 5737
	"240.0.0.0/4",     // reserved, RFC 1112
	"fc00::/7",        // unique local, RFC 4193
	"2001:db8::/32",   // documentation, RFC 3849
)

func mustPrefixes(cidrs ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(cidrs))
	for i, c := range cidrs {
		out[i] = netip.MustParsePrefix(c)
	}
	return out
}

// parseRanges parses the CIDRs of reverse_ranges. A CIDR with host bits set
// (10.96.0.10/12) is refused rather than silently widened or narrowed.
func parseRanges(args []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, arg := range args {
		p, err := netip.ParsePrefix(arg)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR, such as 10.96.0.0/12 or fd00::/108", arg)
		}
		if p.Masked() != p {
			return nil, fmt.Errorf("%q has bits set past its prefix length: did you mean %s?", arg, p.Masked())
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// inRanges reports whether addr lies in one of ranges.
func inRanges(ranges []netip.Prefix, addr netip.Addr) bool {
	for _, p := range ranges {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// claimNamespaces returns the namespaces of the imports that claim an
// address, sorted, each once.
func claimNamespaces(refs []ptrTarget) []string {
	var out []string
	for _, r := range refs {
		if !slices.Contains(out, r.key.namespace) {
			out = append(out, r.key.namespace)
		}
	}
	slices.Sort(out)
	return out
}

// contested reports whether imports of more than one namespace claim an
// address. It allocates nothing: it runs on the query path.
func contested(refs []ptrTarget) bool {
	for _, r := range refs[min(1, len(refs)):] {
		if r.key.namespace != refs[0].key.namespace {
			return true
		}
	}
	return false
}

// conflictChange is an address whose claims changed from one namespace (or
// none) to several, or back, or between sets of several: logged once per
// change, after the index's locks are released.
type conflictChange struct {
	addr       netip.Addr
	namespaces []string // the claiming namespaces after the change; one or none: resolved
}

func (c conflictChange) String() string {
	if len(c.namespaces) > 1 {
		return fmt.Sprintf("address %s is claimed by imports of namespaces %s: its reverse name is passed on, not answered, until one namespace holds it", c.addr, strings.Join(c.namespaces, ", "))
	}
	return fmt.Sprintf("address %s is no longer claimed by imports of several namespaces: its reverse name is answered again", c.addr)
}

// logWindow bounds the lines a log writes: at most limit in each window;
// the rest are counted, and said in one line when the next line comes in a
// later window.
type logWindow struct {
	window     time.Duration
	limit      int
	start      time.Time
	lines      int
	suppressed int
	now        func() time.Time
}

// roll starts a new window when the current one is over, and reports
// whether it did, and how many lines the one before did not write.
func (w *logWindow) roll() (rolled bool, suppressed int) {
	now := w.now()
	if now.Sub(w.start) < w.window {
		return false, 0
	}
	suppressed = w.suppressed
	w.start, w.lines, w.suppressed = now, 0, 0
	return true, suppressed
}

// take reports whether one more line may be written in this window, and
// counts it as suppressed when not.
func (w *logWindow) take() bool {
	if w.lines >= w.limit {
		w.suppressed++
		return false
	}
	w.lines++
	return true
}

// conflictLog bounds what the log says about conflicts: an import that flaps
// (a compromised controller rewriting it in a loop) would otherwise write a
// line per flap. Each change is logged until logLimit lines were written in
// a window; the rest are counted, and said in one line when the next change
// comes in a later window. The gauge coredns_multicluster_reverse_conflicts
// is always exact.
type conflictLog struct {
	mu sync.Mutex
	logWindow
}

var conflictLogger = &conflictLog{logWindow: logWindow{window: time.Minute, limit: 20, now: time.Now}}

// log logs the changes of conflicts a change of the import key made.
func (l *conflictLog) log(key serviceKey, changes []conflictChange) {
	if len(changes) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, n := l.roll(); n > 0 {
		log.Warningf("%d more changes of addresses claimed by imports of several namespaces were not logged in the last %s", n, l.window)
	}
	for _, c := range changes {
		if l.take() {
			log.Warningf("ServiceImport %s: %s", key, c)
		}
	}
}

// localConflictLog bounds what the log says about addresses that a local
// Service or endpoint holds and imports of another namespace claim. Those
// are found when a PTR query asks (the local objects are the kubernetes
// plugin's cache, whose changes the plugin does not follow), so each query
// could log: an address is logged once a window, and at most limit
// addresses are; the other queries are counted, and said in one line in a
// later window. policy_decisions_total{rule="ptr_local_conflict"} counts
// every query.
type localConflictLog struct {
	mu sync.Mutex
	logWindow
	// logged are the addresses logged in this window: at most limit.
	logged map[netip.Addr]struct{}
}

var localConflictLogger = &localConflictLog{logWindow: logWindow{window: time.Minute, limit: 20, now: time.Now}}

// log logs the conflict at addr, in the words of describe, unless it was
// logged in this window, or the window's lines are spent. An address
// logged already costs a map lookup and no allocation.
func (l *localConflictLog) log(addr netip.Addr, describe func(netip.Addr) string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if rolled, n := l.roll(); rolled {
		clear(l.logged)
		if n > 0 {
			log.Warningf("%d more PTR queries for local addresses claimed by imports of other namespaces were not logged in the last %s", n, l.window)
		}
	}
	if _, ok := l.logged[addr]; ok {
		return
	}
	if !l.take() {
		return
	}
	if l.logged == nil {
		l.logged = make(map[netip.Addr]struct{}, l.limit)
	}
	l.logged[addr] = struct{}{}
	log.Warning(describe(addr))
}

// describeLocalConflict says who holds addr in the local cluster and which
// namespaces' imports claim it too, for the log.
func (m *Multicluster) describeLocalConflict(addr netip.Addr) string {
	holder := "a local endpoint"
	ip := addr.String()
	if svcs := m.local.byClusterIP(ip); len(svcs) > 0 {
		svc := svcs[0]
		holder = fmt.Sprintf("the ClusterIP of the local Service %s/%s", svc.Namespace, svc.Name)
		if imports := m.derivedImports(svc.Namespace, svc.Name); len(imports) > 0 {
			holder += fmt.Sprintf(" (the derived Service of %v)", imports)
		}
	} else if eps, _ := m.local.byEndpointIP(ip); len(eps) > 0 {
		holder = fmt.Sprintf("the address of a local endpoint of %s", eps[0].key)
	}
	claims := claimNamespaces(m.index.reverseLookup(addr, nil))
	return fmt.Sprintf("address %s, %s, is claimed by imports of namespaces %s too: its reverse name is the cluster's own (passed on), no import's", addr, holder, strings.Join(claims, ", "))
}
