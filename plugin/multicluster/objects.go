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

	"github.com/coredns/coredns/plugin/kubernetes/object"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// Labels that tie an EndpointSlice to an import (the same in every mcs-api
// version), and the annotation of an import that names its derived Service.
const (
	labelServiceName   = mcsv1beta1.LabelServiceName
	labelSourceCluster = mcsv1beta1.LabelSourceCluster
	// annotationDerivedService names the local Service that carries an
	// import's ClusterIPs. The mcs-api reference controller sets it
	// (controllers/common.go, DerivedServiceAnnotation), and so does Cilium.
	annotationDerivedService = "multicluster.kubernetes.io/derived-service"
	// annotationAWSDerived lists, as JSON, the local Services that carry a
	// ServiceImport's addresses, one per exporting cluster: the AWS Cloud
	// Map MCS controller's own record of its derived Services
	// (pkg/controllers/multicluster/utils.go, DerivedServiceAnnotation, in
	// aws/aws-cloud-map-mcs-controller-for-k8s); its spec.ips are their
	// ClusterIPs.
	annotationAWSDerived = "multicluster.k8s.aws/derived-service"
)

// importSpec is a ServiceImport reduced to what DNS needs; v1alpha1 and
// v1beta1 objects reduce to the same thing. Informers store it in place of the
// full object, so the cache holds only this. Parts that fail validation are
// dropped, and the conversion reports them beside the spec, which does not
// keep them.
//
// Its fields are those of the view a ClusterSetIP import answers from, so
// that view is the spec itself: one allocation per import, not two.
type importSpec struct {
	object.Empty    // no room: a pointer would take 8 bytes of every spec
	view            // key, flags, source, ipv4, ipv6, ports, derived; no endpoints
	resourceVersion string
}

// sliceSpec is a multicluster EndpointSlice reduced to its ready endpoints.
// Like views, it is immutable once made: the view of a headless import holds
// the specs of its slices themselves, so that a slice's change replaces one
// of them and leaves the others as they are.
type sliceSpec struct {
	object.Empty
	key             serviceKey // the import it belongs to
	name            string     // the slice's own name
	resourceVersion string
	cluster         string // empty when the slice has no source-cluster label
	ports           []servicePort
	// endpoints are ordered by host name, then address: those without a
	// host name first, the addresses of one name adjacent.
	endpoints []endpoint
	anonymous int // endpoints[:anonymous] have no host name
	names     int // the host names of endpoints[anonymous:], each once
	n4, n6    int // addresses by family
	// selfDups: answers from this slice alone must be de-duplicated (some
	// address is listed under two names, or some hostname could be an
	// address's name): set whenever the counts of a service's slices
	// (serviceSlices) would find a repeat, were this its only slice.
	selfDups bool
	// ref stands for the slice in the reverse map; the sources give it
	// when they file the slice, the former version's if it had the same
	// cluster.
	ref *sliceRef
}

// importFields is the part of a ServiceImport, in any version, that DNS reads.
type importFields struct {
	namespace, name, resourceVersion string
	typ                              string
	ips                              []string
	ports                            []portFields
	labels, annotations              map[string]string
	trafficDistribution              string
}

type portFields struct {
	name, protocol string
	port           int32
}

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

// specialIP says why ip can be neither a ClusterSetIP nor an endpoint, or
// returns "". The API server refuses the unspecified, loopback, link-local
// and link-local multicast addresses in EndpointSlices (ValidateEndpointIP,
// pkg/apis/core/validation/validation.go in Kubernetes v1.37.1); spec.ips of
// a ServiceImport is not validated at all, so the plugin applies the same
// rule there, and refuses more that no Service answers at: any multicast
// address, the IPv4 broadcast address, 0.0.0.0/8, the clouds' metadata and
// host addresses, and IPv6 addresses that stand for a refused IPv4 one. An
// import must not be able to name 169.254.169.254 (a cloud's metadata
// server) or 127.0.0.1 for its service, in any spelling.
//
// It runs for every endpoint address of every slice version: it allocates
// nothing for an address it accepts.
func specialIP(ip net.IP) string {
	if v4 := ip.To4(); v4 != nil { // also ::ffff:a.b.c.d, which is the same address
		return specialIPv4(v4)
	}
	if len(ip) != net.IPv6len {
		return "not an IP address"
	}
	if why := specialInEveryFamily(ip); why != "" {
		return why
	}
	switch {
	case hasPrefix(ip, ipv4Compatible[:]):
		// ::a.b.c.d, deprecated by RFC 4291 (2.5.5.1): no Service or pod
		// has one, and a stack that still routes it sends it to a.b.c.d.
		return "an IPv4-compatible address (deprecated, RFC 4291)"
	case hasPrefix(ip, ipv4Translated[:]):
		if why := specialIPv4(ip[12:]); why != "" {
			return "an IPv4-translated address (::ffff:0:a.b.c.d) of " + why
		}
	case hasPrefix(ip, nat64WellKnown[:]):
		// A NAT64 gateway sends 64:ff9b::a.b.c.d to a.b.c.d (RFC 6052).
		if why := specialIPv4(ip[12:]); why != "" {
			return "a NAT64 address (64:ff9b::/96) of " + why
		}
	case hasPrefix(ip, nat64LocalUse[:]):
		// RFC 8215: the network chooses the prefix length within the /48,
		// and so where the IPv4 address lies in it; no Service or pod has
		// an address translated to IPv4 either.
		return "a local-use NAT64 address (64:ff9b:1::/48)"
	case ip.Equal(awsMetadataIPv6):
		return "the AWS instance metadata service's IPv6 address"
	}
	return ""
}

// specialInEveryFamily says why ip, of either family, is an address that
// the API server refuses in EndpointSlices, or multicast, or returns "".
func specialInEveryFamily(ip net.IP) string {
	switch {
	case ip.IsUnspecified():
		return "the unspecified address"
	case ip.IsLoopback():
		return "a loopback address"
	case ip.IsLinkLocalUnicast():
		return "a link-local address"
	case ip.IsMulticast():
		return "a multicast address"
	}
	return ""
}

// specialIPv4 is specialIP of a 4-byte IPv4 address.
func specialIPv4(ip net.IP) string {
	if why := specialInEveryFamily(ip); why != "" {
		return why
	}
	switch {
	case ip[0] == 0:
		// 0.0.0.0/8, "this host on this network": never a destination
		// (RFC 6890).
		return "an address of 0.0.0.0/8 (this network)"
	case ip.Equal(net.IPv4bcast):
		return "the broadcast address"
	case ip.Equal(alibabaMetadata):
		return "the Alibaba Cloud instance metadata address"
	case ip.Equal(azureHost):
		return "the Azure host address"
	}
	return ""
}

// Addresses of cloud platforms that answer an instance's requests as the
// instance (metadata, credentials), besides 169.254.169.254, which
// link-local covers.
var (
	// fd00:ec2::254: the instance metadata service over IPv6, Amazon EC2
	// User Guide, "Access instance metadata for an EC2 instance".
	awsMetadataIPv6 = net.ParseIP("fd00:ec2::254")
	// 100.100.100.200: Alibaba Cloud ECS documentation, "Instance metadata".
	alibabaMetadata = net.IPv4(100, 100, 100, 200).To4()
	// 168.63.129.16: the host node's virtual address (WireServer, DNS,
	// DHCP), Azure Virtual Network documentation, "What is IP address
	// 168.63.129.16?".
	azureHost = net.IPv4(168, 63, 129, 16).To4()
)

// IPv6 prefixes whose addresses stand for IPv4 ones, as the first bytes of
// an address: ::/96 (IPv4-compatible), ::ffff:0:0/96 (IPv4-translated, RFC
// 2765), 64:ff9b::/96 (NAT64, RFC 6052) and 64:ff9b:1::/48 (local-use
// NAT64, RFC 8215). IPv4-mapped addresses are IPv4 addresses to net.IP.
var (
	ipv4Compatible = [12]byte{}
	ipv4Translated = [12]byte{8: 0xff, 9: 0xff}
	nat64WellKnown = [12]byte{0: 0x00, 1: 0x64, 2: 0xff, 3: 0x9b}
	nat64LocalUse  = [6]byte{0: 0x00, 1: 0x64, 2: 0xff, 3: 0x9b, 4: 0x00, 5: 0x01}
)

// hasPrefix reports whether the 16-byte ip starts with the bytes of prefix.
func hasPrefix(ip net.IP, prefix []byte) bool {
	return bytes.Equal(ip[:len(prefix)], prefix)
}

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
		return cmp.Or(cmp.Compare(a.host, b.host), compareIP(a.ip, b.ip))
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
	s.selfDups = s.selfDups || repeatsAddress(s.endpoints)
	return s, nil
}

// repeatsAddress reports whether two endpoints have one address. They are
// ordered by name first, and one address may have two names: two
// hostnames, or two texts (10.0.0.1 and ::ffff:10.0.0.1 are one IPv4
// address).
func repeatsAddress(eps []endpoint) bool {
	if len(eps) < 2 {
		return false
	}
	v4 := !slices.ContainsFunc(eps, func(e endpoint) bool { return len(e.ip) != net.IPv4len })
	if v4 {
		var buf [256]uint32 // on the stack: most slices have fewer endpoints
		addrs := buf[:0]
		if len(eps) > len(buf) {
			addrs = make([]uint32, 0, len(eps))
		}
		for _, e := range eps {
			addrs = append(addrs, binary.BigEndian.Uint32(e.ip))
		}
		slices.Sort(addrs)
		return hasAdjacent(addrs)
	}
	// IPv6, or both families in a slice without an addressType: an IPv4
	// address as net.IP.To16 has it, which no IPv6 endpoint has (an
	// IPv4-mapped address is taken as IPv4).
	addrs := make([][16]byte, 0, len(eps))
	for _, e := range eps {
		var a [16]byte
		if len(e.ip) == net.IPv4len {
			a[10], a[11] = 0xff, 0xff
			copy(a[12:], e.ip)
		} else {
			copy(a[:], e.ip)
		}
		addrs = append(addrs, a)
	}
	slices.SortFunc(addrs, func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })
	return hasAdjacent(addrs)
}

// hasAdjacent reports whether two neighbours of sorted are equal.
func hasAdjacent[T comparable](sorted []T) bool {
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			return true
		}
	}
	return false
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

// viewPolicy is what decides a view beyond its objects: the id of the
// cluster this server runs in (empty when unknown), which imports that
// prefer close endpoints favour. (The fallback scope's verdict is the
// spec's own: the sources give it when they file the spec.)
type viewPolicy struct {
	localCluster string
}

// newView builds the view of a service from its import and the slices of
// every cluster (ss, nil when there are none). imp must not be nil. Its work
// is proportional to the number of slices, not of endpoints: the view holds
// the slices themselves.
func newView(imp *importSpec, ss *serviceSlices, policy viewPolicy) *view {
	var ordered []*sliceSpec
	if ss != nil {
		ordered = ss.ordered
	}
	if !imp.headless {
		return newClusterSetIPView(imp, ordered, policy)
	}
	v := &view{key: imp.key, headless: true, preferClose: imp.preferClose, scope: imp.scope}
	eps := &endpointSet{slices: ordered, served: ordered, dups: ss.duplicates()}
	// A headless import's ports come from its slices (each cluster exports
	// the same Service, so they agree), merged as they change
	// (updatePorts); the import's ports are the fallback. Both are in
	// order.
	if ss != nil {
		v.ports = ss.ports
	}
	if len(v.ports) == 0 {
		v.ports = imp.ports
	}
	for i, s := range ordered {
		eps.n4 += s.n4
		eps.n6 += s.n6
		// Each cluster id of several labels once: its names, each of which
		// has names below it.
		if strings.IndexByte(s.cluster, '.') > 0 && len(s.endpoints) > s.anonymous && (i == 0 || ordered[i-1].cluster != s.cluster) {
			if eps.ents == nil {
				eps.ents = make(map[string]struct{})
			}
			for c := s.cluster; ; {
				eps.ents[c] = struct{}{}
				dot := strings.IndexByte(c, '.')
				if dot < 0 {
					break
				}
				c = c[dot+1:]
			}
		}
	}
	eps.s4, eps.s6 = eps.n4, eps.n6
	if imp.preferClose && policy.localCluster != "" {
		// Ordered by cluster, the local cluster's slices are one run.
		lo, _ := slices.BinarySearchFunc(ordered, policy.localCluster, func(s *sliceSpec, c string) int { return cmp.Compare(s.cluster, c) })
		s4, s6, hi := 0, 0, lo
		for ; hi < len(ordered) && ordered[hi].cluster == policy.localCluster; hi++ {
			s4 += ordered[hi].n4
			s6 += ordered[hi].n6
		}
		if s4+s6 > 0 {
			eps.served, eps.s4, eps.s6, v.localOnly = ordered[lo:hi:hi], s4, s6, true
		}
	}
	v.eps = eps
	return v
}

// newClusterSetIPView is the view of a ClusterSetIP import. With spec.ips, or
// without any ready slice address, it is the spec itself (specs are
// immutable, as views are). Otherwise it carries the ready addresses of the import's slices, which
// answer when no derived Service does: Lighthouse, without clusterset IPs,
// writes one slice per cluster whose endpoint is that cluster's ClusterIP.
// An import that prefers close endpoints answers with the local cluster's
// addresses alone while it has one.
func newClusterSetIPView(imp *importSpec, ordered []*sliceSpec, policy viewPolicy) *view {
	if imp.source == sourceSpec || len(ordered) == 0 {
		return &imp.view
	}
	collect := func(cluster string, all bool) (v4, v6 []net.IP) {
		for _, s := range ordered {
			if !all && s.cluster != cluster {
				continue
			}
			for _, e := range s.endpoints {
				if e.v6 {
					v6 = append(v6, e.ip)
				} else {
					v4 = append(v4, e.ip)
				}
			}
		}
		return v4, v6
	}
	var v4, v6 []net.IP
	localOnly := false
	if imp.preferClose && policy.localCluster != "" {
		v4, v6 = collect(policy.localCluster, false)
		localOnly = len(v4) > 0 || len(v6) > 0
	}
	if !localOnly {
		v4, v6 = collect("", true)
	}
	if len(v4) == 0 && len(v6) == 0 {
		return &imp.view
	}
	v := imp.view
	v.source, v.localOnly = sourceSlices, localOnly
	v.ipv4, v.ipv6 = sortedUnique(v4), sortedUnique(v6)
	return &v
}

// sortedUnique sorts ips and drops repeats: every cluster reports its own
// addresses, and an answer names each once, in an order that does not
// depend on the order slices arrived in.
func sortedUnique(ips []net.IP) []net.IP {
	slices.SortFunc(ips, compareIP)
	return slices.CompactFunc(ips, net.IP.Equal)
}

func compareIP(a, b net.IP) int { return bytes.Compare(a, b) }

// The specs are what informer stores hold, so they are Kubernetes objects as
// far as the store's key function and the reflector care.

// kindServiceImportCopy is the objects gauge's kind of per-cluster copies.
const kindServiceImportCopy = "serviceimport_copy"

func (s *importSpec) metricKind() string {
	if s.perClusterCopy {
		return kindServiceImportCopy
	}
	return strings.ToLower(kindServiceImport)
}

func (s *importSpec) GetNamespace() string           { return s.key.namespace }
func (s *importSpec) SetNamespace(string)            {}
func (s *importSpec) GetName() string                { return s.key.name }
func (s *importSpec) SetName(string)                 {}
func (s *importSpec) GetResourceVersion() string     { return s.resourceVersion }
func (s *importSpec) SetResourceVersion(string)      {}
func (s *importSpec) DeepCopyObject() runtime.Object { c := *s; return &c }
func (s *sliceSpec) GetNamespace() string            { return s.key.namespace }
func (s *sliceSpec) SetNamespace(string)             {}
func (s *sliceSpec) GetName() string                 { return s.name }
func (s *sliceSpec) SetName(string)                  {}
func (s *sliceSpec) GetResourceVersion() string      { return s.resourceVersion }
func (s *sliceSpec) SetResourceVersion(string)       {}
func (s *sliceSpec) DeepCopyObject() runtime.Object  { c := *s; return &c }

// valueOf returns *p, or "" for nil.
func valueOf(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
