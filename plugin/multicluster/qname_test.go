package multicluster

import (
	"strings"
	"testing"
)

func TestParseRequest(t *testing.T) {
	const z = "clusterset.local."
	tests := []struct {
		name string
		want request
	}{
		{"clusterset.local.", request{kind: kindApex}},
		{"dns-version.clusterset.local.", request{kind: kindDNSVersion}},
		{"x.dns-version.clusterset.local.", request{}},
		{"ns.dns.clusterset.local.", request{kind: kindNameserver}},
		{"dns.clusterset.local.", request{kind: kindNameserverParent}},
		{"x.ns.dns.clusterset.local.", request{}},
		{"svc.clusterset.local.", request{kind: kindSvcLabel}},
		{"ns1.svc.clusterset.local.", request{kind: kindNamespace, namespace: "ns1"}},
		{"web.ns1.svc.clusterset.local.", request{kind: kindService, service: "web", namespace: "ns1"}},
		{"_http._tcp.web.ns1.svc.clusterset.local.", request{kind: kindPort, service: "web", namespace: "ns1", port: "http", protocol: "tcp"}},
		{"_dns._udp.web.ns1.svc.clusterset.local.", request{kind: kindPort, service: "web", namespace: "ns1", port: "dns", protocol: "udp"}},
		{"east.web.ns1.svc.clusterset.local.", request{kind: kindReserved, service: "web", namespace: "ns1", cluster: "east"}},
		{"pod-0.east.web.ns1.svc.clusterset.local.", request{kind: kindHost, service: "web", namespace: "ns1", host: "pod-0", cluster: "east", labels: "pod-0.east"}},
		{"pod-0.east.prod.web.ns1.svc.clusterset.local.", request{kind: kindHost, service: "web", namespace: "ns1", host: "pod-0", cluster: "east.prod", labels: "pod-0.east.prod"}},
		{"10-0-0-1.c1.web.ns1.svc.clusterset.local.", request{kind: kindHost, service: "web", namespace: "ns1", host: "10-0-0-1", cluster: "c1", labels: "10-0-0-1.c1"}},
		// Shapes the schema does not define.
		{"_http.tcp.web.ns1.svc.clusterset.local.", request{}},
		{"http._tcp.web.ns1.svc.clusterset.local.", request{}},
		{"_http._tcp.x.web.ns1.svc.clusterset.local.", request{}},
		{"_._tcp.web.ns1.svc.clusterset.local.", request{}},
		{"_http.web.ns1.svc.clusterset.local.", request{}},
		{"1-2-3-4.ns1.pod.clusterset.local.", request{}},
		{"web.ns1.clusterset.local.", request{}},
		{"foo.clusterset.local.", request{}},
		{"web..svc.clusterset.local.", request{}},
		{".ns1.svc.clusterset.local.", request{}},
		{"a..web.ns1.svc.clusterset.local.", request{}},
		{`we\.b.ns1.svc.clusterset.local.`, request{}},
		{`web\046ns1.svc.clusterset.local.`, request{}},
		{"xclusterset.local.", request{}},
		{"local.", request{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseRequest(tc.name, z); got != tc.want {
				t.Errorf("parseRequest(%q) = %+v, want %+v", tc.name, got, tc.want)
			}
		})
	}
}

func TestParseRequestRootZone(t *testing.T) {
	got := parseRequest("web.ns1.svc.", ".")
	want := request{kind: kindService, service: "web", namespace: "ns1"}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := parseRequest(".", "."); got.kind != kindApex {
		t.Errorf("root apex: got %+v", got)
	}
}

func TestParseRequestAllocatesNothing(t *testing.T) {
	names := []string{"web.ns1.svc.cluster.local.", "_http._tcp.web.ns1.svc.cluster.local.", "pod-0.east.prod.web.ns1.svc.cluster.local.", "kubernetes.default.svc.cluster.local."}
	allocs := testing.AllocsPerRun(100, func() {
		for _, n := range names {
			_ = parseRequest(n, "cluster.local.")
		}
	})
	if allocs != 0 {
		t.Errorf("parseRequest allocated %v times per run, want 0", allocs)
	}
}

func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{"web.ns1.svc.clusterset.local.", "_http._tcp.web.ns1.svc.clusterset.local.", "a.b.c.web.ns1.svc.clusterset.local.", "..svc.clusterset.local.", `\..clusterset.local.`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		name = strings.ToLower(name)
		r := parseRequest(name, "clusterset.local.")
		for _, s := range []string{r.service, r.namespace, r.port, r.protocol, r.host, r.cluster} {
			if strings.Contains(s, "..") || !strings.Contains(name, s) {
				t.Fatalf("parseRequest(%q) = %+v: part %q is not a piece of the name", name, r, s)
			}
		}
		if r.underService() && (r.service == "" || r.namespace == "") {
			t.Fatalf("parseRequest(%q) = %+v: service request without service", name, r)
		}
	})
}
