// Package externalbuild builds the multicluster plugin into CoreDNS the way
// CoreDNS documents for an external plugin (a line in its plugin.cfg, go
// generate, go build), in the module of a CoreDNS release, and checks that
// the result answers as build/coredns does, against a real API server.
package externalbuild

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"

	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"
	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// The CoreDNS releases the plugin is built into: the one the plugin's
// go.mod requires (first), and the oldest whose own code compiles against
// what the plugin needs. The plugin's informer takes client-go v0.37's
// (cache.RealFIFOOptions, cache.DoneChecker, ListWatch's context funcs), so
// an older CoreDNS is raised to k8s.io/client-go v0.37.1; 1.12.2 and before
// set cache.Config's RetryOnError, which v0.37.1 no longer has, and use
// quic.Connection, which quic-go v0.64.1 no longer has (the plugin's go.mod
// lists it: CoreDNS 1.15.0's core/dnsserver, which the plugin imports, needs
// it).
var versions = []string{"v1.15.0", "v1.12.3"}

// pluginModule is the plugin's module; pluginLine the line the plugin
// README's "Building it into your CoreDNS" adds to CoreDNS's plugin.cfg.
const (
	pluginModule = "github.com/coredns-mcs/coredns-mcs/plugin/multicluster"
	pluginLine   = "multicluster:" + pluginModule
)

func TestExternalBuild(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	ours, err := harness.CoreDNSBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The steps of the README, as a user runs them, before the API server
	// starts: each build takes the cores for a while.
	pluginDir := filepath.Join(root, "plugin", "multicluster")
	if got := requiredCoreDNS(t, pluginDir); got != versions[0] {
		t.Fatalf("the plugin's go.mod requires CoreDNS %s; this test builds it into %s first: keep them one", got, versions[0])
	}
	built := map[string]string{}
	for _, v := range versions {
		bin, raised := buildInto(t, pluginDir, v)
		built[v] = bin
		if v == versions[0] && len(raised) > 0 {
			// The version the plugin's go.mod names: it asks for nothing
			// above what that CoreDNS already has.
			t.Errorf("CoreDNS %s, the version the plugin's go.mod requires: the plugin raised %d of its modules:\n  %s", v, len(raised), strings.Join(raised, "\n  "))
		}
		var direct []string
		for _, r := range raised {
			if strings.HasPrefix(r, "k8s.io/") || strings.HasPrefix(r, "sigs.k8s.io/mcs-api ") || strings.HasPrefix(r, "github.com/miekg/dns ") || strings.HasPrefix(r, "github.com/prometheus/client_golang ") || strings.HasPrefix(r, "github.com/coredns/caddy ") {
				direct = append(direct, r)
			}
		}
		if len(raised) == 0 {
			t.Logf("CoreDNS %s with the plugin: the plugin's go.mod raised none of CoreDNS's modules", v)
			continue
		}
		t.Logf("CoreDNS %s with the plugin: the plugin's go.mod raised %d modules of CoreDNS's, among them %s", v, len(raised), strings.Join(direct, ", "))
	}
	// The plugin's own tests, in its module, at the versions its go.mod asks
	// for (make test runs them at this module's, which the release ships).
	// With make build's flags, they reuse what the first build compiled.
	began := time.Now()
	cmd := exec.Command("go", "test", "-trimpath", "-count=1", "./...")
	cmd.Dir = pluginDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=-mod=readonly")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the plugin's tests in its own module: %v\n%s", err, out)
	}
	t.Logf("the plugin's tests passed in its own module, at the versions its go.mod requires, in %.0fs", time.Since(began).Seconds())

	cp := controlplane.ForTest(t, controlplane.Options{InstallCRDs: true})
	kube := kubernetes.NewForConfigOrDie(cp.Config)
	mcs := mcsclient.NewForConfigOrDie(cp.Config)
	questions := objects(t, kube, mcs)

	corefile := readmeCorefile(t, root, cp.Kubeconfig)
	want := serve(t, "build/coredns", ours, corefile, questions)
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			got := serve(t, "CoreDNS "+v+" with the plugin", built[v], corefile, questions)
			for _, q := range questions {
				if got[q] != want[q] {
					t.Errorf("%s:\n  CoreDNS %s with the plugin: %s\n  build/coredns:               %s", q, v, got[q], want[q])
				}
			}
		})
	}
}

// requiredCoreDNS is the version of CoreDNS the go.mod in dir requires.
func requiredCoreDNS(t *testing.T, dir string) string {
	t.Helper()
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range requirement.FindAllSubmatch(gomod, -1) {
		if string(m[1]) == "github.com/coredns/coredns" {
			return string(m[2])
		}
	}
	t.Fatalf("%s/go.mod requires no github.com/coredns/coredns", dir)
	return ""
}

// buildInto follows the README in the module of CoreDNS version, with the
// plugin's directory of this checkout in place of its published module, and
// returns the binary and the modules whose versions the plugin's go.mod
// raised.
func buildInto(t *testing.T, pluginDir, version string) (string, []string) {
	t.Helper()
	began := time.Now()
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/coredns/coredns@"+version).Output()
	if err != nil {
		t.Fatalf("go mod download github.com/coredns/coredns@%s: %v", version, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download github.com/coredns/coredns@%s: %v %s", version, err, out)
	}
	src := filepath.Join(t.TempDir(), "coredns")
	if err := os.CopyFS(src, os.DirFS(mod.Dir)); err != nil {
		t.Fatal(err)
	}
	// The module cache's files are read-only, and so are their copies.
	filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err == nil {
			os.Chmod(path, map[bool]os.FileMode{true: 0o755, false: 0o644}[d.IsDir()])
		}
		return nil
	})
	cfg := filepath.Join(src, "plugin.cfg")
	plugins, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	withPlugin := bytes.Replace(plugins, []byte("\nkubernetes:kubernetes\n"), []byte("\n"+pluginLine+"\nkubernetes:kubernetes\n"), 1)
	if bytes.Equal(withPlugin, plugins) {
		t.Fatalf("CoreDNS %s: plugin.cfg has no kubernetes:kubernetes line to put the plugin before", version)
	}
	if err := os.WriteFile(cfg, withPlugin, 0o644); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=-mod=mod")
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir, cmd.Env = src, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("CoreDNS %s: %s: %v\n%s", version, strings.Join(args, " "), err, out)
		}
	}
	// What a published release of the plugin would be, this checkout.
	run("go", "mod", "edit", "-require", pluginModule+"@v0.0.0", "-replace", pluginModule+"="+pluginDir)
	run("go", "generate", "coredns.go")
	bin := filepath.Join(src, "coredns")
	run("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".")
	listed, err := exec.Command(bin, "-plugins").Output()
	if err != nil || !regexp.MustCompile(`(?m)^\s*(dns\.)?multicluster$`).Match(listed) {
		t.Fatalf("CoreDNS %s built with the plugin: -plugins does not list multicluster (%v):\n%s", version, err, listed)
	}
	after, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("CoreDNS %s built with the plugin in %.0fs", version, time.Since(began).Seconds())
	return bin, raisedModules(before, after)
}

// requirement is a require line of a go.mod: the module and its version.
var requirement = regexp.MustCompile(`(?m)^\s+(\S+) (v\S+)`)

// raisedModules lists the modules whose versions before's require lines
// name and after's name higher, as "module old -> new".
func raisedModules(before, after []byte) []string {
	old := map[string]string{}
	for _, m := range requirement.FindAllSubmatch(before, -1) {
		old[string(m[1])] = string(m[2])
	}
	var raised []string
	for _, m := range requirement.FindAllSubmatch(after, -1) {
		if v, ok := old[string(m[1])]; ok && v != string(m[2]) {
			raised = append(raised, fmt.Sprintf("%s %s -> %s", m[1], v, m[2]))
		}
	}
	slices.Sort(raised)
	return raised
}

// readmeCorefile is the Corefile of the README, for a server on loopback:
// its DNS, ready and health ports free ones (placeholders serve fills),
// the API server's kubeconfig in both stanzas, no metrics listener and a
// forward that goes nowhere.
func readmeCorefile(t *testing.T, root, kubeconfig string) string {
	t.Helper()
	block, err := harness.DocBlock(filepath.Join(root, "README.md"), "## Corefile")
	if err != nil {
		t.Fatal(err)
	}
	out := strings.Replace(block, ".:53 {", ".:{{PORT}} {", 1)
	out = strings.Replace(out, "    health { lameduck 5s }\n", "", 1)
	out = strings.Replace(out, "    ready\n", "    ready 127.0.0.1:{{READY}}\n", 1)
	out = strings.Replace(out, "    prometheus :9153\n", "", 1)
	out = strings.Replace(out, "    forward . /etc/resolv.conf\n", "    forward . 127.0.0.1:1\n", 1)
	out = regexp.MustCompile(`(?m)^(    (multicluster|kubernetes) [^{\n]*\{)$`).ReplaceAllString(out, "${1}\n        kubeconfig "+kubeconfig)
	for _, want := range []string{"{{PORT}}", "{{READY}}", "multicluster clusterset.local", "fallback cluster.local", "kubeconfig " + kubeconfig} {
		if !strings.Contains(out, want) {
			t.Fatalf("the README's Corefile no longer has the shape this test localizes (%q):\n%s", want, block)
		}
	}
	return out
}

// objects writes what the questions ask about: a ClusterSetIP import, a
// headless import with named endpoints, and a local Service that has an
// import of the same name (the local Service wins in cluster.local).
func objects(t *testing.T, kube kubernetes.Interface, mcs mcsclient.Interface) []question {
	t.Helper()
	ctx := context.Background()
	const ns = "shop"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: meta.ObjectMeta{Name: ns}}, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	port := []mcsv1beta1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}
	imports := []*mcsv1beta1.ServiceImport{
		{ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: "cart"}, Spec: mcsv1beta1.ServiceImportSpec{Type: mcsv1beta1.ClusterSetIP, IPs: []string{"10.42.0.10"}, Ports: port}},
		{ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: "db"}, Spec: mcsv1beta1.ServiceImportSpec{Type: mcsv1beta1.Headless, Ports: port}},
		{ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: "web"}, Spec: mcsv1beta1.ServiceImportSpec{Type: mcsv1beta1.ClusterSetIP, IPs: []string{"10.42.0.20"}, Ports: port}},
	}
	for _, si := range imports {
		if _, err := mcs.MulticlusterV1beta1().ServiceImports(ns).Create(ctx, si, meta.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var eps []discovery.Endpoint
	for i, ip := range []string{"10.43.0.1", "10.43.0.2"} {
		eps = append(eps, discovery.Endpoint{Addresses: []string{ip}, Hostname: ptr.To(fmt.Sprintf("db-%d", i))})
	}
	slice := &discovery.EndpointSlice{
		ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: "db-east", Labels: map[string]string{
			mcsv1beta1.LabelServiceName: "db", mcsv1beta1.LabelSourceCluster: "east",
		}},
		AddressType: discovery.AddressTypeIPv4,
		Endpoints:   eps,
		Ports:       []discovery.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](80)}},
	}
	if _, err := kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	web := &corev1.Service{
		ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: "web"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
	if _, err := kube.CoreV1().Services(ns).Create(ctx, web, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cs, cl := ".shop.svc.clusterset.local.", ".shop.svc.cluster.local."
	return []question{
		{"cart" + cs, dns.TypeA}, {"cart" + cl, dns.TypeA}, {"_http._tcp.cart" + cs, dns.TypeSRV},
		{"db" + cs, dns.TypeA}, {"db-1.east.db" + cs, dns.TypeA}, {"_http._tcp.db" + cs, dns.TypeSRV},
		{"db" + cl, dns.TypeA},
		{"web" + cs, dns.TypeA}, {"web" + cl, dns.TypeA}, {"_http._tcp.web" + cl, dns.TypeSRV},
		{"none" + cs, dns.TypeA}, {"none" + cl, dns.TypeA}, {"cart" + cs, dns.TypeAAAA},
		{"10.0.42.10.in-addr.arpa.", dns.TypePTR}, {"1.0.43.10.in-addr.arpa.", dns.TypePTR},
	}
}

type question struct {
	name  string
	qtype uint16
}

func (q question) String() string { return q.name + " " + dns.TypeToString[q.qtype] }

// serve runs binary with corefile, waits until every question has an
// answer that is not SERVFAIL (the imports and the local Service are in
// its caches) and the last question's answer holds still, and returns each
// answer over UDP and TCP, in a form that compares.
func serve(t *testing.T, name, binary, corefile string, questions []question) map[question]string {
	t.Helper()
	port, ready := harness.FreePort(t), harness.FreePort(t)
	path := filepath.Join(t.TempDir(), "Corefile")
	text := strings.NewReplacer("{{PORT}}", fmt.Sprint(port), "{{READY}}", fmt.Sprint(ready)).Replace(corefile)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	harness.StartCoreDNS(t, name, binary, path, addr, func() bool { return harness.HTTPOK(fmt.Sprintf("http://127.0.0.1:%d/ready", ready)) })
	answers := map[question]string{}
	poll.Eventually(t, 30*time.Second, name+" answers from the objects", func() (bool, string) {
		for _, q := range questions {
			a, err := answer(addr, q)
			if err != nil {
				return false, fmt.Sprintf("%s: %v", q, err)
			}
			answers[q] = a
		}
		// The slice's second endpoint is the last object the caches see.
		if !strings.Contains(answers[question{"db-1.east.db.shop.svc.clusterset.local.", dns.TypeA}], "10.43.0.2") {
			return false, "db-1.east.db answers " + answers[question{"db-1.east.db.shop.svc.clusterset.local.", dns.TypeA}]
		}
		if !strings.Contains(answers[question{"web.shop.svc.cluster.local.", dns.TypeA}], "IN\tA\t10.") {
			return false, "web.shop.svc.cluster.local answers " + answers[question{"web.shop.svc.cluster.local.", dns.TypeA}]
		}
		return true, ""
	})
	return answers
}

// answer asks q over UDP and TCP and returns both answers: the rcode, the
// flags, and each section's records sorted.
func answer(addr string, q question) (string, error) {
	var b strings.Builder
	for _, proto := range []string{"udp", "tcp"} {
		m := new(dns.Msg)
		m.SetQuestion(q.name, q.qtype)
		r, err := harness.Ask(proto, addr, m)
		if err != nil {
			return "", err
		}
		if r.Rcode == dns.RcodeServerFailure {
			return "", fmt.Errorf("SERVFAIL over %s", proto)
		}
		fmt.Fprintf(&b, "%s: %s aa=%v tc=%v", proto, dns.RcodeToString[r.Rcode], r.Authoritative, r.Truncated)
		for _, section := range [][]dns.RR{r.Answer, r.Ns, r.Extra} {
			var rrs []string
			for _, rr := range section {
				if rr.Header().Rrtype != dns.TypeOPT {
					rrs = append(rrs, soaWithoutSerial(rr))
				}
			}
			slices.Sort(rrs)
			fmt.Fprintf(&b, " [%s]", strings.Join(rrs, "; "))
		}
		b.WriteString("\n")
	}
	return b.String(), nil
}

// soaWithoutSerial is rr in presentation form, an SOA's serial left out:
// two servers that started at different times number their zones apart.
func soaWithoutSerial(rr dns.RR) string {
	if soa, ok := rr.(*dns.SOA); ok {
		c := *soa
		c.Serial = 0
		return c.String()
	}
	return rr.String()
}
