package multicluster

import (
	"context"
	"errors"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ede returns the Extended DNS Errors of m's reply to name, and the reply.
func ede(t *testing.T, m *Multicluster, name string, edns bool) ([]*dns.EDNS0_EDE, *dns.Msg) {
	t.Helper()
	r := new(dns.Msg)
	r.SetQuestion(name, dns.TypeA)
	if edns {
		r.SetEdns0(1232, false)
	}
	rec := dnstest.NewRecorder(&test.ResponseWriter{})
	if _, err := m.ServeDNS(context.Background(), rec, r); err != nil {
		t.Fatal(err)
	}
	if rec.Msg == nil {
		t.Fatalf("%s: no reply written", name)
	}
	var found []*dns.EDNS0_EDE
	if opt := rec.Msg.IsEdns0(); opt != nil {
		for _, o := range opt.Option {
			if e, ok := o.(*dns.EDNS0_EDE); ok {
				found = append(found, e)
			}
		}
	}
	return found, rec.Msg
}

func TestExtendedDNSErrors(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: mcsGroup, Resource: importResource}, "",
		errors.New(`User "system:serviceaccount:kube-system:coredns" cannot watch resource "serviceimports" in API group "multicluster.x-k8s.io" at the cluster scope`))
	for _, tc := range []struct {
		name     string
		prepare  func(m *Multicluster, h *health)
		infoCode uint16
		text     string
	}{
		{"not synced", func(m *Multicluster, _ *health) { m.synced.Store(false) }, dns.ExtendedErrorCodeNotReady, "multicluster caches not synced"},
		{"no CRD", func(_ *Multicluster, h *health) {
			h.set(reasonCRD, errCRDMissing.Error(), dns.ExtendedErrorCodeOther, "ServiceImport CRD not installed")
		}, dns.ExtendedErrorCodeOther, "ServiceImport CRD not installed"},
		{"RBAC", func(m *Multicluster, h *health) {
			(&watcher{health: h}).guard(reasonImportRBAC, importResource)(forbidden)
		}, dns.ExtendedErrorCodeOther, "RBAC forbids watch on serviceimports"},
		{"two causes: the first reason's", func(m *Multicluster, h *health) {
			(&watcher{health: h}).guard(reasonSliceRBAC, "endpointslices")(apierrors.NewForbidden(schema.GroupResource{Group: "discovery.k8s.io", Resource: "endpointslices"}, "", errors.New(`cannot list resource "endpointslices"`)))
			(&watcher{health: h}).guard(reasonImportRBAC, importResource)(forbidden)
		}, dns.ExtendedErrorCodeOther, "RBAC forbids list on endpointslices"},
		{"API server unreachable", func(_ *Multicluster, h *health) {
			h.set(reasonCRD, "discovery: connection refused", dns.ExtendedErrorCodeNetworkError, "Kubernetes API unreachable")
		}, dns.ExtendedErrorCodeNetworkError, "Kubernetes API unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newTestPlugin(t, testImports, testLocal)
			h := newHealth(func(d *degradation) { m.degraded.Store(d) })
			tc.prepare(m, h)
			got, resp := ede(t, m, "web.ns1.svc.clusterset.local.", true)
			if resp.Rcode != dns.RcodeServerFailure || len(got) != 1 || got[0].InfoCode != tc.infoCode || got[0].ExtraText != tc.text {
				t.Errorf("rcode %s, EDE %v, want SERVFAIL with one EDE %d %q", dns.RcodeToString[resp.Rcode], got, tc.infoCode, tc.text)
			}
			// Without EDNS0 in the query, no OPT in the reply.
			if _, resp := ede(t, m, "web.ns1.svc.clusterset.local.", false); resp.Rcode != dns.RcodeServerFailure || resp.IsEdns0() != nil {
				t.Errorf("without EDNS0: rcode %s, OPT %v", dns.RcodeToString[resp.Rcode], resp.IsEdns0())
			}
		})
	}
	// Negative answers stay as they are.
	m, _ := newTestPlugin(t, testImports, testLocal)
	if got, resp := ede(t, m, "nope.ns1.svc.clusterset.local.", true); resp.Rcode != dns.RcodeNameError || len(got) != 0 {
		t.Errorf("NXDOMAIN: rcode %s, EDE %v, want no EDE", dns.RcodeToString[resp.Rcode], got)
	}
}
