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
// of the trust model (README, "Trust model") that PTR answers follow.

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

// conflictLog bounds what the log says about conflicts: an import that flaps
// (a compromised controller rewriting it in a loop) would otherwise write a
// line per flap. Each change is logged until logLimit lines were written in
// a window; the rest are counted, and said in one line when the next change
// comes in a later window. The gauge coredns_multicluster_reverse_conflicts
// is always exact.
type conflictLog struct {
	mu         sync.Mutex
	window     time.Duration
	limit      int
	start      time.Time
	lines      int
	suppressed int
	now        func() time.Time
}

var conflictLogger = &conflictLog{window: time.Minute, limit: 20, now: time.Now}

// log logs the changes of conflicts a change of the import key made.
func (l *conflictLog) log(key serviceKey, changes []conflictChange) {
	if len(changes) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if now := l.now(); now.Sub(l.start) >= l.window {
		if l.suppressed > 0 {
			log.Warningf("%d more changes of addresses claimed by imports of several namespaces were not logged in the last %s", l.suppressed, l.window)
		}
		l.start, l.lines, l.suppressed = now, 0, 0
	}
	for _, c := range changes {
		if l.lines >= l.limit {
			l.suppressed++
			continue
		}
		l.lines++
		log.Warningf("ServiceImport %s: %s", key, c)
	}
}
