//go:build linux

package node

import (
	"fmt"
	"os"
	"path/filepath"
)

// MaxClusters bounds Options.Index: cluster i's ranges (10.244.i.0/24,
// 10.(96+i).0.0/16) stay inside the pod range kube-proxy treats as the
// cluster's (10.244.0.0/16) and apart from each other.
const MaxClusters = 8

// Layout is what tells clusters on one machine apart: names, directories,
// addresses and ranges, all derived from the cluster's index. Cluster 0 is
// the single node the package has always run (Name, IP, PodCIDR,
// ServiceCIDR, ClusterDNS); cluster i > 0 has names ending in -i and ranges
// that overlap no other cluster's, so that clusters can be joined into one
// flat pod network (Connect).
type Layout struct {
	Index int
	// Name is the Node's name.
	Name string
	// IP is the node's address, on the loopback interface of its network
	// namespace; kube-apiserver listens and is advertised there.
	IP string
	// PodCIDR is the range the CNI bridge plugin gives pods addresses
	// from.
	PodCIDR string
	// ServiceCIDR is the Service ClusterIP range (IPv4 only).
	ServiceCIDR string
	// ClusterDNS is the address kubelet writes into pods' resolv.conf: the
	// ClusterIP the kube-dns Service must have.
	ClusterDNS string

	// dir holds everything of the cluster on disk; cgroup is the cgroup
	// (in every hierarchy) kubelet puts pods under; lock is the file the
	// running cluster holds locked; watch is locked by a test that watches
	// what a killed node of the cluster left, so that other nodes' start-up
	// sweeps (sweepIdle) leave it alone meanwhile.
	dir, cgroup, lock, watch string
}

// LayoutOf returns cluster i's layout.
func LayoutOf(i int) (Layout, error) {
	if i < 0 || i >= MaxClusters {
		return Layout{}, fmt.Errorf("cluster index %d: want 0 to %d", i, MaxClusters-1)
	}
	suffix := ""
	if i > 0 {
		suffix = fmt.Sprintf("-%d", i)
	}
	return Layout{
		Index:       i,
		Name:        "mcs-node" + suffix,
		IP:          fmt.Sprintf("10.240.0.%d", i+1),
		PodCIDR:     fmt.Sprintf("10.244.%d.0/24", i),
		ServiceCIDR: fmt.Sprintf("10.%d.0.0/16", 96+i),
		ClusterDNS:  fmt.Sprintf("10.%d.0.10", 96+i),
		dir:         filepath.Join(os.TempDir(), "coredns-mcs-node"+suffix),
		cgroup:      "coredns-mcs-node" + suffix,
		lock:        filepath.Join(os.TempDir(), "coredns-mcs-node"+suffix+".lock"),
		watch:       filepath.Join(os.TempDir(), "coredns-mcs-node"+suffix+".watch"),
	}, nil
}

func mustLayout(i int) Layout {
	l, err := LayoutOf(i)
	if err != nil {
		panic(err)
	}
	return l
}

func (l Layout) logDir() string           { return filepath.Join(l.dir, "logs") }
func (l Layout) imageDir() string         { return filepath.Join(l.dir, "images") }
func (l Layout) containerdDir() string    { return filepath.Join(l.dir, "containerd") }
func (l Layout) containerdSocket() string { return filepath.Join(l.containerdDir(), "containerd.sock") }
func (l Layout) sysctlFile() string       { return filepath.Join(l.dir, "sysctls.json") }
