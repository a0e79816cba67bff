package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// NodeLocal DNSCache (k8s.io/dns node-cache) is CoreDNS with a Corefile
// from the ConfigMap kube-system/node-local-dns. The node-cache binary is
// not on the Go module proxy, so these tests run our binary with that
// Corefile: every plugin it uses (errors, cache, reload, loop, bind,
// forward, prometheus, health) is upstream CoreDNS's, built into ours.

// The values the add-on's install instructions substitute (kubernetes
// website, tasks/administer-cluster/nodelocaldns.md, iptables mode). The
// node-local address and the kube-dns ClusterIP are two loopback addresses
// here: node-local-dns listens on both.
const (
	nodeLocalAddress = "127.0.0.1"
	kubeDNSAddress   = "127.0.0.2"
	clusterDomain    = "cluster.local"
)

// installNodeLocalCorefile is the substitution of docs/nodelocaldns.md,
// the one the add-on's instructions make in iptables mode.
const installNodeLocalCorefile = `sed "s/__PILLAR__LOCAL__DNS__/$localdns/g; s/__PILLAR__DNS__DOMAIN__/$domain/g; s/__PILLAR__DNS__SERVER__/$kubedns/g"`

// corefileClusterDNS is the kube-system Corefile with the log plugin, which
// shows the queries node-local-dns forwards.
var corefileClusterDNS = strings.Replace(corefileWith, "\n    ready ", "\n    log\n    ready ", 1)

// corefileInternet stands for the node's upstream resolvers: it knows no
// clusterset.local (nor anything else), and logs what it is asked.
const corefileInternet = `.:{{.Port}} {
    log
    template ANY ANY {
        rcode NXDOMAIN
    }
}
`

// metricSum adds up the samples of the metric name whose labels include
// every one of labels (written as in the exposition format, `zones="x."`).
func metricSum(t *testing.T, url, name string, labels ...string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	var total float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), name+"{")
		if !ok {
			continue
		}
		set, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		matches := true
		for _, l := range labels {
			matches = matches && strings.Contains(","+set+",", ","+l+",")
		}
		if !matches {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("metric %s: %v", sc.Text(), err)
		}
		total += v
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("metrics: %v", err)
	}
	return total
}

// asked counts the A queries for name in the log of s, which runs the log
// plugin. (A count of all queries would also see the probes that a
// starting node-local-dns sends through each of its blocks, the loop
// plugin's, forwarded to cluster DNS or upstream.)
func asked(s *server, name string) int {
	return strings.Count(s.log.String(), `"A IN `+name+` `)
}

// nodeCacheCorefile makes of an installed node-local-dns Corefile the one
// node-cache runs: it replaces the two placeholders node-cache fills at
// start-up (k8s.io/dns cmd/node-cache/app/configmap.go, updateCorefile)
// with the cluster DNS and upstream addresses, and moves the fixed ports of
// the add-on (53, metrics 9253, health 8080) to free ones, with {{.Port}}
// for DNS. It also returns the metrics URL.
func nodeCacheCorefile(t *testing.T, installed, clusterDNS, upstream string) (corefile, metrics string) {
	t.Helper()
	metricsPort, healthPort := harness.FreePort(t), harness.FreePort(t)
	corefile = strings.NewReplacer(
		"__PILLAR__CLUSTER__DNS__", clusterDNS,
		"__PILLAR__UPSTREAM__SERVERS__", upstream,
		":53 {", ":{{.Port}} {",
		"prometheus :9253", fmt.Sprintf("prometheus 127.0.0.1:%d", metricsPort),
		":8080", fmt.Sprintf(":%d", healthPort),
	).Replace(installed)
	if strings.Contains(corefile, "__PILLAR__") || strings.Contains(corefile, ":53 ") {
		t.Fatalf("placeholders or port 53 left in the Corefile:\n%s", corefile)
	}
	return corefile, fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)
}

// kubectlFor runs the kubectl of the kube test binaries against the shared
// control plane; script is a bash pipeline in which "kubectl" is that one.
func kubectlFor(t *testing.T) func(dir, script string, env ...string) string {
	t.Helper()
	bin := testBinaries(t, "kube", "kubectl")
	return func(dir, script string, env ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", script)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), append(env, "PATH="+bin+":"+os.Getenv("PATH"), "KUBECONFIG="+cp.Kubeconfig)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
		return string(out)
	}
}

// shippedNodeLocalCorefile is the Corefile of manifests/nodelocaldns.
func shippedNodeLocalCorefile(t *testing.T) string {
	t.Helper()
	return configMapCorefile(t, filepath.Join("..", "..", "manifests", "nodelocaldns", "configmap.yaml"))
}

func configMapCorefile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal(data, &cm); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if cm.Data["Corefile"] == "" {
		t.Fatalf("%s has no Corefile", path)
	}
	return cm.Data["Corefile"]
}

// TestNodeLocalDNSCache applies manifests/nodelocaldns to the add-on's
// ConfigMap the two ways docs/nodelocaldns.md shows, against the real API
// server, then runs the resulting Corefile, with node-cache's own
// substitutions, in front of our binary as cluster DNS. Through it a
// clusterset.local name and a cluster.local fallback name resolve, and the
// second query of each is answered from node-local's cache: cluster DNS
// sees no query, the cache counts a hit. With the add-on's Corefile as
// shipped, the clusterset.local name goes to the node's resolvers instead.
func TestNodeLocalDNSCache(t *testing.T) {
	kubectl := kubectlFor(t)
	ctx := context.Background()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "nodelocaldns.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), installNodeLocalCorefile) {
		t.Errorf("docs/nodelocaldns.md does not show the substitution this test makes: %s", installNodeLocalCorefile)
	}
	ns := namespace(t, "nodelocal")
	createImport(t, newImport(ns, "remote-only", "10.42.17.1"))
	clustersetName := "remote-only." + ns + ".svc.clusterset.local."
	fallbackName := "remote-only." + ns + ".svc.cluster.local."

	clusterDNS := startServer(t, corefileClusterDNS, true)
	internet := startServer(t, corefileInternet, false)
	expectAddresses(t, clusterDNS, clustersetName, dns.TypeA, propagation, "10.42.17.1")
	expectAddresses(t, clusterDNS, fallbackName, dns.TypeA, propagation, "10.42.17.1")

	// The add-on as installed: its ConfigMap, substituted and created as its
	// instructions say, in a kustomization of the user's next to our
	// component.
	fixture, err := os.ReadFile(filepath.Join("testdata", "nodelocaldns", "node-local-dns.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	component, err := filepath.Abs(filepath.Join("..", "..", "manifests", "nodelocaldns"))
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	rel, err := filepath.Rel(work, component) // kustomize refuses absolute paths
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"nodelocaldns.yaml":  string(fixture),
		"kustomization.yaml": "resources:\n  - nodelocaldns.yaml\ncomponents:\n  - " + rel + "\n",
	} {
		if err := os.WriteFile(filepath.Join(work, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"localdns=" + nodeLocalAddress, "kubedns=" + kubeDNSAddress, "domain=" + clusterDomain}
	install := func() {
		t.Helper()
		kubectl(work, "kubectl delete configmap -n kube-system node-local-dns --ignore-not-found")
		kubectl(work, installNodeLocalCorefile+" nodelocaldns.yaml | kubectl create -f -", env...)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().ConfigMaps("kube-system").Delete(ctx, "node-local-dns", meta.DeleteOptions{})
	})
	wantCorefile := strings.NewReplacer("__PILLAR__LOCAL__DNS__", nodeLocalAddress, "__PILLAR__DNS__SERVER__", kubeDNSAddress,
		"__PILLAR__DNS__DOMAIN__", clusterDomain).Replace(shippedNodeLocalCorefile(t))
	liveCorefile := func(how string) string {
		t.Helper()
		cm, err := kube.CoreV1().ConfigMaps("kube-system").Get(ctx, "node-local-dns", meta.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := cm.Data["Corefile"]; got != wantCorefile {
			t.Fatalf("%s: the Corefile of kube-system/node-local-dns is\n%s\nwant manifests/nodelocaldns/configmap.yaml's, substituted:\n%s", how, got, wantCorefile)
		}
		if cm.Labels["addonmanager.kubernetes.io/mode"] != "Reconcile" {
			t.Errorf("%s: the add-on's labels are gone: %v", how, cm.Labels)
		}
		return cm.Data["Corefile"]
	}

	install()
	kubectl(work, installNodeLocalCorefile+" "+filepath.Join(component, "configmap.yaml")+" | kubectl apply --server-side --force-conflicts -f -", env...)
	liveCorefile("the ConfigMap alone, applied server-side")

	install()
	kubectl(work, "kubectl kustomize . | "+installNodeLocalCorefile+" | kubectl apply --server-side --force-conflicts -f -", env...)
	patched := liveCorefile("kustomize with the component")

	t.Run("patched", func(t *testing.T) {
		corefile, metrics := nodeCacheCorefile(t, patched, clusterDNS.addr, internet.addr)
		nodeLocal := startServer(t, corefile, false)
		_, port, err := net.SplitHostPort(nodeLocal.addr)
		if err != nil {
			t.Fatal(err)
		}
		viaKubeDNS := &server{addr: net.JoinHostPort(kubeDNSAddress, port)}
		for _, c := range []struct{ name, zone string }{
			{clustersetName, "clusterset.local."},
			{fallbackName, "cluster.local."},
		} {
			before := asked(clusterDNS, c.name)
			hits := metricSum(t, metrics, "coredns_cache_hits_total", `zones="`+c.zone+`"`)
			expectNow(t, nodeLocal, "udp", c.name, "10.42.17.1")
			poll.Eventually(t, 2*time.Second, c.name+" reaches cluster DNS", func() (bool, string) {
				n := asked(clusterDNS, c.name) - before
				return n == 1, fmt.Sprintf("asked %d times", n)
			})

			// Again, at the kube-dns address, which node-local-dns also
			// holds: from the cache.
			expectNow(t, viaKubeDNS, "udp", c.name, "10.42.17.1")
			// A name of the zone never asked before, which node-local
			// forwards: once cluster DNS logged it, it has logged a
			// forward of the query before it, were there one.
			marker := "marker." + c.zone
			viaKubeDNS.query(t, "udp", marker, dns.TypeA)
			poll.Eventually(t, 5*time.Second, marker+" reaches cluster DNS", func() (bool, string) {
				n := asked(clusterDNS, marker)
				return n == 1, fmt.Sprintf("asked %d times", n)
			})
			if n := asked(clusterDNS, c.name) - before; n != 1 {
				t.Errorf("%s asked twice: cluster DNS was asked %d times, want once (the second answer from node-local's cache)", c.name, n)
			}
			if got := metricSum(t, metrics, "coredns_cache_hits_total", `zones="`+c.zone+`"`, `type="success"`) - hits; got != 1 {
				t.Errorf("%s: coredns_cache_hits_total{zones=%q} grew by %v, want 1", c.name, c.zone, got)
			}
		}
	})

	t.Run("as shipped", func(t *testing.T) {
		corefile, _ := nodeCacheCorefile(t, strings.NewReplacer("__PILLAR__LOCAL__DNS__", nodeLocalAddress, "__PILLAR__DNS__SERVER__", kubeDNSAddress,
			"__PILLAR__DNS__DOMAIN__", clusterDomain).Replace(configMapCorefile(t, filepath.Join("testdata", "nodelocaldns", "node-local-dns.yaml"))),
			clusterDNS.addr, internet.addr)
		nodeLocal := startServer(t, corefile, false)

		// The fallback name needs no patch: it is in the cluster domain.
		expectNow(t, nodeLocal, "udp", fallbackName, "10.42.17.1")

		before, beforeInternet := asked(clusterDNS, clustersetName), asked(internet, clustersetName)
		r := nodeLocal.query(t, "udp", clustersetName, dns.TypeA)
		if r.Rcode != dns.RcodeNameError {
			t.Errorf("%s through the add-on's own Corefile: %s %v, want NXDOMAIN from the node's resolvers", clustersetName, dns.RcodeToString[r.Rcode], addresses(r))
		}
		poll.Eventually(t, 2*time.Second, clustersetName+" goes to the node's resolvers", func() (bool, string) {
			n := asked(internet, clustersetName) - beforeInternet
			return n == 1, fmt.Sprintf("asked %d times", n)
		})
		if n := asked(clusterDNS, clustersetName) - before; n != 0 {
			t.Errorf("cluster DNS was asked %d times, want never", n)
		}
	})
}

// expectNow checks that name answers exactly the address want at once.
func expectNow(t *testing.T, s *server, proto, name, want string) {
	t.Helper()
	r := s.query(t, proto, name, dns.TypeA)
	if got := addresses(r); r.Rcode != dns.RcodeSuccess || len(got) != 1 || got[0] != want {
		t.Fatalf("%s A via %s: %s %v, want %s", name, s.addr, dns.RcodeToString[r.Rcode], got, want)
	}
}
