// The slices of one service: their order, the union of their ports, and
// counts of repeated addresses and names, kept as slices change so that a
// view knows whether its answers must be de-duplicated.

package multicluster

import (
	"cmp"
	"net"
	"net/netip"
	"slices"
	"strings"
)

// serviceSlices is what is known of the slices of one service.
type serviceSlices struct {
	byName map[string]*sliceSpec
	// ordered are the same slices by cluster, then name. A change replaces
	// the list, never edits it: published views hold it.
	ordered []*sliceSpec
	// How many times each address and each host name occurs across the slices,
	// and how many occur more than once: views de-duplicate their answers only
	// while some do. Names count endpoints' hostnames alone (addrs counts names
	// made of addresses, dashedIP); dashLike counts hostnames that could be one.
	// Counts are kept from a service's second slice on (counted) and then stay:
	// most services have one slice, which says itself whether it repeats
	// (selfDups), and a small slice beside a large one costs only its own size.
	counted bool
	// ports are the union of the slices' ports, ordered as views list
	// them; views share it. portCounts counts how many slices list each
	// port, kept only while the slices' lists differ: most services export
	// one list from every cluster, which is then the union itself. A
	// change costs the ports of the slices that changed, and a new union
	// only when the set of ports changed.
	ports            []servicePort
	portCounts       map[servicePort]int32
	addrs4           map[[4]byte]int32
	addrs6           map[[16]byte]int32
	names            map[hostKey]int32
	dupAddr, dupName int
	dashLike         int
}

// hostKey is a host.cluster name.
type hostKey struct{ host, cluster string }

// replace puts slice b in place of a (either may be nil; both have the same
// name), with work proportional to the two slices and a copy of the list;
// and the work of counting every slice's when the service first has two.
func (ss *serviceSlices) replace(a, b *sliceSpec) {
	if a != nil {
		delete(ss.byName, a.name)
	}
	if b != nil {
		ss.byName[b.name] = b
	}
	ordered := slices.Clone(ss.ordered)
	if a != nil {
		if i, found := slices.BinarySearchFunc(ordered, a, compareSlices); found {
			ordered = slices.Delete(ordered, i, i+1)
		}
	}
	if b != nil {
		i, _ := slices.BinarySearchFunc(ordered, b, compareSlices)
		ordered = slices.Insert(ordered, i, b)
	}
	ss.ordered = ordered
	ss.updatePorts(a, b)
	switch {
	case len(ordered) == 0:
		ss.counted = false
		ss.addrs4, ss.addrs6, ss.names = nil, nil, nil
		ss.dupAddr, ss.dupName, ss.dashLike = 0, 0, 0
	case ss.counted:
		ss.recount(a, b)
	case len(ordered) > 1: // a second slice: count them all
		ss.counted = true
		ss.addrs4, ss.addrs6, ss.names = make(map[[4]byte]int32), make(map[[16]byte]int32), make(map[hostKey]int32)
		for _, s := range ordered {
			ss.recount(nil, s)
		}
	}
}

// updatePorts keeps ports the union of the slices' ports after slice b
// took the place of a (either may be nil).
func (ss *serviceSlices) updatePorts(a, b *sliceSpec) {
	switch {
	case len(ss.ordered) == 0:
		ss.ports, ss.portCounts = nil, nil
		return
	case len(ss.ordered) == 1:
		ss.ports, ss.portCounts = ss.ordered[0].ports, nil
		return
	case ss.portCounts == nil && (b == nil || samePorts(b.ports, ss.ports)):
		return // every slice still lists ss.ports
	case ss.portCounts == nil:
		// The lists differ from now on: count every slice's.
		ss.portCounts = make(map[servicePort]int32)
		for _, s := range ss.ordered {
			for _, p := range s.ports {
				ss.portCounts[p]++
			}
		}
		ss.ports = portsOf(ss.portCounts)
		return
	case a != nil && b != nil && samePorts(a.ports, b.ports):
		return
	}
	changed := false
	if a != nil {
		for _, p := range a.ports {
			if n := ss.portCounts[p] - 1; n > 0 {
				ss.portCounts[p] = n
			} else {
				delete(ss.portCounts, p)
				changed = true
			}
		}
	}
	if b != nil {
		for _, p := range b.ports {
			ss.portCounts[p]++
			changed = changed || ss.portCounts[p] == 1
		}
	}
	if changed {
		ss.ports = portsOf(ss.portCounts)
	}
}

// portsOf returns the ports counted, in order.
func portsOf(counts map[servicePort]int32) []servicePort {
	if len(counts) == 0 {
		return nil
	}
	ports := make([]servicePort, 0, len(counts))
	for p := range counts {
		ports = append(ports, p)
	}
	sortPorts(ports)
	return ports
}

// samePorts reports whether two lists of ports are equal; shared lists
// (sharedPorts) are found so at once.
func samePorts(a, b []servicePort) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0] || slices.Equal(a, b)
}

// recount moves the counts of addresses and names from slice a to slice b
// (either may be nil): what both hold is left as it is, so that a slice event
// that changes one endpoint changes one count or two.
func (ss *serviceSlices) recount(a, b *sliceSpec) {
	var ea, eb []endpoint
	if a != nil {
		ea = a.endpoints
	}
	if b != nil {
		eb = b.endpoints
	}
	// Both are ordered by host, then address.
	i, j := 0, 0
	for i < len(ea) || j < len(eb) {
		c := 0
		switch {
		case i == len(ea):
			c = 1
		case j == len(eb):
			c = -1
		default:
			c = cmp.Or(cmp.Compare(ea[i].host, eb[j].host), compareIP(ea[i].ip, eb[j].ip))
		}
		switch {
		case c < 0:
			ss.tallyAddr(ea[i].ip, -1)
			i++
		case c > 0:
			ss.tallyAddr(eb[j].ip, 1)
			j++
		default:
			i++
			j++
		}
	}
	// A name with several addresses is one name: counted once a slice.
	i, j = 0, 0
	for i < len(ea) || j < len(eb) {
		c := 0
		switch {
		case i == len(ea):
			c = 1
		case j == len(eb):
			c = -1
		default:
			c = cmp.Compare(ea[i].host, eb[j].host)
		}
		host, named := "", false
		if c <= 0 {
			host, named = ea[i].host, ea[i].named
		} else {
			host, named = eb[j].host, eb[j].named
		}
		if c == 0 && named != eb[j].named {
			// One name, a hostname in one slice and made of an address in
			// the other: a repeat whichever way it is counted.
			ss.tallyNamed(host, a.cluster, ea[i].named, -1)
			ss.tallyNamed(host, b.cluster, eb[j].named, 1)
			c = 2 // counted
		}
		switch {
		case host == "" || c == 2:
		case c < 0:
			ss.tallyNamed(host, a.cluster, named, -1)
		case c > 0:
			ss.tallyNamed(host, b.cluster, named, 1)
		case a.cluster != b.cluster:
			ss.tallyNamed(host, a.cluster, named, -1)
			ss.tallyNamed(host, b.cluster, named, 1)
		}
		if c == 2 {
			c = 0
		}
		if c <= 0 {
			for i < len(ea) && ea[i].host == host {
				i++
			}
		}
		if c >= 0 {
			for j < len(eb) && eb[j].host == host {
				j++
			}
		}
	}
}

func (ss *serviceSlices) tallyAddr(ip net.IP, delta int32) {
	switch len(ip) {
	case net.IPv4len:
		tally(ss.addrs4, [4]byte(ip), delta, &ss.dupAddr)
	case net.IPv6len:
		tally(ss.addrs6, [16]byte(ip), delta, &ss.dupAddr)
	}
}

// tallyNamed counts the name host.cluster once more or less (delta), if it
// is a hostname (named).
func (ss *serviceSlices) tallyNamed(host, cluster string, named bool, delta int32) {
	if !named {
		return
	}
	tally(ss.names, hostKey{host: host, cluster: cluster}, delta, &ss.dupName)
	if looksDashed(host) {
		ss.dashLike += int(delta)
	}
}

// looksDashed reports whether a hostname could be an address's name
// (dashedIP).
func looksDashed(host string) bool {
	// An address's name (dashedIP, lower case) is made of hex digits and
	// at least two dashes (an IPv4 text has three dots, an IPv6 text two
	// colons at least): most hostnames ("web-0", "db-1") are ruled out
	// without parsing, which allocates.
	dashes := 0
	for i := range len(host) {
		switch c := host[i]; {
		case c == '-':
			dashes++
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f':
		default:
			return false
		}
	}
	if dashes < 2 {
		return false
	}
	if _, err := netip.ParseAddr(strings.ReplaceAll(host, "-", ".")); err == nil {
		return true
	}
	_, err := netip.ParseAddr(strings.ReplaceAll(host, "-", ":"))
	return err == nil
}

// tally adds delta to the count of k in m, and keeps *dups, the number of
// keys counted more than once, up to date.
func tally[K comparable](m map[K]int32, k K, delta int32, dups *int) {
	before := m[k]
	after := before + delta
	if after <= 0 {
		delete(m, k)
	} else {
		m[k] = after
	}
	switch {
	case before <= 1 && after > 1:
		*dups++
	case before > 1 && after <= 1:
		*dups--
	}
}

// distinct returns how many distinct addresses of one family the slices
// hold.
func (ss *serviceSlices) distinct(v6 bool) int {
	switch {
	case ss == nil || len(ss.ordered) == 0:
		return 0
	case !ss.counted:
		return len(ss.ordered[0].addressesOf(v6))
	case v6:
		return len(ss.addrs6)
	}
	return len(ss.addrs4)
}

// repeatsAddresses reports whether some address occurs twice: under two
// names, or in two slices.
func (ss *serviceSlices) repeatsAddresses() bool {
	switch {
	case ss == nil:
		return false
	case !ss.counted:
		return len(ss.ordered) == 1 && len(ss.ordered[0].byAddr) < len(ss.ordered[0].endpoints)
	}
	return ss.dupAddr > 0
}

// duplicates reports whether some address or name occurs twice.
func (ss *serviceSlices) duplicates() bool {
	switch {
	case ss == nil:
		return false
	case !ss.counted:
		return len(ss.ordered) == 1 && ss.ordered[0].selfDups
	}
	return ss.dupAddr > 0 || ss.dupName > 0 || ss.dashLike > 0
}
