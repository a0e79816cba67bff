// Conversion of API objects into specs: a ServiceImport or an EndpointSlice
// reduced to what DNS reads of it, validated, with what fails dropped and
// described, so that a bad field costs that field and not the object.

package multicluster

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// newImportSpec validates f. It fails only when the object cannot be named in
// DNS at all; anything smaller is dropped and described in problems.
func newImportSpec(f importFields) (*importSpec, []string, error) {
	var problems problemList
	s, err := f.spec(&problems)
	return s, problems.strings(), err
}

func (f importFields) spec(problems *problemList) (*importSpec, error) {
	if errs := validation.IsDNS1123Label(f.namespace); len(errs) > 0 {
		return nil, fmt.Errorf("namespace %q is not a DNS label: %s", short(f.namespace), strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Label(f.name); len(errs) > 0 {
		return nil, fmt.Errorf("name %q is not a DNS label: %s", short(f.name), strings.Join(errs, "; "))
	}
	s := &importSpec{view: view{key: serviceKey{namespace: intern(f.namespace), name: f.name}}, resourceVersion: f.resourceVersion}
	if _, ok := f.labels[labelServiceName]; ok {
		// Nothing of a per-cluster copy is served, so nothing of it is
		// checked or kept either.
		s.perClusterCopy = true
		return s, nil
	}
	switch f.typ {
	case string(mcsv1beta1.Headless):
		s.headless = true
		// The AWS Cloud Map controller writes "None" into spec.ips of a
		// headless import, as a headless Service's clusterIP says.
		if n := len(f.ips) - countNone(f.ips); n > 0 {
			ips := slices.DeleteFunc(slices.Clone(f.ips[:min(len(f.ips), maxProblems)]), isNone)
			if n > len(ips) {
				problems.add("headless import has spec.ips %v and %d more; ignored", ips, n-len(ips))
			} else {
				problems.add("headless import has spec.ips %v; ignored", ips)
			}
		}
	case string(mcsv1beta1.ClusterSetIP):
		s.ipv4, s.ipv6 = parseClusterSetIPs(f.ips, problems)
	case "":
		// The CRD requires a type; an object that lacks one is most likely a
		// ClusterSetIP import written by an old controller.
		s.ipv4, s.ipv6 = parseClusterSetIPs(f.ips, problems)
		problems.add("spec.type is empty; treated as ClusterSetIP")
	default:
		return nil, fmt.Errorf("unknown spec.type %q", short(f.typ))
	}
	if len(s.ipv4) > 0 || len(s.ipv6) > 0 {
		s.source = sourceSpec
	}
	if d, ok := f.annotations[annotationAWSDerived]; ok && !s.headless {
		if owned := parseAWSDerived(d, problems); len(owned) > 0 {
			s.owned = &owned
		}
	}
	if d, ok := f.annotations[annotationDerivedService]; ok && !s.headless {
		if !isDNSLabel(d) {
			problems.add("annotation %s=%q is not a Service name; ignored", annotationDerivedService, short(d))
		} else {
			s.derived = d
		}
	}
	switch {
	case preferClose[f.trafficDistribution]:
		s.preferClose = true
	case f.trafficDistribution != "":
		problems.add("spec.trafficDistribution %q is not one this plugin knows; ignored", short(f.trafficDistribution))
	}
	switch f.endpointSliceObjects {
	case endpointSliceObjectsAbsent:
		s.slicesAbsent = true
	case endpointSliceObjectsPresent, "":
	default:
		problems.add("status.endpointSliceObjects %q is not one this plugin knows; read as unset", short(f.endpointSliceObjects))
	}
	s.ports = validPorts(f.ports, problems)
	if s.headless {
		// A headless import's ports answer only when its slices have none,
		// and a view lists them in order (newView): sorted once here, not
		// at every slice event.
		sortPorts(s.ports)
	}
	s.ports = sharedPorts(s.ports)
	return s, nil
}

func countNone(ips []string) int {
	n := 0
	for _, ip := range ips {
		if isNone(ip) {
			n++
		}
	}
	return n
}

func isNone(s string) bool { return strings.EqualFold(s, "None") }

// parseAWSDerived reads the names of annotationAWSDerived: a JSON list of
// {"cluster": ..., "derived-service": ...}.
func parseAWSDerived(value string, problems *problemList) []string {
	var entries []struct {
		Derived string `json:"derived-service"`
	}
	if err := json.Unmarshal([]byte(value), &entries); err != nil {
		problems.add("annotation %s is not a JSON list of derived Services (%s); ignored", annotationAWSDerived, short(err.Error()))
		return nil
	}
	var names []string
	seen := map[string]bool{}
	for _, e := range entries {
		if !isDNSLabel(e.Derived) {
			problems.add("annotation %s: %q is not a Service name; ignored", annotationAWSDerived, short(e.Derived))
			continue
		}
		if !seen[e.Derived] {
			seen[e.Derived] = true
			names = append(names, e.Derived)
		}
	}
	return names
}

// parseClusterSetIPs keeps every address of spec.ips, once each, by family
// and in the order given. Controllers that give each exporting cluster's
// ClusterIP (the AWS Cloud Map controller) list several of one family.
// Addresses no Service or endpoint may have are dropped (specialIP).
func parseClusterSetIPs(ips []string, problems *problemList) (v4, v6 []net.IP) {
	// Past a few addresses, a set keeps the check for repeats linear.
	var seen map[[16]byte]bool
	if len(ips) > smallList {
		seen = make(map[[16]byte]bool, len(ips))
	}
	for _, s := range ips {
		ip := net.ParseIP(s)
		switch {
		case ip == nil:
			problems.add("spec.ips: %q is not an IP address; skipped", short(s))
			continue
		case specialIP(ip) != "":
			problems.add("spec.ips: %s is %s; skipped", s, specialIP(ip))
			continue
		}
		if seen != nil {
			k := [16]byte(ip.To16())
			if seen[k] {
				continue
			}
			seen[k] = true
		}
		switch {
		case ip.To4() != nil:
			if seen != nil || !slices.ContainsFunc(v4, ip.Equal) {
				v4 = append(v4, ip.To4())
			}
		default:
			if seen != nil || !slices.ContainsFunc(v6, ip.Equal) {
				v6 = append(v6, ip)
			}
		}
	}
	return packIPs(v4), packIPs(v6)
}

// smallList is the length up to which a list is searched for repeats
// element by element; past it a set is cheaper than the quadratic search.
const smallList = 16

// validPorts validates ports the way Services constrain them: 1..65535, a
// known protocol (TCP by default), names as DNS labels (SRV needs them); a
// port listed twice is kept once, in the order given.
func validPorts(ports []portFields, problems *problemList) []servicePort {
	var dst []servicePort
	// Past a few ports, a set keeps the check for repeats linear: a
	// ServiceImport may list tens of thousands.
	var seen map[servicePort]struct{}
	if len(ports) > smallList {
		seen = make(map[servicePort]struct{}, len(ports))
	}
	// The names of short lists repeat across services and are interned;
	// a long list is one service's own (and interning costs the runtime
	// bookkeeping per string, which a list of thousands would pay at each
	// version).
	interned := len(ports) <= maxSharedPorts
	for _, p := range ports {
		if p.port < 1 || p.port > 65535 {
			problems.add("port %q: number %d out of range; skipped", short(p.name), p.port)
			continue
		}
		var proto string
		switch {
		case p.protocol == "":
			proto = "tcp"
		case strings.EqualFold(p.protocol, "tcp"):
			proto = "tcp"
		case strings.EqualFold(p.protocol, "udp"):
			proto = "udp"
		case strings.EqualFold(p.protocol, "sctp"):
			proto = "sctp"
		default:
			problems.add("port %q: unknown protocol %q; skipped", short(p.name), short(p.protocol))
			continue
		}
		if p.name != "" && !isDNSLabel(strings.ToLower(p.name)) {
			problems.add("port name %q is not a DNS label; skipped", short(p.name))
			continue
		}
		sp := servicePort{name: strings.ToLower(p.name), protocol: proto, port: uint16(p.port)}
		if interned {
			sp.name = intern(sp.name)
		}
		if seen != nil {
			if _, dup := seen[sp]; dup {
				continue
			}
			seen[sp] = struct{}{}
		} else if slices.Contains(dst, sp) {
			continue
		}
		if dst == nil {
			dst = make([]servicePort, 0, len(ports))
		}
		dst = append(dst, sp)
	}
	if len(dst) < cap(dst)*7/8 {
		dst = slices.Clone(dst) // skipped ports left room
	}
	return dst
}

// sortPorts orders ports by name, protocol and number, as views list them.
func sortPorts(ports []servicePort) {
	slices.SortFunc(ports, comparePorts)
}

func comparePorts(a, b servicePort) int {
	return cmp.Or(cmp.Compare(a.name, b.name), cmp.Compare(a.protocol, b.protocol), cmp.Compare(a.port, b.port))
}

// isDNSLabel reports whether s is a lower-case DNS label (RFC 1123), as
// validation.IsDNS1123Label does, without a regular expression: it runs for
// every port name and hostname an object lists.
func isDNSLabel(s string) bool {
	if len(s) == 0 || len(s) > validation.DNS1123LabelMaxLength {
		return false
	}
	for i := range len(s) {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case c == '-' && i > 0 && i < len(s)-1:
		default:
			return false
		}
	}
	return true
}

// maxNameLength is the longest name, in presentation form with its final
// dot, that fits the 255 octets of a name on the wire (RFC 1035, 2.3.4).
const maxNameLength = 254

// newSliceSpec reduces a multicluster EndpointSlice to its ready endpoints.
// longestZone is the length of the longest zone its names are answered in;
// an endpoint whose host.cluster name would not fit a DNS name there keeps
// its address but gets no host name.
func newSliceSpec(es *discovery.EndpointSlice, longestZone int) (*sliceSpec, []string, error) {
	var problems problemList
	s, err := sliceSpecOf(es, longestZone, &problems)
	return s, problems.strings(), err
}

func sliceSpecOf(es *discovery.EndpointSlice, longestZone int, problems *problemList) (s *sliceSpec, err error) {
	svc := es.Labels[labelServiceName]
	if !isDNSLabel(svc) {
		return nil, fmt.Errorf("label %s=%q is not a service name", labelServiceName, short(svc))
	}
	// Without a source-cluster label (mcs-api's e2e and simple controllers
	// write none) the slice's addresses still serve the service's own name,
	// but no host.cluster name can be made for them.
	cluster := lowerIntern(es.Labels[labelSourceCluster])
	if errs := validation.IsDNS1123Subdomain(cluster); cluster != "" && len(errs) > 0 {
		return nil, fmt.Errorf("label %s=%q is not a DNS name: %s", labelSourceCluster, short(cluster), strings.Join(errs, "; "))
	}
	s = &sliceSpec{
		key:             serviceKey{namespace: intern(es.Namespace), name: intern(svc)},
		name:            es.Name,
		resourceVersion: es.ResourceVersion,
		cluster:         cluster,
	}
	ports := make([]portFields, 0, len(es.Ports))
	for _, p := range es.Ports {
		if p.Port == nil {
			// "All ports" (discovery/v1 EndpointPort): valid, but there is no
			// port number to answer SRV with.
			continue
		}
		f := portFields{protocol: string(corev1.ProtocolTCP), port: *p.Port}
		if p.Name != nil {
			f.name = *p.Name
		}
		if p.Protocol != nil {
			f.protocol = string(*p.Protocol)
		}
		ports = append(ports, f)
	}
	s.ports = validPorts(ports, problems)
	// Sorted as views list them: the ports of a service's slices are
	// merged in this order (serviceSlices.updatePorts).
	sortPorts(s.ports)
	s.ports = sharedPorts(s.ports)

	// host.cluster.svc.ns.svc.ZONE: what a host name leaves room for.
	room := maxNameLength - (len(cluster) + 1 + len(svc) + 1 + len(es.Namespace) + len(".svc.") + longestZone) - 1
	family := es.AddressType
	// Every address and every name made from an address is written into
	// one block of the slice's own: a slice of n endpoints costs a few
	// allocations, not several per endpoint, which an informer converting
	// a rolling update's every event pays for. The slice keeps its
	// endpoints: they are sized for the ready ones, with no room to grow.
	addrs, width := 0, net.IPv6len
	for _, e := range es.Endpoints {
		if e.Conditions.Ready == nil || *e.Conditions.Ready {
			addrs += len(e.Addresses)
		}
	}
	if family == discovery.AddressTypeIPv4 {
		width = net.IPv4len
	}
	s.endpoints = make([]endpoint, 0, addrs)
	packed := make([]byte, 0, addrs*width)
	var dashed []byte // the names made from addresses, one after the other
	var dashedEnds []int
	for _, e := range es.Endpoints {
		if e.Conditions.Ready != nil && !*e.Conditions.Ready {
			continue
		}
		hostname := ""
		if e.Hostname != nil {
			if h := strings.ToLower(*e.Hostname); isDNSLabel(h) {
				hostname = intern(h) // a StatefulSet's names repeat in every cluster
			} else {
				problems.add("hostname %q is not a DNS label; addresses named instead", short(*e.Hostname))
			}
		}
		for _, a := range e.Addresses {
			// As net.ParseIP: no zone.
			addr, perr := netip.ParseAddr(a)
			if perr != nil || addr.Zone() != "" {
				problems.add("endpoint address %q is not an IP address; skipped", short(a))
				continue
			}
			ip16 := addr.As16()
			if why := specialIP(ip16[:]); why != "" {
				problems.add("endpoint address %s is %s; skipped", a, why)
				continue
			}
			v6 := !addr.Unmap().Is4()
			if (family == discovery.AddressTypeIPv4 && v6) || (family == discovery.AddressTypeIPv6 && !v6) {
				problems.add("endpoint address %s does not match addressType %s; skipped", a, family)
				continue
			}
			raw := ip16[:]
			if !v6 {
				raw = ip16[12:]
			}
			if cap(packed)-len(packed) < len(raw) {
				// More than the family foresaw (no addressType): a block
				// of its own, the ones before stay where they are.
				packed = make([]byte, 0, (addrs-len(s.endpoints))*net.IPv6len)
			}
			packed = append(packed, raw...)
			ip := net.IP(packed[len(packed)-len(raw) : len(packed) : len(packed)])
			host, fromAddress := "", false
			if cluster != "" {
				host = hostname
				n := len(host)
				if host == "" {
					n, fromAddress = len(a), true
				}
				if n > room {
					name := host
					if fromAddress {
						name = dashedIP(a)
					}
					problems.add("endpoint %s: the name %s.%s.svc.%s.svc.<zone> would exceed 255 octets; it answers for the service's name only", a, name, cluster, es.Namespace)
					host, fromAddress = "", false
				}
			}
			if fromAddress {
				dashed = appendDashed(dashed, a)
				dashedEnds = append(dashedEnds, len(dashed))
			} else {
				dashedEnds = append(dashedEnds, -1)
			}
			// named: the host is the endpoint's own hostname, not made of
			// its address.
			s.endpoints = append(s.endpoints, endpoint{host: host, ip: ip, v6: v6, named: host != "" && !fromAddress})
		}
	}
	if len(dashed) > 0 {
		names, start := string(dashed), 0
		for i, end := range dashedEnds {
			if end >= 0 {
				s.endpoints[i].host = names[start:end]
				start = end
			}
		}
	}
	slices.SortFunc(s.endpoints, func(a, b endpoint) int {
		if a.host != b.host { // interned: one name's addresses compare at once
			return strings.Compare(a.host, b.host)
		}
		return compareIP(a.ip, b.ip)
	})
	// An address listed twice under one name answers once.
	s.endpoints = slices.CompactFunc(s.endpoints, func(a, b endpoint) bool { return a.host == b.host && a.ip.Equal(b.ip) })
	if len(s.endpoints) < cap(s.endpoints)*7/8 {
		s.endpoints = slices.Clone(s.endpoints) // skipped or repeated addresses left room
	}
	for i, e := range s.endpoints {
		if e.host == "" {
			s.anonymous++
		} else if i == 0 || s.endpoints[i-1].host != e.host {
			s.names++
		}
		if e.v6 {
			s.n6++
		} else {
			s.n4++
		}
		if e.named && (i == 0 || s.endpoints[i-1].host != e.host) && looksDashed(e.host) {
			s.selfDups = true
		}
	}
	s.byAddr, s.distinct4 = addressIndex(s.endpoints)
	// An address under two names: two hostnames, or two texts (10.0.0.1
	// and ::ffff:10.0.0.1 are one IPv4 address).
	s.selfDups = s.selfDups || len(s.byAddr) < len(s.endpoints)
	return s, nil
}

// addressIndex returns the byAddr index of eps, ordered by host, then
// address, and how many of its addresses are IPv4 (four octets each, as
// conversion stores them).
func addressIndex(eps []endpoint) ([]int32, int) {
	idx := make([]int32, 0, len(eps))
	if !slices.ContainsFunc(eps, func(e endpoint) bool { return len(e.ip) != net.IPv4len }) {
		// IPv4 alone, the common case: address and position in one word,
		// sorted without a comparison function.
		keys := make([]uint64, len(eps))
		for i, e := range eps {
			keys[i] = uint64(binary.BigEndian.Uint32(e.ip))<<32 | uint64(i) // #nosec G115 -- i < 2^31
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i == 0 || k>>32 != keys[i-1]>>32 {
				idx = append(idx, int32(uint32(k))) // #nosec G115 -- a position
			}
		}
	} else {
		for i := range eps {
			idx = append(idx, int32(i)) // #nosec G115 -- at most 100,000 endpoints
		}
		slices.SortFunc(idx, func(a, b int32) int { return cmp.Or(compareAddr(eps[a].ip, eps[b].ip), cmp.Compare(a, b)) })
		idx = slices.CompactFunc(idx, func(a, b int32) bool { return bytes.Equal(eps[a].ip, eps[b].ip) })
	}
	if len(idx) < cap(idx)*7/8 {
		idx = slices.Clone(idx) // repeated addresses left room
	}
	d4, _ := slices.BinarySearchFunc(idx, net.IPv6len, func(i int32, n int) int { return cmp.Compare(len(eps[i].ip), n) })
	return idx, d4
}

// compareAddr orders addresses IPv4 first, then by their octets.
func compareAddr(a, b net.IP) int {
	return cmp.Or(cmp.Compare(len(a), len(b)), bytes.Compare(a, b))
}

// appendDashed appends dashedIP(ip) to b.
func appendDashed(b []byte, ip string) []byte {
	for i := range len(ip) {
		switch c := ip[i]; {
		case c == '.' || c == ':':
			b = append(b, '-')
		case 'A' <= c && c <= 'Z':
			b = append(b, c+'a'-'A')
		default:
			b = append(b, c)
		}
	}
	return b
}

// dashedIP names an endpoint without a hostname after its address, as the
// kubernetes plugin does: 10.0.0.1 -> 10-0-0-1, fd00::1 -> fd00--1.
func dashedIP(ip string) string {
	return dashes.Replace(strings.ToLower(ip))
}

var dashes = strings.NewReplacer(".", "-", ":", "-")

// valueOf returns *p, or "" for nil.
func valueOf(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// The values of a ServiceImport's status.endpointSliceObjects
// (EndpointSliceObjectsStatus in pkg/apis/v1beta1/serviceimport.go of
// mcs-api v0.5.2, the same in v1alpha1). Absent says the controller writes
// no EndpointSlices for the import; slices that exist all the same are
// still read, since they are what DNS would answer with.
const (
	endpointSliceObjectsPresent = "Present"
	endpointSliceObjectsAbsent  = "Absent"
)

// Values of a ServiceImport's spec.trafficDistribution that prefer the
// local cluster. The zone and node preferences of Kubernetes Services are
// taken at cluster granularity: the nearest the DNS of a cluster set can
// steer is the cluster.
var preferClose = map[string]bool{
	"PreferClose":    true,
	"PreferSameZone": true,
	"PreferSameNode": true,
}
