//go:build linux

package node

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/coredns-mcs/coredns-mcs/test/internal/netns"
)

// Network joins clusters into one flat network, as Submariner or Cilium
// ClusterMesh do between real clusters: a pod of any cluster reaches the
// pods, the ClusterIPs and the node address of every other cluster, with
// its own address (nothing is masqueraded: the ranges do not overlap, and
// 10.244.0.0/16, kube-proxy's cluster range, holds every cluster's pods).
//
// It is a network namespace of its own, the fabric, with a bridge and a
// veth link to each cluster's namespace (fabric0 there, FabricPrefix.I+1);
// each cluster routes the other clusters' node address, pod range and
// Service range over its link, and so does the fabric. Processes started in
// the fabric's namespace (NetNS) reach every cluster; it has the address
// FabricIP. Everything is inside namespaces the tests create: closing them
// undoes it all.
type Network struct {
	// NetNS is the fabric's namespace.
	NetNS *netns.Namespace
	nodes []*Node

	mu     sync.Mutex
	closed bool
}

// The fabric's addresses: cluster i's end of its link has
// FabricPrefix.(i+1), the fabric's bridge FabricIP.
const (
	FabricPrefix = "10.239.0"
	FabricIP     = FabricPrefix + ".254"
)

// linkIP is cluster i's address on the fabric.
func linkIP(i int) string { return FabricPrefix + "." + strconv.Itoa(i+1) }

// Connect creates the fabric and links every node to it. The nodes must
// have different indexes. Close removes the fabric (the links go with it).
func Connect(ctx context.Context, nodes ...*Node) (_ *Network, err error) {
	seen := map[int]bool{}
	for _, n := range nodes {
		if seen[n.Layout.Index] {
			return nil, fmt.Errorf("connect: two nodes of cluster %d", n.Layout.Index)
		}
		seen[n.Layout.Index] = true
	}
	fabric, err := netns.New()
	if err != nil {
		return nil, err
	}
	net := &Network{NetNS: fabric, nodes: nodes}
	defer func() {
		if err != nil {
			_ = net.Close()
		}
	}()
	run := func(ns *netns.Namespace, script ...string) error {
		_, err := ns.Run(ctx, "sh", "-c", "set -e\n"+strings.Join(script, "\n"))
		return err
	}
	if err := run(fabric,
		"ip link add fabric type bridge",
		"ip addr add "+FabricIP+"/24 dev fabric",
		"ip link set fabric up",
		"echo 1 > /proc/sys/net/ipv4/ip_forward",
	); err != nil {
		return nil, fmt.Errorf("fabric: %w", err)
	}
	for _, n := range nodes {
		i := n.Layout.Index
		pid, err := n.namespacePID()
		if err != nil {
			return nil, err
		}
		// The cluster's end is created in the fabric and moved into the
		// cluster's namespace, by the pid of a process there.
		if err := run(fabric,
			fmt.Sprintf("ip link add fab%d type veth peer name fabric0 netns %d", i, pid),
			fmt.Sprintf("ip link set fab%d master fabric up", i),
		); err != nil {
			return nil, fmt.Errorf("link cluster %d: %w", i, err)
		}
		script := []string{
			"ip addr add " + linkIP(i) + "/24 dev fabric0",
			"ip link set fabric0 up",
			"echo 1 > /proc/sys/net/ipv4/ip_forward",
		}
		for _, other := range nodes {
			if other != n {
				script = append(script, routes(other.Layout)...)
			}
		}
		if err := run(n.NetNS, script...); err != nil {
			return nil, fmt.Errorf("routes of cluster %d: %w", i, err)
		}
		if err := run(fabric, routes(n.Layout)...); err != nil {
			return nil, fmt.Errorf("fabric routes to cluster %d: %w", i, err)
		}
	}
	return net, nil
}

// routes are the commands that route l's addresses over the fabric.
func routes(l Layout) []string {
	via := linkIP(l.Index)
	var cmds []string
	for _, dst := range []string{l.IP + "/32", l.PodCIDR, l.ServiceCIDR} {
		cmds = append(cmds, "ip route add "+dst+" via "+via)
	}
	return cmds
}

// namespacePID returns a process in the node's network namespace: the one
// that holds its mount namespace.
func (n *Node) namespacePID() (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.daemons) == 0 || n.daemons[0].p.Exited() {
		return 0, errors.New("the node's namespace holder is not running")
	}
	return n.daemons[0].p.Pid, nil
}

// Close removes the fabric, and with it the links. It is safe to call more
// than once.
func (net *Network) Close() error {
	net.mu.Lock()
	defer net.mu.Unlock()
	if net.closed {
		return nil
	}
	net.closed = true
	var errs []error
	// A link goes with the first of its namespaces to go; the nodes' go
	// later, so remove their ends now (a node may run on).
	for _, n := range net.nodes {
		n.mu.Lock()
		stopped := n.stopped
		n.mu.Unlock()
		if n.NetNS != nil && !stopped {
			if _, err := n.NetNS.Run(context.Background(), "ip", "link", "del", "fabric0"); err != nil && !strings.Contains(err.Error(), "Cannot find device") {
				errs = append(errs, err)
			}
		}
	}
	errs = append(errs, net.NetNS.Close())
	return errors.Join(errs...)
}
