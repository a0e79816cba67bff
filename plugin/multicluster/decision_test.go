package multicluster

import (
	"fmt"
	"testing"

	"github.com/miekg/dns"
)

func TestZoneKindString(t *testing.T) {
	tests := []struct {
		kind zoneKind
		want string
	}{
		{zoneNone, "none"},
		{zoneClusterset, "clusterset"},
		{zoneReverse, "reverse"},
		{zoneFallback, "fallback"},
	}
	for _, tc := range tests {
		if got := tc.kind.String(); got != tc.want {
			t.Errorf("zoneKind(%d).String() = %q, want %q", tc.kind, got, tc.want)
		}
	}
}

func TestReasonOfName(t *testing.T) {
	tests := []struct {
		why  reason
		want bool
	}{
		{whyNone, false},
		{whyNoZone, false},
		{whyLocalWins, false},
		{whyOutOfScope, false},
		{whyKubeNXDomain, false},
		{whyApex, true},
		{whyNoImport, true},
		{whyPortSRV, true},
	}
	for _, tc := range tests {
		if got := tc.why.ofName(); got != tc.want {
			t.Errorf("reason %d: ofName() = %v, want %v", tc.why, got, tc.want)
		}
	}
}

// TestEveryReasonHasText: explain ends with the text of the reason that
// decided, so a reason added without one would leave an operator a blank.
func TestEveryReasonHasText(t *testing.T) {
	seen := map[string]reason{}
	for w := whyNone + 1; w < whyCount; w++ {
		text := w.text()
		if text == "" {
			t.Errorf("reason %d has no text in reasonTexts", w)
			continue
		}
		if other, dup := seen[text]; dup {
			t.Errorf("reasons %d and %d have the same text %q", other, w, text)
		}
		seen[text] = w
	}
	if whyNone.text() != "" {
		t.Errorf("whyNone, no decision, has the text %q", whyNone.text())
	}
}

func TestDecisionResolved(t *testing.T) {
	r := new(dns.Msg)
	r.SetQuestion("web.ns1.svc.clusterset.local.", dns.TypeA)
	few := answer{answer: []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: "web.ns1.svc.clusterset.local.", Rrtype: dns.TypeA, Class: dns.ClassINET}}}, why: whyAddresses}
	many := answer{why: whyHost}
	for i := range maxAnswerRecords + 1 {
		many.answer = append(many.answer, &dns.A{Hdr: dns.RR_Header{Name: "web.ns1.svc.clusterset.local.", Rrtype: dns.TypeA, Class: dns.ClassINET}, A: []byte{10, 0, byte(i >> 8), byte(i)}})
	}
	tests := []struct {
		name    string
		a       answer
		capped  bool
		records int
	}{
		{"few records", few, false, 1},
		{"capped as made", answer{answer: few.answer, why: whyAddresses, capped: true}, true, 1},
		{"cut to what a message carries", many, true, -1},
	}
	for _, tc := range tests {
		d := decision{reply: replyPass, why: whyNotService}
		d.resolved(r, tc.a)
		if d.reply != replyAnswer || d.why != tc.a.why || d.capped != tc.capped {
			t.Errorf("%s: reply %d, why %d, capped %v; want %d, %d, %v", tc.name, d.reply, d.why, d.capped, replyAnswer, tc.a.why, tc.capped)
		}
		if tc.records >= 0 && len(d.a.answer) != tc.records {
			t.Errorf("%s: %d records, want %d", tc.name, len(d.a.answer), tc.records)
		}
		if tc.records < 0 && (len(d.a.answer) == 0 || len(d.a.answer) >= len(tc.a.answer)) {
			t.Errorf("%s: %d records of %d, want fewer, not none", tc.name, len(d.a.answer), len(tc.a.answer))
		}
	}
}

func TestDecisionOutcome(t *testing.T) {
	records := []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: "web.ns1.svc.clusterset.local.", Rrtype: dns.TypeA, Class: dns.ClassINET}}}
	imported := &view{key: serviceKey{namespace: "ns1", name: "web"}}
	tests := []struct {
		name    string
		d       decision
		outcome outcome
		counted bool
	}{
		{"records", decision{reply: replyAnswer, a: answer{answer: records}}, outcomeAnswer, true},
		{"nxdomain", decision{reply: replyAnswer, a: answer{rcode: dns.RcodeNameError}}, outcomeNXDomain, true},
		{"nodata", decision{reply: replyAnswer, a: answer{rcode: dns.RcodeSuccess}}, outcomeNodata, true},
		{"refused", decision{reply: replyRefused}, outcomeRefused, true},
		{"servfail", decision{reply: replyServfail}, outcomeServfail, true},
		{"fallthrough", decision{reply: replyPass, kind: zoneClusterset, fellThrough: true}, outcomeFallthrough, true},
		{"local wins", decision{reply: replyPass, kind: zoneFallback, why: whyLocalWins}, outcomeLocal, true},
		{"local ExternalName", decision{reply: replyPass, kind: zoneFallback, why: whyLocalExternalName}, outcomeLocal, true},
		{"local ready", decision{reply: replyPass, kind: zoneFallback, why: whyLocalReady}, outcomeLocal, true},
		{"out of scope", decision{reply: replyPass, kind: zoneFallback, why: whyOutOfScope}, outcomePassed, true},
		{"no such name of an import", decision{reply: replyPass, kind: zoneFallback, why: whyNoSuchPort, view: imported}, outcomePassed, true},
		// Passed on without an import behind the name: not the plugin's.
		{"no import", decision{reply: replyPass, kind: zoneFallback, why: whyNoImport}, 0, false},
		{"not a service", decision{reply: replyPass, kind: zoneFallback, why: whyNotService}, 0, false},
		{"local wins outside fallback", decision{reply: replyPass, kind: zoneReverse, why: whyLocalWins}, 0, false},
		{"no such name outside fallback", decision{reply: replyPass, kind: zoneClusterset, why: whyNoSuchPort, view: imported}, 0, false},
		{"no zone", decision{reply: replyPass, why: whyNoZone}, 0, false},
		{"kubernetes falls through", decision{reply: replyKubeNext, kind: zoneReverse}, 0, false},
		{"kubernetes NXDOMAIN", decision{reply: replyKubeNXDomain, kind: zoneReverse}, 0, false},
	}
	for _, tc := range tests {
		o, ok := tc.d.outcome()
		if ok != tc.counted || (ok && o != tc.outcome) {
			t.Errorf("%s: outcome() = %s, %v; want %s, %v", tc.name, o, ok, tc.outcome, tc.counted)
		}
	}
}

func TestDecisionRules(t *testing.T) {
	scoped := &view{scope: scopeRefused}
	system := &view{scope: systemRefused}
	apiServer := &view{scope: apiServerRefused}
	tests := []struct {
		name string
		d    decision
		want []rule
	}{
		{"none", decision{reply: replyAnswer}, nil},
		{"ptr conflict", decision{reply: replyPass, ptr: ptrConflict}, []rule{rulePTRConflict}},
		{"ptr local conflict", decision{reply: replyPass, ptr: ptrLocalConflict}, []rule{rulePTRLocalConflict}},
		{"ptr out of range", decision{reply: replyPass, ptr: ptrOutOfRange}, []rule{rulePTROutOfRange}},
		{"ptr answered", decision{reply: replyAnswer, ptr: ptrAnswered}, nil},
		{"ptr of a local address", decision{reply: replyPass, ptr: ptrLocal}, nil},
		{"scope", decision{reply: replyPass, why: whyOutOfScope, view: scoped}, []rule{ruleScopeRefused}},
		{"system namespace", decision{reply: replyPass, why: whyOutOfScope, view: system}, []rule{ruleSystemRefused}},
		{"API server", decision{reply: replyPass, why: whyOutOfScope, view: apiServer}, []rule{ruleSystemRefused}},
		{"failover by traffic", decision{reply: replyAnswer, failover: failoverTraffic}, []rule{ruleFailoverService}},
		{"failover option", decision{reply: replyAnswer, failover: failoverOption}, nil},
		{"local preferred", decision{reply: replyAnswer, a: answer{localOnly: true}}, []rule{ruleLocalPreferred}},
		{"both", decision{reply: replyAnswer, failover: failoverTraffic, a: answer{localOnly: true}}, []rule{ruleLocalPreferred, ruleFailoverService}},
		// Only an answer sent counts its traffic rules.
		{"passed on", decision{reply: replyPass, failover: failoverTraffic, a: answer{localOnly: true}}, nil},
	}
	for _, tc := range tests {
		set := tc.d.rules()
		var want ruleSet
		for _, r := range tc.want {
			want.add(r)
		}
		if set != want || set.empty() != (len(tc.want) == 0) {
			t.Errorf("%s: rules() = %s, want %s", tc.name, rulesOf(set), rulesOf(want))
		}
		for _, r := range tc.want {
			if !set.has(r) {
				t.Errorf("%s: rules() lacks %s", tc.name, ruleNames[r])
			}
		}
	}
}

// rulesOf names the rules of s.
func rulesOf(s ruleSet) string {
	var names []string
	for r := range rules {
		if s.has(r) {
			names = append(names, ruleNames[r])
		}
	}
	return fmt.Sprint(names)
}
