package karmadae2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// guideCorefile returns the Corefile of section 1 of docs/karmada.md, made to
// run as a process beside the others: its ports on 127.0.0.1 and free, and a
// kubeconfig line in the multicluster and kubernetes stanzas, since there is
// no in-cluster service account here. Without withMulticluster, the
// multicluster stanza is cut out: the same server without the plugin.
// Every edit must apply exactly once, so a change of the guide's Corefile
// fails here instead of being silently tested in another form.
func guideCorefile(t *testing.T, kubeconfig string, withMulticluster bool) (corefile, addr, ready string) {
	t.Helper()
	start := strings.Index(guide, "```\n.:53 {\n")
	if start < 0 {
		t.Fatal("docs/karmada.md: no Corefile block starting with `.:53 {`")
	}
	body := guide[start+len("```\n"):]
	corefile = body[:strings.Index(body, "\n```")+1]

	port, readyPort, healthPort, metricsPort := harness.FreePort(t), harness.FreePort(t), harness.FreePort(t), harness.FreePort(t)
	edits := []struct{ pattern, replacement string }{
		{`(?m)^\.:53 \{$`, fmt.Sprintf(".:%d {", port)},
		{`(?m)^(\s+)health \{$`, fmt.Sprintf("${1}health 127.0.0.1:%d {", healthPort)},
		{`(?m)^(\s+)ready$`, fmt.Sprintf("${1}ready 127.0.0.1:%d", readyPort)},
		{`(?m)^(\s+)prometheus :9153$`, fmt.Sprintf("${1}prometheus 127.0.0.1:%d", metricsPort)},
		{`(?m)^(\s+)(multicluster .*\{)$`, "${1}${2}\n${1}    kubeconfig " + kubeconfig},
		{`(?m)^(\s+)(kubernetes .*\{)$`, "${1}${2}\n${1}    kubeconfig " + kubeconfig},
	}
	for _, e := range edits {
		re := regexp.MustCompile(e.pattern)
		if n := len(re.FindAllStringIndex(corefile, -1)); n != 1 {
			t.Fatalf("docs/karmada.md Corefile: %d lines match %s, want 1:\n%s", n, e.pattern, corefile)
		}
		corefile = re.ReplaceAllString(corefile, e.replacement)
	}
	if !withMulticluster {
		stanza := regexp.MustCompile(`(?ms)^    multicluster .*?\n    \}\n`)
		if n := len(stanza.FindAllStringIndex(corefile, -1)); n != 1 {
			t.Fatalf("docs/karmada.md Corefile: %d multicluster stanzas, want 1", n)
		}
		corefile = stanza.ReplaceAllString(corefile, "")
	}
	return corefile, fmt.Sprintf("127.0.0.1:%d", port), fmt.Sprintf("http://127.0.0.1:%d/ready", readyPort)
}

// server is a running build/coredns.
type server struct {
	name string // for messages
	addr string // 127.0.0.1:port, UDP and TCP
	log  *harness.Output
}

// startCoreDNS runs the guide's Corefile (with or without the multicluster
// stanza) against a cluster's kubeconfig, and waits until it answers over
// UDP and TCP and its ready plugin says 200.
func startCoreDNS(t *testing.T, name, kubeconfig string, withMulticluster bool) *server {
	t.Helper()
	corefile, addr, ready := guideCorefile(t, kubeconfig, withMulticluster)
	path := filepath.Join(t.TempDir(), "Corefile")
	if err := os.WriteFile(path, []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &server{name: name, addr: addr}
	s.log = harness.StartCoreDNS(t, "coredns "+name, binary, path, addr, func() bool { return harness.HTTPOK(ready) })
	return s
}

// ask sends m over proto, retrying twice on a network error.
func (s *server) ask(t *testing.T, proto string, m *dns.Msg) *dns.Msg {
	t.Helper()
	r, err := harness.Ask(proto, s.addr, m)
	if err != nil {
		t.Fatalf("coredns %s: %s %s over %s: %v", s.name, m.Question[0].Name, dns.TypeToString[m.Question[0].Qtype], proto, err)
	}
	return r
}

// query asks name, qtype over proto.
func (s *server) query(t *testing.T, proto, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	return s.ask(t, proto, m)
}

// answer is what a test expects of one query: the rcode and the answer
// section in presentation format, in any order, with TTL 0: the guide's
// Corefile caches, so a TTL counts down between two queries. sameWire
// compares TTLs too.
type answer struct {
	rcode   int
	records []string
}

// describe renders a reply as an answer, for comparison and messages.
func describe(r *dns.Msg) answer {
	a := answer{rcode: r.Rcode}
	for _, rr := range r.Answer {
		rr = dns.Copy(rr)
		rr.Header().Ttl = 0
		a.records = append(a.records, strings.ReplaceAll(rr.String(), "\t", " "))
	}
	slices.Sort(a.records)
	return a
}

func (a answer) String() string {
	return dns.RcodeToString[a.rcode] + " " + fmt.Sprint(a.records)
}

// await polls until name, qtype answers want over UDP and TCP, and returns
// how long that took; it fails t after within.
func (s *server) await(t *testing.T, within time.Duration, name string, qtype uint16, want answer) time.Duration {
	t.Helper()
	slices.Sort(want.records)
	start := time.Now()
	poll.Eventually(t, within, fmt.Sprintf("coredns %s: %s %s answers %s", s.name, name, dns.TypeToString[qtype], want), func() (bool, string) {
		for _, proto := range []string{"udp", "tcp"} {
			if got := describe(s.query(t, proto, name, qtype)); got.String() != want.String() {
				return false, proto + ": " + got.String()
			}
		}
		return true, ""
	})
	return time.Since(start)
}

// a and srv build expected records, as describe renders them.
func a(name, ip string) string { return fmt.Sprintf("%s 0 IN A %s", dns.Fqdn(name), ip) }
func srv(name string, port int, target string) string {
	return fmt.Sprintf("%s 0 IN SRV 0 100 %d %s", dns.Fqdn(name), port, dns.Fqdn(target))
}

// sameWire checks that two servers send the same reply to the same query
// (the same message ID), over UDP and over TCP: the packed messages are
// equal byte for byte, but for the serial of an SOA record, which is the time
// each process's cache last changed and may differ by a second or two. Both
// servers run `cache 30`, so an answer may come from one's cache with a TTL a
// second lower than the other's: a mismatch is asked again for a few seconds
// before it counts.
func sameWire(t *testing.T, with, without *server, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	var got *dns.Msg
	for _, proto := range []string{"udp", "tcp"} {
		poll.Eventually(t, 5*time.Second, fmt.Sprintf("%s %s over %s: %s and %s answer the same", name, dns.TypeToString[qtype], proto, with.name, without.name), func() (bool, string) {
			x, y := with.ask(t, proto, m), without.ask(t, proto, m)
			got = x
			return bytes.Equal(packNormalized(t, x), packNormalized(t, y)), fmt.Sprintf("\n%s\n--- vs ---\n%s", x, y)
		})
	}
	return got
}

// packNormalized packs r with SOA serials zeroed.
func packNormalized(t *testing.T, r *dns.Msg) []byte {
	t.Helper()
	r = r.Copy()
	for _, section := range [][]dns.RR{r.Answer, r.Ns, r.Extra} {
		for _, rr := range section {
			if soa, ok := rr.(*dns.SOA); ok {
				soa.Serial = 0
			}
		}
	}
	wire, err := r.Pack()
	if err != nil {
		t.Fatalf("pack %s: %v", r.Question[0].Name, err)
	}
	return wire
}
