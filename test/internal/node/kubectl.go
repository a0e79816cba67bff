//go:build linux

package node

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
)

// Kubectl runs the kube set's kubectl as the cluster admin, inside the
// node's network namespace (where kube-apiserver listens), in the working
// directory dir (empty: the test's). It returns stdout; the error carries
// stderr.
func (n *Node) Kubectl(ctx context.Context, dir string, args ...string) (string, error) {
	return n.KubectlWithInput(ctx, dir, nil, args...)
}

// KubectlWithInput is Kubectl with stdin read from input, as in
// `... | kubectl apply -f -`.
func (n *Node) KubectlWithInput(ctx context.Context, dir string, input io.Reader, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(n.KubeDir, "kubectl"), args...)
	cmd.Dir = dir
	cmd.Stdin = input
	cmd.Env = append(os.Environ(), "KUBECONFIG="+n.ControlPlane.Kubeconfig)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := n.NetNS.Do(cmd.Start); err != nil {
		return "", fmt.Errorf("kubectl: %w", err)
	}
	if err := cmd.Wait(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// PodProcesses returns the pids of the processes of a pod's containers
// (and of its sandbox), found by the pod's cgroup, which kubelet names
// after the pod's UID.
func (n *Node) PodProcesses(podUID string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	marker := "/pod" + podUID + "/"
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		if err == nil && strings.Contains(string(data), "/"+n.Layout.cgroup+"/") && strings.Contains(string(data), marker) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// StartKubectl starts kubectl like Kubectl, in the background (for
// `kubectl port-forward`), with its output in the returned buffer. The
// caller stops it with cmd.Process.Kill and cmd.Wait.
func (n *Node) StartKubectl(ctx context.Context, args ...string) (*exec.Cmd, *harness.Output, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(n.KubeDir, "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+n.ControlPlane.Kubeconfig)
	out := &harness.Output{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := n.NetNS.Do(cmd.Start); err != nil {
		return nil, nil, fmt.Errorf("kubectl: %w", err)
	}
	return cmd, out, nil
}
