// Package dnscheck holds assertions every DNS answer in the tests passes
// through: the plugin's own, and those of a distribution that builds it in.
// It is a package of the plugin's module, not internal, so that such tests
// can import it.
package dnscheck

import (
	"fmt"
	"strings"

	"github.com/miekg/dns"
)

// Distinct returns an error naming the first record that occurs twice in one
// RRset of any section of m. RFC 2181, section 5, forbids it: records of one
// name, class and type with the same data, whatever their TTLs.
func Distinct(m *dns.Msg) error {
	if m == nil {
		return nil
	}
	for _, s := range []struct {
		name string
		rrs  []dns.RR
	}{{"answer", m.Answer}, {"authority", m.Ns}, {"additional", m.Extra}} {
		if err := distinct(s.rrs); err != nil {
			return fmt.Errorf("%s section: %w", s.name, err)
		}
	}
	return nil
}

// DistinctRecords is Distinct for a list of records, such as a zone
// transfer's. A transfer starts and ends with the same SOA, which is not a
// repeat: pass the records between them.
func DistinctRecords(rrs []dns.RR) error { return distinct(rrs) }

func distinct(rrs []dns.RR) error {
	seen := make(map[string]struct{}, len(rrs))
	for _, rr := range rrs {
		if rr.Header().Rrtype == dns.TypeOPT {
			continue
		}
		k := key(rr)
		if _, dup := seen[k]; dup {
			return fmt.Errorf("record %q appears twice in its RRset", rr.String())
		}
		seen[k] = struct{}{}
	}
	return nil
}

// key is the record's text without its TTL, its owner in lower case.
func key(rr dns.RR) string {
	c := dns.Copy(rr)
	h := c.Header()
	h.Ttl = 0
	h.Name = strings.ToLower(h.Name)
	return c.String()
}

// Addresses returns the values of the A and AAAA records of rrs, in order.
func Addresses(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		switch a := rr.(type) {
		case *dns.A:
			out = append(out, a.A.String())
		case *dns.AAAA:
			out = append(out, a.AAAA.String())
		}
	}
	return out
}
