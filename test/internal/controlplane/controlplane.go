// Package controlplane runs a real etcd and kube-apiserver on 127.0.0.1 for
// integration tests and local development (see test/cmd/localcluster).
//
// The binaries come from Assets: $KUBEBUILDER_ASSETS when set, otherwise
// test/testbin/build.sh builds them once and caches them.
//
// Only etcd and kube-apiserver run: there is no controller-manager, scheduler
// or kubelet. Nothing creates EndpointSlices, service account tokens in
// Secrets, "default" ServiceAccounts or garbage-collects; tests create what
// they need themselves. The API server does allocate ClusterIPs, from both an
// IPv4 and an IPv6 range by default, so dual-stack Services work.
//
// Authentication uses client certificates signed by the control plane's own
// CA, and authorization is RBAC:
//   - ControlPlane.Config and ControlPlane.Kubeconfig act as user "admin" in
//     group "system:masters" (full access, like cluster-admin).
//   - KubeconfigFor(user, groups...) mints a kubeconfig for any user and
//     groups; that identity can do only what RBAC objects grant it.
//   - KubeconfigForServiceAccount issues a token through the TokenRequest API
//     for tests that bind a ServiceAccount.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const (
	// DefaultServiceClusterIPRange is dual-stack so Services can get an IPv4
	// and an IPv6 ClusterIP.
	DefaultServiceClusterIPRange = "10.96.0.0/12,fd00:10:96::/112"
	// ExamplesServiceClusterIPRange holds the ClusterIPs of
	// manifests/examples: frontend's 10.96.100.100, and 10.42.0.10, which
	// checkout's derived Service holds as an MCS controller leaves it. make
	// run (test/cmd/localcluster) serves the examples with it.
	ExamplesServiceClusterIPRange = "10.0.0.0/9,fd00:10:96::/112"
	// DefaultStartTimeout bounds how long each of etcd and kube-apiserver may
	// take to become ready. It is generous because CI machines are small and
	// may run several test binaries, some with -race, at once.
	DefaultStartTimeout = 60 * time.Second
	// StartTimeoutEnv overrides DefaultStartTimeout (a Go duration such as
	// "90s"); the name matches what envtest-based tooling already sets.
	StartTimeoutEnv = "KUBEBUILDER_CONTROLPLANE_START_TIMEOUT"

	// AdminContext is the current context of ControlPlane.Kubeconfig: user
	// "admin" in group "system:masters", namespace "default".
	AdminContext = "admin"
	// OtherContext is a second context in ControlPlane.Kubeconfig that points
	// at the same server as user OtherUser, which has no RBAC rights, with
	// namespace OtherNamespace (which does not exist). Anything that wrongly
	// uses it instead of the context it was told to use gets Forbidden.
	OtherContext = "other"
	// OtherUser is the user of OtherContext.
	OtherUser = "other"
	// OtherNamespace is the namespace of OtherContext.
	OtherNamespace = "other"

	// adminUser and adminGroup make the identity of Config and AdminContext.
	adminUser  = "admin"
	adminGroup = "system:masters"
)

// Options configures Start. The zero value starts a dual-stack control plane
// without the Multi-Cluster Services CRDs.
type Options struct {
	// InstallCRDs installs the ServiceImport and ServiceExport CRDs of
	// sigs.k8s.io/mcs-api and waits until they are served.
	InstallCRDs bool
	// CRDVersions limits which versions of the CRDs are served, for example
	// []string{"v1alpha1"} to imitate a cluster with only the alpha API.
	// Empty installs the CRDs as shipped (v1alpha1 and v1beta1 served,
	// v1beta1 stored).
	CRDVersions []string
	// ServiceClusterIPRange is kube-apiserver's --service-cluster-ip-range;
	// empty means DefaultServiceClusterIPRange.
	ServiceClusterIPRange string
	// StartTimeout bounds how long etcd and kube-apiserver each may take to
	// become ready; zero means $KUBEBUILDER_CONTROLPLANE_START_TIMEOUT or
	// DefaultStartTimeout.
	StartTimeout time.Duration
	// APIServerFlags are extra kube-apiserver flags ("--name=value"); they
	// come last, so they override the defaults.
	APIServerFlags []string
	// AssetsDir holds the kube-apiserver and etcd binaries; empty means
	// Assets().
	AssetsDir string
	// Aggregation configures kube-apiserver's aggregation layer, so that
	// APIServices served by extension API servers (Karmada's aggregated
	// apiserver, for one) work: kube-apiserver proxies to them with a client
	// certificate for FrontProxyClient signed by the control plane's CA,
	// and passes the requesting user on in the X-Remote-* headers.
	Aggregation bool

	// NetNS, when set, is the network namespace etcd and kube-apiserver run
	// in (test/internal/netns), as a node's control plane does. Config
	// dials through it; Kubeconfig and minted kubeconfigs work for
	// processes started inside it.
	NetNS Namespace
	// AdvertiseAddress, when set, is the address kube-apiserver listens on
	// (instead of 127.0.0.1) and advertises as the endpoint of the
	// "kubernetes" Service, so that pods reach it at that Service's
	// ClusterIP; its serving certificate covers it. Host uses it. Set it
	// only with NetNS (or on an address nothing else can reach).
	AdvertiseAddress string
	// ServiceAccounts keeps kube-apiserver's ServiceAccount admission
	// plugin, which gives pods their ServiceAccount token. It rejects pods
	// whose ServiceAccount does not exist, so it suits a control plane with
	// a kube-controller-manager (which creates the "default" ones, signing
	// with ServiceAccountKeyFile); without this option it is off.
	ServiceAccounts bool
}

// Namespace is a network namespace processes start in and clients dial
// through (test/internal/netns.Namespace).
type Namespace interface {
	Enter() error
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

func (o Options) withDefaults() (Options, error) {
	if o.ServiceClusterIPRange == "" {
		o.ServiceClusterIPRange = DefaultServiceClusterIPRange
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = DefaultStartTimeout
		if s := os.Getenv(StartTimeoutEnv); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				return o, fmt.Errorf("%s=%q: want a positive duration such as 60s", StartTimeoutEnv, s)
			}
			o.StartTimeout = d
		}
	}
	return o, nil
}

// ControlPlane is a running etcd and kube-apiserver.
type ControlPlane struct {
	// Config authenticates as the admin user. Use rest.CopyConfig before
	// changing it.
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file with the contexts
	// AdminContext (current) and OtherContext. Credentials are embedded, so
	// the file can be copied elsewhere.
	Kubeconfig string
	// Host is the URL of kube-apiserver, https://127.0.0.1:PORT.
	Host string
	// CAFile is the path of the CA certificate that signed kube-apiserver's
	// serving certificate and all client certificates.
	CAFile string
	// Dir is the temporary directory with the certificates, kubeconfigs,
	// etcd's data and the logs etcd.log and kube-apiserver.log. Stop removes
	// it.
	Dir string

	opts        Options
	ca          *keyPair
	admin       *keyPair
	etcdURL     string
	etcdPeerURL string
	apiPort     int

	mu          sync.Mutex
	etcd        *process
	apiServer   *process
	credentials int // counter for unique file names
	stopped     bool
}

// Start starts etcd and kube-apiserver and waits until the API is ready to
// use. On error everything started so far is stopped again. ctx bounds only
// the start-up; the processes run until Stop. With an empty opts.AssetsDir it
// first calls Assets, which may build the binaries (minutes, not bounded by
// ctx); callers with a tight deadline call Assets beforehand.
func Start(ctx context.Context, opts Options) (_ *ControlPlane, err error) {
	opts, err = opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if opts.AssetsDir == "" {
		if opts.AssetsDir, err = Assets(); err != nil {
			return nil, err
		}
	} else if err := checkAssets(opts.AssetsDir); err != nil {
		return nil, err
	}

	removeStaleDirs()
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("create control plane directory: %w", err)
	}
	c := &ControlPlane{Dir: dir, opts: opts}
	defer func() {
		if err != nil {
			_ = c.Stop()
		}
	}()
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("write owner file: %w", err)
	}

	if err := c.writeCredentials(); err != nil {
		return nil, err
	}
	if err := c.startEtcd(ctx); err != nil {
		return nil, err
	}
	if err := c.startFirstAPIServer(ctx); err != nil {
		return nil, err
	}
	if err := c.waitBootstrapped(ctx); err != nil {
		return nil, err
	}
	if opts.InstallCRDs {
		if err := c.InstallCRDs(ctx); err != nil {
			return nil, err
		}
	}
	return c, nil
}

const (
	// dirPrefix starts the name of every control plane's Dir in os.TempDir().
	dirPrefix = "coredns-mcs-controlplane-"
	// ownerFile in Dir holds the pid of the process that started the
	// control plane.
	ownerFile = "owner.pid"
)

// removeStaleDirs removes the Dirs of control planes whose process no longer
// exists. A test binary killed by a timeout or SIGKILL cannot remove its own
// (its etcd and kube-apiserver die with it, see sysProcAttr), and each one
// holds about 100 MB of etcd data.
func removeStaleDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // not ours, or still being set up
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(dir)
		}
	}
}

// writeCredentials creates the CA, kube-apiserver's serving certificate, the
// service account signing key and the admin credentials.
func (c *ControlPlane) writeCredentials() error {
	var err error
	if c.ca, err = newCA(); err != nil {
		return err
	}
	var extraIPs []net.IP
	if c.opts.AdvertiseAddress != "" {
		ip := net.ParseIP(c.opts.AdvertiseAddress)
		if ip == nil {
			return fmt.Errorf("AdvertiseAddress %q is not an IP address", c.opts.AdvertiseAddress)
		}
		extraIPs = append(extraIPs, ip)
	}
	// The "kubernetes" Service takes the first address of each range;
	// in-cluster clients (pods) dial it.
	for _, cidr := range strings.Split(c.opts.ServiceClusterIPRange, ",") {
		prefix, err := netip.ParsePrefix(strings.TrimSpace(cidr))
		if err != nil {
			return fmt.Errorf("ServiceClusterIPRange %q: %w", c.opts.ServiceClusterIPRange, err)
		}
		extraIPs = append(extraIPs, net.IP(prefix.Masked().Addr().Next().AsSlice()))
	}
	serving, err := c.ca.servingCert(extraIPs...)
	if err != nil {
		return err
	}
	if c.admin, err = c.ca.clientCert(adminUser, []string{adminGroup}); err != nil {
		return err
	}
	c.CAFile = filepath.Join(c.Dir, "ca.crt")
	files := map[string][]byte{
		"ca.crt":        c.ca.certPEM,
		"apiserver.crt": serving.certPEM,
		"apiserver.key": serving.keyPEM,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(c.Dir, name), data, 0o600); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	if c.opts.Aggregation {
		if err := c.writeFrontProxyCert(); err != nil {
			return err
		}
	}
	return writeServiceAccountKey(filepath.Join(c.Dir, "sa.key"), filepath.Join(c.Dir, "sa.pub"))
}

// startAttempts is how often a start is retried when a port picked by
// freePort was taken by someone else before the process could bind it.
const startAttempts = 3

func (c *ControlPlane) startEtcd(ctx context.Context) error {
	dataDir := filepath.Join(c.Dir, "etcd")
	for attempt := 1; ; attempt++ {
		clientPort, err := freePort()
		if err != nil {
			return err
		}
		peerPort, err := freePort()
		if err != nil {
			return err
		}
		clientURL := "http://127.0.0.1:" + strconv.Itoa(clientPort)
		peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
		p, err := c.runEtcd(ctx, clientURL, peerURL)
		if err == nil {
			c.etcdURL, c.etcdPeerURL = clientURL, peerURL
			return nil
		}
		if p == nil || attempt >= startAttempts || !p.exited() || !p.addressInUse() {
			return err
		}
		if err := os.RemoveAll(dataDir); err != nil {
			return fmt.Errorf("reset etcd data directory: %w", err)
		}
	}
}

// runEtcd starts etcd on clientURL and peerURL with the data in Dir, and
// waits until it is healthy. On error it returns the process, stopped.
func (c *ControlPlane) runEtcd(ctx context.Context, clientURL, peerURL string) (*process, error) {
	args := []string{
		"--name=controlplane",
		"--data-dir=" + filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=controlplane=" + peerURL,
		"--initial-cluster-state=new",
		// Durability does not matter for throw-away test data, and
		// fsync is the slowest part of etcd on a busy CI disk.
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	}
	p, err := startProcessIn(c.opts.NetNS, "etcd", filepath.Join(c.opts.AssetsDir, "etcd"), args, filepath.Join(c.Dir, "etcd.log"))
	if err != nil {
		return nil, err
	}
	c.etcd = p
	err = p.waitReady(ctx, c.opts.StartTimeout, func(ctx context.Context) error {
		return checkEtcdHealth(ctx, c.httpClient(), clientURL)
	})
	if err != nil {
		_ = p.stop(5 * time.Second)
		c.etcd = nil
		return p, err
	}
	return p, nil
}

// RestartEtcd stops etcd and starts a new etcd process on the same
// addresses with the same data, as an upgrade of the control plane does.
// A running kube-apiserver reconnects by itself; one that is stopped finds
// it at StartAPIServer.
func (c *ControlPlane) RestartEtcd(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return errors.New("control plane is stopped")
	}
	if c.etcd != nil {
		if err := c.etcd.stop(10 * time.Second); err != nil && !c.etcd.exited() {
			return fmt.Errorf("stop etcd: %w", err)
		}
		c.etcd = nil
	}
	if _, err := c.runEtcd(ctx, c.etcdURL, c.etcdPeerURL); err != nil {
		return fmt.Errorf("restart etcd on %s: %w", c.etcdURL, err)
	}
	return nil
}

// httpClient is a plain HTTP client that dials as Config does.
func (c *ControlPlane) httpClient() *http.Client {
	if c.opts.NetNS == nil {
		return http.DefaultClient
	}
	return &http.Client{Transport: &http.Transport{DialContext: c.opts.NetNS.DialContext}}
}

func checkEtcdHealth(ctx context.Context, client *http.Client, clientURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientURL+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"true"`) {
		return fmt.Errorf("etcd /health: %s: %s", resp.Status, body)
	}
	return nil
}

// startFirstAPIServer picks kube-apiserver's port and starts it. Later
// restarts (StartAPIServer) reuse the port, so clients keep working.
func (c *ControlPlane) startFirstAPIServer(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		c.apiPort = port
		c.Host = "https://" + net.JoinHostPort(c.bindAddress(), strconv.Itoa(port))
		c.Config = &rest.Config{
			Host: c.Host,
			TLSClientConfig: rest.TLSClientConfig{
				CAData:   c.ca.certPEM,
				CertData: c.admin.certPEM,
				KeyData:  c.admin.keyPEM,
			},
			// Tests create many objects in quick succession; the client's
			// default rate limit (5 QPS) would only slow them down.
			QPS:   100,
			Burst: 200,
		}
		if c.opts.NetNS != nil {
			c.Config.Dial = c.opts.NetNS.DialContext
		}
		err = c.startAPIServerLocked(ctx)
		if err == nil {
			return c.writeAdminKubeconfig()
		}
		p := c.apiServer
		c.apiServer = nil
		if p == nil || attempt >= startAttempts || !p.exited() || !p.addressInUse() {
			return err
		}
	}
}

// bindAddress is where kube-apiserver listens.
func (c *ControlPlane) bindAddress() string {
	if c.opts.AdvertiseAddress != "" {
		return c.opts.AdvertiseAddress
	}
	return "127.0.0.1"
}

func (c *ControlPlane) apiServerArgs() []string {
	args := []string{
		"--etcd-servers=" + c.etcdURL,
		"--bind-address=" + c.bindAddress(),
		"--advertise-address=" + c.bindAddress(),
		"--secure-port=" + strconv.Itoa(c.apiPort),
		// The certificates are given explicitly; --cert-dir only keeps
		// kube-apiserver from touching its default /var/run/kubernetes.
		"--cert-dir=" + filepath.Join(c.Dir, "apiserver-certs"),
		"--tls-cert-file=" + filepath.Join(c.Dir, "apiserver.crt"),
		"--tls-private-key-file=" + filepath.Join(c.Dir, "apiserver.key"),
		"--client-ca-file=" + c.CAFile,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + filepath.Join(c.Dir, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(c.Dir, "sa.key"),
		"--service-cluster-ip-range=" + c.opts.ServiceClusterIPRange,
		"--allow-privileged=true",
		"--profiling=false",
	}
	if !c.opts.ServiceAccounts {
		// Without a controller-manager no "default" ServiceAccount is ever
		// created, and this admission plugin would reject every Pod.
		args = append(args, "--disable-admission-plugins=ServiceAccount")
	}
	if c.opts.AdvertiseAddress == "" {
		// The Endpoints of the "kubernetes" Service would point at a
		// loopback address, which Endpoints validation rejects; nothing
		// in a test cluster needs them.
		args = append(args, "--endpoint-reconciler-type=none")
	}
	if c.opts.Aggregation {
		args = append(args, aggregationArgs(c.Dir, c.CAFile)...)
	}
	return append(args, c.opts.APIServerFlags...)
}

// startAPIServerLocked starts kube-apiserver and waits for /readyz. The
// caller holds c.mu or has not shared c yet.
func (c *ControlPlane) startAPIServerLocked(ctx context.Context) error {
	p, err := startProcessIn(c.opts.NetNS, "kube-apiserver", filepath.Join(c.opts.AssetsDir, "kube-apiserver"),
		c.apiServerArgs(), filepath.Join(c.Dir, "kube-apiserver.log"))
	if err != nil {
		return err
	}
	c.apiServer = p
	httpClient, err := rest.HTTPClientFor(c.Config)
	if err != nil {
		return fmt.Errorf("kube-apiserver client: %w", err)
	}
	defer httpClient.CloseIdleConnections()
	err = p.waitReady(ctx, c.opts.StartTimeout, func(ctx context.Context) error {
		return checkReadyz(ctx, httpClient, c.Host)
	})
	if err != nil {
		_ = p.stop(5 * time.Second)
		return err
	}
	return nil
}

func checkReadyz(ctx context.Context, client *http.Client, host string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, host+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("/readyz: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// waitBootstrapped waits for what kube-apiserver creates right after it
// reports ready: the "default" namespace, which tests put objects in, and
// the default ServiceCIDRs, without which creating a Service fails.
func (c *ControlPlane) waitBootstrapped(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	var lastErr error
	for {
		lastErr = checkBootstrapped(ctx, client)
		if lastErr == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver did not finish bootstrapping: %w", lastErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func checkBootstrapped(ctx context.Context, client kubernetes.Interface) error {
	if _, err := client.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{}); err != nil {
		return fmt.Errorf("namespace default: %w", err)
	}
	cidrs, err := client.NetworkingV1().ServiceCIDRs().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list ServiceCIDRs: %w", err)
	}
	if len(cidrs.Items) == 0 {
		return errors.New("no ServiceCIDR yet")
	}
	for _, cidr := range cidrs.Items {
		if !serviceCIDRReady(cidr) {
			return fmt.Errorf("ServiceCIDR %s not ready", cidr.Name)
		}
	}
	return nil
}

func serviceCIDRReady(cidr networkingv1.ServiceCIDR) bool {
	for _, cond := range cidr.Status.Conditions {
		if cond.Type == networkingv1.ServiceCIDRConditionReady {
			return cond.Status == metav1.ConditionTrue
		}
	}
	return false
}

// StopAPIServer stops only kube-apiserver; etcd and all data stay. Clients
// see connection errors until StartAPIServer. It is a no-op when
// kube-apiserver is not running.
//
// kube-apiserver drains open watches before it exits on SIGTERM, which with
// clients watching outlasts any short grace; tests want an outage, as a crash
// gives, so after a short grace it is killed, and that is no error.
func (c *ControlPlane) StopAPIServer() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.apiServer == nil {
		return nil
	}
	p := c.apiServer
	c.apiServer = nil
	if err := p.stop(2 * time.Second); err != nil && !p.exited() {
		return err
	}
	return nil
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, on the same
// address, with the same certificates and the same etcd, and waits until it
// is ready. Config, Kubeconfig and every minted kubeconfig keep working. It
// is a no-op when kube-apiserver is running.
func (c *ControlPlane) StartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return errors.New("control plane is stopped")
	}
	if c.apiServer != nil && !c.apiServer.exited() {
		return nil
	}
	if err := c.startAPIServerLocked(ctx); err != nil {
		c.apiServer = nil
		return fmt.Errorf("restart kube-apiserver on port %d: %w", c.apiPort, err)
	}
	return nil
}

// Stop stops kube-apiserver and etcd and removes Dir. It is safe to call more
// than once.
func (c *ControlPlane) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	c.stopped = true
	var errs []error
	if c.apiServer != nil {
		errs = append(errs, c.apiServer.stop(15*time.Second))
		c.apiServer = nil
	}
	if c.etcd != nil {
		errs = append(errs, c.etcd.stop(10*time.Second))
		c.etcd = nil
	}
	if err := os.RemoveAll(c.Dir); err != nil {
		errs = append(errs, fmt.Errorf("remove control plane directory: %w", err))
	}
	return errors.Join(errs...)
}

// ServiceAccountKeyFile is the private key kube-apiserver verifies
// ServiceAccount tokens with, which kube-controller-manager signs them with
// (--service-account-private-key-file).
func (c *ControlPlane) ServiceAccountKeyFile() string {
	return filepath.Join(c.Dir, "sa.key")
}

// APIServerPID is kube-apiserver's process id, or 0 while it is stopped.
func (c *ControlPlane) APIServerPID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.apiServer == nil {
		return 0
	}
	return c.apiServer.Pid
}

// APIServerLogTail returns the last n lines of kube-apiserver's log, for
// failure messages.
func (c *ControlPlane) APIServerLogTail(n int) string {
	return logTail(filepath.Join(c.Dir, "kube-apiserver.log"), n)
}

// ignoreAlreadyExists turns AlreadyExists into success, for idempotent
// creates.
func ignoreAlreadyExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
