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
	"k8s.io/client-go/kubernetes"

	"github.com/coredns-mcs/coredns-mcs/test/internal/karmada"
)

// TestMultiClusterService: with the MultiClusterService feature gate on, the
// guide's MultiClusterService makes Karmada create Service serve in member2
// itself, next to the import of the walkthrough. That Service is local to
// member2 and wins: member2's answers are those of a server without the
// plugin. With failover, when the EndpointSlices Karmada dispatched to member2
// have no ready endpoint, the import answers (derived-serve's ClusterIP), and
// the local Service wins again once they are ready.
func TestMultiClusterService(t *testing.T) {
	needKarmada(t)
	ctx := t.Context()
	restarted := time.Now()
	if err := kmd.RestartControllerManager(ctx, "MultiClusterService=true"); err != nil {
		t.Fatalf("restart karmada-controller-manager with MultiClusterService=true: %v", err)
	}
	t.Logf("karmada-controller-manager restarted with MultiClusterService=true, members Ready, in %s", time.Since(restarted).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := kmd.RestartControllerManager(context.Background(), ""); err != nil {
			t.Errorf("restart karmada-controller-manager with the default gates: %v", err)
		}
	})

	// A namespace of its own, created in karmada-apiserver: Karmada's
	// namespace controller creates it in the members.
	const ns = "shop"
	if _, err := kmd.Kube().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	member1, _ := memberClient(t, karmada.Member1)
	member2, member2Dyn := memberClient(t, karmada.Member2)
	for _, m := range []string{karmada.Member1, karmada.Member2} {
		kube, _ := memberClient(t, m)
		waitFor(t, within, m+": namespace "+ns, func(ctx context.Context) (bool, string) {
			_, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return err == nil, fmt.Sprint(err)
		})
	}

	with2 := startCoreDNS(t, "member2", kmd.Member(karmada.Member2).Kubeconfig, true)
	without2 := startCoreDNS(t, "member2 without multicluster", kmd.Member(karmada.Member2).Kubeconfig, false)
	name := "serve." + ns + ".svc.cluster.local."

	// The walkthrough, in this namespace.
	applyGuide(t, "serve", ns)
	waitFor(t, within, "Service serve in member1", func(ctx context.Context) (bool, string) {
		svc, seen := getService(ctx, member1, ns, "serve")
		return svc != nil, seen
	})
	writeServeEndpoints(t, ns, servePodIP, true)
	applyGuide(t, "export", ns)
	applyGuide(t, "import", ns)
	derivedIP := waitImported(t, ns, karmada.Member2, member2, member2Dyn)
	with2.await(t, within, name, dns.TypeA, answer{dns.RcodeSuccess, []string{a(name, derivedIP)}})

	// The MultiClusterService.
	applied := time.Now()
	applyGuide(t, "multiclusterservice", ns)
	var local *corev1.Service
	waitFor(t, within, "member2: Service serve", func(ctx context.Context) (bool, string) {
		svc, seen := getService(ctx, member2, ns, "serve")
		local = svc
		return svc != nil, seen
	})
	serviceAt := time.Since(applied)
	localIP := local.Spec.ClusterIP
	if !inRange(localIP, karmada.Member2) {
		t.Errorf("member2: serve has ClusterIP %s, not from member2's range", localIP)
	}
	dispatched := "member1-serve-7fk2p" // PROVIDER-SLICE, ensureEndpointSliceWork
	waitDispatched(t, ns, member2, dispatched, true)
	t.Logf("MultiClusterService: member2 got Service serve (ClusterIP %s) after %s, the dispatched EndpointSlice %s after %s",
		localIP, serviceAt.Round(time.Millisecond), dispatched, time.Since(applied).Round(time.Millisecond))

	// The local Service wins, untouched.
	with2.await(t, within, name, dns.TypeA, answer{dns.RcodeSuccess, []string{a(name, localIP)}})
	t.Logf("MultiClusterService: %s answers member2's own serve (%s) %s after the MultiClusterService was applied",
		name, localIP, time.Since(applied).Round(time.Millisecond))
	localQuestions := []struct {
		name  string
		qtype uint16
	}{{name, dns.TypeA}, {name, dns.TypeAAAA}, {name, dns.TypeSRV}, {"_http._tcp." + name, dns.TypeSRV}}
	for _, q := range localQuestions {
		sameWire(t, with2, without2, q.name, q.qtype)
	}

	// failover: member1's endpoint turns not ready; Karmada dispatches
	// that to member2, where serve then has no ready endpoint.
	unready := time.Now()
	writeServeEndpoints(t, ns, servePodIP, false)
	waitDispatched(t, ns, member2, dispatched, false)
	dispatchedAt := time.Since(unready)
	with2.await(t, within, name, dns.TypeA, answer{dns.RcodeSuccess, []string{a(name, derivedIP)}})
	without2.await(t, 5*time.Second, name, dns.TypeA, answer{dns.RcodeSuccess, []string{a(name, localIP)}})
	t.Logf("failover: Karmada dispatched the not-ready endpoint to member2 in %s; %s answers the import (%s) %s after the change in member1",
		dispatchedAt.Round(time.Millisecond), name, derivedIP, time.Since(unready).Round(time.Millisecond))

	ready := time.Now()
	writeServeEndpoints(t, ns, servePodIP, true)
	waitDispatched(t, ns, member2, dispatched, true)
	with2.await(t, within, name, dns.TypeA, answer{dns.RcodeSuccess, []string{a(name, localIP)}})
	for _, q := range localQuestions {
		sameWire(t, with2, without2, q.name, q.qtype)
	}
	t.Logf("failover: ready again, %s answers member2's own serve %s after the change in member1", name, time.Since(ready).Round(time.Millisecond))
}

// waitDispatched waits until member has the EndpointSlice name of serve that
// Karmada's dispatch controller writes (labels of
// pkg/controllers/multiclusterservice/endpointslice_dispatch_controller.go),
// with serve's endpoint in the given readiness.
func waitDispatched(t *testing.T, ns string, member kubernetes.Interface, name string, ready bool) {
	t.Helper()
	waitFor(t, within, fmt.Sprintf("dispatched EndpointSlice %s of serve with ready=%v", name, ready), func(ctx context.Context) (bool, string) {
		got, err := endpointSlices(ctx, member, ns, "serve")
		if err != nil {
			return false, err.Error()
		}
		i := slices.IndexFunc(got, func(s discovery.EndpointSlice) bool { return s.Name == name })
		if i < 0 {
			return false, describeSlices(got)
		}
		s := got[i]
		ok := s.Labels[discovery.LabelManagedBy] == managedByKarmadaDispatch &&
			len(s.Endpoints) == 1 && slices.Equal(s.Endpoints[0].Addresses, []string{servePodIP}) &&
			(s.Endpoints[0].Conditions.Ready == nil || *s.Endpoints[0].Conditions.Ready) == ready
		return ok, strings.TrimSpace(describeSlices(got))
	})
}
