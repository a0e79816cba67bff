package e2e

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	discovery "k8s.io/api/discovery/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
)

// TestUDPAmplification runs the shipped Corefile (manifests/corefile, with
// cache 30) and asks a headless import of 1,000 endpoints over UDP from a
// client that advertises a 65,535-octet buffer: every UDP reply is at most
// 1232 octets, truncated with TC, before the whole answer is cached (the
// plugin's max_udp_size) and after (bufsize, which the cache's replies
// meet too); over TCP the answer is whole. It logs the amplification, the
// reply's size over the query's, that docs/trust.md quotes.
func TestUDPAmplification(t *testing.T) {
	for _, path := range []string{"corefile", "standalone"} {
		if c := configMapCorefile(t, filepath.Join("..", "..", "manifests", path, "configmap.yaml")); !strings.Contains(c, "\n    bufsize 1232\n") {
			t.Errorf("manifests/%s's Corefile has no bufsize 1232 line:\n%s", path, c)
		}
	}
	port, ready := harness.FreePort(t), harness.FreePort(t)
	shipped := configMapCorefile(t, filepath.Join("..", "..", "manifests", "corefile", "configmap.yaml"))
	s := startCorefile(t, "coredns-mcs with the shipped Corefile", binary, localize(t, shipped, port, ready, map[string]string{"/etc/resolv.conf": "127.0.0.1:1"}), port, ready)
	ns := namespace(t, "wire")
	si := newImport(ns, "db")
	si.Spec.Type = mcsv1beta1.Headless
	createImport(t, si)
	var eps []discovery.Endpoint
	for i := range 1000 {
		eps = append(eps, endpoint(fmt.Sprintf("db-%d", i), fmt.Sprintf("10.77.%d.%d", i>>8, i&255), nil))
	}
	createSlice(t, ns, "db", "east", "db-east", discovery.AddressTypeIPv4, eps...)
	name := "db." + ns + ".svc.clusterset.local."
	expectAddresses(t, s, "db-999.east."+name, dns.TypeA, 30*time.Second, "10.77.3.231")

	for _, q := range []struct {
		name  string
		qtype uint16
	}{
		{name, dns.TypeA},
		{"_https._tcp." + name, dns.TypeSRV},
		{"db." + ns + ".svc.cluster.local.", dns.TypeA},
	} {
		what := q.name + " " + dns.TypeToString[q.qtype]
		query := new(dns.Msg)
		query.SetQuestion(q.name, q.qtype)
		query.SetEdns0(dns.MaxMsgSize, false)
		udp := func(when string) {
			t.Helper()
			reply, size, querySize := exchangeUDP(t, s.addr, query)
			if size > 1232 || !reply.Truncated || reply.Rcode != dns.RcodeSuccess {
				t.Errorf("%s over UDP, %s: %d octets, TC %v, %s; want at most 1232, TC, NOERROR", what, when, size, reply.Truncated, dns.RcodeToString[reply.Rcode])
			}
			t.Logf("%s over UDP, %s: a %d-octet query, a %d-octet reply (%.1fx)", what, when, querySize, size, float64(size)/float64(querySize))
		}
		udp("not cached")
		tcp, err := harness.Ask("tcp", s.addr, query)
		if err != nil {
			t.Fatal(err)
		}
		tcp.Compress = true
		if tcp.Truncated || tcp.Rcode != dns.RcodeSuccess || tcp.Len() <= 1232 {
			t.Fatalf("%s over TCP: %d octets, TC %v, %s; want the whole answer, no TC", what, tcp.Len(), tcp.Truncated, dns.RcodeToString[tcp.Rcode])
		}
		udp("cached")
	}
}

// exchangeUDP sends query to addr over UDP and returns the reply, its size
// on the wire and the query's.
func exchangeUDP(t *testing.T, addr string, query *dns.Msg) (*dns.Msg, int, int) {
	t.Helper()
	wire, err := query.Pack()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write(wire); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, dns.MaxMsgSize)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("%s over UDP: %v", query.Question[0].Name, err)
	}
	reply := new(dns.Msg)
	if err := reply.Unpack(buf[:n]); err != nil {
		t.Fatalf("%s over UDP: %v", query.Question[0].Name, err)
	}
	return reply, n, len(wire)
}
