// Conversion of API objects into specs: a ServiceImport (here) or an
// EndpointSlice (convertslice.go) reduced to what DNS reads of it,
// validated, with what fails dropped and described, so that a bad field
// costs that field and not the object.

package multicluster

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"

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
