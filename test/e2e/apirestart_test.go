package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// restartBound is how soon after kube-apiserver is ready again a change
// made through it must be answered: the plugin retries a refused watch
// within 3 s and lists again at once after the new API server's 410 Gone;
// the rest is room for a loaded machine. Before, the relist waited the
// back-off client-go's reflector had grown during the outage: after 10 s
// down, 12.8 s at the least.
const restartBound = 10 * time.Second

// TestAPIServerRestarts restarts kube-apiserver four times in a row, as an
// upgrade of the control plane does, after outages of 10 s and 2 s, the last
// time with etcd restarted too. While it is down, the plugin says so (api_unreachable), stays
// ready, is never degraded, and answers from its cache; after each restart
// a new import, a changed import, a new EndpointSlice and a deleted import
// are answered within restartBound of the API server being ready.
func TestAPIServerRestarts(t *testing.T) {
	// Its own API server, no fixed port, most of it waiting: it runs beside
	// the package's other parallel tests, after the serial ones.
	t.Parallel()
	c := startOwnCluster(t, controlplane.Options{InstallCRDs: true})
	ns := c.namespace(t, "restarts")
	ctx := context.Background()
	imports := c.mcs.MulticlusterV1beta1().ServiceImports(ns)
	c.createImport(t, newImport(ns, "web", "10.42.20.1"))
	c.createImport(t, newImport(ns, "gone-0", "10.42.22.100"))
	db := newImport(ns, "db")
	db.Spec.Type = mcsv1beta1.Headless
	c.createImport(t, db)
	c.importSlice(t, ns, "db", "db-0", "10.42.21.100")
	s := startWith(t, c.cp.Kubeconfig)
	name := func(svc string) string { return svc + "." + ns + ".svc.clusterset.local." }
	expectAddresses(t, s.server, name("web"), dns.TypeA, propagation, "10.42.20.1")
	expectAddresses(t, s.server, name("gone-0"), dns.TypeA, propagation, "10.42.22.100")
	dbAddresses := []string{"10.42.21.100"}
	expectAddresses(t, s.server, name("db"), dns.TypeA, propagation, dbAddresses...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("coredns log:\n%s", s.log.String())
		}
	})

	// Long outages, over which client-go's reflector back-off grows, and
	// short ones; their back-off is reset only every two minutes.
	outages := []time.Duration{10 * time.Second, 2 * time.Second, 10 * time.Second, 2 * time.Second}
	web := "10.42.20.1"
	for i := 1; i <= len(outages); i++ {
		withEtcd := i == len(outages)
		what := fmt.Sprintf("restart %d after %s", i, outages[i-1])
		if withEtcd {
			what += " (etcd too)"
		}
		stopped := time.Now()
		if err := c.cp.StopAPIServer(); err != nil {
			t.Fatalf("%s: stop kube-apiserver: %v", what, err)
		}
		// While the API server is down the plugin says so, and nothing
		// else changes: ready, not degraded, the cache answers.
		poll.Eventually(t, 30*time.Second, what+": coredns_multicluster_api_unreachable is 1", func() (bool, string) {
			v := s.metric(t, "coredns_multicluster_api_unreachable", "")
			return v == 1, fmt.Sprint(v)
		})
		s.expectHealthy(t, what+", API server down")
		expectAddresses(t, s.server, name("web"), dns.TypeA, time.Second, web)
		if withEtcd {
			if err := c.cp.RestartEtcd(ctx); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
		// The outage lasts its time on purpose.
		time.Sleep(time.Until(stopped.Add(outages[i-1])))
		startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		err := c.cp.StartAPIServer(startCtx)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		ready := time.Now()

		// The changes, made as soon as the API server is back.
		fresh := fmt.Sprintf("fresh-%d", i)
		c.createImport(t, newImport(ns, fresh, fmt.Sprintf("10.42.22.%d", i)))
		si, err := imports.Get(ctx, "web", meta.GetOptions{})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		web = fmt.Sprintf("10.42.20.%d", i+1)
		si.Spec.IPs = []string{web}
		if _, err := imports.Update(ctx, si, meta.UpdateOptions{}); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		slice := fmt.Sprintf("10.42.21.%d", i)
		c.importSlice(t, ns, "db", fmt.Sprintf("db-%d", i), slice)
		dbAddresses = append(dbAddresses, slice)
		gone := fmt.Sprintf("gone-%d", i-1)
		if err := imports.Delete(ctx, gone, meta.DeleteOptions{}); err != nil {
			t.Fatalf("%s: delete %s: %v", what, gone, err)
		}
		c.createImport(t, newImport(ns, fmt.Sprintf("gone-%d", i), "10.42.22.100"))

		deadline := restartBound - time.Since(ready)
		expectAddresses(t, s.server, name(fresh), dns.TypeA, deadline, fmt.Sprintf("10.42.22.%d", i))
		expectAddresses(t, s.server, name("web"), dns.TypeA, restartBound-time.Since(ready), web)
		expectAddresses(t, s.server, name("db"), dns.TypeA, restartBound-time.Since(ready), dbAddresses...)
		expectRcode(t, s.server, name(gone), dns.TypeA, restartBound-time.Since(ready), dns.RcodeNameError)
		// What the next restart deletes is answered before it.
		expectAddresses(t, s.server, name(fmt.Sprintf("gone-%d", i)), dns.TypeA, restartBound-time.Since(ready), "10.42.22.100")
		t.Logf("%s: the new, changed and deleted imports and the new slice answered %s after the API server was ready",
			what, time.Since(ready).Round(time.Millisecond))
		poll.Eventually(t, restartBound, what+": coredns_multicluster_api_unreachable is 0", func() (bool, string) {
			v := s.metric(t, "coredns_multicluster_api_unreachable", "")
			return v == 0, fmt.Sprint(v)
		})
		s.expectHealthy(t, what+", API server back")
	}
	if strings.Contains(s.log.String(), "Degraded") {
		t.Errorf("restarts of the API server made the plugin degraded:\n%s", s.log.String())
	}
}

// expectHealthy checks that the server is ready and not degraded for any
// reason: an API server that is away, or starting, is neither.
func (s resilientServer) expectHealthy(t *testing.T, when string) {
	t.Helper()
	if !s.isReady() {
		t.Errorf("%s: /ready does not answer 200", when)
	}
	for _, reason := range []string{"crd", "rbac_serviceimports", "rbac_endpointslices", "rbac_services"} {
		if v := s.metric(t, "coredns_multicluster_degraded", `reason="`+reason+`"`); v > 0 {
			t.Errorf("%s: coredns_multicluster_degraded{reason=%q} = %v, want 0", when, reason, v)
		}
	}
}

// importSlice creates an EndpointSlice of the headless import svc with one
// ready endpoint at ip, as an MCS controller does.
func (c *ownCluster) importSlice(t *testing.T, ns, svc, name, ip string) {
	t.Helper()
	slice := &discovery.EndpointSlice{
		ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
			mcsv1beta1.LabelServiceName:   svc,
			mcsv1beta1.LabelSourceCluster: "remote",
		}},
		AddressType: discovery.AddressTypeIPv4,
		Endpoints:   []discovery.Endpoint{{Addresses: []string{ip}, Conditions: discovery.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discovery.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](80)}},
	}
	if _, err := c.kube.DiscoveryV1().EndpointSlices(ns).Create(context.Background(), slice, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
