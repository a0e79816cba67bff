package main

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// podSearch is the search list of a pod in the namespace demo (the
// examples' namespace) with the cluster domain cluster.local, as the kubelet
// writes its resolv.conf: NAMESPACE.svc.DOMAIN, svc.DOMAIN, DOMAIN, with
// options ndots:5.
var podSearch = []string{"demo.svc.cluster.local", "svc.cluster.local", "cluster.local"}

const podNdots = 5

// searchNames returns the names a stub resolver with search and ndots asks
// for name, in order: a name with a trailing dot as it is; else, with at
// least ndots dots, the name itself first; then the name in each search
// domain; then the name itself, if not asked yet.
func searchNames(name string, search []string, ndots int) []string {
	if strings.HasSuffix(name, ".") {
		return []string{name}
	}
	absolute := name + "."
	var names []string
	if strings.Count(name, ".") >= ndots {
		names = append(names, absolute)
	}
	for _, d := range search {
		names = append(names, name+"."+strings.Trim(d, ".")+".")
	}
	if !slices.Contains(names, absolute) {
		names = append(names, absolute)
	}
	return names
}

// step is one question of a lookup and what it got.
type step struct {
	name   string
	status string // the rcode, or "timed out" / the error
	took   time.Duration
}

// exchangeFunc asks one A question of name, as dns.Client.Exchange does.
type exchangeFunc func(name string) (*dns.Msg, time.Duration, error)

// searchLookup asks the names of searchNames in turn, going on past
// NXDOMAIN only: any other answer (records, NODATA, SERVFAIL) or no answer
// ends the walk, which is where a pod's lookup gets its result, or gives
// up.
func searchLookup(name string, search []string, ndots int, exchange exchangeFunc) []step {
	var steps []step
	for _, n := range searchNames(name, search, ndots) {
		start := time.Now()
		r, _, err := exchange(n)
		s := step{name: n, took: time.Since(start)}
		switch {
		case err != nil && isTimeout(err):
			s.status = "timed out"
		case err != nil:
			s.status = err.Error()
		default:
			s.status = dns.RcodeToString[r.Rcode]
			if r.Rcode == dns.RcodeSuccess && len(r.Answer) == 0 {
				s.status = "NODATA"
			}
		}
		steps = append(steps, s)
		if s.status != "NXDOMAIN" {
			break
		}
	}
	return steps
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// formatLookup is the line -lookup prints: every name asked, its status and
// time, then the whole lookup's time.
func formatLookup(name string, steps []step) string {
	var parts []string
	var total time.Duration
	for _, s := range steps {
		parts = append(parts, fmt.Sprintf("%s %s %d ms", strings.TrimSuffix(s.name, "."), s.status, s.took.Milliseconds()))
		total += s.took
	}
	return fmt.Sprintf("%s: %s; %d ms in all", name, strings.Join(parts, ", "), total.Milliseconds())
}

// lookup runs -lookup: name asked of server as a pod in the namespace demo
// asks it, over UDP, waiting up to timeout for each answer.
func lookup(name, server string, timeout time.Duration) string {
	c := &dns.Client{Net: "udp", Timeout: timeout}
	exchange := func(n string) (*dns.Msg, time.Duration, error) {
		m := new(dns.Msg)
		m.SetQuestion(n, dns.TypeA)
		return c.Exchange(m, server)
	}
	return formatLookup(name, searchLookup(name, podSearch, podNdots, exchange))
}
