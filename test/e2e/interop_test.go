package e2e

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"k8s.io/client-go/rest"

	"github.com/coredns-mcs/coredns-mcs/test/internal/apply"
	"github.com/coredns-mcs/coredns-mcs/test/internal/corefiles"
)

// The objects real MCS implementations write in a consuming cluster, as
// testdata/interop replays them (its README names the upstream source of
// each shape), applied to the real API server stage by stage, and the names
// they must answer, over UDP and TCP, in clusterset.local and, with fallback,
// in cluster.local.

// corefileInterop is the kube-system Corefile with derived_prefix for
// Karmada's derived-NAME Services; the other implementations' derived
// Services have hashed names that the prefix never matches.
var corefileInterop = withOptions(corefileWith, "derived_prefix derived-")

// corefileInteropShipped is corefileInterop as the manifests and the chart
// ship it: the kubernetes plugin leaves out the objects labelled with a
// source cluster. Every interop test asks both servers the same names and
// expects the same answers; what the kubernetes plugin alone answered from
// those objects is checked apart.
var corefileInteropShipped = corefiles.WithoutImported(corefileInterop)

// startInterop starts a server with each interop Corefile: the DNS.md one
// first, then the shipped one.
func startInterop(t *testing.T) []*server {
	t.Helper()
	return []*server{startServer(t, corefileInterop, true), startServer(t, corefileInteropShipped, true)}
}

// withOptions adds options to the multicluster block of corefile.
func withOptions(corefile string, options ...string) string {
	const fallback = "        fallback cluster.local\n"
	if !strings.Contains(corefile, fallback) {
		panic("the Corefile has no fallback line to add options after")
	}
	var add strings.Builder
	for _, o := range options {
		add.WriteString("        " + o + "\n")
	}
	return strings.Replace(corefile, fallback, fallback+add.String(), 1)
}

// applyFixture applies the testdata/interop files of one implementation,
// named relative to its directory, to the API server of cfg.
func applyFixture(t *testing.T, cfg *rest.Config, impl string, files ...string) {
	t.Helper()
	var manifests []apply.Manifest
	for _, f := range files {
		found, err := apply.ReadFile(filepath.Join("testdata", "interop", impl, f))
		if err != nil {
			t.Fatal(err)
		}
		manifests = append(manifests, found...)
	}
	// The fixtures' namespaces have fixed names, and a namespace deleted
	// here would never go (no namespace controller runs): keep them, and
	// delete what the test put in them, so that the next test (a repeat,
	// or another implementation's fixture with the same addresses) starts
	// from empty namespaces.
	for _, m := range manifests {
		if m.Object.GetKind() == "Namespace" {
			t.Cleanup(func() { deleteContents(m.Object.GetName()) })
		}
	}
	if err := apply.Apply(context.Background(), cfg, manifests); err != nil {
		t.Fatal(err)
	}
}

// names checks the answers of the names of one namespace, on every server.
type names struct {
	t       *testing.T
	servers []*server
	ns      string
}

// svc is the name of service in the zone: clusterset.local or cluster.local.
func (n names) svc(service, zone string) string {
	return service + "." + n.ns + ".svc." + zone + "."
}

// a expects the A records of service, in both zones, to be ips (none: NODATA).
func (n names) a(service string, ips ...string) {
	n.t.Helper()
	for _, zone := range []string{"clusterset.local", "cluster.local"} {
		n.addresses(n.svc(service, zone), dns.TypeA, ips...)
	}
}

// addresses expects name to answer ips, or NODATA with the zone's SOA.
func (n names) addresses(name string, qtype uint16, ips ...string) {
	n.t.Helper()
	for _, s := range n.servers {
		if len(ips) > 0 {
			expectAddresses(n.t, s, name, qtype, propagation, ips...)
			continue
		}
		expectRcode(n.t, s, name, qtype, propagation, dns.RcodeSuccess)
		expectRecords(n.t, s, name, qtype, dns.RcodeSuccess, nil, nil)
	}
}

// nxdomain expects name to be NXDOMAIN.
func (n names) nxdomain(name string) {
	n.t.Helper()
	for _, s := range n.servers {
		expectRcode(n.t, s, name, dns.TypeA, propagation, dns.RcodeNameError)
	}
}

// ptr expects the PTR of ip to be target.
func (n names) ptr(ip, target string) {
	n.t.Helper()
	for _, s := range n.servers {
		expectPTR(n.t, s, ip, target)
	}
}

// srv expects the SRV records of name: one per "port target" pair, each
// target's addresses (targets joined with their addresses by '=') in
// Additional.
func (n names) srv(name string, records []string, extra []string) {
	n.t.Helper()
	weight := 100 / len(records)
	var answer []string
	for _, r := range records {
		port, target, _ := strings.Cut(r, " ")
		answer = append(answer, name+" 5 IN SRV 0 "+strconv.Itoa(weight)+" "+port+" "+target)
	}
	var additional []string
	for _, e := range extra {
		target, ip, _ := strings.Cut(e, "=")
		typ := "A"
		if strings.Contains(ip, ":") {
			typ = "AAAA"
		}
		additional = append(additional, target+" 5 IN "+typ+" "+ip)
	}
	for _, s := range n.servers {
		expectRecords(n.t, s, name, dns.TypeSRV, dns.RcodeSuccess, answer, additional)
	}
}

func TestInteropLighthouse(t *testing.T) {
	servers := startInterop(t)
	n := names{t: t, servers: servers, ns: "interop-lighthouse"}
	applyFixture(t, cp.Config, "lighthouse", "00-namespaces.yaml", "10-web-clustersetip.yaml", "11-db-headless.yaml",
		"12-clusterset-ip-mode.yaml", "13-per-cluster-copies.yaml")

	// Default mode: no spec.ips; each cluster's slice holds its ClusterIP.
	n.a("web", "10.97.0.10", "10.98.0.10")
	n.addresses(n.svc("web", "clusterset.local"), dns.TypeAAAA)
	web := n.svc("web", "clusterset.local")
	n.srv("_http._tcp."+web, []string{"80 " + web}, []string{web + "=10.97.0.10", web + "=10.98.0.10"})
	n.srv(web, []string{"80 " + web, "443 " + web}, []string{web + "=10.97.0.10", web + "=10.98.0.10"})
	n.ptr("10.98.0.10", web)
	// The cluster.svc names are reserved by the specification.
	n.nxdomain("east." + web)

	// Clusterset-IP mode: the VIP, not the slices.
	n.a("api", "243.0.0.1")
	n.ptr("243.0.0.1", n.svc("api", "clusterset.local"))

	// Headless: every cluster's ready pods, by hostname and cluster.
	n.a("db", "10.244.1.20", "10.244.1.21", "10.245.1.20", "10.245.1.21")
	db := n.svc("db", "clusterset.local")
	n.addresses("db-0.east."+db, dns.TypeA, "10.244.1.20")
	n.addresses("db-1.west."+db, dns.TypeA, "10.245.1.21")
	host := func(h, cluster string) string { return h + "." + cluster + "." + db }
	n.srv("_postgres._tcp."+db,
		[]string{"5432 " + host("db-0", "east"), "5432 " + host("db-1", "east"), "5432 " + host("db-0", "west"), "5432 " + host("db-1", "west")},
		[]string{host("db-0", "east") + "=10.244.1.20", host("db-1", "east") + "=10.244.1.21", host("db-0", "west") + "=10.245.1.20", host("db-1", "west") + "=10.245.1.21"})
	n.ptr("10.244.1.21", host("db-1", "east"))

	// The agent's per-cluster copies are not services.
	n.nxdomain("web-interop-lighthouse-east.submariner-operator.svc.clusterset.local.")
	n.nxdomain("submariner-operator.svc.clusterset.local.")

	// West's Service loses its last ready backend: its ClusterIP leaves.
	applyFixture(t, cp.Config, "lighthouse", "20-west-web-not-ready.yaml")
	n.a("web", "10.97.0.10")
	// One pod of east turns not ready: it leaves, and so does its name.
	applyFixture(t, cp.Config, "lighthouse", "21-east-db-1-not-ready.yaml")
	n.a("db", "10.244.1.20", "10.245.1.20", "10.245.1.21")
	n.nxdomain(host("db-1", "east"))
}

func TestInteropCilium(t *testing.T) {
	servers := startInterop(t)
	n := names{t: t, servers: servers, ns: "interop-cilium"}
	applyFixture(t, cp.Config, "cilium", "00-namespace.yaml", "10-service-imports.yaml")
	// Imports alone: nothing to answer with yet.
	n.a("web")
	n.nxdomain(n.svc("db", "clusterset.local"))

	// The derived Services, and the remote clusters' slices of the
	// headless import.
	applyFixture(t, cp.Config, "cilium", "20-derived-services.yaml")
	db := n.svc("db", "clusterset.local")
	n.a("db", "10.244.1.20", "10.244.1.21", "10.245.1.20", "10.245.1.21")
	n.addresses("db-0.east."+db, dns.TypeA, "10.244.1.20")
	n.a("web")

	// The controller annotates the imports and copies the IPv4 ClusterIP
	// into spec.ips: spec.ips answer, though the derived Service is
	// dual-stack.
	applyFixture(t, cp.Config, "cilium", "30-after-controller.yaml")
	web := n.svc("web", "clusterset.local")
	n.a("web", "10.96.120.10")
	n.addresses(web, dns.TypeAAAA)
	n.ptr("10.96.120.10", web)
	// The derived Service's own name is the kubernetes plugin's.
	n.addresses("derived-a722iununl.interop-cilium.svc.cluster.local.", dns.TypeA, "10.96.120.10")
	n.addresses("derived-a722iununl.interop-cilium.svc.cluster.local.", dns.TypeAAAA, "fd00:10:96::120a")
	// A headless import is not answered from its headless derived Service.
	n.a("db", "10.244.1.20", "10.244.1.21", "10.245.1.20", "10.245.1.21")
	// The headless derived Service's own name: its slices carry the
	// source-cluster label, so only the kubernetes plugin that does not
	// leave them out answers it with the remote pods.
	derivedDB := "derived-nrnsnrg4tr.interop-cilium.svc.cluster.local."
	expectAddresses(t, servers[0], derivedDB, dns.TypeA, propagation, "10.244.1.20", "10.244.1.21", "10.245.1.20", "10.245.1.21")
	expectRcode(t, servers[1], derivedDB, dns.TypeA, propagation, dns.RcodeNameError)
}

func TestInteropAWS(t *testing.T) {
	servers := startInterop(t)
	n := names{t: t, servers: servers, ns: "interop-aws"}
	applyFixture(t, cp.Config, "aws", "00-namespace.yaml", "10-web.yaml", "11-db.yaml")
	// Before spec.ips: the ready pods of the slices.
	n.a("web", "10.244.6.10", "10.245.6.10")
	n.a("db", "10.244.7.20", "10.244.7.21", "10.245.7.20", "10.245.7.21")
	n.addresses("db-1.west."+n.svc("db", "clusterset.local"), dns.TypeA, "10.245.7.21")

	// spec.ips: each exporting cluster's ClusterIP, both of one family;
	// "None" for the headless import.
	applyFixture(t, cp.Config, "aws", "20-after-controller.yaml")
	web := n.svc("web", "clusterset.local")
	n.a("web", "10.96.130.11", "10.96.130.12")
	n.ptr("10.96.130.12", web)
	n.srv("_https._tcp."+web, []string{"443 " + web}, []string{web + "=10.96.130.11", web + "=10.96.130.12"})
	n.a("db", "10.244.7.20", "10.244.7.21", "10.245.7.20", "10.245.7.21")
	for _, s := range servers {
		if strings.Contains(s.log.String(), "interop-aws/db") {
			t.Errorf("the headless import's \"None\" entries were reported:\n%s", s.log.String())
		}
	}
	// The derived Services carry the source-cluster label: only the
	// kubernetes plugin that does not leave them out answers their names.
	imported := "imported-pih4h5s4h6.interop-aws.svc.cluster.local."
	expectAddresses(t, servers[0], imported, dns.TypeA, propagation, "10.96.130.11")
	expectRcode(t, servers[1], imported, dns.TypeA, propagation, dns.RcodeNameError)
}

func TestInteropKarmada(t *testing.T) {
	servers := startInterop(t)
	n := names{t: t, servers: servers, ns: "interop-karmada"}
	applyFixture(t, cp.Config, "karmada", "00-namespace.yaml", "10-web.yaml")
	web := n.svc("web", "clusterset.local")
	n.a("web", "10.96.140.10")
	n.srv("_http._tcp."+n.svc("web", "cluster.local"), []string{"80 " + n.svc("web", "cluster.local")}, []string{n.svc("web", "cluster.local") + "=10.96.140.10"})
	n.ptr("10.96.140.10", web)
	// Karmada's slices carry no multicluster label: never read.
	for _, s := range servers {
		if strings.Contains(s.log.String(), "imported-east-web") {
			t.Errorf("Karmada's slices were read:\n%s", s.log.String())
		}
	}
}
