package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
)

// TestAddressesOfTheLocalCluster: an import cannot take over the PTR of a
// local Service's ClusterIP or of a local endpoint, read from the real
// kubernetes plugin's cache, nor answer a special address it lists.
func TestAddressesOfTheLocalCluster(t *testing.T) {
	with := startServer(t, corefileWith, true)
	without := startServer(t, corefileWithout, true)
	ns := namespace(t, "takeover")
	ctx := context.Background()

	// A local Service without a selector, and its endpoint.
	svc := createService(t, ns, "dns")
	local := &discovery.EndpointSlice{
		ObjectMeta:  meta.ObjectMeta{Namespace: ns, Name: "dns-1", Labels: map[string]string{discovery.LabelServiceName: "dns"}},
		AddressType: discovery.AddressTypeIPv4,
		Endpoints:   []discovery.Endpoint{endpoint("", "10.244.9.5", nil), endpoint("", "10.244.9.6", nil)},
		Ports:       []discovery.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](80)}},
	}
	if _, err := kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, local, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Imports that list them, and the metadata server.
	createImport(t, newImport(ns, "x", svc.Spec.ClusterIP, "169.254.169.254"))
	createImport(t, newImport(ns, "y", "10.42.77.1"))
	createImport(t, newImport(ns, "z", "10.244.9.6"))
	h := newImport(ns, "h")
	h.Spec.Type = mcsv1beta1.Headless
	createImport(t, h)
	createSlice(t, ns, "h", "c1", "h-c1", discovery.AddressTypeIPv4, endpoint("", "10.244.9.5", nil), endpoint("", "10.1.77.1", nil))

	expectAddresses(t, with, "x."+ns+".svc.clusterset.local.", dns.TypeA, propagation, svc.Spec.ClusterIP)
	expectAddresses(t, with, "h."+ns+".svc.clusterset.local.", dns.TypeA, propagation, "10.1.77.1", "10.244.9.5")
	expectPTR(t, with, "10.42.77.1", "y."+ns+".svc.clusterset.local.")
	expectPTR(t, with, "10.1.77.1", "10-1-77-1.c1.h."+ns+".svc.clusterset.local.")
	expectAddresses(t, with, "z."+ns+".svc.clusterset.local.", dns.TypeA, propagation, "10.244.9.6")
	// The local cluster's addresses answer as without the plugin.
	expectSameAnswers(t, with, without, []question{
		{reverse(t, svc.Spec.ClusterIP), dns.TypePTR},
		{reverse(t, "10.244.9.6"), dns.TypePTR},
		{reverse(t, "169.254.169.254"), dns.TypePTR},
	})
	// A local endpoint that a multicluster slice lists too: the kubernetes
	// plugin, which caches that slice as well, would add a name with an
	// empty label for it and send nothing; the plugin answers the local
	// name the kubernetes plugin gives the endpoint.
	expectPTR(t, with, "10.244.9.5", "10-244-9-5.dns."+ns+".svc.cluster.local.")
	if r := with.query(t, "udp", reverse(t, svc.Spec.ClusterIP), dns.TypePTR); len(r.Answer) != 1 || r.Answer[0].(*dns.PTR).Ptr != "dns."+ns+".svc.cluster.local." {
		t.Errorf("PTR of the local Service's ClusterIP: %v", r.Answer)
	}
	if !strings.Contains(with.log.String(), "169.254.169.254 is a link-local address") {
		t.Errorf("the special address was not logged:\n%s", with.log.String())
	}
}

// TestOnePortNumberTwoProtocols is the mcs-api conformance suite's "hello"
// (a tcp and a udp port of one number): one SRV record per target.
func TestOnePortNumberTwoProtocols(t *testing.T) {
	s := startServer(t, corefileWith, true)
	ns := namespace(t, "hello")
	si := newImport(ns, "hello", "10.42.78.1")
	si.Spec.Ports = []mcsv1beta1.ServicePort{{Name: "tcp", Protocol: corev1.ProtocolTCP, Port: 42}, {Name: "udp", Protocol: corev1.ProtocolUDP, Port: 42}}
	createImport(t, si)
	hl := newImport(ns, "hello-headless")
	hl.Spec.Type, hl.Spec.Ports = mcsv1beta1.Headless, si.Spec.Ports
	createImport(t, hl)
	both := []discovery.EndpointPort{
		{Name: ptr.To("tcp"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](42)},
		{Name: ptr.To("udp"), Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To[int32](42)},
	}
	slice := &discovery.EndpointSlice{
		ObjectMeta:  meta.ObjectMeta{Namespace: ns, Name: "hello-headless-c1", Labels: map[string]string{mcsv1beta1.LabelServiceName: "hello-headless", mcsv1beta1.LabelSourceCluster: "c1"}},
		AddressType: discovery.AddressTypeIPv4,
		Endpoints:   []discovery.Endpoint{endpoint("", "10.1.78.1", nil), endpoint("", "10.1.78.2", nil)},
		Ports:       both,
	}
	if _, err := kube.DiscoveryV1().EndpointSlices(ns).Create(context.Background(), slice, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	name := "hello." + ns + ".svc.clusterset.local."
	hname := "hello-headless." + ns + ".svc.clusterset.local."
	expectAddresses(t, s, hname, dns.TypeA, propagation, "10.1.78.1", "10.1.78.2")
	expectRecords(t, s, name, dns.TypeSRV, dns.RcodeSuccess, []string{name + " 5 IN SRV 0 100 42 " + name}, []string{name + " 5 IN A 10.42.78.1"})
	expectRecords(t, s, hname, dns.TypeSRV, dns.RcodeSuccess, []string{
		hname + " 5 IN SRV 0 50 42 10-1-78-1.c1." + hname,
		hname + " 5 IN SRV 0 50 42 10-1-78-2.c1." + hname,
	}, []string{"10-1-78-1.c1." + hname + " 5 IN A 10.1.78.1", "10-1-78-2.c1." + hname + " 5 IN A 10.1.78.2"})
}

// TestOtherClassesAndTransfersRefused: a clusterset name in class CH, and a
// zone transfer without the transfer plugin, are refused.
func TestOtherClassesAndTransfersRefused(t *testing.T) {
	// forward makes the server let other classes through to the plugins
	// (core/dnsserver, EnableChaos); it forwards nowhere that answers.
	corefile := strings.TrimSuffix(corefileWith, "}\n") + "    forward . 127.0.0.1:9\n}\n"
	s := startServer(t, corefile, true)
	for _, tc := range []struct {
		name         string
		qtype, class uint16
	}{
		{"clusterset.local.", dns.TypeAXFR, dns.ClassINET},
		{"clusterset.local.", dns.TypeIXFR, dns.ClassINET},
		{"web.default.svc.clusterset.local.", dns.TypeA, dns.ClassCHAOS},
	} {
		m := new(dns.Msg)
		m.SetQuestion(tc.name, tc.qtype)
		m.Question[0].Qclass = tc.class
		r, err := harness.Ask("tcp", s.addr, m)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.name, dns.TypeToString[tc.qtype], err)
		}
		if r.Rcode != dns.RcodeRefused {
			t.Errorf("%s %s class %s: %s, want REFUSED", tc.name, dns.TypeToString[tc.qtype], dns.ClassToString[tc.class], dns.RcodeToString[r.Rcode])
		}
	}
}
