//go:build linux

package clusterse2e

import (
	"bufio"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-mcs/coredns-mcs/test/internal/node"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
	"github.com/coredns-mcs/coredns-mcs/test/internal/process"
	"github.com/coredns-mcs/coredns-mcs/test/internal/testbin"
)

// lighthouseYAML is what the Lighthouse agent writes in every cluster of
// the clusterset for `serve` exported from member1 (the shapes of
// test/e2e/testdata/interop/lighthouse/10-web-clustersetip.yaml): the
// aggregated ServiceImport without spec.ips, and member1's EndpointSlice
// whose only endpoint is member1's ClusterIP of serve.
func lighthouseYAML(clusterIP string) string {
	return fmt.Sprintf(`apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ServiceImport
metadata:
  name: serve
  namespace: default
spec:
  type: ClusterSetIP
  ports:
    - name: http
      protocol: TCP
      port: 80
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: serve-m1x7k
  namespace: default
  labels:
    endpointslice.kubernetes.io/managed-by: lighthouse-agent.submariner.io
    lighthouse.submariner.io/sourceNamespace: default
    multicluster.kubernetes.io/source-cluster: member1
    multicluster.kubernetes.io/service-name: serve
    lighthouse.submariner.io/is-headless: "false"
addressType: IPv4
endpoints:
  - addresses:
      - %s
    conditions:
      ready: true
ports:
  - name: http
    protocol: TCP
    port: 80
`, clusterIP)
}

// TestTraffic: serve runs in member1 only; pods in member2 reach it by
// serve.default.svc.cluster.local through the imports Lighthouse and the
// mcs-api reference controller write, and member1's pods reach their own.
// Then serve runs in both, member2's is scaled to 0 and back, and the
// failover is measured from a pod in member2 calling the same name every
// 200 ms.
func TestTraffic(t *testing.T) {
	w := startWorld(t)
	w.apply(0, serveYAML(1))
	w.waitAvailable(w.members[0], "default", "serve")
	for i := range w.members {
		w.startClient(i)
	}
	svc, err := w.members[0].Client.CoreV1().Services("default").Get(w.ctx, "serve", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	member1IP := svc.Spec.ClusterIP

	t.Run("lighthouse", func(t *testing.T) {
		// Lighthouse writes the import in the exporting cluster too.
		w.apply(0, lighthouseYAML(member1IP))
		w.apply(1, lighthouseYAML(member1IP))
		w.expectDig(1, "serve.default.svc.cluster.local", member1IP)
		w.expectGet(1, "serve.default.svc.cluster.local", 0)
		t.Logf("cluster start to the first cross-cluster response: %.1fs", time.Since(w.started).Seconds())
		w.expectGet(1, "serve.default", 0)
		w.expectGet(1, "serve.default.svc.clusterset.local", 0)
		w.expectGet(0, "serve.default.svc.cluster.local", 0)
		w.expectGet(0, "serve.default", 0)
		w.expectGet(0, "serve.default.svc.clusterset.local", 0)
		w.kubectl(0, "delete", "serviceimport", "serve")
		w.kubectl(0, "delete", "endpointslice", "serve-m1x7k")
		w.kubectl(1, "delete", "serviceimport", "serve")
		w.kubectl(1, "delete", "endpointslice", "serve-m1x7k")
	})

	t.Run("mcs-api", func(t *testing.T) { w.mcsAPI(t) })
	t.Run("failover", func(t *testing.T) { w.failover(t, member1IP) })
}

// expectDig waits until `dig +short NAME` in member i's client pod answers
// exactly ip (the cache of the Corefile may hold an older answer for up to
// its TTL).
func (w *world) expectDig(i int, name, ip string) {
	w.t.Helper()
	poll.Eventually(w.t, time.Minute, fmt.Sprintf("%s: dig %s answers %s", memberName(i), name, ip), func() (bool, string) {
		out, err := w.members[i].Kubectl(w.ctx, "", "exec", "client", "--", "dig", "+short", "+search", name)
		return err == nil && strings.TrimSpace(out) == ip, fmt.Sprintf("%q, %v", out, err)
	})
	w.t.Logf("%s: dig +short +search %s -> %s", memberName(i), name, ip)
}

// mcsAPI runs the mcs-api reference controller (the mcs set of
// test/testbin) against member2, gives it what the mcs-api e2e suite gives
// it (test/e2e/testdata/interop/mcs-api/10-inputs.yaml: a v1beta1
// ServiceImport and member1's EndpointSlice copied with the single label
// multicluster.kubernetes.io/service-name), and calls serve through the
// ClusterSetIP it makes: the ClusterIP of the derived Service, whose
// endpoints are member1's pods.
func (w *world) mcsAPI(t *testing.T) {
	dir, err := testbin.Dir("mcs", "servicecontroller")
	if err != nil {
		t.Fatalf("the mcs-api controller is required: %v", err)
	}
	m := w.members[1]
	controller, err := process.Start(process.Spec{
		Name:    "servicecontroller",
		Path:    filepath.Join(dir, "servicecontroller"),
		Args:    []string{"--kubeconfig=" + m.ControlPlane.Kubeconfig, "--metrics-addr=0"},
		LogPath: filepath.Join(w.work, "servicecontroller.log"),
		NetNS:   m.NetNS,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("servicecontroller log:\n%s", process.LogTail(controller.LogPath, 30))
		}
		if err := controller.Stop(5 * time.Second); err != nil && !controller.Exited() {
			t.Error(err)
		}
	}()
	slices1, err := w.members[0].Client.DiscoveryV1().EndpointSlices("default").List(w.ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=serve"})
	if err != nil || len(slices1.Items) != 1 {
		t.Fatalf("member1's EndpointSlices of serve: %v, %v", slices1, err)
	}
	copied := slices1.Items[0]
	copied.ObjectMeta = metav1.ObjectMeta{Name: "serve-7tq2d", Namespace: "default", Labels: map[string]string{"multicluster.kubernetes.io/service-name": "serve"}}
	w.apply(1, `apiVersion: multicluster.x-k8s.io/v1beta1
kind: ServiceImport
metadata:
  name: serve
  namespace: default
spec:
  type: ClusterSetIP
  ports:
    - name: http
      protocol: TCP
      port: 80
`)
	if _, err := m.Client.DiscoveryV1().EndpointSlices("default").Create(w.ctx, &copied, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The controller names the derived Service in the import's annotation.
	var derived *corev1.Service
	poll.Eventually(t, time.Minute, "a derived Service of the mcs-api controller, with a ClusterIP", func() (bool, string) {
		out, err := m.Kubectl(w.ctx, "", "get", "serviceimports.v1beta1.multicluster.x-k8s.io", "serve", "-o", "jsonpath={.metadata.annotations.multicluster\\.kubernetes\\.io/derived-service}")
		name := strings.TrimSpace(out)
		if name == "" {
			return false, fmt.Sprintf("no derived-service annotation (%v)", err)
		}
		s, err := m.Client.CoreV1().Services("default").Get(w.ctx, name, metav1.GetOptions{})
		if err != nil || s.Spec.ClusterIP == "" {
			return false, fmt.Sprintf("Service %s: %v", name, err)
		}
		derived = s
		return true, ""
	})
	t.Logf("member2: the mcs-api controller derived Service %s, ClusterIP %s", derived.Name, derived.Spec.ClusterIP)
	w.expectDig(1, "serve.default.svc.cluster.local", derived.Spec.ClusterIP)
	w.expectGet(1, "serve.default.svc.cluster.local", 0)
	w.expectGet(1, "serve.default", 0)
	w.expectGet(1, "serve.default.svc.clusterset.local", 0)
	w.kubectl(1, "delete", "serviceimports.v1beta1.multicluster.x-k8s.io", "serve")
	w.kubectl(1, "delete", "endpointslice", "serve-7tq2d")
	w.kubectl(1, "delete", "service", derived.Name, "--ignore-not-found")
}

// failover: serve runs in both clusters, member2 imports member1's (the
// Lighthouse shape), and member2's serve is scaled to 0 and back.
func (w *world) failover(t *testing.T, member1IP string) {
	w.apply(1, serveYAML(1))
	w.waitAvailable(w.members[1], "default", "serve")
	w.apply(1, lighthouseYAML(member1IP))
	w.measureFailover(t, func(replicas int) {
		w.kubectl(1, "scale", "deployment", "serve", fmt.Sprintf("--replicas=%d", replicas))
	})
}

// measureFailover runs a pod in member2 that calls
// serve.default.svc.cluster.local every 200 ms with a 1 s timeout, while
// serve runs in both clusters and member2 imports member1's. Its own pods
// answer; when scale(0) leaves member2 without them, member1's answer (the
// Corefile's failover); after scale(1), its own again. It logs the times
// and the requests lost.
func (w *world) measureFailover(t *testing.T, scale func(replicas int)) {
	m := w.members[1]
	w.kubectl(1, "run", "caller", "--restart=Never", "--image="+node.DNSUtilsImage, "--image-pull-policy=Never", "--",
		"sh", "-c", `while true; do timeout 1 wget -qO- http://serve.default.svc.cluster.local 2>/dev/null || echo FAIL; sleep 0.2; done`)
	w.kubectl(1, "wait", "--for=condition=Ready", "pod/caller", "--timeout=120s")
	defer w.kubectl(1, "delete", "pod", "caller", "--wait=false")
	local := " on " + m.Layout.Name
	remote := " on " + w.members[0].Layout.Name
	w.waitLog(1, "caller", local, 3)
	scaled := time.Now()
	scale(0)
	w.waitLog(1, "caller", remote, 5)
	back := time.Now()
	scale(1)
	w.waitLog(1, "caller", local, 5)

	calls := w.calls(1, "caller")
	away := summarize(calls, scaled, local, remote)
	home := summarize(calls, back, remote, local)
	t.Logf("Corefile: cache 30, and the plugin's default TTL of 5 s: an answer is cached up to 5 s")
	t.Logf("member2's serve scaled to 0: last local response %+.2fs, first response from member1 %+.2fs after the scale: failover %.2fs, %d of %d requests lost in between",
		away.lastOld, away.firstNew, away.firstNew-away.lastOld, away.lost, away.between)
	t.Logf("member2's serve back to 1: last response from member1 %+.2fs, first local response %+.2fs after the scale, %d of %d requests lost in between",
		home.lastOld, home.firstNew, home.lost, home.between)
	if away.firstNew < 0 || away.lastOld > away.firstNew || home.firstNew < 0 {
		t.Errorf("no clean switch seen: away %+v, home %+v", away, home)
	}
}

// call is one request of the caller pod: when kubelet logged it, and the
// body or FAIL.
type call struct {
	at   time.Time
	body string
}

// calls reads the caller's log with kubelet's timestamps.
func (w *world) calls(i int, pod string) []call {
	w.t.Helper()
	raw, err := w.members[i].Client.CoreV1().Pods("default").GetLogs(pod, &corev1.PodLogOptions{Timestamps: true}).DoRaw(w.ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	var out []call
	s := bufio.NewScanner(strings.NewReader(string(raw)))
	for s.Scan() {
		stamp, body, ok := strings.Cut(s.Text(), " ")
		if !ok {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, stamp)
		if err != nil {
			continue
		}
		out = append(out, call{at, body})
	}
	return out
}

// waitLog waits until the last n calls of pod in member i all answered
// with bodies ending in suffix.
func (w *world) waitLog(i int, pod, suffix string, n int) {
	w.t.Helper()
	poll.Eventually(w.t, time.Minute, fmt.Sprintf("%s: the last %d calls of %s ending in %q", memberName(i), n, pod, suffix), func() (bool, string) {
		calls := w.calls(i, pod)
		if len(calls) >= n && !slices.ContainsFunc(calls[len(calls)-n:], func(c call) bool { return !strings.HasSuffix(c.body, suffix) }) {
			return true, ""
		}
		return false, fmt.Sprintf("calls %+v", calls[max(0, len(calls)-10):])
	})
}

// switchover is what the calls show after a change at `from`: the last
// answer from the old side and the first from the new one (seconds after
// from), and the calls lost (FAIL) between them, of `between`.
type switchover struct {
	lastOld, firstNew float64
	lost, between     int
}

func summarize(calls []call, from time.Time, old, new string) switchover {
	s := switchover{lastOld: -1, firstNew: -1}
	first := -1
	for i, c := range calls {
		if c.at.Before(from) {
			continue
		}
		if strings.HasSuffix(c.body, new) {
			s.firstNew = c.at.Sub(from).Seconds()
			first = i
			break
		}
	}
	if first < 0 {
		return s
	}
	last := -1
	for i := first - 1; i >= 0; i-- {
		if strings.HasSuffix(calls[i].body, old) {
			s.lastOld = calls[i].at.Sub(from).Seconds()
			last = i
			break
		}
	}
	for _, c := range calls[last+1 : first] {
		s.between++
		if c.body == "FAIL" {
			s.lost++
		}
	}
	return s
}
