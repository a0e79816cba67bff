//go:build linux

// Package node runs a real single-node Kubernetes v1.37.1 for end-to-end
// tests: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
// kubelet and kube-proxy (test/testbin's kube set), a private containerd
// with runc and the CNI bridge plugin (Debian's packages), and pods from
// images built here (there is no registry: every pod uses
// imagePullPolicy: Never).
//
// The whole node lives in a network namespace it creates (its address, the
// cni0 bridge, the pods' links, kube-proxy's iptables rules), so nothing
// reaches the machine's network and no rule of the machine is touched.
// containerd, kubelet and their mounts (container root filesystems, volumes,
// pod network namespaces, /run/containerd, /var/log/containers) live in a
// mount namespace of their own, which goes away with its last process. What
// is left on the machine is undone by Stop, and by the next Start after a
// killed run: the cgroup root in each hierarchy, the sysctls kubelet
// rewrites (kernel.panic and others), the node's directory and the
// processes of the node (daemons, containerd shims, containers).
//
// Several nodes run side by side, each a cluster of its own with names,
// addresses and ranges derived from its index (Layout); Connect joins them
// into one flat pod network. One node of each index runs at a time on a
// machine (its names are fixed): Start waits for that index's lock.
//
// Root only. Start needs from Debian: containerd, runc,
// containernetworking-plugins, iptables, conntrack, busybox-static, dnsutils
// (dig), gcc, musl-tools (musl-gcc), iproute2 and util-linux (nsenter).
package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"
	"github.com/coredns-mcs/coredns-mcs/test/internal/flock"
	"github.com/coredns-mcs/coredns-mcs/test/internal/netns"
	"github.com/coredns-mcs/coredns-mcs/test/internal/process"
	"github.com/coredns-mcs/coredns-mcs/test/internal/testbin"
)

// The names and addresses of cluster 0, the default single node (see
// Layout for the others).
const (
	// Name is the Node's name.
	Name = "mcs-node"
	// IP is the node's address, on the loopback interface of its network
	// namespace; kube-apiserver listens and is advertised there.
	IP = "10.240.0.1"
	// PodCIDR is the range the CNI bridge plugin gives pods addresses from.
	PodCIDR = "10.244.0.0/24"
	// ServiceCIDR is the Service ClusterIP range (IPv4 only).
	ServiceCIDR = "10.96.0.0/16"
	// ClusterDNS is the address kubelet writes into pods' resolv.conf:
	// the ClusterIP the kube-dns Service must have.
	ClusterDNS = "10.96.0.10"
	// ClusterDomain is kubelet's cluster domain.
	ClusterDomain = "cluster.local"

	// PauseImage is the sandbox image, built here from the pause.c of
	// Kubernetes v1.37.1.
	PauseImage = "registry.k8s.io/pause:3.10"
	// DNSUtilsImage has busybox, dig and the resolvers MuslResolver and
	// GlibcResolver (see buildDNSUtilsImage); its command is sh.
	DNSUtilsImage = "coredns-mcs.test/dnsutils:local"
)

// Options configures Start.
type Options struct {
	// Index picks the cluster's Layout: 0 (the default) is the single
	// node of Name, IP, PodCIDR, ServiceCIDR and ClusterDNS; clusters with
	// other indexes run beside it and each other, and Connect joins them.
	Index int
	// KubeDir holds the kube set's binaries; empty means test/testbin's
	// kube set (TESTBIN_KUBE, or built).
	KubeDir string
	// InstallCRDs installs the Multi-Cluster Services CRDs (see
	// controlplane.Options).
	InstallCRDs bool
	// Images are image archives to import into containerd, besides the
	// pause and dnsutils images.
	Images []string
	// Registries are registries (HOST:PORT) in the node's network
	// namespace that containerd pulls from over plain HTTP, by its registry
	// host configuration: serve one there with NetNS.Listen, and pods pull
	// HOST:PORT/REPOSITORY images from it as from any registry.
	Registries []string
	// Logf receives progress and timings; nil discards them.
	Logf func(format string, args ...any)

	// lock is the cluster's lock, taken already (StartClusters); nil:
	// Start takes it.
	lock *os.File
}

// StartClusters starts count clusters side by side, indexes 0 to count-1,
// each with opts but its own Index. It takes their locks first, one after
// the other in index order, as every caller that holds several does, so
// that two runs that want the same clusters never hold one each and wait for
// the other's. On error, the clusters started are stopped.
func StartClusters(ctx context.Context, count int, opts Options) ([]*Node, error) {
	locks := make([]*os.File, 0, count)
	for i := range count {
		l, err := LayoutOf(i)
		if err == nil {
			var f *os.File
			if f, err = flock.Acquire(ctx, l.lock, fmt.Sprintf("node of cluster %d", i)); err == nil {
				locks = append(locks, f)
				continue
			}
		}
		for _, f := range locks {
			f.Close()
		}
		return nil, err
	}
	nodes := make([]*Node, count)
	errs := make([]error, count)
	var wg sync.WaitGroup
	for i := range count {
		o := opts
		o.Index, o.lock = i, locks[i]
		wg.Go(func() { nodes[i], errs[i] = Start(ctx, o) })
	}
	wg.Wait()
	for i, n := range nodes {
		if n == nil {
			locks[i].Close() // Start failed before it took the lock over
		}
	}
	if err := errors.Join(errs...); err != nil {
		for _, n := range nodes {
			if n != nil {
				err = errors.Join(err, n.Stop())
			}
		}
		return nil, err
	}
	return nodes, nil
}

// Node is a running node.
type Node struct {
	ControlPlane *controlplane.ControlPlane
	// Config authenticates as the cluster admin; Client uses it.
	Config *rest.Config
	Client kubernetes.Interface
	// NetNS is the node's network namespace: dial pods and Services
	// through it.
	NetNS *netns.Namespace
	// KubeDir holds kubectl and the other binaries.
	KubeDir string
	// Layout is the cluster's names, addresses and ranges.
	Layout Layout

	opts  Options
	start time.Time
	lock  *os.File

	mu sync.Mutex
	// daemons in start order; Stop stops them in reverse.
	daemons []*daemon
	stopped bool
}

// daemon is one process of the node.
type daemon struct {
	name string
	p    *process.Process
}

// Start starts a node and waits until it is Ready. On error everything
// started so far is stopped and undone.
func Start(ctx context.Context, opts Options) (_ *Node, err error) {
	if err := CheckPrerequisites(); err != nil {
		return nil, err
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.KubeDir == "" {
		if opts.KubeDir, err = testbin.Dir("kube", kubeBinaries...); err != nil {
			return nil, errors.Join(ErrPrerequisite, err)
		}
	} else if err := testbin.Check(opts.KubeDir, kubeBinaries...); err != nil {
		return nil, errors.Join(ErrPrerequisite, err)
	}

	layout, err := LayoutOf(opts.Index)
	if err != nil {
		return nil, err
	}
	n := &Node{KubeDir: opts.KubeDir, Layout: layout, opts: opts}
	waited := time.Now()
	if n.lock = opts.lock; n.lock == nil {
		if n.lock, err = flock.Acquire(ctx, layout.lock, fmt.Sprintf("node of cluster %d", layout.Index)); err != nil {
			return nil, err
		}
	}
	// The node's timings start once it is ours: another test's node may
	// have held the lock until now.
	n.start = time.Now()
	if w := n.start.Sub(waited); w > time.Second {
		n.opts.Logf("node: waited %.1fs for the node lock", w.Seconds())
	}
	defer func() {
		if err != nil {
			if stopErr := n.Stop(); stopErr != nil {
				err = errors.Join(err, fmt.Errorf("undo the failed start: %w", stopErr))
			}
		}
	}()
	if err := sweep(layout); err != nil {
		return nil, fmt.Errorf("clean up after an earlier node: %w", err)
	}
	if err := sweepIdle(); err != nil {
		return nil, fmt.Errorf("clean up after an earlier node: %w", err)
	}
	for _, dir := range []string{layout.logDir(), filepath.Join(layout.dir, "kubelet"), filepath.Join(layout.dir, "cni", "net.d")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("node directory: %w", err)
		}
	}

	if n.NetNS, err = netns.New(); err != nil {
		return nil, err
	}
	if _, err := n.NetNS.Run(ctx, "ip", "addr", "add", layout.IP+"/32", "dev", "lo"); err != nil {
		return nil, fmt.Errorf("node address: %w", err)
	}
	if err := n.startMountNamespace(ctx); err != nil {
		return nil, err
	}
	if err := layout.footprint().CreateCgroups(); err != nil {
		return nil, err
	}
	if err := n.startContainerd(ctx); err != nil {
		return nil, err
	}
	n.step("containerd up")

	// The images build while the control plane starts.
	imagesDone := make(chan error, 1)
	go func() { imagesDone <- n.importImages(ctx) }()

	n.ControlPlane, err = controlplane.Start(ctx, controlplane.Options{
		AssetsDir:             opts.KubeDir,
		NetNS:                 n.NetNS,
		AdvertiseAddress:      layout.IP,
		ServiceAccounts:       true,
		ServiceClusterIPRange: layout.ServiceCIDR,
		InstallCRDs:           opts.InstallCRDs,
		// Without it kube-apiserver looks the node's name up with the
		// machine's resolver to reach kubelet (logs, exec).
		APIServerFlags: []string{"--kubelet-preferred-address-types=InternalIP"},
	})
	if err != nil {
		<-imagesDone
		return nil, fmt.Errorf("control plane: %w", err)
	}
	n.Config = n.ControlPlane.Config
	if n.Client, err = kubernetes.NewForConfig(n.Config); err != nil {
		<-imagesDone
		return nil, err
	}
	n.step("kube-apiserver ready")

	if err := n.startKube(ctx); err != nil {
		<-imagesDone
		return nil, err
	}
	if err := <-imagesDone; err != nil {
		return nil, err
	}
	n.step("images imported")
	if err := n.waitNodeReady(ctx); err != nil {
		return nil, err
	}
	n.step("Node Ready")
	return n, nil
}

// Started is when Start began.
func (n *Node) Started() time.Time { return n.start }

// step logs how long the start has taken so far.
func (n *Node) step(what string) {
	n.opts.Logf("%s: %s after %.1fs", n.Layout.Name, what, time.Since(n.start).Seconds())
}

// startDaemon starts a process of the node in its network and mount
// namespaces.
func (n *Node) startDaemon(name, path string, args ...string) (*process.Process, error) {
	holder := n.daemons[0].p
	p, err := process.Start(process.Spec{
		Name: name,
		// util-linux's nsenter joins the mount namespace (a Go program
		// cannot: setns of a mount namespace needs a single thread).
		Path:    "nsenter",
		Args:    append([]string{fmt.Sprintf("--mount=/proc/%d/ns/mnt", holder.Pid), "--", path}, args...),
		LogPath: filepath.Join(n.Layout.logDir(), name+".log"),
		NetNS:   n.NetNS,
	})
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.daemons = append(n.daemons, &daemon{name: name, p: p})
	n.mu.Unlock()
	return p, nil
}

// startMountNamespace starts the process that holds the node's mount
// namespace: /run, /var/log and /var/lib/kubelet/device-plugins there are
// empty file systems of the node's own, for what containerd, its shims and
// kubelet write at fixed places (/run/containerd, /var/log/containers,
// kubelet's device plugin socket).
func (n *Node) startMountNamespace(ctx context.Context) error {
	ready := filepath.Join(n.Layout.dir, "mountns.ready")
	script := strings.Join([]string{
		"set -e",
		// -n: no record in /run/mount/utab, which is the machine's
		// until /run is replaced.
		"mount -n -t tmpfs -o mode=0755 coredns-mcs-node /run",
		"mount -n -t tmpfs -o mode=0755 coredns-mcs-node /var/log",
		// kubelet serves its device plugin registry at a fixed path,
		// whatever its root directory: nodes that start at once would
		// race to bind the same socket. (kubelet itself makes the
		// directory on the machine when it is missing.)
		"mkdir -p /var/lib/kubelet/device-plugins",
		"mount -n -t tmpfs -o mode=0755 coredns-mcs-node /var/lib/kubelet/device-plugins",
		"touch " + ready,
		"exec sleep infinity",
	}, "\n")
	p, err := process.Start(process.Spec{
		Name:       "mount namespace",
		Path:       "/bin/sh",
		Args:       []string{"-c", script},
		LogPath:    filepath.Join(n.Layout.logDir(), "mountns.log"),
		NetNS:      n.NetNS,
		NewMountNS: true,
	})
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.daemons = append(n.daemons, &daemon{name: "mount namespace", p: p})
	n.mu.Unlock()
	return p.WaitReady(ctx, 10*time.Second, func(context.Context) error {
		_, err := os.Stat(ready)
		return err
	})
}

// startKube starts kube-controller-manager, kube-scheduler, kubelet and
// kube-proxy, each with an identity of its own.
func (n *Node) startKube(ctx context.Context) error {
	// kubelet's identity: the node authorizer is not enabled, so RBAC
	// grants the node role directly.
	_, err := n.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "coredns-mcs-node:system:node"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "system:node:" + n.Layout.Name}},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("bind the node role: %w", err)
	}
	kubeconfig := func(user string, groups ...string) (string, error) {
		path, err := n.ControlPlane.KubeconfigFor(user, groups...)
		if err != nil {
			return "", fmt.Errorf("kubeconfig for %s: %w", user, err)
		}
		return path, nil
	}
	kcm, err := kubeconfig("system:kube-controller-manager")
	if err != nil {
		return err
	}
	scheduler, err := kubeconfig("system:kube-scheduler")
	if err != nil {
		return err
	}
	kubelet, err := kubeconfig("system:node:"+n.Layout.Name, "system:nodes")
	if err != nil {
		return err
	}
	proxy, err := kubeconfig("system:kube-proxy")
	if err != nil {
		return err
	}

	bin := func(name string) string { return filepath.Join(n.KubeDir, name) }
	if _, err := n.startDaemon("kube-controller-manager", bin("kube-controller-manager"),
		"--kubeconfig="+kcm,
		"--use-service-account-credentials=true",
		"--service-account-private-key-file="+n.ControlPlane.ServiceAccountKeyFile(),
		"--root-ca-file="+n.ControlPlane.CAFile,
		"--leader-elect=false",
		"--secure-port=0",
	); err != nil {
		return err
	}
	if _, err := n.startDaemon("kube-scheduler", bin("kube-scheduler"),
		"--kubeconfig="+scheduler,
		"--leader-elect=false",
		"--secure-port=0",
	); err != nil {
		return err
	}

	// kubelet rewrites some global sysctls: keep what they were.
	if err := saveSysctls(n.Layout); err != nil {
		return err
	}
	kubeletConfig, err := writeKubeletConfig(n.Layout)
	if err != nil {
		return err
	}
	if _, err := n.startDaemon("kubelet", bin("kubelet"),
		"--config="+kubeletConfig,
		"--kubeconfig="+kubelet,
		"--root-dir="+filepath.Join(n.Layout.dir, "kubelet", "root"),
		"--cert-dir="+filepath.Join(n.Layout.dir, "kubelet", "pki"),
		"--hostname-override="+n.Layout.Name,
		"--node-ip="+n.Layout.IP,
	); err != nil {
		return err
	}
	proxyConfig, err := writeKubeProxyConfig(n.Layout, proxy)
	if err != nil {
		return err
	}
	if _, err := n.startDaemon("kube-proxy", bin("kube-proxy"), "--config="+proxyConfig); err != nil {
		return err
	}
	return nil
}

// waitNodeReady waits until the Node reports Ready and a pod can be
// created in "default" (its ServiceAccount exists).
func (n *Node) waitNodeReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var last error
	for {
		last = n.checkNodeReady(ctx)
		if last == nil {
			return nil
		}
		if err := n.checkDaemons(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node not ready: %w; kubelet log ends with:\n%s", last, n.LogTail("kubelet", 30))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (n *Node) checkNodeReady(ctx context.Context) error {
	name := n.Layout.Name
	node, err := n.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status != corev1.ConditionTrue {
				return fmt.Errorf("Node %s: %s: %s", name, c.Reason, c.Message)
			}
			ready = true
		}
	}
	if !ready {
		return fmt.Errorf("Node %s has no Ready condition yet", name)
	}
	return n.WaitServiceAccount(ctx, metav1.NamespaceDefault)
}

// checkDaemons returns an error naming a daemon that has exited.
func (n *Node) checkDaemons() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, d := range n.daemons {
		if d.p.Exited() {
			return fmt.Errorf("%s exited (%v); log %s ends with:\n%s", d.name, d.p.Err(), d.p.LogPath, process.LogTail(d.p.LogPath, 30))
		}
	}
	return nil
}

// WaitServiceAccount waits until kube-controller-manager has created the
// "default" ServiceAccount of namespace: pods are rejected before that.
func (n *Node) WaitServiceAccount(ctx context.Context, namespace string) error {
	for {
		_, err := n.Client.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ServiceAccount %s/default: %w", namespace, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// LogTail returns the last lines of a daemon's log ("kubelet",
// "containerd", "kube-proxy", "kube-apiserver"...).
func (n *Node) LogTail(name string, lines int) string {
	if name == "kube-apiserver" && n.ControlPlane != nil {
		return n.ControlPlane.APIServerLogTail(lines)
	}
	return process.LogTail(filepath.Join(n.Layout.logDir(), name+".log"), lines)
}

// Stop stops every process of the node and undoes what it changed on the
// machine. It is safe to call more than once.
func (n *Node) Stop() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		return nil
	}
	n.stopped = true
	began := time.Now()
	var errs []error
	// The node's daemons first, in reverse order: kubelet restarts no
	// container after that. Then the containers, so that kube-apiserver has
	// no watches left to drain (CoreDNS's, for one) when it stops.
	for i := len(n.daemons) - 1; i >= 0; i-- {
		errs = append(errs, n.daemons[i].p.Stop(10*time.Second))
	}
	errs = append(errs, n.Layout.footprint().Kill())
	if n.ControlPlane != nil {
		errs = append(errs, n.ControlPlane.Stop())
	}
	errs = append(errs, sweep(n.Layout))
	if n.NetNS != nil {
		errs = append(errs, n.NetNS.Close())
	}
	if n.lock != nil {
		errs = append(errs, n.lock.Close())
	}
	n.opts.Logf("%s: stopped in %.1fs", n.Layout.Name, time.Since(began).Seconds())
	return errors.Join(errs...)
}
