package main

import (
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func TestSearchNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"checkout", []string{"checkout.demo.svc.cluster.local.", "checkout.svc.cluster.local.", "checkout.cluster.local.", "checkout."}},
		{"example.com", []string{"example.com.demo.svc.cluster.local.", "example.com.svc.cluster.local.", "example.com.cluster.local.", "example.com."}},
		{"a.b.c.d.e.f", []string{"a.b.c.d.e.f.", "a.b.c.d.e.f.demo.svc.cluster.local.", "a.b.c.d.e.f.svc.cluster.local.", "a.b.c.d.e.f.cluster.local."}},
		{"example.com.", []string{"example.com."}},
	} {
		if got := searchNames(tc.name, podSearch, podNdots); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// timeoutError is what a UDP read past its deadline returns.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

var _ net.Error = timeoutError{}

// TestSearchLookup: the walk goes on past NXDOMAIN only, and the line
// names every question with its status.
func TestSearchLookup(t *testing.T) {
	answers := map[string]int{ // rcode, or -1: no answer
		"example.com.demo.svc.cluster.local.": dns.RcodeNameError,
		"example.com.svc.cluster.local.":      dns.RcodeNameError,
		"example.com.cluster.local.":          dns.RcodeNameError,
		"example.com.":                        dns.RcodeSuccess,
		"hung.demo.svc.cluster.local.":        -1,
		"broken.demo.svc.cluster.local.":      dns.RcodeServerFailure,
	}
	exchange := func(n string) (*dns.Msg, time.Duration, error) {
		rcode, ok := answers[n]
		if !ok {
			rcode = dns.RcodeNameError
		}
		if rcode < 0 {
			return nil, 0, timeoutError{}
		}
		m := new(dns.Msg)
		m.SetQuestion(n, dns.TypeA)
		m.Rcode = rcode
		if n == "example.com." {
			rr, _ := dns.NewRR("example.com. 30 IN A 192.0.2.1")
			m.Answer = append(m.Answer, rr)
		}
		return m, 0, nil
	}
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"example.com", []string{"example.com.demo.svc.cluster.local NXDOMAIN", "example.com.svc.cluster.local NXDOMAIN", "example.com.cluster.local NXDOMAIN", "example.com NOERROR"}},
		{"hung", []string{"hung.demo.svc.cluster.local timed out"}},
		{"broken", []string{"broken.demo.svc.cluster.local SERVFAIL"}},
	} {
		line := formatLookup(tc.name, searchLookup(tc.name, podSearch, podNdots, exchange))
		for _, w := range tc.want {
			if !strings.Contains(line, w) {
				t.Errorf("%s: %q lacks %q", tc.name, line, w)
			}
		}
		if got := strings.Count(line, " ms,") + 1; got != len(tc.want) {
			t.Errorf("%s: %d questions, want %d: %s", tc.name, got, len(tc.want), line)
		}
	}
}
