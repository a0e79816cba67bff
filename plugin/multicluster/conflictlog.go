// Bounded logs of reverse conflicts: addresses that imports of several
// namespaces claim, as the index sees them change, and local addresses that
// imports of another namespace claim, as PTR queries find them.

package multicluster

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"
)

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

// localConflictLog bounds what the log says about addresses a local Service
// or endpoint holds and imports of another namespace claim. They are found
// per PTR query (the plugin does not follow the kubernetes plugin's cache),
// so an address is logged once a window, and at most limit of them; the rest
// are counted in one later line.
// policy_decisions_total{rule="ptr_local_conflict"} counts every query.
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
