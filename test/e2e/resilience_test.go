package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coredns-mcs/coredns-mcs/plugin/multicluster/dnscheck"
	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"

	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// The tests in this file need a control plane of their own: without the
// CRDs, with only v1alpha1, or one whose API server they stop. Each takes
// seconds to start, so they run one after the other.

// ownCluster is a control plane of one test, with admin clients.
type ownCluster struct {
	cp   *controlplane.ControlPlane
	kube kubernetes.Interface
	mcs  mcsclient.Interface
}

func startOwnCluster(t *testing.T, opts controlplane.Options) *ownCluster {
	t.Helper()
	cp := controlplane.ForTest(t, opts)
	return &ownCluster{cp: cp, kube: kubernetes.NewForConfigOrDie(cp.Config), mcs: mcsclient.NewForConfigOrDie(cp.Config)}
}

func (c *ownCluster) namespace(t *testing.T, prefix string) string {
	t.Helper()
	ns, err := c.kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: meta.ObjectMeta{GenerateName: prefix + "-"}}, meta.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func (c *ownCluster) service(t *testing.T, ns, name string) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}},
	}
	out, err := c.kube.CoreV1().Services(ns).Create(context.Background(), svc, meta.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (c *ownCluster) createImport(t *testing.T, si *mcsv1beta1.ServiceImport) {
	t.Helper()
	if _, err := c.mcs.MulticlusterV1beta1().ServiceImports(si.Namespace).Create(context.Background(), si, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// grant binds a new ClusterRole with rules to user.
func (c *ownCluster) grant(t *testing.T, name, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: meta.ObjectMeta{Name: name}, Rules: rules}
	if _, err := c.kube.RbacV1().ClusterRoles().Create(ctx, role, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: meta.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := c.kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// resilienceCorefile is the kube-system Corefile with metrics, reading the
// API server of kubeconfig, with options added to the multicluster block;
// without multicluster when plain is set.
func resilienceCorefile(kubeconfig string, metricsPort int, plain bool, options ...string) string {
	multicluster := withOptions(`
    multicluster clusterset.local in-addr.arpa ip6.arpa {
        kubeconfig `+kubeconfig+`
        fallback cluster.local
    }`, options...)
	if plain {
		multicluster = ""
	}
	return `.:{{.Port}} {
    ready 127.0.0.1:{{.ReadyPort}}
    prometheus 127.0.0.1:` + strconv.Itoa(metricsPort) + multicluster + `
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig ` + kubeconfig + `
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
}
`
}

// resilientServer is a coredns process and the URL of its metrics.
type resilientServer struct {
	*server
	metrics string
}

// startWith runs coredns with multicluster against kubeconfig, and waits
// until /ready says 200.
func startWith(t *testing.T, kubeconfig string) resilientServer {
	t.Helper()
	port := harness.FreePort(t)
	s := startServer(t, resilienceCorefile(kubeconfig, port, false), true)
	return resilientServer{server: s, metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", port)}
}

// startWithout runs the same server without multicluster.
func startWithout(t *testing.T, kubeconfig string) *server {
	t.Helper()
	return startServer(t, resilienceCorefile(kubeconfig, harness.FreePort(t), true), true)
}

// metric returns the value of the sample name{labels} (name alone when
// labels is empty), or -1 if absent.
func (s resilientServer) metric(t *testing.T, name, labels string) float64 {
	t.Helper()
	resp, err := http.Get(s.metrics)
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	prefix := name + "{" + labels + "} "
	if labels == "" {
		prefix = name + " "
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %v", sc.Text(), err)
			}
			return f
		}
	}
	return -1
}

func (s resilientServer) expectDegraded(t *testing.T, reason string, want float64) {
	t.Helper()
	if got := s.metric(t, "coredns_multicluster_degraded", `reason="`+reason+`"`); got != want {
		t.Errorf("coredns_multicluster_degraded{reason=%q} = %v, want %v", reason, got, want)
	}
}

// expectLoggedOnce checks that the log says what is missing and how to fix
// it, once, however often it was retried.
func expectLoggedOnce(t *testing.T, s *server, what string) {
	t.Helper()
	if n := strings.Count(s.log.String(), what); n != 1 {
		t.Errorf("the log says %q %d times, want once:\n%s", what, n, s.log.String())
	}
}

type question struct {
	name  string
	qtype uint16
}

// expectSameAnswers checks that with and without answer every question
// identically, over UDP and TCP.
func expectSameAnswers(t *testing.T, with, without *server, questions []question) {
	t.Helper()
	for _, q := range questions {
		for _, proto := range []string{"udp", "tcp"} {
			poll.Eventually(t, 5*time.Second, q.name+" "+dns.TypeToString[q.qtype]+" over "+proto+" answered as without multicluster", func() (bool, string) {
				a, b := with.query(t, proto, q.name, q.qtype), without.query(t, proto, q.name, q.qtype)
				return sameAnswer(a, b), "\nwith:\n" + a.String() + "\nwithout:\n" + b.String()
			})
		}
	}
}

// sameAnswer reports whether two servers' replies are identical apart from
// the message ID and the cluster.local SOA serial. The kubernetes plugin's
// serial is the time its own cache saw the last change, so two independent
// processes, with or without multicluster, may be a second apart; more than
// that is a real difference.
func sameAnswer(a, b *dns.Msg) bool {
	a, b = a.Copy(), b.Copy()
	a.Id, b.Id = 0, 0
	for _, sections := range [][2][]dns.RR{{a.Answer, b.Answer}, {a.Ns, b.Ns}} {
		for i := range min(len(sections[0]), len(sections[1])) {
			sa, okA := sections[0][i].(*dns.SOA)
			sb, okB := sections[1][i].(*dns.SOA)
			if okA && okB && max(sa.Serial, sb.Serial)-min(sa.Serial, sb.Serial) <= 2 {
				sa.Serial, sb.Serial = 0, 0
			}
		}
	}
	return a.String() == b.String()
}

// expectServfail checks that name answers SERVFAIL over UDP and TCP.
func expectServfail(t *testing.T, s *server, name string) {
	t.Helper()
	for _, proto := range []string{"udp", "tcp"} {
		if r := s.query(t, proto, name, dns.TypeA); r.Rcode != dns.RcodeServerFailure {
			t.Errorf("%s over %s: %s, want SERVFAIL while degraded", name, proto, dns.RcodeToString[r.Rcode])
		}
	}
}

// localQuestions are cluster-local names that must be answered exactly as
// without multicluster while it is degraded: a Service, an import with no
// local Service (passed on), and what the kubernetes plugin owns.
func localQuestions(ns string) []question {
	return []question{
		{"web." + ns + ".svc.cluster.local.", dns.TypeA},
		{"web." + ns + ".svc.cluster.local.", dns.TypeSRV},
		{"_http._tcp.web." + ns + ".svc.cluster.local.", dns.TypeSRV},
		{"db." + ns + ".svc.cluster.local.", dns.TypeA},
		{"kubernetes.default.svc.cluster.local.", dns.TypeA},
		{"cluster.local.", dns.TypeSOA},
	}
}

// TestDegradedWithoutCRDs starts coredns on a cluster without the mcs-api
// CRDs: it is ready, cluster.local is untouched, the clusterset zone says
// SERVFAIL; installing the CRDs heals it without a restart.
func TestDegradedWithoutCRDs(t *testing.T) {
	c := startOwnCluster(t, controlplane.Options{})
	ns := c.namespace(t, "nocrd")
	svc := c.service(t, ns, "web")

	with := startWith(t, c.cp.Kubeconfig) // ready: startServer waited for /ready 200
	without := startWithout(t, c.cp.Kubeconfig)

	clusterset := "db." + ns + ".svc.clusterset.local."
	expectDegradedLocalIntact(t, with, without, ns, svc, "crd")
	expectLoggedOnce(t, with.server, "the ServiceImport CRD (serviceimports.multicluster.x-k8s.io) is not installed, or serves neither v1beta1 nor v1alpha1: apply manifests/crds")
	expectDigEDE(t, with.server, clusterset, "EDE: 0 (Other): (ServiceImport CRD not installed)")

	start := time.Now()
	if err := c.cp.InstallCRDs(context.Background()); err != nil {
		t.Fatal(err)
	}
	served := time.Since(start)
	created := time.Now()
	c.createImport(t, newImport(ns, "db", "10.42.7.1"))
	c.createImport(t, newImport(ns, "web", "10.42.7.2"))
	expectAddresses(t, with.server, clusterset, dns.TypeA, 10*time.Second, "10.42.7.1")
	t.Logf("CRDs served %s after installing them; the import answered %s after its creation", served.Round(time.Millisecond), time.Since(created).Round(time.Millisecond))

	expectAddresses(t, with.server, "db."+ns+".svc.cluster.local.", dns.TypeA, propagation, "10.42.7.1")
	// Local still wins.
	expectAddresses(t, with.server, "web."+ns+".svc.cluster.local.", dns.TypeA, propagation, svc.Spec.ClusterIP)
	with.expectDegraded(t, "crd", 0)
	expectLoggedOnce(t, with.server, "Recovered: crd")
	expectLoggedOnce(t, with.server, "Watching ServiceImports multicluster.x-k8s.io/v1beta1")
}

// expectDegradedLocalIntact checks a degraded server next to one without
// multicluster: db.NS answers SERVFAIL in clusterset.local, cluster.local
// answers as without the plugin (the local Service web its ClusterIP), the
// server is ready, and the degraded metric holds reason.
func expectDegradedLocalIntact(t *testing.T, with resilientServer, without *server, ns string, svc *corev1.Service, reason string) {
	t.Helper()
	clusterset := "db." + ns + ".svc.clusterset.local."
	expectRcode(t, with.server, clusterset, dns.TypeA, 10*time.Second, dns.RcodeServerFailure)
	expectServfail(t, with.server, clusterset)
	expectSameAnswers(t, with.server, without, localQuestions(ns))
	if got := addresses(with.query(t, "udp", "web."+ns+".svc.cluster.local.", dns.TypeA)); len(got) != 1 || got[0] != svc.Spec.ClusterIP {
		t.Errorf("local Service: %v, want its ClusterIP %s", got, svc.Spec.ClusterIP)
	}
	if !with.isReady() {
		t.Error("degraded server not ready")
	}
	with.expectDegraded(t, reason, 1)
}

// TestDegradedWithoutRBAC runs coredns as a user that may read what the
// kubernetes plugin reads, and EndpointSlices, but not ServiceImports; then
// the permission is granted, and the plugin heals by itself.
func TestDegradedWithoutRBAC(t *testing.T) {
	// Its own API server, no fixed port, most of it waiting: it runs beside
	// the package's other parallel tests, after the serial ones.
	t.Parallel()
	c := startOwnCluster(t, controlplane.Options{InstallCRDs: true})
	const user = "coredns-without-mcs"
	c.grant(t, "coredns-base", user,
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"services", "endpoints", "namespaces", "pods"}, Verbs: []string{"list", "watch"}},
		rbacv1.PolicyRule{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
	)
	kubeconfig, err := c.cp.KubeconfigFor(user)
	if err != nil {
		t.Fatal(err)
	}
	ns := c.namespace(t, "norbac")
	svc := c.service(t, ns, "web")
	c.createImport(t, newImport(ns, "db", "10.42.8.1"))
	c.createImport(t, newImport(ns, "web", "10.42.8.2"))

	started := time.Now()
	with := startWith(t, kubeconfig)
	without := startWithout(t, kubeconfig)

	clusterset := "db." + ns + ".svc.clusterset.local."
	expectDegradedLocalIntact(t, with, without, ns, svc, "rbac_serviceimports")
	expectLoggedOnce(t, with.server, "not allowed to list and watch serviceimports: grant the ClusterRole in manifests/rbac")
	expectDigEDE(t, with.server, clusterset, "EDE: 0 (Other): (RBAC forbids list on serviceimports)")

	// Stay refused for 30 s on purpose: by then client-go's own backoff
	// would wait 13 to 50 s before the next attempt; the plugin's, 5 s.
	time.Sleep(time.Until(started.Add(30 * time.Second)))
	granted := time.Now()
	c.grant(t, "coredns-mcs", user, rbacv1.PolicyRule{APIGroups: []string{mcsv1beta1.GroupName}, Resources: []string{"serviceimports"}, Verbs: []string{"list", "watch"}})
	expectAddresses(t, with.server, clusterset, dns.TypeA, 10*time.Second, "10.42.8.1")
	t.Logf("healed %s after the permission was granted", time.Since(granted).Round(time.Millisecond))
	expectAddresses(t, with.server, "db."+ns+".svc.cluster.local.", dns.TypeA, propagation, "10.42.8.1")
	expectAddresses(t, with.server, "web."+ns+".svc.cluster.local.", dns.TypeA, propagation, svc.Spec.ClusterIP)
	with.expectDegraded(t, "rbac_serviceimports", 0)
	expectLoggedOnce(t, with.server, "Recovered: rbac_serviceimports")
}

// TestV1alpha1Only runs coredns on a cluster that serves ServiceImport at
// v1alpha1 only, as Karmada installs it.
func TestV1alpha1Only(t *testing.T) {
	c := startOwnCluster(t, controlplane.Options{InstallCRDs: true, CRDVersions: []string{"v1alpha1"}})
	ns := c.namespace(t, "alpha")
	ctx := context.Background()
	alpha := func(name, ip string) {
		t.Helper()
		si := &mcsv1alpha1.ServiceImport{
			ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name},
			Spec: mcsv1alpha1.ServiceImportSpec{
				Type:  mcsv1alpha1.ClusterSetIP,
				IPs:   []string{ip},
				Ports: []mcsv1alpha1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}},
			},
		}
		if _, err := c.mcs.MulticlusterV1alpha1().ServiceImports(ns).Create(ctx, si, meta.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	alpha("listed", "10.42.9.1")

	with := startWith(t, c.cp.Kubeconfig)
	expectAddresses(t, with.server, "listed."+ns+".svc.clusterset.local.", dns.TypeA, propagation, "10.42.9.1")
	alpha("watched", "10.42.9.2")
	expectAddresses(t, with.server, "watched."+ns+".svc.clusterset.local.", dns.TypeA, propagation, "10.42.9.2")
	expectAddresses(t, with.server, "watched."+ns+".svc.cluster.local.", dns.TypeA, propagation, "10.42.9.2")
	expectLoggedOnce(t, with.server, "Watching ServiceImports multicluster.x-k8s.io/v1alpha1")
	if strings.Contains(with.log.String(), "Degraded") {
		t.Errorf("degraded on a v1alpha1 cluster:\n%s", with.log.String())
	}
}

// outageTally counts the answers to steady queries.
type outageTally struct {
	mu                             sync.Mutex
	queries, servfail, lost, wrong int
	examples                       []string
}

func (o *outageTally) add(kind *int, example string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.queries++
	if kind != nil {
		*kind++
		if len(o.examples) < 5 {
			o.examples = append(o.examples, example)
		}
	}
}

// TestAPIServerOutage stops kube-apiserver for 10 s under a query every
// 50 ms: cached names keep their answers, with not one SERVFAIL. Once it is
// back, a new import and a changed one are answered. (Nothing can be created
// through an API server that is down, so "created during the outage" is
// taken as "created as soon as it returns".)
func TestAPIServerOutage(t *testing.T) {
	// Its own API server, no fixed port, most of it waiting: it runs beside
	// the package's other parallel tests, after the serial ones.
	t.Parallel()
	c := startOwnCluster(t, controlplane.Options{InstallCRDs: true})
	ns := c.namespace(t, "outage")
	local := c.service(t, ns, "local")
	c.createImport(t, newImport(ns, "web", "10.42.10.1"))
	s := startWith(t, c.cp.Kubeconfig)

	steady := []struct {
		name string
		want string
	}{
		{"web." + ns + ".svc.clusterset.local.", "10.42.10.1"},
		{"web." + ns + ".svc.cluster.local.", "10.42.10.1"},
		{"local." + ns + ".svc.cluster.local.", local.Spec.ClusterIP},
	}
	for _, q := range steady {
		expectAddresses(t, s.server, q.name, dns.TypeA, propagation, q.want)
	}

	var tally outageTally
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		client := dns.Client{Net: "udp", Timeout: 2 * time.Second}
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			q := steady[i%len(steady)]
			m := new(dns.Msg)
			m.SetQuestion(q.name, dns.TypeA)
			r, _, err := client.Exchange(m, s.addr)
			switch {
			case err != nil:
				tally.add(&tally.lost, fmt.Sprintf("%s: %v", q.name, err))
			case dnscheck.Distinct(r) != nil:
				tally.add(&tally.wrong, fmt.Sprintf("%s: %v", q.name, dnscheck.Distinct(r)))
			case r.Rcode == dns.RcodeServerFailure:
				tally.add(&tally.servfail, q.name+": SERVFAIL")
			case r.Rcode != dns.RcodeSuccess || strings.Join(addresses(r), ",") != q.want:
				tally.add(&tally.wrong, fmt.Sprintf("%s: %s %v", q.name, dns.RcodeToString[r.Rcode], addresses(r)))
			default:
				tally.add(nil, "")
			}
		}
	}()

	stopped := time.Now()
	if err := c.cp.StopAPIServer(); err != nil {
		t.Fatalf("stop kube-apiserver: %v", err)
	}
	if _, err := c.kube.Discovery().ServerVersion(); err == nil {
		t.Fatal("the API server still answers after StopAPIServer")
	}
	// The outage lasts at least 10 s on purpose; the queries run all along.
	time.Sleep(time.Until(stopped.Add(10 * time.Second)))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.cp.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	close(stop)
	<-done
	t.Logf("API server down for %s; %d queries meanwhile: %d SERVFAIL, %d unanswered, %d wrong",
		restarted.Sub(stopped).Round(time.Millisecond), tally.queries, tally.servfail, tally.lost, tally.wrong)
	if tally.servfail+tally.lost+tally.wrong > 0 || tally.queries < 150 {
		t.Errorf("want at least 150 queries, all answered as before the outage; got %d queries, %d SERVFAIL, %d unanswered, %d wrong: %v",
			tally.queries, tally.servfail, tally.lost, tally.wrong, tally.examples)
	}
	if strings.Contains(s.log.String(), "Degraded") {
		t.Errorf("an unreachable API server made the plugin degraded:\n%s", s.log.String())
	}

	c.createImport(t, newImport(ns, "fresh", "10.42.10.3"))
	si, err := c.mcs.MulticlusterV1beta1().ServiceImports(ns).Get(ctx, "web", meta.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	si.Spec.IPs = []string{"10.42.10.2"}
	if _, err := c.mcs.MulticlusterV1beta1().ServiceImports(ns).Update(ctx, si, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	expectAddresses(t, s.server, "fresh."+ns+".svc.clusterset.local.", dns.TypeA, 30*time.Second, "10.42.10.3")
	expectAddresses(t, s.server, "web."+ns+".svc.clusterset.local.", dns.TypeA, 30*time.Second, "10.42.10.2")
	t.Logf("after the restart, the new and the changed import answered %s after the change (%s after the API server was ready)",
		time.Since(changed).Round(time.Millisecond), time.Since(restarted).Round(time.Millisecond))
}

// TestMalformedImport creates, through the real API server, imports whose
// fields pass the CRD schema but are wrong for DNS: a string that is no IP
// address, ports out of range, an unknown protocol. The good parts are
// served, the bad ones logged once per object version; two addresses of one
// family are not malformed, and both answer. What the API server refuses
// (with the mcs-api CRD: more than two IPs, no or an unknown type, no name,
// an address of the wrong family in an EndpointSlice) cannot reach the
// plugin from it; the unit tests feed those through fakes.
func TestMalformedImport(t *testing.T) {
	ns := namespace(t, "malformed")
	ctx := context.Background()
	imports := mcs.MulticlusterV1beta1().ServiceImports(ns)

	refused := map[string]*mcsv1beta1.ServiceImport{
		"three IPs": newImport(ns, "three", "10.42.11.7", "10.42.11.8", "10.42.11.9"),
		"no type":   newImport(ns, "notype", "10.42.11.7"),
		"no name":   newImport(ns, "", "10.42.11.7"),
	}
	refused["no type"].Spec.Type = ""
	refused["an unknown type"] = newImport(ns, "lb", "10.42.11.7")
	refused["an unknown type"].Spec.Type = "LoadBalancer"
	for what, si := range refused {
		if _, err := imports.Create(ctx, si, meta.CreateOptions{}); err == nil {
			t.Errorf("the API server accepted an import with %s", what)
		}
	}
	mixed := &discovery.EndpointSlice{
		ObjectMeta:  meta.ObjectMeta{Namespace: ns, Name: "mixed", Labels: map[string]string{mcsv1beta1.LabelServiceName: "db", mcsv1beta1.LabelSourceCluster: "east"}},
		AddressType: discovery.AddressTypeIPv4,
		Endpoints:   []discovery.Endpoint{{Addresses: []string{"fd00::1"}}},
	}
	if _, err := kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, mixed, meta.CreateOptions{}); err == nil {
		t.Error("the API server accepted an IPv6 address in an IPv4 EndpointSlice")
	}

	s := startServer(t, corefileWith, true)
	odd := newImport(ns, "odd", "not-an-ip", "10.42.11.1")
	odd.Spec.Ports = append(odd.Spec.Ports,
		mcsv1beta1.ServicePort{Name: "big", Protocol: corev1.ProtocolTCP, Port: 70000},
		mcsv1beta1.ServicePort{Name: "zero", Protocol: corev1.ProtocolTCP, Port: 0},
		mcsv1beta1.ServicePort{Name: "icmp", Protocol: "ICMP", Port: 7})
	odd = createImport(t, odd)
	createImport(t, newImport(ns, "twofour", "10.42.11.2", "10.42.11.3"))

	name := "odd." + ns + ".svc.clusterset.local."
	expectAddresses(t, s, name, dns.TypeA, propagation, "10.42.11.1")
	expectAddresses(t, s, "twofour."+ns+".svc.clusterset.local.", dns.TypeA, propagation, "10.42.11.2", "10.42.11.3")
	for _, proto := range []string{"udp", "tcp"} {
		r := s.query(t, proto, name, dns.TypeSRV)
		if len(r.Answer) != 1 || r.Answer[0].(*dns.SRV).Port != 80 {
			t.Errorf("SRV over %s: %v, want port 80 only", proto, r.Answer)
		}
	}
	first := fmt.Sprintf("ServiceImport %s/odd (resourceVersion %s)", ns, odd.ResourceVersion)
	expectLoggedOnce(t, s, first)
	for _, part := range []string{`"not-an-ip" is not an IP address`, `port "big": number 70000 out of range`, `port "zero": number 0 out of range`,
		`unknown protocol "ICMP"`} {
		if !strings.Contains(s.log.String(), part) {
			t.Errorf("the log does not say %q:\n%s", part, s.log.String())
		}
	}

	// A new version with another bad address: logged once more.
	odd.Spec.IPs = []string{"10.42.11.4", "still-not-an-ip"}
	odd, err := imports.Update(ctx, odd, meta.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expectAddresses(t, s, name, dns.TypeA, propagation, "10.42.11.4")
	expectLoggedOnce(t, s, fmt.Sprintf("ServiceImport %s/odd (resourceVersion %s)", ns, odd.ResourceVersion))
	expectLoggedOnce(t, s, first)
}

// TestHostileQueries sends the binary every message of the FuzzServeDNS
// seed corpus (every query type and class, EDNS0 options, 255-octet names,
// 63-octet and binary labels, upper case, several or no questions) and some
// that are not DNS at all, over UDP and TCP. A query with one question gets
// a well-formed reply with its ID; anything may be dropped; and the server
// answers as before afterwards.
func TestHostileQueries(t *testing.T) {
	s := startServer(t, corefileWith, true)
	ns := namespace(t, "hostile")
	createImport(t, newImport(ns, "web", "10.42.12.1"))
	name := "web." + ns + ".svc.clusterset.local."
	expectAddresses(t, s, name, dns.TypeA, propagation, "10.42.12.1")

	dir := filepath.Join("..", "..", "plugin", "multicluster", "testdata", "fuzz", "FuzzServeDNS")
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	messages := map[string][]byte{
		"empty":                {},
		"short header":         {0x12, 0x34, 0x01},
		"header only":          {0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0},
		"pointer loop":         {0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0xc0, 0x0c, 0x00, 0x01, 0x00, 0x01},
		"label past end":       {0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0x3f, 'a', 'b'},
		"65535 questions":      {0x12, 0x34, 0x01, 0x00, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0x00, 0x00, 0x01, 0x00, 0x01},
		"a reply, not a query": {0x12, 0x34, 0x81, 0x80, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0x00, 0x00, 0x01, 0x00, 0x01},
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		_, value, _ := strings.Cut(strings.TrimSpace(string(data)), "\n")
		quoted, ok := strings.CutPrefix(value, "[]byte(")
		if !ok {
			t.Fatalf("%s: not a []byte corpus entry: %q", f.Name(), value)
		}
		wire, err := strconv.Unquote(strings.TrimSuffix(quoted, ")"))
		if err != nil {
			t.Fatalf("%s: %v", f.Name(), err)
		}
		messages["corpus "+f.Name()] = []byte(wire)
	}

	answered := 0
	for what, wire := range messages {
		req := new(dns.Msg)
		oneQuestion := req.Unpack(wire) == nil && !req.Response && len(req.Question) == 1
		for _, proto := range []string{"udp", "tcp"} {
			reply, err := sendRaw(proto, s.addr, wire)
			if err != nil {
				if oneQuestion {
					t.Errorf("%s over %s: no reply: %v", what, proto, err)
				}
				continue
			}
			r := new(dns.Msg)
			if err := r.Unpack(reply); err != nil {
				t.Errorf("%s over %s: the reply does not unpack: %v", what, proto, err)
				continue
			}
			if oneQuestion && (r.Id != req.Id || !r.Response) {
				t.Errorf("%s over %s: reply ID %d response %v, want ID %d and a response", what, proto, r.Id, r.Response, req.Id)
			}
			answered++
		}
	}
	t.Logf("%d messages, %d replies", 2*len(messages), answered)
	expectAddresses(t, s, name, dns.TypeA, propagation, "10.42.12.1")
	// The server recovers a plugin's panic into SERVFAIL: the log tells.
	if strings.Contains(s.log.String(), "panic") {
		t.Errorf("a query made the server panic:\n%s", s.log.String())
	}
}

// sendRaw sends wire as one DNS message over proto and returns the reply.
func sendRaw(proto, addr string, wire []byte) ([]byte, error) {
	conn, err := net.DialTimeout(proto, addr, time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(time.Second)); err != nil {
		return nil, err
	}
	if proto == "tcp" {
		wire = append([]byte{byte(len(wire) >> 8), byte(len(wire))}, wire...)
	}
	if _, err := conn.Write(wire); err != nil {
		return nil, err
	}
	if proto == "udp" {
		buf := make([]byte, dns.MaxMsgSize)
		n, err := conn.Read(buf)
		return buf[:n], err
	}
	var size [2]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return nil, err
	}
	reply := make([]byte, int(size[0])<<8|int(size[1]))
	_, err = io.ReadFull(conn, reply)
	return reply, err
}

// TestHugeImport: an import with thousands of ports (the CRD does not bound
// them) makes an SRV answer larger than any DNS message. Over UDP the reply
// is truncated with TC set; over TCP it still fits a message; nothing hangs.
func TestHugeImport(t *testing.T) {
	s := startServer(t, corefileWith, true)
	ns := namespace(t, "huge")
	si := newImport(ns, "wide", "10.42.13.1", "fd00::13:1")
	for p := range 3000 {
		si.Spec.Ports = append(si.Spec.Ports, mcsv1beta1.ServicePort{Name: fmt.Sprintf("port-%d", p), Protocol: corev1.ProtocolTCP, Port: int32(1000 + p)})
	}
	createImport(t, si)
	name := "wide." + ns + ".svc.clusterset.local."
	expectAddresses(t, s, name, dns.TypeA, 10*time.Second, "10.42.13.1")

	udp := s.query(t, "udp", name, dns.TypeSRV)
	if udp.Rcode != dns.RcodeSuccess || !udp.Truncated {
		t.Errorf("SRV over UDP: %s, truncated %v; want a truncated answer", dns.RcodeToString[udp.Rcode], udp.Truncated)
	}
	tcp := s.query(t, "tcp", name, dns.TypeSRV)
	if tcp.Rcode != dns.RcodeSuccess || len(tcp.Answer) == 0 {
		t.Errorf("SRV over TCP: %s with %d records; want an answer", dns.RcodeToString[tcp.Rcode], len(tcp.Answer))
	}
	t.Logf("SRV: %d records over UDP (truncated), %d over TCP (truncated %v)", len(udp.Answer), len(tcp.Answer), tcp.Truncated)
	expectAddresses(t, s, name, dns.TypeAAAA, propagation, "fd00::13:1")
}

// TestAPIServerDownAtStart starts coredns while kube-apiserver is down: the
// clusterset zone says SERVFAIL (nothing is known yet), and once the API
// server is up the plugin finds the CRD, syncs and answers, without a
// restart.
func TestAPIServerDownAtStart(t *testing.T) {
	// Its own API server, no fixed port, most of it waiting: it runs beside
	// the package's other parallel tests, after the serial ones.
	t.Parallel()
	c := startOwnCluster(t, controlplane.Options{InstallCRDs: true})
	ns := c.namespace(t, "late")
	c.createImport(t, newImport(ns, "web", "10.42.14.1"))
	if err := c.cp.StopAPIServer(); err != nil {
		t.Logf("stop kube-apiserver: %v", err)
	}

	s := startServer(t, resilienceCorefile(c.cp.Kubeconfig, harness.FreePort(t), false), false)
	name := "web." + ns + ".svc.clusterset.local."
	expectRcode(t, s, name, dns.TypeA, 10*time.Second, dns.RcodeServerFailure)
	expectDigEDE(t, s, name, "EDE: 23 (Network Error): (Kubernetes API unreachable)")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.cp.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	up := time.Now()
	expectAddresses(t, s, name, dns.TypeA, 30*time.Second, "10.42.14.1")
	t.Logf("answered %s after the API server was ready", time.Since(up).Round(time.Millisecond))
	poll.Eventually(t, 30*time.Second, "/ready 200", func() (bool, string) { return s.isReady(), "not ready" })
}

// expectDigEDE asks dig (which sends EDNS0) for name's A record and checks
// that the SERVFAIL it prints carries the Extended DNS Error ede, as dig
// shows it; without EDNS0, the reply has no OPT record at all.
func expectDigEDE(t *testing.T, s *server, name, ede string) {
	t.Helper()
	dig, err := exec.LookPath("dig")
	if err != nil {
		if harness.CI() {
			t.Fatalf("dig is needed in CI (apt-get install dnsutils): %v", err)
		}
		// The rest of the test holds without it.
		t.Logf("SKIP: the EDE as dig prints it: dig is needed (apt-get install dnsutils): %v", err)
		return
	}
	host, port, _ := strings.Cut(s.addr, ":")
	out, err := exec.Command(dig, "@"+host, "-p", port, "+time=2", "+tries=1", name, "A").CombinedOutput()
	if err != nil {
		t.Fatalf("dig: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "status: SERVFAIL") || !strings.Contains(string(out), ede) {
		t.Errorf("dig %s: want SERVFAIL with %q:\n%s", name, ede, out)
	} else {
		t.Logf("dig %s:\n%s", name, out)
	}
	out, err = exec.Command(dig, "@"+host, "-p", port, "+time=2", "+tries=1", "+noedns", name, "A").CombinedOutput()
	if err != nil {
		t.Fatalf("dig +noedns: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "status: SERVFAIL") || strings.Contains(string(out), "OPT PSEUDOSECTION") {
		t.Errorf("dig +noedns %s: want SERVFAIL without an OPT record:\n%s", name, out)
	}
}
