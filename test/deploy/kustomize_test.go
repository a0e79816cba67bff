package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// kubectl runs the preinstalled kubectl (with its built-in kustomize)
// against a control plane.
type kubectl struct {
	t          *testing.T
	path       string
	kubeconfig string
}

// newKubectl looks for kubectl before it starts a control plane, so that a
// missing kubectl skips (or fails) the test at once.
func newKubectl(t *testing.T) (*kubectl, *controlplane.ControlPlane) {
	t.Helper()
	path := lookTool(t, "kubectl", "https://kubernetes.io/docs/tasks/tools/")
	cp := controlplane.ForTest(t, controlplane.Options{})
	return &kubectl{t: t, path: path, kubeconfig: cp.Kubeconfig}, cp
}

func (k *kubectl) run(args ...string) (string, error) {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(k.t.Context(), 2*time.Minute)
	defer cancel()
	return run(ctx, k.t, nil, k.path, append([]string{"--kubeconfig", k.kubeconfig}, args...)...)
}

func (k *kubectl) must(args ...string) string {
	k.t.Helper()
	out, err := k.run(args...)
	if err != nil {
		k.t.Fatal(err)
	}
	return out
}

// render returns the objects `kubectl kustomize dir` produces.
func render(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	kubectlPath := lookTool(t, "kubectl", "https://kubernetes.io/docs/tasks/tools/")
	out, err := run(t.Context(), t, nil, kubectlPath, "kustomize", dir)
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("decode kubectl kustomize %s: %v", dir, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	return objs
}

// ids names objects as Kind namespace/name, sorted.
func ids(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
	}
	slices.Sort(out)
	return out
}

// TestKustomizationsRender pins what each kustomization contains, so that
// nothing (such as manifests/examples) slips into what users apply.
func TestKustomizationsRender(t *testing.T) {
	crds := []string{
		"CustomResourceDefinition /serviceexports.multicluster.x-k8s.io",
		"CustomResourceDefinition /serviceimports.multicluster.x-k8s.io",
		"CustomResourceDefinition /clusterproperties.about.k8s.io",
	}
	rbac := []string{
		"ClusterRole /system:coredns-multicluster",
		"ClusterRoleBinding /system:coredns-multicluster",
	}
	corefile := []string{"ConfigMap kube-system/coredns"}
	for dir, want := range map[string][]string{
		"manifests/crds":     crds,
		"manifests/rbac":     rbac,
		"manifests/corefile": corefile,
		"manifests":          slices.Concat(crds, rbac, corefile, []string{"Deployment kube-system/coredns"}),
		"manifests/install": slices.Concat(crds, rbac, corefile, []string{
			"ClusterRole /system:coredns",
			"ClusterRoleBinding /system:coredns",
			"Deployment kube-system/coredns",
			"Service kube-system/kube-dns",
			"ServiceAccount kube-system/coredns",
		}),
		"manifests/standalone": {
			"ClusterRole /system:coredns-mcs-standalone",
			"ClusterRoleBinding /system:coredns-mcs-standalone",
			"ConfigMap kube-system/coredns-mcs",
			"Deployment kube-system/coredns-mcs",
			"Service kube-system/coredns-mcs",
			"ServiceAccount kube-system/coredns-mcs",
		},
		"manifests/monitoring": {
			"PrometheusRule kube-system/coredns-mcs",
			"ServiceMonitor kube-system/coredns-mcs",
			"ServiceMonitor kube-system/coredns-mcs-standalone",
		},
	} {
		t.Run(strings.ReplaceAll(dir, "/", "_"), func(t *testing.T) {
			objs := render(t, dir)
			slices.Sort(want)
			if got := ids(objs); !slices.Equal(got, want) {
				t.Errorf("kubectl kustomize %s:\n got %v\nwant %v", dir, got, want)
			}
			for _, o := range objs {
				if o.GetKind() != "Deployment" {
					continue
				}
				containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
				if len(containers) != 1 || containers[0].(map[string]any)["image"] != image {
					t.Errorf("%s: Deployment containers %v, want one with image %s", dir, containers, image)
				}
			}
		})
	}
}

// waitNamespace waits for kube-system, which kube-apiserver creates itself
// shortly after it starts.
func waitNamespace(t *testing.T, kube kubernetes.Interface, name string) {
	t.Helper()
	poll.Eventually(t, 30*time.Second, "namespace "+name, func() (bool, string) {
		_, err := kube.CoreV1().Namespaces().Get(t.Context(), name, metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
}

// TestInstallManifests applies manifests/install to a cluster without CoreDNS,
// as a user would: first a server-side dry run, then for real.
func TestInstallManifests(t *testing.T) {
	k, cp := newKubectl(t)
	kube := kubernetes.NewForConfigOrDie(cp.Config)
	waitNamespace(t, kube, metav1.NamespaceSystem)

	// The swap needs an existing CoreDNS: on this cluster it must fail
	// rather than create a Deployment from the partial object.
	out, err := k.run("apply", "--server-side", "--dry-run=server", "-k", "manifests")
	if err == nil || !strings.Contains(out, `"coredns" is invalid`) {
		t.Errorf("the swap applied to a cluster without CoreDNS: want it rejected as an invalid Deployment, got err %v:\n%s", err, out)
	} else {
		t.Logf("rejected as it should be: %s", strings.TrimSpace(out))
	}

	for _, dir := range []string{"manifests/crds", "manifests/rbac", "manifests/install"} {
		k.must("apply", "--server-side", "--dry-run=server", "-k", dir)
	}
	k.must("apply", "--server-side", "-k", "manifests/install")

	ctx := t.Context()
	d, err := kube.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 2 || d.Spec.Template.Spec.ServiceAccountName != "coredns" {
		t.Errorf("Deployment: replicas %d, serviceAccountName %q; want 2, coredns", *d.Spec.Replicas, d.Spec.Template.Spec.ServiceAccountName)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != image {
		t.Errorf("image %s, want %s", c.Image, image)
	}
	sc := c.SecurityContext
	if sc == nil || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) || ptr.Deref(sc.AllowPrivilegeEscalation, true) ||
		!ptr.Deref(sc.RunAsNonRoot, false) || ptr.Deref(sc.RunAsUser, 0) != 65532 || sc.Capabilities == nil ||
		!slices.Equal(sc.Capabilities.Add, []corev1.Capability{"NET_BIND_SERVICE"}) || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container securityContext %+v: want nonroot 65532, read-only root, no privilege escalation, only NET_BIND_SERVICE", sc)
	}
	if p := c.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/health" || p.HTTPGet.Port != intstr.FromInt32(8080) {
		t.Errorf("liveness probe %+v, want GET /health on 8080 (the health plugin)", p)
	}
	if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/ready" || p.HTTPGet.Port != intstr.FromInt32(8181) ||
		p.PeriodSeconds != 1 || p.FailureThreshold != 2 {
		t.Errorf("readiness probe %+v, want GET /ready on 8181 (the ready plugin) every second, failing after 2", p)
	}
	if p := c.StartupProbe; !equalJSON(t, p, swapStartupProbe()) {
		t.Errorf("startup probe %s, want %s (port 53 accepts before readiness is probed)", toJSON(t, p), toJSON(t, swapStartupProbe()))
	}
	var ports []string
	for _, p := range c.Ports {
		ports = append(ports, fmt.Sprintf("%s=%s/%d", p.Name, p.Protocol, p.ContainerPort))
	}
	if want := []string{"dns=UDP/53", "dns-tcp=TCP/53", "metrics=TCP/9153"}; !slices.Equal(ports, want) {
		t.Errorf("container ports %v, want %v", ports, want)
	}

	svc, err := kube.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ports = nil
	for _, p := range svc.Spec.Ports {
		ports = append(ports, fmt.Sprintf("%s=%s/%d", p.Name, p.Protocol, p.Port))
	}
	if want := []string{"dns=UDP/53", "dns-tcp=TCP/53", "metrics=TCP/9153"}; !slices.Equal(ports, want) || svc.Spec.ClusterIP != "10.96.0.10" {
		t.Errorf("kube-dns Service %s ports %v, want 10.96.0.10 ports %v", svc.Spec.ClusterIP, ports, want)
	}
	if !labelsSelect(svc.Spec.Selector, d.Spec.Template.Labels) {
		t.Errorf("kube-dns selects %v, which the Deployment's pods (labels %v) do not match", svc.Spec.Selector, d.Spec.Template.Labels)
	}

	// Applying again, as an upgrade to a new tag does, needs no force.
	k.must("apply", "--server-side", "-k", "manifests/install")
}

func labelsSelect(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// kubeadmCorefile is the Corefile kubeadm writes, which the swap replaces
// and the rollback restores.
const kubeadmCorefile = `.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30
    loop
    reload
    loadbalance
}
`

const kubeadmImage = "registry.k8s.io/coredns/coredns:v1.12.0"

// createKubeadmCoreDNS creates CoreDNS the way kubeadm does (client-side
// creates, field manager kubeadm): its ServiceAccount, ClusterRole and
// binding, Corefile ConfigMap, Deployment and kube-dns Service.
func createKubeadmCoreDNS(t *testing.T, kube kubernetes.Interface) {
	t.Helper()
	createCoreDNSAs(t, kube, "kubeadm")
}

// createCoreDNSAs creates kubeadm's CoreDNS objects with the field manager
// manager, as the installer that owns them would.
func createCoreDNSAs(t *testing.T, kube kubernetes.Interface, manager string) {
	t.Helper()
	ctx := t.Context()
	opts := metav1.CreateOptions{FieldManager: manager}
	ns := metav1.NamespaceSystem
	labels := map[string]string{"k8s-app": "kube-dns"}
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("create kubeadm's CoreDNS: %v", err)
		}
	}
	_, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "coredns"}}, opts)
	check(err)
	_, err = kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		},
	}, opts)
	check(err)
	_, err = kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:coredns"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "coredns"}},
	}, opts)
	check(err)
	_, err = kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "coredns"},
		Data:       map[string]string{"Corefile": kubeadmCorefile},
	}, opts)
	check(err)
	probe := func(path string, port int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(port)}}}
	}
	_, err = kube.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "coredns", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					PriorityClassName:  "system-cluster-critical",
					ServiceAccountName: "coredns",
					DNSPolicy:          corev1.DNSDefault,
					Containers: []corev1.Container{{
						Name:  "coredns",
						Image: kubeadmImage,
						Args:  []string{"-conf", "/etc/coredns/Corefile"},
						Ports: []corev1.ContainerPort{
							{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
							{Name: "dns-tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP},
							{Name: "metrics", ContainerPort: 9153, Protocol: corev1.ProtocolTCP},
						},
						VolumeMounts:   []corev1.VolumeMount{{Name: "config-volume", MountPath: "/etc/coredns", ReadOnly: true}},
						LivenessProbe:  probe("/health", 8080),
						ReadinessProbe: probe("/ready", 8181),
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							Capabilities:             &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}, Drop: []corev1.Capability{"ALL"}},
						},
					}},
					Volumes: []corev1.Volume{{Name: "config-volume", VolumeSource: corev1.VolumeSource{
						ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: "coredns"},
							Items:                []corev1.KeyToPath{{Key: "Corefile", Path: "Corefile"}},
						},
					}}},
				},
			},
		},
	}, opts)
	check(err)
	_, err = kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Labels: labels},
		Spec: corev1.ServiceSpec{
			Selector:  labels,
			ClusterIP: "10.96.0.10",
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
				{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP},
				{Name: "metrics", Port: 9153, Protocol: corev1.ProtocolTCP},
			},
		},
	}, opts)
	check(err)
}

// TestSwapAfterEKSAddOn runs the EKS step of docs/deploy.md (Swap on k3s,
// EKS and rke2) from where the AWS CLI leaves it: after `aws eks
// delete-addon --preserve`, the add-on's objects stay, their fields managed
// by "eks" (the field manager internal/front detects the add-on by). The
// swap then conflicts with that manager without --force-conflicts and takes
// the image and the Corefile over with it.
func TestSwapAfterEKSAddOn(t *testing.T) {
	k, cp := newKubectl(t)
	kube := kubernetes.NewForConfigOrDie(cp.Config)
	waitNamespace(t, kube, metav1.NamespaceSystem)
	createCoreDNSAs(t, kube, "eks")
	out, err := k.run("apply", "--server-side", "--dry-run=server", "-k", "manifests")
	if err == nil || !strings.Contains(out, `conflict with "eks"`) {
		t.Errorf("want a conflict with the eks field manager without --force-conflicts, got err %v:\n%s", err, out)
	}
	k.must("apply", "--server-side", "--force-conflicts", "-k", "manifests")
	expectSwapped(t, kube)
}

// expectSwapped checks that kube-system/coredns runs this image with
// manifests/corefile's Corefile, and returns the Deployment.
func expectSwapped(t *testing.T, kube kubernetes.Interface) *appsv1.Deployment {
	t.Helper()
	after, err := kube.AppsV1().Deployments("kube-system").Get(t.Context(), "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := after.Spec.Template.Spec.Containers[0].Image; got != image {
		t.Errorf("image after the swap: %s, want %s", got, image)
	}
	cm, err := kube.CoreV1().ConfigMaps("kube-system").Get(t.Context(), "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["Corefile"] != shippedCorefile(t) {
		t.Errorf("Corefile after the swap:\n%s\nwant manifests/corefile's", cm.Data["Corefile"])
	}
	return after
}

// TestSwapManifests runs the swap of docs/deploy.md on a cluster with
// kubeadm's CoreDNS: back up, dry run, apply, check that only the image and
// the Corefile changed, and roll back.
func TestSwapManifests(t *testing.T) {
	k, cp := newKubectl(t)
	kube := kubernetes.NewForConfigOrDie(cp.Config)
	ctx := t.Context()
	waitNamespace(t, kube, metav1.NamespaceSystem)
	createKubeadmCoreDNS(t, kube)
	before, err := kube.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// Back up what the rollback needs (docs/deploy.md, "Before you start").
	backupCorefile := k.must("-n", "kube-system", "get", "configmap", "coredns", "-o", "jsonpath={.data.Corefile}")
	backupImage := k.must("-n", "kube-system", "get", "deployment", "coredns", "-o", `jsonpath={.spec.template.spec.containers[?(@.name=="coredns")].image}`)
	if backupCorefile != kubeadmCorefile || backupImage != kubeadmImage {
		t.Fatalf("backup commands returned %q and %q", backupCorefile, backupImage)
	}

	// Without --force-conflicts, server-side apply refuses to take the image
	// and the Corefile over from kubeadm; docs/deploy.md says why the flag
	// is needed.
	out, err := k.run("apply", "--server-side", "--dry-run=server", "-k", "manifests")
	if err == nil || !strings.Contains(out, "conflict") {
		t.Errorf("want a field manager conflict without --force-conflicts, got err %v:\n%s", err, out)
	} else {
		t.Logf("rejected as it should be: %s", strings.TrimSpace(out))
	}

	k.must("apply", "--server-side", "--force-conflicts", "--dry-run=server", "-k", "manifests")
	unchanged, err := kube.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if unchanged.Spec.Template.Spec.Containers[0].Image != kubeadmImage {
		t.Fatal("the dry run changed the Deployment")
	}

	k.must("apply", "--server-side", "--force-conflicts", "-k", "manifests")

	after := expectSwapped(t, kube)
	// Everything but the image and the probes' timing is kubeadm's still.
	want := before.Spec.DeepCopy()
	want.Template.Spec.Containers[0].Image = image
	swapProbes(&want.Template.Spec.Containers[0])
	if !equalJSON(t, want, &after.Spec) {
		t.Errorf("the swap changed more than the image and the probes' timing:\nbefore %s\nafter  %s", toJSON(t, before.Spec), toJSON(t, after.Spec))
	}
	for _, name := range []string{"system:coredns-multicluster", "system:coredns"} {
		if _, err := kube.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("ClusterRole %s: %v", name, err)
		}
	}
	k.must("wait", "--for=condition=Established", "--timeout=60s",
		"crd/serviceimports.multicluster.x-k8s.io", "crd/serviceexports.multicluster.x-k8s.io")
	// The ServiceAccount, kube-dns and kubeadm's ClusterRole are untouched.
	if _, err := kube.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}

	// Once applied, later upgrades own the fields and need no force.
	k.must("apply", "--server-side", "-k", "manifests")

	// Roll back as docs/deploy.md says: the saved Corefile and image.
	// (kubectl rollout undo needs the ReplicaSets a controller-manager keeps,
	// which this test cluster does not run.)
	dir := t.TempDir()
	writeFile(t, dir+"/Corefile.backup", backupCorefile)
	cmYAML := k.must("-n", "kube-system", "create", "configmap", "coredns", "--from-file=Corefile="+dir+"/Corefile.backup", "--dry-run=client", "-o", "yaml")
	writeFile(t, dir+"/configmap.yaml", cmYAML)
	k.must("apply", "--server-side", "--force-conflicts", "-f", dir+"/configmap.yaml")
	k.must("-n", "kube-system", "set", "image", "deployment/coredns", "coredns="+backupImage)

	restored, err := kube.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// set image puts the image back and leaves the probes' timing, which
	// suits the old image as well (rollout undo, which test/swap runs,
	// restores the whole pod template).
	want = before.Spec.DeepCopy()
	swapProbes(&want.Template.Spec.Containers[0])
	if !equalJSON(t, want, &restored.Spec) {
		t.Errorf("rolled back Deployment differs:\nbefore %s\nafter  %s", toJSON(t, before.Spec), toJSON(t, restored.Spec))
	}
	cm, err := kube.CoreV1().ConfigMaps("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["Corefile"] != kubeadmCorefile {
		t.Errorf("rolled back Corefile:\n%s\nwant kubeadm's", cm.Data["Corefile"])
	}

	// Removing the multicluster RBAC, as the rollback section allows.
	k.must("delete", "-k", "manifests/rbac")
	if _, err := kube.RbacV1().ClusterRoles().Get(ctx, "system:coredns-multicluster", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRole system:coredns-multicluster after delete -k manifests/rbac: %v", err)
	}
}

func toJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	return bytes.Equal(toJSON(t, a), toJSON(t, b))
}

// swapStartupProbe is the startup probe that the swap and the fresh install
// give the CoreDNS container, with the defaults the API server fills in.
func swapStartupProbe() *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(53)}},
		PeriodSeconds:    1,
		FailureThreshold: 30,
		TimeoutSeconds:   1,
		SuccessThreshold: 1,
	}
}

// swapProbes sets what the swap changes in the probes of kubeadm's
// container: a startup probe, and the readiness probe's period and failure
// threshold.
func swapProbes(c *corev1.Container) {
	c.StartupProbe = swapStartupProbe()
	c.ReadinessProbe.PeriodSeconds = 1
	c.ReadinessProbe.FailureThreshold = 2
}
