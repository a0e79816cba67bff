//go:build linux

package node

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNodeRunsPods starts a node and runs a pod from the dnsutils image;
// its log comes back through kube-apiserver and kubelet.
func TestNodeRunsPods(t *testing.T) {
	n := ForTest(t, Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "hello", Image: DNSUtilsImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", "echo hello from $(hostname); cat /etc/resolv.conf; sleep 3600"},
			}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}
	start := time.Now()
	if _, err := n.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		out, err := n.Client.CoreV1().Pods("default").GetLogs("hello", &corev1.PodLogOptions{}).DoRaw(ctx)
		if err == nil && strings.Contains(string(out), "hello from hello") {
			t.Logf("pod log after %.1fs:\n%s", time.Since(start).Seconds(), out)
			if !strings.Contains(string(out), "nameserver "+ClusterDNS) {
				t.Errorf("the pod's resolv.conf does not name %s", ClusterDNS)
			}
			return
		}
		select {
		case <-ctx.Done():
			p, _ := n.Client.CoreV1().Pods("default").Get(context.Background(), "hello", metav1.GetOptions{})
			t.Fatalf("no log from the pod (%v); pod status %+v", err, p.Status)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
