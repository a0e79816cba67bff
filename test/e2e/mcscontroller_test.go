package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/testbin"
)

// startMCSController runs the mcs-api reference controller (the
// servicecontroller of sigs.k8s.io/mcs-api/controllers, built by the mcs set
// of test/testbin) against the test API server as admin, until the test
// ends. It watches every namespace.
func startMCSController(t *testing.T) *harness.Output {
	t.Helper()
	dir, err := testbin.Dir("mcs", "servicecontroller")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the mcs-api controller is required in CI: %v", err)
		}
		t.Skipf("skipping: the mcs-api controller is unavailable (%s mcs): %v", testbin.Script, err)
	}
	out := &harness.Output{}
	// Port 0 turns its metrics server off; it serves no webhooks and runs no
	// leader election unless asked.
	cmd := exec.Command(dir+"/servicecontroller", "--kubeconfig="+cp.Kubeconfig, "--metrics-addr=0")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("servicecontroller log:\n%s", out.String())
		}
	})
	return out
}

// TestMCSAPIController runs the mcs-api reference controller on the objects
// a simple MCS controller writes: a ClusterSetIP import without spec.ips and
// its EndpointSlice, and a headless import whose slices name no source
// cluster. Before the controller runs, the ClusterSetIP name answers the
// slice's ready address; once it has annotated the import, created the
// derived Service and copied its ClusterIP into spec.ips
// (controllers/serviceimport.go and service.go of that module), the same
// names answer that ClusterIP, and its PTR is the import's name.
func TestMCSAPIController(t *testing.T) {
	s := startServer(t, corefileWith, true)
	ns := namespace(t, "mcsapi")
	ctx := context.Background()
	imports := mcs.MulticlusterV1alpha1().ServiceImports(ns)

	// What a simple controller writes (the inputs of the reference
	// controller, whose import type is v1alpha1).
	port := []mcsv1alpha1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}
	if _, err := imports.Create(ctx, &mcsv1alpha1.ServiceImport{
		ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: "web"},
		Spec:       mcsv1alpha1.ServiceImportSpec{Type: mcsv1alpha1.ClusterSetIP, Ports: port},
	}, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := imports.Create(ctx, &mcsv1alpha1.ServiceImport{
		ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: "db"},
		Spec:       mcsv1alpha1.ServiceImportSpec{Type: mcsv1alpha1.Headless, Ports: port},
	}, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createLabelledSlice(t, ns, "web-east", map[string]string{mcsv1alpha1.LabelServiceName: "web", mcsv1alpha1.LabelSourceCluster: "east"},
		discovery.Endpoint{Addresses: []string{"10.244.0.10"}, Conditions: discovery.EndpointConditions{Ready: ptr.To(true)}})
	dbSlice := createLabelledSlice(t, ns, "db-abcde", map[string]string{mcsv1alpha1.LabelServiceName: "db"},
		discovery.Endpoint{Addresses: []string{"10.244.0.21"}, Hostname: ptr.To("db-0")},
		discovery.Endpoint{Addresses: []string{"10.244.0.22"}, Hostname: ptr.To("db-1")})

	web, webLocal := "web."+ns+".svc.clusterset.local.", "web."+ns+".svc.cluster.local."
	db, dbLocal := "db."+ns+".svc.clusterset.local.", "db."+ns+".svc.cluster.local."
	expectAddresses(t, s, web, dns.TypeA, propagation, "10.244.0.10")
	expectAddresses(t, s, webLocal, dns.TypeA, propagation, "10.244.0.10")
	expectAddresses(t, s, db, dns.TypeA, propagation, "10.244.0.21", "10.244.0.22")
	expectAddresses(t, s, dbLocal, dns.TypeA, propagation, "10.244.0.21", "10.244.0.22")
	// A slice without a source cluster makes no host.cluster names.
	expectRcode(t, s, "db-0.db."+ns+".svc.clusterset.local.", dns.TypeA, propagation, dns.RcodeNameError)

	started := time.Now()
	ctrlLog := startMCSController(t)

	// The controller annotates the import, creates the derived Service and
	// copies its ClusterIPs into spec.ips. Wait for each, so that the test
	// shows what the controller wrote, not what it was assumed to write.
	var derivedName, clusterIP string
	eventually(t, 30*time.Second, "the controller to fill in spec.ips", func() (bool, string) {
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
	derived, err := kube.CoreV1().Services(ns).Get(ctx, derivedName, meta.GetOptions{})
	if err != nil {
		t.Fatalf("the derived Service %s: %v", derivedName, err)
	}
	if derived.Spec.ClusterIP != clusterIP {
		t.Fatalf("spec.ips %s, but the derived Service has ClusterIP %s", clusterIP, derived.Spec.ClusterIP)
	}
	expectAddresses(t, s, web, dns.TypeA, propagation, clusterIP)
	expectAddresses(t, s, webLocal, dns.TypeA, propagation, clusterIP)
	expectRecords(t, s, "_http._tcp."+webLocal, dns.TypeSRV, dns.RcodeSuccess,
		[]string{"_http._tcp." + webLocal + " 5 IN SRV 0 100 80 " + webLocal}, []string{webLocal + " 5 IN A " + clusterIP})
	expectPTR(t, s, clusterIP, web)
	// The derived Service's own name is the kubernetes plugin's, untouched.
	expectAddresses(t, s, derivedName+"."+ns+".svc.cluster.local.", dns.TypeA, propagation, clusterIP)

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
	eventually(t, propagation, "spec.ips to be empty", func() (bool, string) {
		si, err := imports.Get(ctx, "web", meta.GetOptions{})
		return err == nil && len(si.Spec.IPs) == 0, fmt.Sprint(si.Spec.IPs, err)
	})
	expectAddresses(t, s, web, dns.TypeA, propagation, clusterIP)
	expectPTR(t, s, clusterIP, web)

	// The controller ignores headless imports (shouldIgnoreImport), but
	// relabels every multicluster slice for its derived Service
	// (controllers/endpointslice.go): the headless import answers on.
	eventually(t, 10*time.Second, "the controller to label the headless slice", func() (bool, string) {
		es, err := kube.DiscoveryV1().EndpointSlices(ns).Get(ctx, dbSlice.Name, meta.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return strings.HasPrefix(es.Labels[discovery.LabelServiceName], "derived-"), fmt.Sprint(es.Labels)
	})
	expectAddresses(t, s, db, dns.TypeA, propagation, "10.244.0.21", "10.244.0.22")
	// An endpoint turns not ready: it leaves the answer.
	updateSlice(t, ns, dbSlice.Name, func(es *discovery.EndpointSlice) { es.Endpoints[1].Conditions.Ready = ptr.To(false) })
	expectAddresses(t, s, dbLocal, dns.TypeA, propagation, "10.244.0.21")
	expectPTR(t, s, "10.244.0.21", db)
}

// createLabelledSlice creates an IPv4 EndpointSlice with labels and port
// http 80/TCP, as an MCS controller writes one.
func createLabelledSlice(t *testing.T, ns, name string, labels map[string]string, endpoints ...discovery.Endpoint) *discovery.EndpointSlice {
	t.Helper()
	es, err := kube.DiscoveryV1().EndpointSlices(ns).Create(context.Background(), &discovery.EndpointSlice{
		ObjectMeta:  meta.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		AddressType: discovery.AddressTypeIPv4,
		Endpoints:   endpoints,
		Ports:       []discovery.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](80)}},
	}, meta.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return es
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
