// Package karmada runs a real Karmada control plane with two member clusters
// on 127.0.0.1, for end-to-end tests of what Karmada's own controllers leave
// in member clusters.
//
// Every cluster is a test/internal/controlplane (etcd and kube-apiserver):
//
//   - karmada-apiserver, with Karmada's CRDs (charts/karmada/_crds/bases of
//     github.com/karmada-io/karmada v1.18.2) and the aggregation layer, and
//     next to it karmada-aggregated-apiserver (Cluster objects are served
//     through the APIService v1alpha1.cluster.karmada.io, not a CRD),
//     karmada-webhook, karmada-scheduler, karmada-controller-manager, and
//     kube-controller-manager with the namespace and garbage collector
//     controllers, as Karmada's own deployment runs it
//     (artifacts/deploy/kube-controller-manager.yaml);
//   - member1 and member2, joined in push mode as `karmadactl join` does.
//
// Start then installs the ServiceExport and ServiceImport CRDs in both
// members the way a Karmada user does: from karmada-apiserver, through a
// ClusterPropagationPolicy.
//
// Members run no kubelet and no controller-manager: nothing runs Pods or
// writes the EndpointSlices of a Service; tests write them. Options.Members
// joins real clusters instead (test/internal/node), with Options.NetNS the network
// namespace that reaches them. Each
// kube-apiserver allocates ClusterIPs from a range of its own (see
// ServiceRanges), so an address tells which cluster allocated it.
//
// The binaries come from the kube and karmada sets of test/testbin/build.sh
// ($TESTBIN_KUBE and $TESTBIN_KARMADA when set).
package karmada

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"
	"github.com/coredns-mcs/coredns-mcs/test/internal/testbin"
)

// Version is the Karmada release the karmada set of test/testbin builds
// (test/testbin/karmada/go.mod).
const Version = "v1.18.2"

// Member names, as the Cluster objects in karmada-apiserver call them.
const (
	Member1 = "member1"
	Member2 = "member2"
)

// ServiceRanges are the --service-cluster-ip-range of each cluster. They
// differ so that a ClusterIP tells which API server allocated it: a Service
// that Karmada propagates gets a new address in the member.
var ServiceRanges = map[string]string{
	"karmada": "10.100.0.0/16",
	Member1:   "10.101.0.0/16,fd00:10:101::/112",
	Member2:   "10.102.0.0/16,fd00:10:102::/112",
}

// Binaries of the karmada set that Start runs.
var karmadaBinaries = []string{
	"karmada-aggregated-apiserver",
	"karmada-controller-manager",
	"karmada-scheduler",
	"karmada-webhook",
}

// Options configures Start.
type Options struct {
	// FeatureGates is karmada-controller-manager's --feature-gates, for
	// example "MultiClusterService=true"; empty keeps Karmada's defaults.
	FeatureGates string
	// StartTimeout bounds each step of the start-up (a server becoming
	// ready, the members joining, the CRDs reaching the members); zero means
	// the control planes' default (controlplane.DefaultStartTimeout or
	// $KUBEBUILDER_CONTROLPLANE_START_TIMEOUT), doubled.
	StartTimeout time.Duration
	// Members, when set, are the member clusters to join, which the caller
	// runs and stops (real clusters of test/internal/node, for one), instead of the
	// two control planes without nodes that Start runs otherwise. Their
	// Host must be reachable from NetNS.
	Members []*Member
	// NetNS, when set, is the network namespace karmada-apiserver and the
	// Karmada components run in (test/internal/netns); Config dials
	// through it, and Kubeconfig works for processes started inside it.
	NetNS controlplane.Namespace
}

// Member is a member cluster.
type Member struct {
	// Name is the name of its Cluster object in karmada-apiserver.
	Name string
	// ControlPlane is its etcd and kube-apiserver; ControlPlane.Kubeconfig
	// acts as its admin.
	*controlplane.ControlPlane
}

// Karmada is a running Karmada control plane with its members.
type Karmada struct {
	// APIServer is karmada-apiserver: Config and Kubeconfig act as its
	// admin, as a Karmada user's kubeconfig does.
	APIServer *controlplane.ControlPlane
	// Members are member1 and member2, in that order (or Options.Members).
	Members []*Member
	// Dir holds the logs of the Karmada components (COMPONENT.log) and
	// their credentials; it is APIServer.Dir, which Stop removes.
	Dir string

	opts        Options
	kubeBin     string
	karmadaBin  string
	moduleDir   string
	kubeconfig  string
	mu          sync.Mutex
	daemons     map[string]*controlplane.Daemon
	stopped     bool
	dynamic     dynamic.Interface
	kube        kubernetes.Interface
	webhookPort int
}

// Member returns the member called name, or nil.
func (k *Karmada) Member(name string) *Member {
	for _, m := range k.Members {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// Dynamic returns a dynamic client of karmada-apiserver, for Karmada's own
// objects (policies, clusters, bindings), which this module has no types
// for: they live in a module with another Kubernetes version.
func (k *Karmada) Dynamic() dynamic.Interface { return k.dynamic }

// Kube returns a client of karmada-apiserver.
func (k *Karmada) Kube() kubernetes.Interface { return k.kube }

// Assets returns the directories of the kube and karmada sets, building them
// the first time on a machine (minutes).
func Assets() (kubeDir, karmadaDir string, err error) {
	kubeDir, err = testbin.Dir("kube", "kube-apiserver", "etcd", "kube-controller-manager")
	if err != nil {
		return "", "", err
	}
	karmadaDir, err = testbin.Dir("karmada", karmadaBinaries...)
	if err != nil {
		return "", "", err
	}
	return kubeDir, karmadaDir, nil
}

// Start starts the Karmada control plane and both members, joins the
// members, and installs the ServiceExport and ServiceImport CRDs in them
// through a ClusterPropagationPolicy. On error everything started is stopped
// again. ctx bounds the start-up only.
func Start(ctx context.Context, opts Options) (_ *Karmada, err error) {
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 2 * controlplane.DefaultStartTimeout
		if s := os.Getenv(controlplane.StartTimeoutEnv); s != "" {
			if d, perr := time.ParseDuration(s); perr == nil && d > 0 {
				opts.StartTimeout = 2 * d
			}
		}
	}
	kubeBin, karmadaBin, err := Assets()
	if err != nil {
		return nil, err
	}
	moduleDir, err := ModuleDir()
	if err != nil {
		return nil, err
	}
	k := &Karmada{opts: opts, kubeBin: kubeBin, karmadaBin: karmadaBin, moduleDir: moduleDir, daemons: map[string]*controlplane.Daemon{}}
	defer func() {
		if err != nil {
			_ = k.Stop()
		}
	}()
	if err := k.startClusters(ctx); err != nil {
		return nil, err
	}
	steps := []struct {
		what string
		run  func(context.Context) error
	}{
		{"install Karmada's CRDs", k.installCRDs},
		{"start karmada-webhook", k.startWebhook},
		{"start karmada-aggregated-apiserver", k.startAggregatedAPIServer},
		{"start kube-controller-manager", k.startKubeControllerManager},
		{"start karmada-scheduler", k.startScheduler},
		{"start karmada-controller-manager", k.startControllerManager},
		{"join the members", k.joinMembers},
		{"propagate the ServiceExport and ServiceImport CRDs", k.propagateMCSCRDs},
	}
	for _, step := range steps {
		if err := step.run(ctx); err != nil {
			return nil, fmt.Errorf("%s: %w", step.what, err)
		}
	}
	return k, nil
}

// startClusters starts karmada-apiserver and the members side by side.
func (k *Karmada) startClusters(ctx context.Context) error {
	names := []string{"karmada", Member1, Member2}
	if len(k.opts.Members) > 0 {
		names = names[:1]
	}
	planes := make([]*controlplane.ControlPlane, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			planes[i], errs[i] = controlplane.Start(ctx, controlplane.Options{
				AssetsDir:             k.kubeBin,
				ServiceClusterIPRange: ServiceRanges[name],
				NetNS:                 k.netns(name),
				// Extension API servers only behind karmada-apiserver.
				Aggregation:  name == "karmada",
				StartTimeout: k.opts.StartTimeout / 2,
			})
		})
	}
	wg.Wait()
	// Keep what started, so that Stop stops it whatever failed.
	k.mu.Lock()
	if planes[0] != nil {
		k.APIServer, k.Dir = planes[0], planes[0].Dir
	}
	for i, name := range names[1:] {
		if planes[i+1] != nil {
			k.Members = append(k.Members, &Member{Name: name, ControlPlane: planes[i+1]})
		}
	}
	if len(k.opts.Members) > 0 {
		k.Members = k.opts.Members
	}
	k.mu.Unlock()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("start %s: %w", names[i], err)
		}
	}
	k.kubeconfig = k.APIServer.Kubeconfig
	var err error
	if k.dynamic, err = dynamic.NewForConfig(k.APIServer.Config); err != nil {
		return fmt.Errorf("karmada-apiserver client: %w", err)
	}
	if k.kube, err = kubernetes.NewForConfig(k.APIServer.Config); err != nil {
		return fmt.Errorf("karmada-apiserver client: %w", err)
	}
	return nil
}

// netns is the namespace the control plane of cluster name runs in: the
// members Start runs live on the machine's loopback.
func (k *Karmada) netns(name string) controlplane.Namespace {
	if name == "karmada" {
		return k.opts.NetNS
	}
	return nil
}

// Config returns a copy of karmada-apiserver's admin client configuration.
func (k *Karmada) Config() *rest.Config { return rest.CopyConfig(k.APIServer.Config) }

// Stop stops every Karmada component, then the members and
// karmada-apiserver, and removes their directories. It is safe to call more
// than once.
func (k *Karmada) Stop() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return nil
	}
	k.stopped = true
	var errs []error
	// Controllers first, so that none acts on a half-stopped world. They
	// keep no state of their own: one that outlasts the grace period
	// (karmada-controller-manager waits for its workers) is killed, and
	// that is no error.
	for _, name := range []string{"karmada-controller-manager", "karmada-scheduler", "kube-controller-manager", "karmada-webhook", "karmada-aggregated-apiserver"} {
		if d := k.daemons[name]; d != nil {
			if err := d.Stop(5 * time.Second); err != nil && !d.Exited() {
				errs = append(errs, err)
			}
			delete(k.daemons, name)
		}
	}
	if len(k.opts.Members) == 0 {
		for _, m := range k.Members {
			errs = append(errs, m.Stop())
		}
	}
	if k.APIServer != nil {
		errs = append(errs, k.APIServer.Stop())
	}
	return errors.Join(errs...)
}

// LogTail returns the last n lines of a component's log: a Karmada binary
// (karmada-controller-manager...), kube-controller-manager, or the
// kube-apiserver of "karmada", "member1" or "member2".
func (k *Karmada) LogTail(component string, n int) string {
	switch component {
	case "karmada":
		return k.APIServer.APIServerLogTail(n)
	case Member1, Member2:
		return k.Member(component).APIServerLogTail(n)
	}
	return controlplane.LogTail(filepath.Join(k.Dir, component+".log"), n)
}
