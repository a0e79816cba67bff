//go:build linux

package release

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-mcs/coredns-mcs/test/internal/node"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// pullNodeIndex is the node cluster of this package (test/internal/node's Layout):
// an index the node, swap and cluster tests leave alone, so that it never
// waits for their nodes.
const pullNodeIndex = node.MaxClusters - 2

// inNodeRegistry is where the node's containerd finds the registry: its own
// loopback, as a cluster's nodes reach a registry mirror on theirs.
const inNodeRegistry = "127.0.0.1:5000"

// pullOnNode runs the signed image, by the index digest cosign verified, on
// a real node (test/internal/node: kubelet, containerd 1.6, runc): containerd's
// registry host configuration (hosts.toml under config_path) names the
// registry, which pulls the node's platform from the index; no archive is
// imported. The registry runs on this machine's loopback; inside the node's
// network namespace this test listens on inNodeRegistry and passes each
// connection on to it.
func pullOnNode(t *testing.T, registry, repository string, index v1.Hash) {
	n := node.ForTest(t, node.Options{Index: pullNodeIndex, Registries: []string{inNodeRegistry}, Logf: t.Logf})
	l, err := n.NetNS.Listen("tcp", inNodeRegistry)
	if err != nil {
		t.Fatal(err)
	}
	var proxied sync.WaitGroup
	t.Cleanup(func() {
		l.Close()
		proxied.Wait()
	})
	var connections atomic.Int64
	proxied.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			connections.Add(1)
			proxied.Go(func() { forward(c, registry) })
		}
	})

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	if err := n.WaitServiceAccount(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	ref := inNodeRegistry + "/" + strings.TrimPrefix(repository, registry+"/") + "@" + index.String()
	pod := &corev1.Pod{
		ObjectMeta: meta.ObjectMeta{Name: "pulled", Namespace: "default"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "coredns", Image: ref, ImagePullPolicy: corev1.PullAlways,
				Args: []string{"-version"},
			}},
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: new(int64),
		},
	}
	pods := n.Client.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, pod, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var got *corev1.Pod
	poll.Eventually(t, 3*time.Minute, "the pod pulled from the registry runs to completion", func() (bool, string) {
		p, err := pods.Get(ctx, "pulled", meta.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got = p
		if p.Status.Phase == corev1.PodFailed {
			t.Fatalf("the pod failed: %s", podState(p))
		}
		return p.Status.Phase == corev1.PodSucceeded, string(p.Status.Phase) + ": " + podState(p)
	})
	logs, err := pods.GetLogs("pulled", &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s pulled and ran in %.1fs over %d connections to the registry: %s", ref, time.Since(start).Seconds(), connections.Load(), strings.TrimSpace(string(logs)))
	if !strings.Contains(string(logs), "coredns-mcs-"+version) || !strings.Contains(string(logs), "linux/amd64") {
		t.Errorf("the pulled image's coredns -version says %q, want coredns-mcs-%s on linux/amd64", logs, version)
	}
	if connections.Load() == 0 {
		t.Error("the node ran the image without a connection to the registry")
	}
	if s := got.Status.ContainerStatuses; len(s) != 1 || !strings.HasSuffix(s[0].ImageID, "@"+index.String()) {
		t.Errorf("the container's image is %+v, want the index %s that cosign verified", s, index)
	}
}

func podState(p *corev1.Pod) string {
	var states []string
	for _, s := range p.Status.ContainerStatuses {
		switch {
		case s.State.Waiting != nil:
			states = append(states, s.Name+" waiting: "+s.State.Waiting.Reason+" "+s.State.Waiting.Message)
		case s.State.Terminated != nil:
			states = append(states, s.Name+" terminated: "+s.State.Terminated.Reason+" "+s.State.Terminated.Message)
		case s.State.Running != nil:
			states = append(states, s.Name+" running")
		}
	}
	return strings.Join(states, "; ")
}

// forward passes a connection of the node's containerd on to the registry.
func forward(c net.Conn, registry string) {
	defer c.Close()
	r, err := net.Dial("tcp", registry)
	if err != nil {
		return
	}
	defer r.Close()
	done := make(chan struct{}, 2)
	go func() { io.Copy(r, c); r.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	go func() { io.Copy(c, r); c.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	<-done
	<-done
}
