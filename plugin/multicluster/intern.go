// Memory shared across specs: interned strings, port lists held weakly and
// shared, and addresses packed into one array, since tens of thousands of
// imports and slices repeat the same few values.

package multicluster

import (
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unique"
	"unsafe"
	"weak"
)

// intern returns the one copy of s that every spec shares: namespaces,
// cluster ids, port names and protocols repeat across thousands of imports
// and slices, and each decoded object brings its own copy. Copies no spec
// holds any more are reclaimed (package unique).
func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

// lowerIntern is strings.ToLower(s), interned.
func lowerIntern(s string) string { return intern(strings.ToLower(s)) }

// portSets shares the port lists of imports and slices: most services of a
// ClusterSet have one of a few (one "http" on 80, say), and an import or a
// slice holds its list without ever changing it. The set holds its lists
// weakly: a list no spec holds any more is reclaimed, and its entry goes with
// it, so that what objects brought leaves with them. Only short lists are
// shared: a long one is of one service, and its key would cost as much as
// the list.
var portSets = struct {
	sync.Mutex
	m map[string]sharedPortList
}{m: map[string]sharedPortList{}}

// sharedPortList is a list of portSets: a weak pointer to its first port,
// and its length.
type sharedPortList struct {
	first weak.Pointer[servicePort]
	n     int
}

// maxSharedPorts is the longest list portSets shares.
const maxSharedPorts = 32

// sharedPorts returns ports, or an equal list already held by another spec.
func sharedPorts(ports []servicePort) []servicePort {
	if len(ports) == 0 {
		return nil
	}
	if len(ports) > maxSharedPorts {
		return ports
	}
	var b strings.Builder
	for _, p := range ports {
		b.WriteString(p.name)
		b.WriteByte('/')
		b.WriteString(p.protocol)
		b.WriteByte('/')
		b.WriteByte(byte(p.port >> 8))
		b.WriteByte(byte(p.port))
		b.WriteByte(0)
	}
	key := b.String()
	portSets.Lock()
	defer portSets.Unlock()
	if e, ok := portSets.m[key]; ok {
		if first := e.first.Value(); first != nil {
			return unsafe.Slice(first, e.n)
		}
	}
	ports = ports[:len(ports):len(ports)] // an append elsewhere must copy
	e := sharedPortList{first: weak.Make(&ports[0]), n: len(ports)}
	portSets.m[key] = e
	// Once no spec holds the list, its entry goes: unless another list
	// took its place meanwhile.
	runtime.AddCleanup(&ports[0], func(key string) {
		portSets.Lock()
		defer portSets.Unlock()
		if cur, ok := portSets.m[key]; ok && cur.first == e.first {
			delete(portSets.m, key)
		}
	}, key)
	return ports
}

// packIPs returns ips with their bytes in one array: net.ParseIP gives
// each address 16 bytes of its own, of which an IPv4 address uses 4.
func packIPs(ips []net.IP) []net.IP {
	if len(ips) == 0 {
		return nil
	}
	out := slices.Clip(ips)
	packed := make([]byte, 0, ipBytes(ips))
	for i, ip := range ips {
		packed = append(packed, ip...)
		out[i] = packed[len(packed)-len(ip) : len(packed) : len(packed)]
	}
	return out
}

func ipBytes(ips []net.IP) int {
	n := 0
	for _, ip := range ips {
		n += len(ip)
	}
	return n
}
