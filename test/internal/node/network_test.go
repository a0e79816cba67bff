//go:build linux

package node

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// TestConnectedClusters starts clusters 0 and 1 side by side and connects
// them: a pod of cluster 1 reaches an HTTP server pod of cluster 0 at its
// pod address and through cluster 0's ClusterIP, and before Connect it
// reaches neither. Stopping both leaves the machine as it was.
func TestConnectedClusters(t *testing.T) {
	Require(t)
	before := []machineState{readLayoutState(t, mustLayout(0)), readLayoutState(t, mustLayout(1))}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	nodes, err := StartClusters(ctx, 2, Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, n := range nodes {
			if err := n.Stop(); err != nil {
				t.Error(err)
			}
		}
	}()

	if nodes[0].Layout.PodCIDR == nodes[1].Layout.PodCIDR || nodes[0].Layout.ServiceCIDR == nodes[1].Layout.ServiceCIDR {
		t.Fatalf("the clusters share ranges: %+v, %+v", nodes[0].Layout, nodes[1].Layout)
	}

	if err := runPod(ctx, nodes[0].Client, "web", "mkdir -p /www && echo hello from $(hostname) > /www/index.html && exec httpd -f -p 8080 -h /www"); err != nil {
		t.Fatal(err)
	}
	if err := runPod(ctx, nodes[1].Client, "client", "sleep 3600"); err != nil {
		t.Fatal(err)
	}
	pod, err := nodes[0].Client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[0].Client.CoreV1().Pods("default").Patch(ctx, "web", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"app":"web"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	svc, err := nodes[0].Client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	get := func(url string) (string, error) {
		return nodes[1].Kubectl(ctx, "", "exec", "client", "--", "timeout", "2", "wget", "-qO-", url)
	}
	podURL := fmt.Sprintf("http://%s:8080/", pod.Status.PodIP)
	if out, err := get(podURL); err == nil {
		t.Fatalf("cluster 1 reached cluster 0's pod before Connect: %q", out)
	}

	net, err := Connect(ctx, nodes...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := net.Close(); err != nil {
			t.Error(err)
		}
	}()
	for _, url := range []string{podURL, "http://" + svc.Spec.ClusterIP + "/"} {
		poll.Eventually(t, 30*time.Second, "cluster 1 -> "+url+" answers hello from web", func() (bool, string) {
			out, err := get(url)
			return err == nil && strings.TrimSpace(out) == "hello from web", fmt.Sprintf("%q, %v", out, err)
		})
		t.Logf("cluster 1 -> %s: hello from web", url)
	}

	if err := net.Close(); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if err := n.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range nodes {
		checkLayoutRestored(t, n.Layout, before[i])
	}
}
