//go:build linux

package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Kubectl runs the kube set's kubectl as the cluster admin, inside the
// node's network namespace (where kube-apiserver listens), in the working
// directory dir (empty: the test's). It returns stdout; the error carries
// stderr.
func (n *Node) Kubectl(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(n.KubeDir, "kubectl"), args...)
	cmd.Dir = dir
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
