//go:build linux

package node

import (
	"os"
	"path/filepath"
)

// kubeletConfig adapts kubelet to a test machine:
//   - cgroup v1 is allowed (failCgroupV1: false), with the cgroupfs driver and
//     pods under the layout's cgroup, which Start creates makes in every hierarchy;
//   - no swap check, eviction and image garbage collection only at full
//     disks (the images cannot be pulled again: there is no registry);
//   - the pods' upstream resolver (resolvConf, used by dnsPolicy: Default
//     pods such as CoreDNS) is the node's own address, where nothing
//     answers: nothing is asked of the machine's resolver, and CoreDNS's
//     loop plugin sees no loop;
//   - kubelet leaves iptables alone (kube-proxy owns the rules) and may set
//     the kernel sysctls it wants (saveSysctls and sweep put them back);
//   - kubelet serves only inside the node's namespace; kube-apiserver
//     (logs, exec) reaches it anonymously.
//   - every path kubelet writes is under the node's directory, or in the
//     node's mount namespace (/var/log/containers).
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://{{socket}}
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /{{cgroup}}
failSwapOn: false
resolvConf: {{base}}/kubelet/resolv.conf
clusterDNS: [{{clusterDNS}}]
clusterDomain: {{clusterDomain}}
makeIPTablesUtilChains: false
protectKernelDefaults: false
oomScoreAdj: 0
address: {{ip}}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
podLogsDir: {{base}}/kubelet/pod-logs
volumePluginDir: {{base}}/kubelet/volume-plugins
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
evictionHard:
  memory.available: 1Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
registerNode: true
`

// kubeProxyConfig: iptables mode in the node's namespace. It leaves the
// global conntrack limits alone (maxPerCore: 0) and keeps its own
// oom_score_adj (0), which it could not lower here.
const kubeProxyConfig = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: {{kubeconfig}}
hostnameOverride: {{name}}
mode: iptables
clusterCIDR: 10.244.0.0/16
nodePortAddresses: [{{ip}}/32]
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
oomScoreAdj: 0
iptables:
  localhostNodePorts: false
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`

func nodeValues(l Layout) map[string]string {
	return map[string]string{
		"socket": l.containerdSocket(), "cgroup": l.cgroup, "base": l.dir,
		"clusterDNS": l.ClusterDNS, "clusterDomain": ClusterDomain, "ip": l.IP, "name": l.Name,
	}
}

// writeKubeletConfig writes kubelet's configuration and resolv.conf and
// returns the configuration's path.
func writeKubeletConfig(l Layout) (string, error) {
	dir := filepath.Join(l.dir, "kubelet")
	if err := os.WriteFile(filepath.Join(dir, "resolv.conf"), []byte("nameserver "+l.IP+"\n"), 0o644); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "config.yaml")
	return path, os.WriteFile(path, []byte(render(kubeletConfig, nodeValues(l))), 0o644)
}

// writeKubeProxyConfig writes kube-proxy's configuration and returns its
// path.
func writeKubeProxyConfig(l Layout, kubeconfig string) (string, error) {
	values := nodeValues(l)
	values["kubeconfig"] = kubeconfig
	path := filepath.Join(l.dir, "kube-proxy.yaml")
	return path, os.WriteFile(path, []byte(render(kubeProxyConfig, values)), 0o644)
}
