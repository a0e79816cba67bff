//go:build linux

package node

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrPrerequisite marks errors about what the machine lacks (root, a
// Debian package, the kube binaries), as opposed to a node that failed.
var ErrPrerequisite = errors.New("node prerequisite missing")

// kubeBinaries are what the node runs from the kube set.
var kubeBinaries = []string{"kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "kubectl"}

// cniPluginDir is where Debian's containernetworking-plugins installs the
// plugins.
const cniPluginDir = "/usr/lib/cni"

// commands the node runs, and the Debian package of each.
var commands = []struct{ name, pkg string }{
	{"containerd", "containerd"},
	{"containerd-shim-runc-v2", "containerd"},
	{"ctr", "containerd"},
	{"runc", "runc"},
	{"iptables", "iptables"},
	{"iptables-restore", "iptables"},
	{"conntrack", "conntrack"},
	{"busybox", "busybox-static"},
	{"dig", "dnsutils"},
	{"gcc", "gcc"},
	{"musl-gcc", "musl-tools"},
	{"ldd", "libc-bin"},
	{"ip", "iproute2"},
	{"nsenter", "util-linux"},
	{"mount", "mount"},
	{"sleep", "coreutils"},
}

// CheckPrerequisites reports what this machine lacks to run a node, as an
// error wrapping ErrPrerequisite.
func CheckPrerequisites() error {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	pkgs := map[string]bool{}
	for _, c := range commands {
		if _, err := exec.LookPath(c.name); err != nil {
			missing = append(missing, c.name)
			pkgs[c.pkg] = true
		}
	}
	for _, plugin := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join(cniPluginDir, plugin)); err != nil {
			missing = append(missing, "CNI plugin "+plugin)
			pkgs["containernetworking-plugins"] = true
		}
	}
	if busybox, err := exec.LookPath("busybox"); err == nil {
		if err := checkStatic(busybox); err != nil {
			missing = append(missing, err.Error())
			pkgs["busybox-static"] = true
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var install []string
	for pkg := range pkgs {
		install = append(install, pkg)
	}
	hint := ""
	if len(install) > 0 {
		hint = fmt.Sprintf(" (apt-get install %s)", strings.Join(install, " "))
	}
	return fmt.Errorf("%w: %s%s", ErrPrerequisite, strings.Join(missing, ", "), hint)
}

// checkStatic reports an error when the program at path needs shared
// libraries: the dnsutils image copies busybox alone.
func checkStatic(path string) error {
	out, err := exec.Command("ldd", path).CombinedOutput()
	if err == nil && !strings.Contains(string(out), "not a dynamic executable") {
		return fmt.Errorf("%s is not static", path)
	}
	return nil
}
