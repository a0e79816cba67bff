package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
)

// corefileWith is the kube-system Corefile of DNS.md, on test ports, reading
// the test API server.
const corefileWith = `.:{{.Port}} {
    ready 127.0.0.1:{{.ReadyPort}}
    multicluster clusterset.local in-addr.arpa ip6.arpa {
        kubeconfig {{.Kubeconfig}}
        fallback cluster.local
    }
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig {{.Kubeconfig}}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
}
`

// corefileWithout is the same server without the multicluster plugin.
const corefileWithout = `.:{{.Port}} {
    ready 127.0.0.1:{{.ReadyPort}}
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig {{.Kubeconfig}}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
}
`

// propagation is how soon an API change must show in answers.
const propagation = 2 * time.Second

func TestImportLifecycle(t *testing.T) {
	s := startServer(t, corefileWith, true)
	ns := namespace(t, "lifecycle")
	ctx := context.Background()
	clusterset := "web." + ns + ".svc.clusterset.local."
	local := "web." + ns + ".svc.cluster.local."

	expectRcode(t, s, clusterset, dns.TypeA, propagation, dns.RcodeNameError)

	si := createImport(t, newImport(ns, "web", "10.42.0.1"))
	expectAddresses(t, s, clusterset, dns.TypeA, propagation, "10.42.0.1")
	expectAddresses(t, s, local, dns.TypeA, propagation, "10.42.0.1")

	// The IPs change, and the import turns dual-stack.
	si.Spec.IPs = []string{"10.42.0.2", "fd00::2"}
	if _, err := mcs.MulticlusterV1beta1().ServiceImports(ns).Update(ctx, si, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectAddresses(t, s, clusterset, dns.TypeA, propagation, "10.42.0.2")
	expectAddresses(t, s, clusterset, dns.TypeAAAA, propagation, "fd00::2")
	expectAddresses(t, s, local, dns.TypeAAAA, propagation, "fd00::2")

	if err := mcs.MulticlusterV1beta1().ServiceImports(ns).Delete(ctx, "web", meta.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expectRcode(t, s, clusterset, dns.TypeA, propagation, dns.RcodeNameError)
	expectRcode(t, s, local, dns.TypeA, propagation, dns.RcodeNameError)
}

// TestLocalServiceWins runs the same binary with and without multicluster
// side by side: once a local Service exists, every cluster.local name under
// it must be answered identically by both.
func TestLocalServiceWins(t *testing.T) {
	with := startServer(t, corefileWith, true)
	without := startServer(t, corefileWithout, true)
	ns := namespace(t, "localwins")
	ctx := context.Background()

	createImport(t, newImport(ns, "web", "10.42.1.1"))
	name := "web." + ns + ".svc.cluster.local."
	expectAddresses(t, with, name, dns.TypeA, propagation, "10.42.1.1")
	expectRcode(t, without, name, dns.TypeA, propagation, dns.RcodeNameError)

	svc := createService(t, ns, "web")
	questions := []question{
		{name, dns.TypeA},
		{name, dns.TypeAAAA},
		{name, dns.TypeSRV},
		{name, dns.TypeTXT},
		{"_http._tcp." + name, dns.TypeSRV},
		{"_http._udp." + name, dns.TypeSRV},
		{"east." + name, dns.TypeA},
		{"pod-0.east." + name, dns.TypeA},
		{"kubernetes.default.svc.cluster.local.", dns.TypeA},
		{"cluster.local.", dns.TypeSOA},
		{"dns-version.cluster.local.", dns.TypeTXT},
	}
	expectSameAnswers(t, with, without, questions)
	if got := addresses(with.query(t, "udp", name, dns.TypeA)); len(got) != 1 || got[0] != svc.Spec.ClusterIP {
		t.Errorf("with a local Service: %v, want its ClusterIP %s", got, svc.Spec.ClusterIP)
	}

	// The local Service goes: the import answers again.
	if err := kube.CoreV1().Services(ns).Delete(ctx, "web", meta.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expectAddresses(t, with, name, dns.TypeA, propagation, "10.42.1.1")
}

func TestNamespacesOption(t *testing.T) {
	served, other := namespace(t, "served"), namespace(t, "unserved")
	s := startServer(t, `.:{{.Port}} {
    ready 127.0.0.1:{{.ReadyPort}}
    multicluster {
        kubeconfig {{.Kubeconfig}}
        namespaces `+served+`
    }
}
`, true)
	createImport(t, newImport(served, "web", "10.42.2.1"))
	createImport(t, newImport(other, "web", "10.42.2.2"))
	expectAddresses(t, s, "web."+served+".svc.clusterset.local.", dns.TypeA, propagation, "10.42.2.1")
	expectRcode(t, s, "web."+other+".svc.clusterset.local.", dns.TypeA, propagation, dns.RcodeNameError)
}

// TestKubeconfigContext runs one server with the admin context and one with
// the other context, whose user has no permissions: the context decides.
func TestKubeconfigContext(t *testing.T) {
	ns := namespace(t, "context")
	createImport(t, newImport(ns, "web", "10.42.3.1"))
	name := "web." + ns + ".svc.clusterset.local."

	admin := startServer(t, `.:{{.Port}} {
    ready 127.0.0.1:{{.ReadyPort}}
    multicluster {
        kubeconfig {{.Kubeconfig}} admin
    }
}
`, true)
	expectAddresses(t, admin, name, dns.TypeA, propagation, "10.42.3.1")

	other := startServer(t, `.:{{.Port}} {
    ready 127.0.0.1:{{.ReadyPort}}
    multicluster {
        kubeconfig {{.Kubeconfig}} other
    }
}
`, true)
	// Not allowed to read ServiceImports: degraded, yet ready.
	expectRcode(t, other, name, dns.TypeA, 10*time.Second, dns.RcodeServerFailure)
	if !other.isReady() {
		t.Errorf("degraded server is not ready")
	}
	if !strings.Contains(other.log.String(), "not allowed to list and watch serviceimports") {
		t.Errorf("no log line says what is missing:\n%s", other.log.String())
	}
}

// digPath is the dig command. Without one, t fails under CI=true and is
// skipped otherwise (harness.Unavailable): a contributor's machine may lack
// Debian's dnsutils, which .ci/run installs.
func digPath(t *testing.T) string {
	t.Helper()
	dig, err := exec.LookPath("dig")
	if err != nil {
		harness.Unavailable(t, "dig is needed (apt-get install dnsutils): %v", err)
	}
	return dig
}

// TestDig checks the answers the way a user does.
func TestDig(t *testing.T) {
	dig := digPath(t)
	s := startServer(t, corefileWith, true)
	ns := namespace(t, "dig")
	createImport(t, newImport(ns, "web", "10.42.4.1", "fd00::4:1"))
	name := "web." + ns + ".svc.cluster.local"
	expectAddresses(t, s, name, dns.TypeA, propagation, "10.42.4.1")

	host, port, _ := strings.Cut(s.addr, ":")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{name, "A"}, "10.42.4.1"},
		{[]string{name, "AAAA", "+tcp"}, "fd00::4:1"},
		{[]string{"web." + ns + ".svc.clusterset.local", "A"}, "10.42.4.1"},
		{[]string{"_http._tcp.web." + ns + ".svc.clusterset.local", "SRV"}, "0 100 80 web." + ns + ".svc.clusterset.local."},
		{[]string{"dns-version.clusterset.local", "TXT"}, `"1.0.0"`},
	} {
		args := append([]string{"@" + host, "-p", port, "+short", "+time=2", "+tries=1"}, c.args...)
		out, err := exec.Command(dig, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("dig %v: %v\n%s", args, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != c.want {
			t.Errorf("dig %v = %q, want %q", c.args, got, c.want)
		}
	}
	out, err := exec.Command(dig, "@"+host, "-p", port, "nope."+ns+".svc.clusterset.local", "A").CombinedOutput()
	if err != nil {
		t.Fatalf("dig: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "status: NXDOMAIN") || !strings.Contains(string(out), "flags: qr aa") {
		t.Errorf("dig of a missing name: want an authoritative NXDOMAIN:\n%s", out)
	}
}
