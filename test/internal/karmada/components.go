package karmada

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"
)

// Namespaces Karmada keeps in karmada-apiserver: its own components'
// (karmada-system) and the members' credentials (karmada-cluster, the
// default of `karmadactl join --cluster-namespace`).
const (
	systemNamespace  = "karmada-system"
	clusterNamespace = "karmada-cluster"
)

// startAttempts is how often a component is started on a new port when the
// one picked was taken before it could bind it.
const startAttempts = 3

// startComponent starts a binary of the kube or karmada set as name, with
// args(port) for a free port, and waits until ready(port) succeeds.
func (k *Karmada) startComponent(ctx context.Context, name, binary string, args func(port int) []string, ready func(ctx context.Context, port int) error) error {
	for attempt := 1; ; attempt++ {
		port, err := controlplane.FreePort()
		if err != nil {
			return err
		}
		d, err := controlplane.StartDaemonIn(k.opts.NetNS, name, binary, args(port), filepath.Join(k.Dir, name+".log"))
		if err != nil {
			return err
		}
		k.mu.Lock()
		k.daemons[name] = d
		k.mu.Unlock()
		err = d.WaitReady(ctx, k.opts.StartTimeout, func(ctx context.Context) error { return ready(ctx, port) })
		if err == nil {
			return nil
		}
		_ = d.Stop(5 * time.Second)
		if attempt >= startAttempts || !d.AddressInUse() {
			return err
		}
	}
}

// tlsClient trusts the control plane's CA, which signs every serving
// certificate here.
func (k *Karmada) tlsClient() (*http.Client, error) {
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(k.APIServer.CAFile)
	if err != nil {
		return nil, fmt.Errorf("read CA: %w", err)
	}
	pool.AppendCertsFromPEM(ca)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DialContext: k.dial()}}, nil
}

// dial is how clients reach the components: inside Options.NetNS, if set.
func (k *Karmada) dial() func(ctx context.Context, network, address string) (net.Conn, error) {
	if k.opts.NetNS == nil {
		return nil
	}
	return k.opts.NetNS.DialContext
}

// httpOK succeeds when GET url answers 200.
func httpOK(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// ensureNamespace creates namespace ns in karmada-apiserver unless it exists.
func (k *Karmada) ensureNamespace(ctx context.Context, ns string) error {
	_, err := k.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	return nil
}

// karmadaWebhooks are the admission webhooks of karmada-webhook that the
// tests rely on, after artifacts/deploy/webhook-configuration.yaml and the
// handlers cmd/webhook/app/webhook.go registers. The mutating ones are not
// optional here: they set the permanent IDs (labels *.karmada.io/permanent-id)
// of policies, bindings and Works, which Karmada's controllers select Works
// and EndpointSlices by (pkg/util/helper/work.go, GetWorksByBindingID;
// pkg/controllers/mcs/endpointslice_controller.go); and the PropagationPolicy
// one sets propagateDeps on policies that select a ServiceImport
// (pkg/webhook/propagationpolicy/mutating.go), which is what carries
// derived-NAME and its EndpointSlices to the importing member.
var karmadaWebhooks = []struct {
	mutating   bool
	group      string
	resource   string
	path       string
	operations []admissionv1.OperationType
}{
	{true, "policy.karmada.io", "propagationpolicies", "/mutate-propagationpolicy", createUpdate},
	{true, "policy.karmada.io", "clusterpropagationpolicies", "/mutate-clusterpropagationpolicy", createUpdate},
	{true, "policy.karmada.io", "overridepolicies", "/mutate-overridepolicy", createUpdate},
	{true, "work.karmada.io", "resourcebindings", "/mutate-resourcebinding", []admissionv1.OperationType{admissionv1.Create}},
	{true, "work.karmada.io", "clusterresourcebindings", "/mutate-clusterresourcebinding", []admissionv1.OperationType{admissionv1.Create}},
	{true, "work.karmada.io", "works", "/mutate-work", createUpdate},
	{true, "networking.karmada.io", "multiclusterservices", "/mutate-multiclusterservice", createUpdate},
	{false, "policy.karmada.io", "propagationpolicies", "/validate-propagationpolicy", createUpdate},
	{false, "policy.karmada.io", "clusterpropagationpolicies", "/validate-clusterpropagationpolicy", createUpdate},
	{false, "networking.karmada.io", "multiclusterservices", "/validate-multiclusterservice", createUpdate},
}

var createUpdate = []admissionv1.OperationType{admissionv1.Create, admissionv1.Update}

// startWebhook starts karmada-webhook on 127.0.0.1 and registers its
// webhooks in karmada-apiserver by URL (there is no Service network here).
func (k *Karmada) startWebhook(ctx context.Context) error {
	certFile, keyFile, err := k.APIServer.ServingCertFor()
	if err != nil {
		return err
	}
	client, err := k.tlsClient()
	if err != nil {
		return err
	}
	err = k.startComponent(ctx, "karmada-webhook", filepath.Join(k.karmadaBin, "karmada-webhook"),
		func(port int) []string {
			k.webhookPort = port
			return []string{
				"--kubeconfig=" + k.kubeconfig,
				"--bind-address=127.0.0.1",
				"--secure-port=" + strconv.Itoa(port),
				"--cert-dir=" + filepath.Dir(certFile),
				"--tls-cert-file-name=" + filepath.Base(certFile),
				"--tls-private-key-file-name=" + filepath.Base(keyFile),
				"--metrics-bind-address=0",
				"--health-probe-bind-address=0",
			}
		},
		func(ctx context.Context, port int) error {
			// Any path proves the TLS server is up: unknown ones say 404.
			err := httpOK(ctx, client, "https://127.0.0.1:"+strconv.Itoa(port)+"/")
			if err != nil && strings.Contains(err.Error(), "404") {
				return nil
			}
			return err
		})
	if err != nil {
		return err
	}
	ca, err := os.ReadFile(k.APIServer.CAFile)
	if err != nil {
		return fmt.Errorf("read CA: %w", err)
	}
	mutating := &admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "karmada-mutating"}}
	validating := &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "karmada-validating"}}
	for _, w := range karmadaWebhooks {
		name := strings.TrimPrefix(w.path, "/") + ".karmada.io"
		clientConfig := admissionv1.WebhookClientConfig{
			URL:      ptr.To(fmt.Sprintf("https://127.0.0.1:%d%s", k.webhookPort, w.path)),
			CABundle: ca,
		}
		rules := []admissionv1.RuleWithOperations{{
			Operations: w.operations,
			Rule: admissionv1.Rule{
				APIGroups:   []string{w.group},
				APIVersions: []string{"*"},
				Resources:   []string{w.resource},
				Scope:       ptr.To(admissionv1.AllScopes),
			},
		}}
		// Karmada's configuration says 3 s; a busy 2-core CI machine
		// needs more headroom, and Fail must not fail a test for that.
		timeout := ptr.To[int32](15)
		if w.mutating {
			mutating.Webhooks = append(mutating.Webhooks, admissionv1.MutatingWebhook{
				Name: name, ClientConfig: clientConfig, Rules: rules, TimeoutSeconds: timeout,
				FailurePolicy: ptr.To(admissionv1.Fail), SideEffects: ptr.To(admissionv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"},
			})
		} else {
			validating.Webhooks = append(validating.Webhooks, admissionv1.ValidatingWebhook{
				Name: name, ClientConfig: clientConfig, Rules: rules, TimeoutSeconds: timeout,
				FailurePolicy: ptr.To(admissionv1.Fail), SideEffects: ptr.To(admissionv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"},
			})
		}
	}
	if _, err := k.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("register karmada-webhook: %w", err)
	}
	if _, err := k.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("register karmada-webhook: %w", err)
	}
	return nil
}

var (
	apiServiceResource = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	clusterResource    = schema.GroupVersionResource{Group: "cluster.karmada.io", Version: "v1alpha1", Resource: "clusters"}
)

// aggregatedAPIServerService is the Service the APIService points at; its
// name is also the name kube-apiserver checks the serving certificate for
// (NAME.NAMESPACE.svc), as in artifacts/deploy/karmada-aggregated-apiserver-apiservice.yaml.
const aggregatedAPIServerService = "karmada-aggregated-apiserver"

// startAggregatedAPIServer starts karmada-aggregated-apiserver, which keeps
// Cluster objects in karmada-apiserver's etcd and serves them through the
// APIService v1alpha1.cluster.karmada.io. kube-apiserver reaches it through
// an ExternalName Service that names 127.0.0.1.
func (k *Karmada) startAggregatedAPIServer(ctx context.Context) error {
	if err := k.ensureNamespace(ctx, systemNamespace); err != nil {
		return err
	}
	certFile, keyFile, err := k.APIServer.ServingCertFor(aggregatedAPIServerService + "." + systemNamespace + ".svc")
	if err != nil {
		return err
	}
	client, err := k.tlsClient()
	if err != nil {
		return err
	}
	var port int
	err = k.startComponent(ctx, "karmada-aggregated-apiserver", filepath.Join(k.karmadaBin, "karmada-aggregated-apiserver"),
		func(p int) []string {
			port = p
			// The flags of artifacts/deploy/karmada-aggregated-apiserver.yaml,
			// on loopback and without etcd TLS.
			return []string{
				"--kubeconfig=" + k.kubeconfig,
				"--authentication-kubeconfig=" + k.kubeconfig,
				"--authorization-kubeconfig=" + k.kubeconfig,
				"--etcd-servers=" + k.APIServer.EtcdURL(),
				"--bind-address=127.0.0.1",
				"--secure-port=" + strconv.Itoa(p),
				"--tls-cert-file=" + certFile,
				"--tls-private-key-file=" + keyFile,
				"--cert-dir=" + filepath.Join(k.Dir, "aggregated-apiserver-certs"),
			}
		},
		func(ctx context.Context, p int) error {
			return httpOK(ctx, client, "https://127.0.0.1:"+strconv.Itoa(p)+"/readyz")
		})
	if err != nil {
		return err
	}

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: aggregatedAPIServerService},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"},
	}
	if _, err := k.kube.CoreV1().Services(systemNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Service %s/%s: %w", systemNamespace, aggregatedAPIServerService, err)
	}
	ca, err := os.ReadFile(k.APIServer.CAFile)
	if err != nil {
		return fmt.Errorf("read CA: %w", err)
	}
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": "v1alpha1.cluster.karmada.io"},
		"spec": map[string]any{
			"group":                "cluster.karmada.io",
			"version":              "v1alpha1",
			"groupPriorityMinimum": int64(2000),
			"versionPriority":      int64(10),
			"caBundle":             ca,
			"service": map[string]any{
				"namespace": systemNamespace,
				"name":      aggregatedAPIServerService,
				"port":      int64(port),
			},
		},
	}}
	if _, err := k.dynamic.Resource(apiServiceResource).Create(ctx, apiService, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create APIService v1alpha1.cluster.karmada.io: %w", err)
	}
	return k.poll(ctx, "APIService v1alpha1.cluster.karmada.io available", func(ctx context.Context) error {
		current, err := k.dynamic.Resource(apiServiceResource).Get(ctx, "v1alpha1.cluster.karmada.io", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if status, message := condition(current, "Available"); status != "True" {
			return fmt.Errorf("Available=%s: %s", status, message)
		}
		// The aggregator's discovery lags its availability a little.
		_, err = k.dynamic.Resource(clusterResource).List(ctx, metav1.ListOptions{})
		return err
	})
}

// startKubeControllerManager runs kube-controller-manager against
// karmada-apiserver with the controllers Karmada's ownership chains need:
// the garbage collector deletes the ResourceBinding of a deleted resource
// template (and so its Works), the namespace controller empties deleted
// namespaces. artifacts/deploy/kube-controller-manager.yaml runs these
// among others.
func (k *Karmada) startKubeControllerManager(ctx context.Context) error {
	return k.startComponent(ctx, "kube-controller-manager", filepath.Join(k.kubeBin, "kube-controller-manager"),
		func(int) []string {
			return []string{
				"--kubeconfig=" + k.kubeconfig,
				"--controllers=namespace,garbagecollector",
				"--leader-elect=false",
				// Serve nothing: no port to share with anyone.
				"--secure-port=0",
			}
		},
		func(context.Context, int) error { return nil })
}

// startScheduler starts karmada-scheduler; its health endpoint answers once
// it has parsed its flags and connected.
func (k *Karmada) startScheduler(ctx context.Context) error {
	return k.startComponent(ctx, "karmada-scheduler", filepath.Join(k.karmadaBin, "karmada-scheduler"),
		func(port int) []string {
			return []string{
				"--kubeconfig=" + k.kubeconfig,
				// One instance; leader election would only delay restarts.
				"--leader-elect=false",
				"--metrics-bind-address=0",
				"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(port),
			}
		},
		k.healthz)
}

// startControllerManager starts karmada-controller-manager with every
// controller it enables by default and opts.FeatureGates.
func (k *Karmada) startControllerManager(ctx context.Context) error {
	return k.startComponent(ctx, "karmada-controller-manager", filepath.Join(k.karmadaBin, "karmada-controller-manager"),
		func(port int) []string {
			args := []string{
				"--kubeconfig=" + k.kubeconfig,
				"--leader-elect=false",
				"--metrics-bind-address=0",
				"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(port),
			}
			if k.opts.FeatureGates != "" {
				args = append(args, "--feature-gates="+k.opts.FeatureGates)
			}
			return args
		},
		k.healthz)
}

// healthz checks the health endpoint of a controller-runtime manager.
func (k *Karmada) healthz(ctx context.Context, port int) error {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: k.dial()}}
	return httpOK(ctx, client, "http://127.0.0.1:"+strconv.Itoa(port)+"/healthz")
}

// RestartControllerManager restarts karmada-controller-manager with
// --feature-gates=featureGates (empty: Karmada's defaults), for instance to
// switch on MultiClusterService, and waits until it is healthy and every
// member is Ready again.
func (k *Karmada) RestartControllerManager(ctx context.Context, featureGates string) error {
	k.mu.Lock()
	d := k.daemons["karmada-controller-manager"]
	delete(k.daemons, "karmada-controller-manager")
	stopped := k.stopped
	k.mu.Unlock()
	if stopped {
		return errors.New("karmada is stopped")
	}
	if d != nil {
		if err := d.Stop(5 * time.Second); err != nil && !d.Exited() {
			return fmt.Errorf("stop karmada-controller-manager: %w", err)
		}
	}
	k.opts.FeatureGates = featureGates
	if err := k.startControllerManager(ctx); err != nil {
		return err
	}
	return k.waitMembersReady(ctx)
}

// poll runs check every 200 ms until it succeeds or the start timeout (or
// ctx) expires.
func (k *Karmada) poll(ctx context.Context, what string, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, k.opts.StartTimeout)
	defer cancel()
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not after %s: %w", what, k.opts.StartTimeout, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// condition returns the status and message of the condition of type typ in
// obj's status.conditions.
func condition(obj *unstructured.Unstructured, typ string) (status, message string) {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		cond, _ := c.(map[string]any)
		if cond["type"] == typ {
			return fmt.Sprint(cond["status"]), fmt.Sprint(cond["message"])
		}
	}
	return "Unknown", "no " + typ + " condition"
}
