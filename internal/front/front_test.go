package front

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// The addresses the docs use for the standalone Service: one of kubeadm's
// Service range (10.96.0.0/12), one of k3s's (10.43.0.0/16).
const (
	docsKubeadmAddress = "10.96.143.7"
	docsK3sAddress     = "10.43.143.7"
)

func docsOptions(standalone string) Options {
	return Options{Standalone: standalone, ReverseCIDRs: []string{"10.42.0.0/16"}}
}

func TestServicePattern(t *testing.T) {
	re := regexp.MustCompile(ServiceNamePattern("cluster.local."))
	for name, want := range map[string]bool{
		"web.ns.svc.cluster.local.":                           true,
		"_http._tcp.web.ns.svc.cluster.local.":                true,
		"host.east.prod.web.ns.svc.cluster.local.":            true,
		"example.com.svc.cluster.local.":                      true,  // the shape of svc "example" in namespace "com"
		"example.com.ns.svc.cluster.local.":                   false, // three labels: no records below a service
		"east.web.ns.svc.cluster.local.":                      false,
		"www.example.com.svc.cluster.local.":                  false,
		"www.example.com.ns.svc.cluster.local.":               true, // the shape of host.cluster.svc.ns
		"a.b.c.d.e.f.svc.cluster.local.":                      true,
		"ns.svc.cluster.local.":                               false,
		"svc.cluster.local.":                                  false,
		"example.com.cluster.local.":                          false,
		"1-2-3-4.ns.pod.cluster.local.":                       false,
		"cluster.local.":                                      false,
		"web.ns.svc.cluster.local.example.com.":               false,
		"web.ns.svc.clusterxlocal.":                           false,
		"web.ns.svc.other.local.":                             false,
		"dns-version.cluster.local.":                          false,
		"web.ns.svc.cluster.local.ns.svc.cluster.local.":      true,
		"kubernetes.default.svc.cluster.local.":               true,
		"kubernetes.default.svc.cluster.local.cluster.local.": false,
	} {
		if got := re.MatchString(name); got != want {
			t.Errorf("%s: matched %v, want %v", name, got, want)
		}
	}
}

func TestServers(t *testing.T) {
	o := docsOptions("10.96.143.7")
	o.KubernetesOptions = KubernetesOptions(Kubeadm)
	o.CoreDNSVersion = "v1.14.6"
	servers, err := o.Servers()
	if err != nil {
		t.Fatal(err)
	}
	var zones []string
	for _, s := range servers {
		var z []string
		for _, zone := range s.Zones {
			z = append(z, zone.Zone)
		}
		zones = append(zones, strings.Join(z, " ")+":"+itoa(s.Port))
	}
	want := []string{"cluster.local.:53", "clusterset.local.:53", "42.10.in-addr.arpa.:53", "cluster.local. clusterset.local. 42.10.in-addr.arpa.:5301"}
	if strings.Join(zones, ",") != strings.Join(want, ",") {
		t.Errorf("server blocks %v, want %v", zones, want)
	}
	corefile := Corefile(servers)
	for _, want := range []string{
		"forward . 10.96.143.7 127.0.0.1:5301 {\n        policy sequential\n        max_fails 1\n        health_check 0.5s domain clusterset.local.\n        read_timeout 120ms\n    }",
		"forward . 10.96.143.7 127.0.0.1:5301 {\n        policy sequential\n        max_fails 1\n        health_check 0.5s domain clusterset.local.\n        read_timeout 1s\n    }",
		"kubernetes cluster.local {\n        pods insecure\n        ttl 30\n        fallthrough cluster.local\n    }",
		"    bind 127.0.0.1\n",
		// The stand-in: NXDOMAIN in cluster.local, where a search path
		// runs; SERVFAIL in the zones no search path ends in.
		"template ANY ANY cluster.local. {\n        rcode NXDOMAIN\n",
		"template ANY ANY clusterset.local. 42.10.in-addr.arpa. {\n        rcode SERVFAIL\n    }",
		// The stand-in's answer is never cached: TTL 0, and no least
		// denial TTL in the forwarding blocks' caches; no SERVFAIL kept.
		`authority "{{ .Zone }} 0 IN SOA ns.dns.{{ .Zone }} hostmaster.{{ .Zone }} 1 7200 1800 86400 0"`,
		"cache 30 {\n        disable success cluster.local\n        denial 10000 30 0\n        servfail 0\n    }",
		"cache 30 {\n        denial 10000 30 0\n        servfail 0\n    }",
	} {
		if !strings.Contains(corefile, want) {
			t.Errorf("the Corefile lacks %q:\n%s", want, corefile)
		}
	}
	if strings.Count(corefile, "prometheus :9153") != 4 {
		t.Errorf("every added block counts its queries (prometheus):\n%s", corefile)
	}
}

func TestOptionsRefused(t *testing.T) {
	for name, o := range map[string]Options{
		"no address":              {},
		"a name":                  {Standalone: "coredns-mcs.kube-system.svc"},
		"bad port":                {Standalone: "10.96.0.1:0"},
		"bad range":               {Standalone: "10.96.0.1", ReverseCIDRs: []string{"10.42.0.0/33"}},
		"same zones":              {Standalone: "10.96.0.1", ClusterDomain: "a.local", ClustersetZone: "a.local."},
		"stand-in on 53":          {Standalone: "10.96.0.1", StandInPort: 53},
		"tiny timeout":            {Standalone: "10.96.0.1", ReadTimeout: time.Microsecond},
		"tiny clusterset timeout": {Standalone: "10.96.0.1", ClustersetReadTimeout: time.Microsecond},
		"own fallthrough":         {Standalone: "10.96.0.1", KubernetesOptions: []string{"fallthrough in-addr.arpa"}},
		"bad domain":              {Standalone: "10.96.0.1", ClusterDomain: "a..b"},
	} {
		if _, err := o.Servers(); err == nil {
			t.Errorf("%s: accepted", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

// TestReadTimeoutByVersion: read_timeout only for a CoreDNS that has it
// (forward's setup.go has it from v1.14.5 on), and never for an unknown
// one, which could refuse the whole Corefile.
func TestReadTimeoutByVersion(t *testing.T) {
	for version, want := range map[string]bool{"": false, "1.12.1": false, "v1.14.4": false, "1.14.5": true, "v1.14.6": true, "1.15.0-eksbuild.1": true, "2.0.0": true} {
		servers, err := Options{Standalone: "10.96.0.1", CoreDNSVersion: version}.Servers()
		if err != nil {
			t.Fatalf("%q: %v", version, err)
		}
		if got := strings.Contains(Corefile(servers), "read_timeout"); got != want {
			t.Errorf("CoreDNS %q: read_timeout %v, want %v", version, got, want)
		}
	}
}

func TestMergeAndRemove(t *testing.T) {
	servers, err := docsOptions("10.96.143.7").Servers()
	if err != nil {
		t.Fatal(err)
	}
	merged := Merge(KubeadmCorefile, Corefile(servers))
	if !strings.HasPrefix(merged, KubeadmCorefile) {
		t.Errorf("the cluster's own blocks changed:\n%s", merged)
	}
	// Merging again with another address replaces the blocks.
	other, err := docsOptions("10.96.143.8").Servers()
	if err != nil {
		t.Fatal(err)
	}
	again := Merge(merged, Corefile(other))
	if strings.Contains(again, "10.96.143.7") || strings.Count(again, BeginMarker) != 1 || !strings.Contains(again, "10.96.143.8") {
		t.Errorf("merged twice:\n%s", again)
	}
	if got := Remove(again); got != KubeadmCorefile {
		t.Errorf("removed:\n%s\nwant\n%s", got, KubeadmCorefile)
	}
}

func TestRender(t *testing.T) {
	o := docsOptions("10.43.143.7")
	for _, p := range Platforms {
		out, err := Render(p, o, Live{Corefile: KubeadmCorefile})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		var v map[string]any
		if p == EKS {
			err = json.Unmarshal([]byte(out), &v)
		} else {
			err = yaml.Unmarshal([]byte(out), &v)
		}
		if err != nil {
			t.Fatalf("%s: %v\n%s", p, err, out)
		}
		if !strings.Contains(out, "10.43.143.7") {
			t.Errorf("%s does not forward to the standalone server:\n%s", p, out)
		}
	}
	// k3s's kubernetes stanza has no ttl: the added block has none either.
	k3s, _ := Render(K3s, o, Live{})
	if strings.Contains(k3s, "ttl 30") {
		t.Errorf("k3s:\n%s", k3s)
	}
	// The coredns chart's prometheus listens on 0.0.0.0:9153: the added
	// blocks must use the same address (one listener).
	chart, _ := Render(CoreDNSChart, o, Live{})
	if strings.Contains(chart, "parameters: :9153") || !strings.Contains(chart, "parameters: 0.0.0.0:9153") {
		t.Errorf("coredns chart:\n%s", chart)
	}
	if _, err := Render(Kubeadm, o, Live{}); err == nil {
		t.Error("kubeadm without the cluster's Corefile: accepted")
	}
	// gke takes kube-dns's form; an unknown name is refused.
	if p, err := ParsePlatform("gke"); err != nil || p != KubeDNS {
		t.Errorf("platform gke: %q, %v", p, err)
	}
	if _, err := ParsePlatform("nomad"); err == nil {
		t.Error("platform nomad: accepted")
	}
	// OpenShift: a spec.servers entry of the DNS resource, forwarding the
	// clusterset zone and the reverse zones to the standalone Service.
	openshift, _ := Render(OpenShift, o, Live{})
	for _, want := range []string{"kind: DNS", "name: coredns-mcs", "- clusterset.local", "- 42.10.in-addr.arpa", "- 10.43.143.7", "policy: Sequential"} {
		if !strings.Contains(openshift, want) {
			t.Errorf("openshift lacks %q:\n%s", want, openshift)
		}
	}
}

// TestDocs: the recipes of docs/platforms.md are what Render writes.
// UPDATE_DOCS=1 rewrites them.
func TestDocs(t *testing.T) {
	const doc = "../../docs/platforms.md"
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	kubeadm := docsOptions(docsKubeadmAddress)
	kubeadm.KubernetesOptions = KubernetesOptions(Kubeadm)
	kubeadm.CoreDNSVersion = KubeadmCoreDNSVersion
	servers, err := kubeadm.Servers()
	if err != nil {
		t.Fatal(err)
	}
	k3s, err := Render(K3s, docsOptions(docsK3sAddress), Live{})
	if err != nil {
		t.Fatal(err)
	}
	chart, err := Render(CoreDNSChart, docsOptions(docsKubeadmAddress), Live{})
	if err != nil {
		t.Fatal(err)
	}
	for marker, want := range map[string]string{
		"<!-- recipe: stock -->":         Merge(KubeadmCorefile, Corefile(servers)),
		"<!-- recipe: k3s -->":           k3s,
		"<!-- recipe: coredns-chart -->": chart,
	} {
		start, end, ok := codeBlock(text, marker)
		if !ok {
			t.Errorf("%s: no code block after %s", doc, marker)
			continue
		}
		if text[start:end] == want {
			continue
		}
		if os.Getenv("UPDATE_DOCS") != "" {
			text = text[:start] + want + text[end:]
			continue
		}
		t.Errorf("%s: the block after %s is not what kubectl mcs front writes (UPDATE_DOCS=1 go test ./internal/front rewrites it):\n%s", doc, marker, want)
	}
	if os.Getenv("UPDATE_DOCS") != "" {
		if err := os.WriteFile(doc, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// codeBlock returns where the body of the first fenced code block after
// marker starts and ends in text.
func codeBlock(text, marker string) (start, end int, ok bool) {
	i := strings.Index(text, marker)
	if i < 0 {
		return 0, 0, false
	}
	fence := strings.Index(text[i:], "```")
	if fence < 0 {
		return 0, 0, false
	}
	nl := strings.Index(text[i+fence:], "\n")
	if nl < 0 {
		return 0, 0, false
	}
	start = i + fence + nl + 1
	close := strings.Index(text[start:], "```\n")
	if close < 0 {
		return 0, 0, false
	}
	return start, start + close, true
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestPlatformTable: the table of docs/platforms.md, between its markers,
// is Markdown() of Table; UPDATE_DOCS=1 rewrites it. Each row names its
// sources, and no cost of a hang is written before it is measured.
func TestPlatformTable(t *testing.T) {
	names := map[string]bool{}
	forms := map[Platform]bool{}
	for _, r := range Table {
		if names[r.Name] {
			t.Errorf("%s: two rows", r.Name)
		}
		names[r.Name] = true
		forms[r.Form] = true
		if r.Config == "" || r.Owner == "" || r.Detect == "" || r.Writes == "" || len(r.Versions) == 0 || r.match == nil {
			t.Errorf("%s: a field is empty: %+v", r.Name, r)
		}
		if r.Target.Kind == "" && r.ApplyHow == "" {
			t.Errorf("%s: --apply writes nothing, and no supported way is named", r.Name)
		}
		for _, v := range r.Versions {
			if v.Source == "" {
				t.Errorf("%s %s: no source", r.Name, v.Release)
			}
			if v.CoreDNS != "" && !strings.Contains(v.Server, v.CoreDNS) {
				t.Errorf("%s %s: server %q is not CoreDNS %s", r.Name, v.Release, v.Server, v.CoreDNS)
			}
		}
	}
	for _, p := range Platforms {
		if !forms[p] || RowOf(p).Form != p {
			t.Errorf("form %s has no row of its name", p)
		}
	}
	// kubeadm's newest row is the version the docs' recipes assume.
	kubeadm, _ := Lookup("kubeadm")
	if last := kubeadm.Versions[len(kubeadm.Versions)-1]; last.CoreDNS != KubeadmCoreDNSVersion {
		t.Errorf("kubeadm's last row: %s, KubeadmCoreDNSVersion %s", last.CoreDNS, KubeadmCoreDNSVersion)
	}

	const doc = "../../docs/platforms.md"
	const begin, end = "<!-- platforms: begin -->\n", "<!-- platforms: end -->"
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("%s: no %q ... %q", doc, begin, end)
	}
	want := "\n" + Markdown() + "\n"
	if text[i+len(begin):j] == want {
		return
	}
	if os.Getenv("UPDATE_DOCS") != "" {
		if err := os.WriteFile(doc, []byte(text[:i+len(begin)]+want+text[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the table between the platforms markers is not front.Table (UPDATE_DOCS=1 go test ./internal/front rewrites it):\n%s", doc, want)
}

// TestShippedVersionsMeasured: docs/platforms.md has a measured row (test/e2e
// TestFrontAtShippedVersions) for every CoreDNS version of the table, and no
// row of a version the table no longer has.
func TestShippedVersionsMeasured(t *testing.T) {
	data, err := os.ReadFile("../../docs/platforms.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "<!-- shipped versions: begin -->\n")
	table, _, ok2 := strings.Cut(rest, "<!-- shipped versions: end -->")
	if !ok || !ok2 {
		t.Fatal("docs/platforms.md: no shipped versions table between its markers")
	}
	var rows []string
	for _, l := range strings.Split(table, "\n") {
		if f := strings.Split(l, "|"); len(f) > 2 && !strings.HasPrefix(strings.TrimSpace(f[1]), "CoreDNS") && !strings.HasPrefix(strings.TrimSpace(f[1]), "---") {
			rows = append(rows, strings.TrimSpace(f[1]))
		}
	}
	want := append(ShippedCoreDNS(), "1.15.0")
	if !slices.Equal(rows, want) {
		t.Errorf("docs/platforms.md's shipped versions table has rows %v, want %v (run TestFrontAtShippedVersions and write its figures)", rows, want)
	}
}

// TestK3sVersionInDocs: where the README, docs/platforms.md and make
// run-front name the CoreDNS version k3s ships, it is one the table says a
// k3s release ships.
func TestK3sVersionInDocs(t *testing.T) {
	claim := regexp.MustCompile(`PLATFORM=k3s[^\n]*?COREDNS_VERSION=v?([0-9.]+[0-9])`)
	seen := 0
	for _, path := range []string{"../../README.md", "../../docs/platforms.md", "../../test/scripts/run-front.sh"} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range claim.FindAllSubmatch(data, -1) {
			seen++
			if v := string(m[1]); !ShipsCoreDNS(K3s, v) {
				t.Errorf("%s: %q names CoreDNS %s as k3s's, which no k3s release of the table ships", path, m[0], v)
			}
		}
	}
	if seen < 3 {
		t.Errorf("found %d claims of k3s's CoreDNS version in the README, docs/platforms.md and run-front.sh, want one in each", seen)
	}
}

// TestTableRowsComplete: every row of Table carries what kubectl mcs
// front, check and explain act on, consistently: a form, --apply's writer
// exactly where there is an object to write, and a way to apply by hand
// where there is not.
func TestTableRowsComplete(t *testing.T) {
	for _, r := range Table {
		s := r.Spec
		switch {
		case s == nil:
			t.Errorf("%s: no Spec", r.Name)
			continue
		case s.Render == nil || s.Removal == nil:
			t.Errorf("%s: no Render or Removal", r.Name)
		case (r.Target.Kind != "") != (s.Apply != nil && s.Unapply != nil && s.Applied != "" && s.Removed != ""):
			t.Errorf("%s: --apply writes %q, but its writer is %v", r.Name, r.Target, s.Apply != nil)
		case r.Target.Kind == "" && r.ApplyHow == "":
			t.Errorf("%s: --apply does not write it, and ApplyHow is empty", r.Name)
		case s.ServerBlocks != r.Fallback:
			t.Errorf("%s: server blocks %v, cluster.local fallback %v", r.Name, s.ServerBlocks, r.Fallback)
		case s.NeedsCorefile && r.Corefile.Kind == "":
			t.Errorf("%s: needs the Corefile, which it does not name", r.Name)
		case r.Object.Kind != "" && (r.Object.APIVersion == "" || r.Object.Resource == ""):
			t.Errorf("%s: the object %s has no APIVersion or Resource to read it by", r.Name, r.Object)
		}
	}
}
