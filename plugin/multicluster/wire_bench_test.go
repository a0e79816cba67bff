package multicluster

import (
	"context"
	"fmt"
	"testing"

	"github.com/coredns/coredns/plugin/test"
	corerequest "github.com/coredns/coredns/request"
	"github.com/miekg/dns"
	core "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkHostileWire: what a small UDP query can make the server send to
// the address it bears, which a third party can forge: a headless import of
// 1,000 named endpoints, asked A and SRV over UDP with the largest EDNS0
// buffer, through CoreDNS's request.ScrubWriter, so that the size is the
// wire's. It reports the reply's octets and the amplification. The file uses
// only what every revision since the hostile benchmarks has, for make bench.
func BenchmarkHostileWire(b *testing.B) {
	m, _ := newTestPlugin(b, []importDef{{ns: "aaa", name: "db", typ: "Headless"}}, fakeLocal{})
	eps := make([]discovery.Endpoint, 1000)
	for i := range eps {
		eps[i] = ep(fmt.Sprintf("10.7.%d.%d", i/250, 1+i%250), fmt.Sprintf("host-%d", i), nil)
	}
	port, proto, portName := int32(5432), core.ProtocolTCP, "pg"
	spec, _, err := newSliceSpec(&discovery.EndpointSlice{
		ObjectMeta:  meta.ObjectMeta{Namespace: "aaa", Name: "db-east", ResourceVersion: "1", Labels: map[string]string{labelServiceName: "db", labelSourceCluster: "east"}},
		AddressType: discovery.AddressTypeIPv4,
		Endpoints:   eps,
		Ports:       []discovery.EndpointPort{{Name: &portName, Protocol: &proto, Port: &port}},
	}, len(defaultZone))
	if err != nil {
		b.Fatal(err)
	}
	m.sources.setSlice(spec)
	for _, c := range []struct {
		name  string
		qname string
		qtype uint16
	}{
		{"headless_A_1000_endpoints", "db.aaa.svc.clusterset.local.", dns.TypeA},
		{"headless_SRV_1000_endpoints", "_pg._tcp.db.aaa.svc.clusterset.local.", dns.TypeSRV},
	} {
		b.Run(c.name+"/udp_edns65535", func(b *testing.B) {
			query := new(dns.Msg)
			query.SetQuestion(c.qname, c.qtype)
			query.SetEdns0(dns.MaxMsgSize, false)
			queryWire, err := query.Pack()
			if err != nil {
				b.Fatal(err)
			}
			size := 0
			for b.Loop() {
				r := query.Copy()
				w := &wireSize{ResponseWriter: &test.ResponseWriter{}}
				if _, err := m.ServeDNS(context.Background(), corerequest.NewScrubWriter(r, w), r); err != nil {
					b.Fatal(err)
				}
				size = w.size
			}
			if size == 0 {
				b.Fatal("no reply written")
			}
			b.ReportMetric(float64(size), "reply-octets")
			b.ReportMetric(float64(size)/float64(len(queryWire)), "amplification")
		})
	}
}

// wireSize is a ResponseWriter that packs the reply, as the server does,
// and keeps its size.
type wireSize struct {
	dns.ResponseWriter
	size int
}

func (w *wireSize) WriteMsg(m *dns.Msg) error {
	wire, err := m.Pack()
	w.size = len(wire)
	return err
}
