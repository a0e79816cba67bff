// The decision record of one query: the zone kind, the rule that decided
// (reason), the objects it rests on and the reply it names. ServeDNS fills
// it once; the reply, the counters and Explain read it, so none of them
// decides again.

package multicluster

import (
	"net/netip"

	"github.com/coredns/coredns/plugin/kubernetes/object"
	"github.com/miekg/dns"
)

// zoneKind tells how a zone is served.
type zoneKind uint8

const (
	zoneNone       zoneKind = iota
	zoneClusterset          // answered from imports, authoritative
	zoneReverse             // PTR of known addresses, everything else passed on
	zoneFallback            // answered from imports only where no local Service exists
	zoneKinds
)

func (k zoneKind) String() string {
	switch k {
	case zoneClusterset:
		return "clusterset"
	case zoneReverse:
		return "reverse"
	case zoneFallback:
		return "fallback"
	}
	return "none"
}

// reason is the rule that decided a query: what of the name, of its
// objects or of the plugin's state made the answer what it is, or passed
// the query on.
type reason uint8

const (
	whyNone reason = iota

	// serve's, before any zone's own rules.
	whyNotOneQuestion
	whyNotWireName
	whyNoZone
	whyClass
	whyDegraded
	whyNotSynced
	whyTransfer

	// serve's, in fallback zones; after them the resolver's decide.
	whyNotService
	whyNoLocalServices
	whyLocalNotSynced
	whyLocalWins
	whyLocalExternalName
	whyLocalReady
	whyOutOfScope

	// serve's, in reverse zones.
	whyNotPTR
	whyNoPTRZone
	whyNotAddress
	whyPointer
	whyLocalEndpointName
	whyKubeFallthrough
	whyKubeNXDomain

	// The resolver's (answer.why): what the name holds.
	whyApex
	whyDNSVersion
	whyStructure
	whyNamespace
	whyNoNamespace
	whyNotSchema
	whyNoImport
	whyReserved
	whyReservedAbove
	whyNoReadyEndpoint
	whyNoSlices
	whyNoSuchPort
	whyPortType
	whyServiceType
	whyNoPorts
	whyHostOfClusterSetIP
	whyNoSuchHost
	whyClusterAbove
	whyNoName
	whyHost
	whyAddresses
	whySRV
	whyPortSRV

	whyCount // the number of reasons
)

// reasonTexts states each reason's rule, as explain ends with it: every
// reason has one (TestEveryReasonHasText).
var reasonTexts = [whyCount]string{
	whyNotOneQuestion:     "not one question: passed on",
	whyNotWireName:        "lowering the name changed its length, and no object has such a name: passed on",
	whyNoZone:             "in no zone of the plugin: passed on",
	whyClass:              "not class IN: refused in clusterset zones, passed on elsewhere",
	whyDegraded:           "an API or a permission the plugin needs is missing: SERVFAIL in clusterset zones, passed on elsewhere",
	whyNotSynced:          "the caches have not synced yet: SERVFAIL in clusterset zones, passed on elsewhere",
	whyTransfer:           "AXFR or IXFR, which no transfer plugin served: refused",
	whyNotService:         "not a service's name, nor below one: passed on",
	whyNoLocalServices:    "no local Services are known: passed on",
	whyLocalNotSynced:     "the local Services have not synced: passed on",
	whyLocalWins:          "a local Service of the name exists, and it does not fail over",
	whyLocalExternalName:  "the local Service is an ExternalName Service: it never fails over",
	whyLocalReady:         "the local Service has a ready endpoint: it does not fail over",
	whyOutOfScope:         "the fallback scope keeps the import's name local: passed on",
	whyNotPTR:             "not a PTR query: passed on",
	whyNoPTRZone:          "no clusterset zone to name an address in: passed on",
	whyNotAddress:         "not the reverse name of an address: passed on",
	whyPointer:            "the claims on the address decided, by the PTR trust rules",
	whyLocalEndpointName:  "passed on, where the kubernetes plugin could send no answer: the local endpoint's name",
	whyKubeFallthrough:    "passed on, where the kubernetes plugin could send no answer: it falls through",
	whyKubeNXDomain:       "passed on, where the kubernetes plugin could send no answer: its NXDOMAIN",
	whyApex:               "the zone's apex: SOA and NS",
	whyDNSVersion:         "dns-version: the schema version, TXT",
	whyStructure:          "ns.dns, dns, svc: names of the zone's own, with no records",
	whyNamespace:          "a namespace with imports: a name with no records",
	whyNoNamespace:        "a namespace without imports: NXDOMAIN",
	whyNotSchema:          "no name of the MCS DNS schema: NXDOMAIN",
	whyNoImport:           "no import of the service: NXDOMAIN (passed on in fallback zones)",
	whyReserved:           "cluster.svc.ns.svc, no host name below: NXDOMAIN",
	whyReservedAbove:      "cluster.svc.ns.svc with host names below: NODATA",
	whyNoReadyEndpoint:    "a headless import without a ready endpoint has no names",
	whyNoSlices:           "a headless import whose controller writes no EndpointSlices has no names",
	whyNoSuchPort:         "no port of that name and protocol: NXDOMAIN",
	whyPortType:           "a port name holds SRV records alone: NODATA",
	whyServiceType:        "a service name holds A, AAAA and SRV alone: NODATA",
	whyNoPorts:            "SRV of an import without ports: NODATA",
	whyHostOfClusterSetIP: "host names exist for headless imports alone: NXDOMAIN",
	whyNoSuchHost:         "no ready endpoint of that name in that cluster: NXDOMAIN",
	whyClusterAbove:       "the labels of a cluster id with host names below: NODATA",
	whyNoName:             "any other name below a service: NXDOMAIN",
	whyHost:               "a ready endpoint's name: its addresses",
	whyAddresses:          "the service's addresses",
	whySRV:                "the service's SRV records, one per port",
	whyPortSRV:            "a port's SRV records",
}

// text is the reason's rule, in words.
func (w reason) text() string { return reasonTexts[w] }

// ofName reports whether the resolver gave the reason: what the name
// holds decided, not serve's rules.
func (w reason) ofName() bool { return w >= whyApex }

// decision is what serve decided about one query: what was asked, the rule
// that applied, the objects it rests on, and what was answered. serve fills
// it as it goes; the reply is written from it (reply), the counters count
// it (count), and Explain describes it, so that none of them decides again.
// It is a value in serve's frame, filled in place: it costs the query path
// no allocation.
type decision struct {
	// What was asked: the zone the name is in, lower case, and how the
	// zone is served; below a forward zone the name, parsed; below a
	// reverse zone the address.
	zone string
	kind zoneKind
	req  request
	addr netip.Addr

	// why is the rule that decided: one of serve's, or the resolver's
	// (a.why) when the name's records decided.
	why reason

	// The objects: the import of the name, the local Service of a
	// fallback name, why the plugin is degraded.
	view     *view
	local    *object.Service
	degraded *degradation
	// failover: a fallback name's local Service had no ready endpoint,
	// and the import answers in its place, by this cause.
	failover failoverCause
	// ptr is the trust model's verdict on the address of a PTR query,
	// ptrNone for any other query.
	ptr ptrVerdict

	// What was answered: reply says how, a holds the records and rcode of
	// replyAnswer, as sent (capped: cut to what a message carries).
	reply       replyKind
	a           answer
	capped      bool
	fellThrough bool   // an NXDOMAIN of a clusterset zone, passed on by fallthrough
	kubeZone    string // the kubernetes plugin's zone, in the query's case, for its NXDOMAIN
}

// failoverCause is why a fallback name fails over from its local Service.
type failoverCause uint8

const (
	noFailover      failoverCause = iota
	failoverOption                // the failover option
	failoverTraffic               // the import's trafficDistribution prefers close endpoints
)

// replyKind is what serve writes, or whether it passes the query on.
type replyKind uint8

const (
	replyPass         replyKind = iota // nothing: the next plugin answers
	replyAnswer                        // decision.a, with the zone's SOA when it has no records
	replyRefused                       // REFUSED
	replyServfail                      // SERVFAIL, with an Extended DNS Error that says why
	replyKubeNext                      // the kubernetes plugin falls through: the plugin after it answers
	replyKubeNXDomain                  // NXDOMAIN with the kubernetes plugin's SOA
)

// resolved records a, the resolver's answer, as the reply, cut to what a
// message carries (capAnswer), and its reason as the decision's.
func (d *decision) resolved(r *dns.Msg, a answer) {
	if capped, ok := capAnswer(r, a); ok || a.capped {
		d.capped = true
		a = capped
	}
	d.a, d.why, d.reply = a, a.why, replyAnswer
}

// outcome is what requestsTotal counts the query as, if anything.
func (d *decision) outcome() (outcome, bool) {
	switch d.reply {
	case replyAnswer:
		switch {
		case len(d.a.answer) > 0:
			return outcomeAnswer, true
		case d.a.rcode == dns.RcodeNameError:
			return outcomeNXDomain, true
		}
		return outcomeNodata, true
	case replyRefused:
		return outcomeRefused, true
	case replyServfail:
		return outcomeServfail, true
	case replyPass:
		switch {
		case d.fellThrough:
			return outcomeFallthrough, true
		case d.kind != zoneFallback:
		case d.why == whyLocalWins, d.why == whyLocalExternalName, d.why == whyLocalReady:
			return outcomeLocal, true
		case d.why == whyOutOfScope, d.view != nil && d.why.ofName():
			// Kept local, or a name the import does not have.
			return outcomePassed, true
		}
	}
	return 0, false
}

// ruleSet is a set of the policy rules that decided a query.
type ruleSet uint8

func (s *ruleSet) add(r rule)     { *s |= 1 << r }
func (s ruleSet) has(r rule) bool { return s&(1<<r) != 0 }
func (s ruleSet) empty() bool     { return s == 0 }

// rules are the policies that decided d, as policy_decisions_total counts
// them.
func (d *decision) rules() (set ruleSet) {
	switch d.ptr {
	case ptrConflict:
		set.add(rulePTRConflict)
	case ptrLocalConflict:
		set.add(rulePTRLocalConflict)
	case ptrOutOfRange:
		set.add(rulePTROutOfRange)
	}
	if d.why == whyOutOfScope {
		if d.view.scope.system() {
			set.add(ruleSystemRefused)
		} else {
			set.add(ruleScopeRefused)
		}
	}
	if d.reply == replyAnswer {
		if d.failover == failoverTraffic {
			set.add(ruleFailoverService)
		}
		if d.a.localOnly {
			set.add(ruleLocalPreferred)
		}
	}
	return set
}
