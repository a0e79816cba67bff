package karmadae2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/coredns-mcs/coredns-mcs/test/internal/karmada"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// within bounds every wait for Karmada. Its controllers act within seconds
// here; the margin is for a loaded CI machine.
const within = 90 * time.Second

// servePodIP is the address of serve's (imaginary) Pod in member1.
const servePodIP = "10.244.1.5"

// The labels Karmada puts on the EndpointSlices it collects for a derived
// Service (pkg/controllers/mcs/endpointslice_controller.go) and on those the
// MultiClusterService dispatch controller writes
// (pkg/controllers/multiclusterservice/endpointslice_dispatch_controller.go),
// values from pkg/util/constants.go.
const (
	managedByKarmadaCollect  = "endpointslice-controller.karmada.io"
	managedByKarmadaDispatch = "endpointslice-dispatch-controller.karmada.io"
)

// TestWalkthrough runs the walkthrough of docs/karmada.md in namespace
// default: serve in member1, exported from member1, imported into member2;
// then the import in every member; then the withdrawals.
func TestWalkthrough(t *testing.T) {
	needKarmada(t)
	const ns = "default"
	member1, member1Dyn := memberClient(t, karmada.Member1)
	member2, member2Dyn := memberClient(t, karmada.Member2)
	with2 := startCoreDNS(t, "member2", kmd.Member(karmada.Member2).Kubeconfig, true)
	without2 := startCoreDNS(t, "member2 without multicluster", kmd.Member(karmada.Member2).Kubeconfig, false)
	with1 := startCoreDNS(t, "member1", kmd.Member(karmada.Member1).Kubeconfig, true)
	without1 := startCoreDNS(t, "member1 without multicluster", kmd.Member(karmada.Member1).Kubeconfig, false)

	const (
		name        = "serve.default.svc.cluster.local."
		portName    = "_http._tcp.serve.default.svc.cluster.local."
		setName     = "serve.default.svc.clusterset.local."
		setPortName = "_http._tcp.serve.default.svc.clusterset.local."
		derivedName = "derived-serve.default.svc.cluster.local."
	)
	nxdomain := answer{rcode: dns.RcodeNameError}

	// Step 1: serve, propagated to member1.
	applyGuide(t, "serve", ns)
	var local *corev1.Service
	took := waitFor(t, within, "Service serve in member1", func(ctx context.Context) (bool, string) {
		svc, seen := getService(ctx, member1, ns, "serve")
		local = svc
		return svc != nil, seen
	})
	localIP := local.Spec.ClusterIP
	t.Logf("step 1: Karmada created Service serve in member1 after %s, ClusterIP %s", took.Round(time.Millisecond), localIP)
	if !inRange(localIP, karmada.Member1) {
		t.Errorf("serve in member1 has ClusterIP %s, not from member1's range %s", localIP, karmada.ServiceRanges[karmada.Member1])
	}
	writeServeEndpoints(t, ns, servePodIP, true)
	with1.await(t, within, name, dns.TypeA, answer{dns.RcodeSuccess, []string{a(name, localIP)}})
	for _, q := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeSRV} {
		sameWire(t, with1, without1, name, q)
	}

	// Step 2: the export. Karmada collects serve's EndpointSlices from
	// member1 into karmada-apiserver, for derived-serve.
	applyGuide(t, "export", ns)
	took = waitFor(t, within, "EndpointSlices of derived-serve collected in karmada-apiserver", func(ctx context.Context) (bool, string) {
		got, err := endpointSlices(ctx, kmd.Kube(), ns, "derived-serve")
		if err != nil {
			return false, err.Error()
		}
		return len(got) == 1 && len(got[0].Endpoints) == 1 && slices.Equal(got[0].Endpoints[0].Addresses, []string{servePodIP}), describeSlices(got)
	})
	t.Logf("step 2: Karmada collected serve's EndpointSlice into karmada-apiserver %s after the export", took.Round(time.Millisecond))

	// Step 3: the import into member2, and what DNS makes of it there.
	imported := time.Now()
	applyGuide(t, "import", ns)
	derivedIP := waitImported(t, ns, karmada.Member2, member2, member2Dyn)
	with2.await(t, within, name, dns.TypeA, answer{dns.RcodeSuccess, []string{a(name, derivedIP)}})
	t.Logf("step 3: %s answers %s (derived-serve in member2) %s after the import was applied",
		name, derivedIP, time.Since(imported).Round(time.Millisecond))
	checkImportPolicy(t, ns)

	t.Run("member2 answers", func(t *testing.T) {
		for _, q := range []struct {
			name  string
			qtype uint16
			want  answer
		}{
			{name, dns.TypeA, answer{dns.RcodeSuccess, []string{a(name, derivedIP)}}},
			{setName, dns.TypeA, answer{dns.RcodeSuccess, []string{a(setName, derivedIP)}}},
			{name, dns.TypeAAAA, answer{rcode: dns.RcodeSuccess}}, // derived-serve is IPv4 only
			{name, dns.TypeSRV, answer{dns.RcodeSuccess, []string{srv(name, 80, name)}}},
			{portName, dns.TypeSRV, answer{dns.RcodeSuccess, []string{srv(portName, 80, name)}}},
			{setName, dns.TypeSRV, answer{dns.RcodeSuccess, []string{srv(setName, 80, setName)}}},
			{setPortName, dns.TypeSRV, answer{dns.RcodeSuccess, []string{srv(setPortName, 80, setName)}}},
		} {
			with2.await(t, 5*time.Second, q.name, q.qtype, q.want)
		}
		// The name a Karmada user has to use today, untouched; and what
		// serve's name is without the plugin.
		for _, q := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeSRV} {
			sameWire(t, with2, without2, derivedName, q)
		}
		with2.await(t, 5*time.Second, derivedName, dns.TypeA, answer{dns.RcodeSuccess, []string{a(derivedName, derivedIP)}})
		without2.await(t, 5*time.Second, name, dns.TypeA, nxdomain)
	})

	// Step 4: the import in every member, member1 included, where serve
	// runs: there the local Service wins, byte for byte.
	t.Run("member1 imports too", func(t *testing.T) {
		policy := guideManifests(t, "import")[1]
		if err := unstructured.SetNestedStringSlice(policy.Object, []string{karmada.Member1, karmada.Member2}, "spec", "placement", "clusterAffinity", "clusterNames"); err != nil {
			t.Fatal(err)
		}
		applyObjects(t, ns, policy)
		derived1 := waitImported(t, ns, karmada.Member1, member1, member1Dyn)
		with1.await(t, within, setName, dns.TypeA, answer{dns.RcodeSuccess, []string{a(setName, derived1)}})
		for _, q := range []struct {
			name  string
			qtype uint16
		}{{name, dns.TypeA}, {name, dns.TypeAAAA}, {name, dns.TypeSRV}, {portName, dns.TypeSRV}} {
			got := sameWire(t, with1, without1, q.name, q.qtype)
			if q.qtype == dns.TypeA && fmt.Sprint(describe(got)) != fmt.Sprint(answer{dns.RcodeSuccess, []string{a(name, localIP)}}) {
				t.Errorf("member1: %s A answered %s, want serve's own ClusterIP %s", name, describe(got), localIP)
			}
		}
	})

	// Step 5: withdrawals.
	t.Run("delete the import policy", func(t *testing.T) {
		claimed, err := kmd.Dynamic().Resource(serviceImportResource).Namespace(ns).Get(t.Context(), "serve", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if claimed.GetLabels()["propagationpolicy.karmada.io/permanent-id"] == "" {
			t.Fatalf("ServiceImport serve in karmada-apiserver bears no permanent-id label of its policy: its release would not show (labels %v)", claimed.GetLabels())
		}
		deleted := time.Now()
		deleteFromKarmada(t, karmada.PropagationPolicyResource, ns, "serve-import")
		took := waitFor(t, within, "PropagationPolicy serve-import gone", func(ctx context.Context) (bool, string) {
			ok, err := exists(ctx, kmd.Dynamic(), karmada.PropagationPolicyResource, ns, "serve-import")
			return !ok && err == nil, fmt.Sprint(ok, err)
		})
		// Karmada v1.18.2 keeps what a deleted policy propagated: it only
		// releases the resource templates (pkg/detector/detector.go,
		// handlePolicyDeletion: "The relevant ResourceBinding will continue
		// to exist until the resource template is gone"). So member2 keeps
		// the import, and DNS keeps answering. Once the template no longer
		// bears the policy's permanent-id label, Karmada has handled the
		// deletion.
		waitFor(t, within, "ServiceImport serve in karmada-apiserver released by the deleted policy", func(ctx context.Context) (bool, string) {
			si, err := kmd.Dynamic().Resource(serviceImportResource).Namespace(ns).Get(ctx, "serve", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			id := si.GetLabels()["propagationpolicy.karmada.io/permanent-id"]
			return id == "", "permanent-id " + id
		})
		if ok, err := exists(t.Context(), member2Dyn, serviceImportResource, ns, "serve"); !ok || err != nil {
			t.Errorf("member2: ServiceImport serve gone after its policy was deleted (%v)", err)
		}
		with2.await(t, 5*time.Second, name, dns.TypeA, answer{dns.RcodeSuccess, []string{a(name, derivedIP)}})
		t.Logf("withdraw: Karmada removed the import policy in %s; once it released the import, member2 still has ServiceImport serve and %s still answers %s (%s after the delete)",
			took.Round(time.Millisecond), name, derivedIP, time.Since(deleted).Round(time.Millisecond))
	})

	t.Run("delete the ServiceImport", func(t *testing.T) {
		deleted := time.Now()
		deleteFromKarmada(t, serviceImportResource, ns, "serve")
		waitFor(t, within, "member2: ServiceImport serve gone", func(ctx context.Context) (bool, string) {
			ok, err := exists(ctx, member2Dyn, serviceImportResource, ns, "serve")
			return !ok && err == nil, fmt.Sprint(ok, err)
		})
		importGone := time.Since(deleted)
		waitFor(t, within, "member2: Service derived-serve gone", func(ctx context.Context) (bool, string) {
			svc, seen := getService(ctx, member2, ns, "derived-serve")
			return svc == nil && strings.Contains(seen, "not found"), seen
		})
		derivedGone := time.Since(deleted)
		with2.await(t, within, name, dns.TypeA, nxdomain)
		with2.await(t, within, setName, dns.TypeA, nxdomain)
		t.Logf("withdraw: after deleting ServiceImport serve from karmada-apiserver, member2 lost the import in %s, derived-serve in %s; %s answers NXDOMAIN %s after the delete",
			importGone.Round(time.Millisecond), derivedGone.Round(time.Millisecond), name, time.Since(deleted).Round(time.Millisecond))
		// member1 still answers its own serve.
		sameWire(t, with1, without1, name, dns.TypeA)
	})

	t.Run("import again", func(t *testing.T) {
		reimported := time.Now()
		applyGuide(t, "import", ns)
		derivedIP = waitImported(t, ns, karmada.Member2, member2, member2Dyn)
		with2.await(t, within, name, dns.TypeA, answer{dns.RcodeSuccess, []string{a(name, derivedIP)}})
		with2.await(t, within, setName, dns.TypeA, answer{dns.RcodeSuccess, []string{a(setName, derivedIP)}})
		t.Logf("re-import: %s answers %s again %s after the import was applied", name, derivedIP, time.Since(reimported).Round(time.Millisecond))
	})

	t.Run("delete the ServiceExport", func(t *testing.T) {
		deleted := time.Now()
		deleteFromKarmada(t, serviceExportResource, ns, "serve")
		waitFor(t, within, "member2: EndpointSlices of derived-serve gone", func(ctx context.Context) (bool, string) {
			got, err := endpointSlices(ctx, member2, ns, "derived-serve")
			return err == nil && len(got) == 0, fmt.Sprint(describeSlices(got), err)
		})
		slicesGone := time.Since(deleted)
		// Karmada leaves the import and derived-serve in member2
		// (pkg/controllers/mcs/service_import_controller.go deletes
		// derived-NAME only with its ServiceImport): the name keeps its
		// address, now without endpoints, as a Service without Pods does.
		// Nothing marks that Karmada's controllers are done with the
		// delete: watch that it stays so for 5 s.
		want := answer{dns.RcodeSuccess, []string{a(name, derivedIP)}}
		poll.Throughout(t, 5*time.Second, fmt.Sprintf("member2 keeps ServiceImport serve and Service derived-serve, and %s answers %s", name, want), func() (bool, string) {
			if ok, err := exists(t.Context(), member2Dyn, serviceImportResource, ns, "serve"); !ok {
				return false, fmt.Sprint("ServiceImport serve: ", err)
			}
			if svc, seen := getService(t.Context(), member2, ns, "derived-serve"); svc == nil {
				return false, "Service derived-serve: " + seen
			}
			for _, proto := range []string{"udp", "tcp"} {
				if got := describe(with2.query(t, proto, name, dns.TypeA)); got.String() != want.String() {
					return false, proto + ": " + got.String()
				}
			}
			return true, ""
		})
		t.Logf("withdraw: after deleting ServiceExport serve, member2 lost derived-serve's EndpointSlices in %s; the import and derived-serve stay, and %s still answers %s",
			slicesGone.Round(time.Millisecond), name, derivedIP)

		exported := time.Now()
		applyGuide(t, "export", ns)
		waitImportedSlices(t, ns, member2)
		t.Logf("re-export: derived-serve's EndpointSlices back in member2 %s after the export was applied", time.Since(exported).Round(time.Millisecond))
	})
}

// waitImported waits until Karmada has put ServiceImport serve and Service
// derived-serve (with EndpointSlices) in namespace ns of member, checks them
// against what the guide says Karmada writes, and returns derived-serve's
// ClusterIP there.
func waitImported(t *testing.T, ns, member string, client kubernetes.Interface, dyn dynamic.Interface) string {
	t.Helper()
	start := time.Now()
	waitFor(t, within, member+": ServiceImport serve", func(ctx context.Context) (bool, string) {
		ok, err := exists(ctx, dyn, serviceImportResource, ns, "serve")
		return ok, fmt.Sprint(err)
	})
	importAt := time.Since(start)
	var derived *corev1.Service
	waitFor(t, within, member+": Service derived-serve", func(ctx context.Context) (bool, string) {
		svc, seen := getService(ctx, client, ns, "derived-serve")
		derived = svc
		return svc != nil, seen
	})
	derivedAt := time.Since(start)
	waitImportedSlices(t, ns, client)
	t.Logf("%s: ServiceImport serve after %s, Service derived-serve after %s (ClusterIP %s), its EndpointSlices after %s",
		member, importAt.Round(time.Millisecond), derivedAt.Round(time.Millisecond), derived.Spec.ClusterIP, time.Since(start).Round(time.Millisecond))

	si, err := dyn.Resource(serviceImportResource).Namespace(ns).Get(t.Context(), "serve", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if typ, _, _ := unstructured.NestedString(si.Object, "spec", "type"); typ != "ClusterSetIP" {
		t.Errorf("%s: ServiceImport serve has type %q, want ClusterSetIP", member, typ)
	}
	if ips, _, _ := unstructured.NestedStringSlice(si.Object, "spec", "ips"); len(ips) != 0 {
		t.Errorf("%s: ServiceImport serve has spec.ips %v; Karmada leaves them empty", member, ips)
	}
	ip := derived.Spec.ClusterIP
	if !inRange(ip, member) {
		t.Errorf("%s: derived-serve has ClusterIP %s, not from %s's own range %s", member, ip, member, karmada.ServiceRanges[member])
	}
	if inKarmada, err := kmd.Kube().CoreV1().Services(ns).Get(t.Context(), "derived-serve", metav1.GetOptions{}); err == nil && inKarmada.Spec.ClusterIP == ip {
		t.Errorf("%s: derived-serve has karmada-apiserver's ClusterIP %s", member, ip)
	}
	return ip
}

// waitImportedSlices waits until member's EndpointSlices of derived-serve are
// the one Karmada collected from member1: named imported-member1-SLICE,
// labelled as pkg/controllers/mcs/endpointslice_controller.go labels them,
// with serve's endpoint.
func waitImportedSlices(t *testing.T, ns string, client kubernetes.Interface) {
	t.Helper()
	waitFor(t, within, "EndpointSlice imported-member1-serve-7fk2p of derived-serve", func(ctx context.Context) (bool, string) {
		got, err := endpointSlices(ctx, client, ns, "derived-serve")
		if err != nil {
			return false, err.Error()
		}
		ok := len(got) == 1 && got[0].Name == "imported-member1-serve-7fk2p" &&
			got[0].Labels[discovery.LabelManagedBy] == managedByKarmadaCollect &&
			len(got[0].Endpoints) == 1 && slices.Equal(got[0].Endpoints[0].Addresses, []string{servePodIP})
		return ok, describeSlices(got)
	})
}

// checkImportPolicy checks what karmada-webhook set on the guide's import
// policy: propagateDeps, because it selects a ServiceImport, and the
// permanent id that Karmada's controllers track it by.
func checkImportPolicy(t *testing.T, ns string) {
	t.Helper()
	policy, err := kmd.Dynamic().Resource(karmada.PropagationPolicyResource).Namespace(ns).Get(t.Context(), "serve-import", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if deps, _, _ := unstructured.NestedBool(policy.Object, "spec", "propagateDeps"); !deps {
		t.Error("PropagationPolicy serve-import: karmada-webhook did not set propagateDeps")
	}
	if policy.GetLabels()["propagationpolicy.karmada.io/permanent-id"] == "" {
		t.Error("PropagationPolicy serve-import: karmada-webhook did not set the permanent-id label")
	}
}
