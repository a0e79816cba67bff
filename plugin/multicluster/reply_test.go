package multicluster

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	corerequest "github.com/coredns/coredns/request"
	"github.com/miekg/dns"
	discovery "k8s.io/api/discovery/v1"
)

// askWire sends m a question of qtype for name from a client that advertises
// bufsize octets over EDNS0 (0: no EDNS0), over TCP or UDP, and returns the
// reply and its size on the wire, as the server packs it.
func askWire(t *testing.T, m *Multicluster, name string, qtype uint16, bufsize uint16, tcp bool) (*dns.Msg, int) {
	t.Helper()
	rec := dnstest.NewRecorder(&test.ResponseWriter{TCP: tcp})
	r := new(dns.Msg)
	r.SetQuestion(name, qtype)
	if bufsize > 0 {
		r.SetEdns0(bufsize, false)
	}
	// Through the writer CoreDNS's server wraps every reply in, which cuts
	// it to the buffer the query advertises (and compresses it where it
	// would not fit), as on the wire.
	if _, err := m.ServeDNS(context.Background(), corerequest.NewScrubWriter(r, rec), r); err != nil || rec.Msg == nil {
		t.Fatalf("%s %s: %v", name, dns.TypeToString[qtype], err)
	}
	wire, err := rec.Msg.Pack()
	if err != nil {
		t.Fatalf("%s %s: packing the reply: %v", name, dns.TypeToString[qtype], err)
	}
	return rec.Msg, len(wire)
}

// bigPortedHeadlessPlugin serves a headless import of 1,000 endpoints, each
// a host name with one IPv4 and one IPv6 address, and the port pg.
func bigPortedHeadlessPlugin(t *testing.T) *Multicluster {
	t.Helper()
	m, _ := newTestPlugin(t, []importDef{{ns: "big", name: "db", typ: "Headless"}}, fakeLocal{})
	var v4, v6 []discovery.Endpoint
	for i := range 1000 {
		host := fmt.Sprintf("db-%d", i)
		v4 = append(v4, ep(fmt.Sprintf("10.1.%d.%d", i>>8, i&255), host, nil))
		v6 = append(v6, ep(fmt.Sprintf("fd00::1:%d", i), host, nil))
	}
	addSlice(t, m, "big", "db", "east", "db-v4", discovery.AddressTypeIPv4, v4...)
	addSlice(t, m, "big", "db", "east", "db-v6", discovery.AddressTypeIPv6, v6...)
	return m
}

// TestUDPAnswersCapped: whatever buffer a client advertises, a UDP answer
// is at most max_udp_size octets (1232 by default), cut with TC so that the
// client asks again over TCP, where the answer is whole. A small query
// gets no reply more than a few times its size: the amplification a
// spoofed source could make of the server.
func TestUDPAnswersCapped(t *testing.T) {
	m := bigPortedHeadlessPlugin(t)
	const name = "db.big.svc.clusterset.local."
	query := new(dns.Msg)
	query.SetQuestion("_pg._tcp.db.big.svc.clusterset.local.", dns.TypeSRV)
	query.SetEdns0(dns.MaxMsgSize, false)
	queryWire, _ := query.Pack()
	for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeSRV} {
		qname := name
		if qtype == dns.TypeSRV {
			qname = "_pg._tcp." + name
		}
		for _, c := range []struct {
			bufsize uint16
			want    int // the most octets the UDP reply may take
		}{
			{0, dns.MinMsgSize},
			{dns.MinMsgSize, dns.MinMsgSize},
			{1232, 1232},
			{4096, defaultMaxUDPSize},
			{dns.MaxMsgSize, defaultMaxUDPSize},
		} {
			t.Run(fmt.Sprintf("%s/edns%d", dns.TypeToString[qtype], c.bufsize), func(t *testing.T) {
				r, size := askWire(t, m, qname, qtype, c.bufsize, false)
				if size > c.want || !r.Truncated || len(r.Answer) == 0 || r.Rcode != dns.RcodeSuccess {
					t.Errorf("UDP: %d octets, TC %v, %d answers, %s; want at most %d octets, TC, some answers, NOERROR", size, r.Truncated, len(r.Answer), dns.RcodeToString[r.Rcode], c.want)
				}
				if c.bufsize > 0 {
					if opt := r.IsEdns0(); opt == nil || int(opt.UDPSize()) > defaultMaxUDPSize {
						t.Errorf("UDP: the reply's OPT %v; want one advertising at most %d octets", opt, defaultMaxUDPSize)
					}
				}
				if c.bufsize == dns.MaxMsgSize && size > 25*len(queryWire) {
					t.Errorf("UDP: a %d-octet query got %d octets (%.0fx)", len(queryWire), size, float64(size)/float64(len(queryWire)))
				}
				tcp, tcpSize := askWire(t, m, qname, qtype, c.bufsize, true)
				if tcp.Truncated || tcpSize <= defaultMaxUDPSize {
					t.Errorf("TCP: %d octets, TC %v; want the whole answer, over %d octets, no TC", tcpSize, tcp.Truncated, defaultMaxUDPSize)
				}
			})
		}
	}
}

// TestMaxUDPSizeOption: max_udp_size raises or lowers the cap, and a small
// answer is never cut.
func TestMaxUDPSizeOption(t *testing.T) {
	m := bigHeadlessPlugin(t)
	const name = "db.big.svc.clusterset.local."
	for _, size := range []int{dns.MinMsgSize, 4096, dns.MaxMsgSize} {
		m.maxUDPSize = size
		r, got := askWire(t, m, name, dns.TypeA, dns.MaxMsgSize, false)
		_, whole := askWire(t, m, name, dns.TypeA, dns.MaxMsgSize, true)
		if got > size || r.Truncated != (whole > size) {
			t.Errorf("max_udp_size %d: %d octets, TC %v; want at most %d, TC when the whole answer (%d octets) is larger", size, got, r.Truncated, size, whole)
		}
		if size > defaultMaxUDPSize && got <= defaultMaxUDPSize {
			t.Errorf("max_udp_size %d: %d octets, not above the default %d", size, got, defaultMaxUDPSize)
		}
	}
	m.maxUDPSize = defaultMaxUDPSize
	small, _ := newTestPlugin(t, []importDef{{ns: "shop", name: "cart", typ: "ClusterSetIP", ips: []string{"10.42.0.1"}}}, fakeLocal{})
	if r, _ := askWire(t, small, "cart.shop.svc.clusterset.local.", dns.TypeA, dns.MaxMsgSize, false); r.Truncated || len(r.Answer) != 1 {
		t.Errorf("a one-record answer: TC %v, %d records; want no TC, 1 record", r.Truncated, len(r.Answer))
	}
}

func TestMaxUDPSizeParse(t *testing.T) {
	for _, c := range []struct {
		stanza string
		want   int
		err    string
	}{
		{"multicluster", defaultMaxUDPSize, ""},
		{"multicluster {\n max_udp_size 4096\n}", 4096, ""},
		{"multicluster {\n max_udp_size 512\n}", 512, ""},
		{"multicluster {\n max_udp_size 511\n}", 0, "max_udp_size must be in range [512, 65535]: 511"},
		{"multicluster {\n max_udp_size 65536\n}", 0, "max_udp_size must be in range [512, 65535]: 65536"},
		{"multicluster {\n max_udp_size big\n}", 0, `max_udp_size "big" is not a number`},
		{"multicluster {\n max_udp_size\n}", 0, "max_udp_size needs exactly one size in octets, got 0 arguments"},
	} {
		m, err := parseCorefile(caddy.NewTestController("dns", c.stanza))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want one saying %q", c.stanza, err, c.err)
			}
			continue
		}
		if err != nil || m.maxUDPSize != c.want {
			t.Errorf("%q: max_udp_size %d, error %v; want %d", c.stanza, m.maxUDPSize, err, c.want)
		}
	}
}

// TestMaxImportAddresses: max_import_addresses lowers how many distinct
// addresses of each family an import answers with from its slices: the
// lowest, the rest dropped, counted and out of the reverse map; a bad
// count stops start-up.
func TestMaxImportAddresses(t *testing.T) {
	m, _ := newTestPlugin(t, []importDef{{ns: "shop", name: "cart", typ: "ClusterSetIP"}}, fakeLocal{})
	m.sources.setMaxAddresses(3)
	var eps []discovery.Endpoint
	for i := range 10 {
		eps = append(eps, ep(fmt.Sprintf("10.9.0.%d", 10-i), "", nil))
	}
	addSlice(t, m, "shop", "cart", "east", "cart-east", discovery.AddressTypeIPv4, eps...)
	r, _ := askWire(t, m, "cart.shop.svc.clusterset.local.", dns.TypeA, 1232, true)
	var got []string
	for _, rr := range r.Answer {
		got = append(got, rr.(*dns.A).A.String())
	}
	if strings.Join(got, " ") != "10.9.0.1 10.9.0.2 10.9.0.3" {
		t.Errorf("answers %v, want the three lowest addresses", got)
	}
	if d := m.index.dropped.Load(); d != 7 {
		t.Errorf("%d addresses counted dropped, want 7", d)
	}
	if n := m.index.reverseLen(); n != 3 {
		t.Errorf("%d addresses in the reverse map, want 3", n)
	}
	for _, c := range []struct{ stanza, err string }{
		{"multicluster {\n max_import_addresses 0\n}", "max_import_addresses must be in range [1, 2000], what one answer carries: 0"},
		{"multicluster {\n max_import_addresses 2001\n}", "max_import_addresses must be in range [1, 2000]"},
		{"multicluster {\n max_import_addresses few\n}", `max_import_addresses "few" is not a number`},
	} {
		if _, err := parseCorefile(caddy.NewTestController("dns", c.stanza)); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: error %v, want one saying %q", c.stanza, err, c.err)
		}
	}
	parsed, err := parseCorefile(caddy.NewTestController("dns", "multicluster {\n max_import_addresses 500\n}"))
	if err != nil || parsed.sources.policy.addressLimit() != 500 {
		t.Errorf("max_import_addresses 500: limit %d, error %v", parsed.sources.policy.addressLimit(), err)
	}
}

// TestUDPBufferFloor: a buffer advertised below 512 octets counts as 512
// (RFC 6891, 6.2.5): the reply fills 512 octets, not the smaller buffer.
func TestUDPBufferFloor(t *testing.T) {
	m := bigPortedHeadlessPlugin(t)
	r, size := askWire(t, m, "db.big.svc.clusterset.local.", dns.TypeA, 100, false)
	if size <= 400 || size > dns.MinMsgSize || !r.Truncated {
		t.Errorf("a 100-octet buffer: %d octets, TC %v; want over 400 and at most %d, TC", size, r.Truncated, dns.MinMsgSize)
	}
}
