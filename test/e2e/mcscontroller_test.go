package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"
	"github.com/coredns-mcs/coredns-mcs/test/internal/corefiles"
	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
	"github.com/coredns-mcs/coredns-mcs/test/internal/testbin"
)

// testBinaries returns the directory of a set of third-party binaries
// (test/testbin) that holds want; it fails t under CI=true when they are
// unavailable, and skips t otherwise.
func testBinaries(t *testing.T, set string, want ...string) string {
	t.Helper()
	dir, err := testbin.Dir(set, want...)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v are required in CI: %v", want, err)
		}
		t.Skipf("skipping: %v unavailable (%s %s): %v", want, testbin.Script, set, err)
	}
	return dir
}

// startMCSController runs the mcs-api reference controller (the
// servicecontroller of sigs.k8s.io/mcs-api/controllers, built by the mcs set
// of test/testbin) as the admin of kubeconfig, until the test ends. It acts
// in every namespace of that API server.
func startMCSController(t *testing.T, kubeconfig string) *harness.Output {
	t.Helper()
	dir := testBinaries(t, "mcs", "servicecontroller")
	// Port 0 turns its metrics server off; it serves no webhooks and runs no
	// leader election unless asked.
	out, _ := harness.StartProcess(t, "servicecontroller", dir+"/servicecontroller", "--kubeconfig="+kubeconfig, "--metrics-addr=0")
	return out
}

// TestMCSAPIController applies the objects a simple MCS controller writes
// (testdata/interop/mcs-api: a ClusterSetIP import and its slices, a
// headless import whose slices name no source cluster), then runs the
// mcs-api reference controller on them. Before it runs, the ClusterSetIP
// name answers the slices' ready addresses; once it has annotated the
// import, created the derived Service and copied its ClusterIP into spec.ips
// (controllers/serviceimport.go and service.go of that module), the same
// names answer that ClusterIP, and its PTR is the import's name.
//
// The controller acts in every namespace, so it gets an API server of its
// own, away from the other tests' objects.
func TestMCSAPIController(t *testing.T) {
	own := startOwnCluster(t, controlplane.Options{InstallCRDs: true})
	// Both Corefiles: this controller's objects carry no source-cluster
	// label, so the shipped labels line changes nothing here.
	var servers []*server
	for _, c := range []string{corefileWith, corefiles.WithoutImported(corefileWith)} {
		servers = append(servers, startServer(t, strings.ReplaceAll(c, "{{.Kubeconfig}}", own.cp.Kubeconfig), true))
	}
	n := names{t: t, servers: servers, ns: "interop-mcs-api"}
	ctx := context.Background()
	imports := own.mcs.MulticlusterV1alpha1().ServiceImports(n.ns)

	applyFixture(t, own.cp.Config, "mcs-api", "00-namespace.yaml", "10-inputs.yaml")
	web, db := n.svc("web", "clusterset.local"), n.svc("db", "clusterset.local")
	n.a("web", "10.244.4.10", "10.245.4.10")
	n.a("db", "10.244.5.20", "10.244.5.21", "10.245.5.20", "10.245.5.21")
	// Slices without a source cluster make no host.cluster names: one SRV
	// per port at the service's own name.
	n.nxdomain("db-0.east." + db)
	n.srv("_postgres._tcp."+db, []string{"5432 " + db},
		[]string{db + "=10.244.5.20", db + "=10.244.5.21", db + "=10.245.5.20", db + "=10.245.5.21"})
	n.ptr("10.245.5.21", db)
	applyFixture(t, own.cp.Config, "mcs-api", "20-west-web-not-ready.yaml")
	n.a("web", "10.244.4.10")

	started := time.Now()
	ctrlLog := startMCSController(t, own.cp.Kubeconfig)

	// Wait for what the controller writes, so that the test shows what it
	// wrote, not what it was assumed to write.
	var derivedName, clusterIP string
	poll.Eventually(t, 30*time.Second, "the controller to fill in spec.ips", func() (bool, string) {
		si, err := imports.Get(ctx, "web", meta.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		derivedName = si.Annotations["multicluster.kubernetes.io/derived-service"]
		if len(si.Spec.IPs) == 0 {
			return false, fmt.Sprintf("annotations %v, spec.ips empty; controller log:\n%s", si.Annotations, ctrlLog.String())
		}
		clusterIP = si.Spec.IPs[0]
		return derivedName != "", fmt.Sprintf("annotations %v", si.Annotations)
	})
	t.Logf("the controller annotated the import (%s) and wrote spec.ips %s %s after it started",
		derivedName, clusterIP, time.Since(started).Round(time.Millisecond))
	// The name testdata/interop/README.md predicts, from controllers/common.go.
	if derivedName != "derived-sgrakjc4b4" {
		t.Errorf("derived Service %q, want derived-sgrakjc4b4", derivedName)
	}
	derived, err := own.kube.CoreV1().Services(n.ns).Get(ctx, derivedName, meta.GetOptions{})
	if err != nil {
		t.Fatalf("the derived Service %s: %v", derivedName, err)
	}
	if derived.Spec.ClusterIP != clusterIP {
		t.Fatalf("spec.ips %s, but the derived Service has ClusterIP %s", clusterIP, derived.Spec.ClusterIP)
	}
	n.a("web", clusterIP)
	webLocal := n.svc("web", "cluster.local")
	n.srv("_http._tcp."+webLocal, []string{"80 " + webLocal}, []string{webLocal + "=" + clusterIP})
	n.ptr(clusterIP, web)
	// The derived Service's own name is the kubernetes plugin's, untouched.
	n.addresses(derivedName+"."+n.ns+".svc.cluster.local.", dns.TypeA, clusterIP)

	// With spec.ips cleared, the derived-service annotation the controller
	// wrote is what answers. The controller copies ClusterIPs only when the
	// derived Service changes (controllers/service.go), so they stay empty.
	si, err := imports.Get(ctx, "web", meta.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	si.Spec.IPs = nil
	if _, err := imports.Update(ctx, si, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, propagation, "spec.ips to be empty", func() (bool, string) {
		si, err := imports.Get(ctx, "web", meta.GetOptions{})
		return err == nil && len(si.Spec.IPs) == 0, fmt.Sprint(si.Spec.IPs, err)
	})
	n.a("web", clusterIP)
	n.ptr(clusterIP, web)

	// The controller ignores headless imports (shouldIgnoreImport), but
	// relabels every multicluster slice for its derived Service
	// (controllers/endpointslice.go): the headless import answers on.
	poll.Eventually(t, 10*time.Second, "the controller to label the headless slices", func() (bool, string) {
		es, err := own.kube.DiscoveryV1().EndpointSlices(n.ns).Get(ctx, "db-c8x5v", meta.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return strings.HasPrefix(es.Labels[discovery.LabelServiceName], "derived-"), fmt.Sprint(es.Labels)
	})
	n.a("db", "10.244.5.20", "10.244.5.21", "10.245.5.20", "10.245.5.21")
}

// updateSlice changes the EndpointSlice ns/name with mutate, retrying on
// conflicts with its other writers (controllers relabel slices).
func updateSlice(t *testing.T, ns, name string, mutate func(*discovery.EndpointSlice)) {
	t.Helper()
	ctx := context.Background()
	for {
		es, err := kube.DiscoveryV1().EndpointSlices(ns).Get(ctx, name, meta.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mutate(es)
		_, err = kube.DiscoveryV1().EndpointSlices(ns).Update(ctx, es, meta.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			if err != nil {
				t.Fatal(err)
			}
			return
		}
	}
}

// expectPTR checks, over UDP and TCP, that the address ip points back to
// exactly one name, target.
func expectPTR(t *testing.T, s *server, ip, target string) {
	t.Helper()
	name := reverse(t, ip)
	expectRecords(t, s, name, dns.TypePTR, dns.RcodeSuccess, []string{name + " 5 IN PTR " + target}, nil)
}
