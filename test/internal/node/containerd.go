//go:build linux

package node

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// containerdConfig is a private containerd 1.6 with CRI: its own socket,
// root and state, runc through the v2 shim on cgroupfs, the overlay
// snapshotter, and the CNI bridge plugin from Debian's
// containernetworking-plugins. restrict_oom_score_adj: runc cannot lower a
// container's oom_score_adj where CAP_SYS_RESOURCE is not in the bounding
// set (as on the machines these tests run on), which fails every sandbox;
// with it, containerd asks for nothing below its own value.
const containerdConfig = `version = 2
root = "{{dir}}/root"
state = "{{dir}}/state"
disabled_plugins = [
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.devmapper",
]

[grpc]
  address = "{{dir}}/containerd.sock"

[ttrpc]
  address = "{{dir}}/containerd.sock.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "{{dir}}/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{{pause}}"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "{{runc}}"
        Root = "{{dir}}/runc"
        SystemdCgroup = false

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{{cni}}"
    conf_dir = "{{base}}/cni/net.d"

  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "{{dir}}/certs.d"
`

// hostsConfig is containerd's registry host configuration (hosts.toml in
// config_path/HOST/, the format of containerd 1.6's docs/hosts.md) for a
// registry served over plain HTTP at HOST, as a registry on the node's own
// loopback is.
const hostsConfig = `server = "http://{{host}}"

[host."http://{{host}}"]
  capabilities = ["pull", "resolve"]
`

// cniConfig is the pod network: the bridge cni0 in the node's namespace,
// which is the pods' gateway, and addresses from PodCIDR. Without ipMasq,
// pods reach the node's address with their own. hairpinMode lets a pod
// reach a Service whose endpoint is itself.
const cniConfig = `{
  "cniVersion": "1.0.0",
  "name": "coredns-mcs-node",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "{{podCIDR}}"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "{{base}}/cni/ipam"
      }
    }
  ]
}
`

func render(template string, values map[string]string) string {
	for k, v := range values {
		template = strings.ReplaceAll(template, "{{"+k+"}}", v)
	}
	return template
}

// startContainerd writes containerd's and CNI's configuration and starts
// containerd in the node's namespaces.
func (n *Node) startContainerd(ctx context.Context) error {
	runc, err := exec.LookPath("runc")
	if err != nil {
		return err
	}
	containerd, err := exec.LookPath("containerd")
	if err != nil {
		return err
	}
	values := map[string]string{
		"dir": n.Layout.containerdDir(), "base": n.Layout.dir, "pause": PauseImage, "runc": runc,
		"cni": cniPluginDir, "podCIDR": n.Layout.PodCIDR,
	}
	if err := os.MkdirAll(n.Layout.containerdDir(), 0o700); err != nil {
		return err
	}
	config := filepath.Join(n.Layout.containerdDir(), "config.toml")
	if err := os.WriteFile(config, []byte(render(containerdConfig, values)), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(n.Layout.dir, "cni", "net.d", "10-bridge.conflist"), []byte(render(cniConfig, values)), 0o644); err != nil {
		return err
	}
	for _, host := range n.opts.Registries {
		dir := filepath.Join(n.Layout.containerdDir(), "certs.d", host)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(render(hostsConfig, map[string]string{"host": host})), 0o644); err != nil {
			return err
		}
	}
	p, err := n.startDaemon("containerd", containerd, "--config="+config)
	if err != nil {
		return err
	}
	return p.WaitReady(ctx, 30*time.Second, func(ctx context.Context) error {
		_, err := n.ctr(ctx, nil, "version")
		return err
	})
}

// ctr runs containerd's ctr against the node's containerd, in the
// namespace of the CRI plugin, with stdin from input (if not nil).
func (n *Node) ctr(ctx context.Context, input io.Reader, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "ctr", append([]string{"--address", n.Layout.containerdSocket(), "--namespace", "k8s.io"}, args...)...)
	cmd.Stdin = input
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return out, nil
}

// ImportImage imports an image archive (docker save or OCI layout in a
// tar) into the node's containerd as `kind load image-archive` does: the
// command line of LoadImageArchive in pkg/cluster/nodeutils/util.go of
// sigs.k8s.io/kind v0.33.0, the archive on stdin. Pods use the image with
// imagePullPolicy Never or IfNotPresent.
func (n *Node) ImportImage(ctx context.Context, archive string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = n.ctr(ctx, f, "images", "import", "--all-platforms", "--digests", "--snapshotter=overlayfs", "-")
	return err
}
