package controlplane_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"

	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

func TestControlPlane(t *testing.T) {
	t.Parallel()
	start := time.Now()
	cp := controlplane.ForTest(t, controlplane.Options{InstallCRDs: true})
	t.Logf("control plane with CRDs ready in %s at %s", time.Since(start).Round(time.Millisecond), cp.Host)

	ctx := t.Context()
	kube := kubernetes.NewForConfigOrDie(cp.Config)
	mcs := mcsclient.NewForConfigOrDie(cp.Config)
	createNamespace(t, kube, "mcs")

	t.Run("ServiceImport", func(t *testing.T) {
		si := &mcsv1beta1.ServiceImport{
			ObjectMeta: metav1.ObjectMeta{Namespace: "mcs", Name: "web"},
			Spec: mcsv1beta1.ServiceImportSpec{
				Type:  mcsv1beta1.ClusterSetIP,
				IPs:   []string{"10.42.0.1"},
				Ports: []mcsv1beta1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}},
			},
		}
		if _, err := mcs.MulticlusterV1beta1().ServiceImports("mcs").Create(ctx, si, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create ServiceImport: %v", err)
		}
		list, err := mcs.MulticlusterV1beta1().ServiceImports(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list ServiceImports: %v", err)
		}
		if len(list.Items) != 1 || list.Items[0].Name != "web" || !slices.Equal(list.Items[0].Spec.IPs, []string{"10.42.0.1"}) {
			t.Fatalf("listed %+v, want the one ServiceImport mcs/web with IP 10.42.0.1", list.Items)
		}
		// The shipped CRDs serve the alpha version too.
		alpha, err := mcs.MulticlusterV1alpha1().ServiceImports("mcs").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get ServiceImport as v1alpha1: %v", err)
		}
		if !slices.Equal(alpha.Spec.IPs, []string{"10.42.0.1"}) {
			t.Errorf("v1alpha1 IPs = %v, want [10.42.0.1]", alpha.Spec.IPs)
		}
	})

	t.Run("DualStackService", func(t *testing.T) {
		policy := corev1.IPFamilyPolicyRequireDualStack
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "mcs", Name: "dual"},
			Spec: corev1.ServiceSpec{
				IPFamilyPolicy: &policy,
				IPFamilies:     []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol},
				Ports:          []corev1.ServicePort{{Name: "dns", Port: 53, TargetPort: intstr.FromInt32(53), Protocol: corev1.ProtocolUDP}},
			},
		}
		got, err := kube.CoreV1().Services("mcs").Create(ctx, svc, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create dual-stack Service: %v", err)
		}
		if len(got.Spec.ClusterIPs) != 2 {
			t.Fatalf("ClusterIPs = %v, want one IPv4 and one IPv6", got.Spec.ClusterIPs)
		}
		v4, v6 := net.ParseIP(got.Spec.ClusterIPs[0]), net.ParseIP(got.Spec.ClusterIPs[1])
		if v4 == nil || v4.To4() == nil || v6 == nil || v6.To4() != nil {
			t.Fatalf("ClusterIPs = %v, want IPv4 first and IPv6 second", got.Spec.ClusterIPs)
		}
	})

	t.Run("RestrictedUser", func(t *testing.T) {
		grantServiceImportReader(t, kube, "User", "restricted")
		path, err := cp.KubeconfigFor("restricted", "testers")
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			t.Fatalf("load minted kubeconfig: %v", err)
		}
		assertIdentity(t, cfg, "restricted", "testers")
		waitAllowed(t, cfg)
		_, err = kubernetes.NewForConfigOrDie(cfg).CoreV1().Secrets("mcs").List(ctx, metav1.ListOptions{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("listing Secrets as the restricted user: err = %v, want Forbidden", err)
		}
	})

	t.Run("ServiceAccount", func(t *testing.T) {
		path, err := cp.KubeconfigForServiceAccount(ctx, "mcs", "coredns")
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			t.Fatalf("load service account kubeconfig: %v", err)
		}
		assertIdentity(t, cfg, "system:serviceaccount:mcs:coredns", "system:serviceaccounts")
		_, err = mcsclient.NewForConfigOrDie(cfg).MulticlusterV1beta1().ServiceImports("").List(ctx, metav1.ListOptions{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("listing ServiceImports before any binding: err = %v, want Forbidden", err)
		}
		grantServiceImportReader(t, kube, "ServiceAccount", "mcs/coredns")
		waitAllowed(t, cfg)
	})

	t.Run("KubeconfigContexts", func(t *testing.T) {
		rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: cp.Kubeconfig}
		raw, err := rules.Load()
		if err != nil {
			t.Fatalf("load admin kubeconfig: %v", err)
		}
		if raw.CurrentContext != controlplane.AdminContext {
			t.Errorf("current context = %q, want %q", raw.CurrentContext, controlplane.AdminContext)
		}
		other, err := clientcmd.NewNonInteractiveClientConfig(*raw, controlplane.OtherContext, nil, rules).ClientConfig()
		if err != nil {
			t.Fatalf("build %q context: %v", controlplane.OtherContext, err)
		}
		assertIdentity(t, other, controlplane.OtherUser)
		_, err = mcsclient.NewForConfigOrDie(other).MulticlusterV1beta1().ServiceImports("").List(ctx, metav1.ListOptions{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("listing ServiceImports in context %q: err = %v, want Forbidden", controlplane.OtherContext, err)
		}
		admin, err := clientcmd.NewNonInteractiveClientConfig(*raw, controlplane.AdminContext, nil, rules).ClientConfig()
		if err != nil {
			t.Fatalf("build %q context: %v", controlplane.AdminContext, err)
		}
		assertIdentity(t, admin, "admin", "system:masters")
	})

	// Last, because it interrupts the API for the others.
	t.Run("RestartAPIServer", func(t *testing.T) {
		if err := cp.StopAPIServer(); err != nil {
			t.Fatalf("stop kube-apiserver: %v", err)
		}
		short, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := kube.CoreV1().Namespaces().Get(short, "mcs", metav1.GetOptions{})
		cancel()
		if err == nil {
			t.Fatal("kube-apiserver still answers after StopAPIServer")
		}
		restart := time.Now()
		if err := cp.StartAPIServer(ctx); err != nil {
			t.Fatalf("restart kube-apiserver: %v", err)
		}
		t.Logf("kube-apiserver restarted in %s", time.Since(restart).Round(time.Millisecond))
		// The same clients work again and etcd kept the data.
		if _, err := mcs.MulticlusterV1beta1().ServiceImports("mcs").Get(ctx, "web", metav1.GetOptions{}); err != nil {
			t.Fatalf("ServiceImport after restart: %v", err)
		}
	})
}

// TestInstallCRDsLater starts without CRDs, installs only v1alpha1 and then
// the CRDs as shipped, as a test of API discovery would.
func TestInstallCRDsLater(t *testing.T) {
	t.Parallel()
	start := time.Now()
	cp := controlplane.ForTest(t, controlplane.Options{})
	t.Logf("control plane without CRDs ready in %s", time.Since(start).Round(time.Millisecond))
	ctx := t.Context()
	kube := kubernetes.NewForConfigOrDie(cp.Config)

	if _, err := kube.Discovery().ServerResourcesForGroupVersion(mcsv1beta1.GroupVersion.String()); !apierrors.IsNotFound(err) {
		t.Fatalf("discovery of %s before InstallCRDs: err = %v, want NotFound", mcsv1beta1.GroupVersion, err)
	}

	if err := cp.InstallCRDs(ctx, "v1alpha1"); err != nil {
		t.Fatalf("install v1alpha1 CRDs: %v", err)
	}
	if _, err := kube.Discovery().ServerResourcesForGroupVersion("multicluster.x-k8s.io/v1alpha1"); err != nil {
		t.Fatalf("v1alpha1 not served: %v", err)
	}
	if _, err := kube.Discovery().ServerResourcesForGroupVersion(mcsv1beta1.GroupVersion.String()); !apierrors.IsNotFound(err) {
		t.Fatalf("discovery of %s with only v1alpha1 installed: err = %v, want NotFound", mcsv1beta1.GroupVersion, err)
	}

	if err := cp.InstallCRDs(ctx); err != nil {
		t.Fatalf("install CRDs as shipped: %v", err)
	}
	mcs := mcsclient.NewForConfigOrDie(cp.Config)
	if _, err := mcs.MulticlusterV1beta1().ServiceExports("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list v1beta1 ServiceExports: %v", err)
	}
}

func createNamespace(t *testing.T, kube kubernetes.Interface, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := kube.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

// grantServiceImportReader binds a ClusterRole that may only read
// ServiceImports to the subject: kind "User", or "ServiceAccount" with name
// "namespace/name".
func grantServiceImportReader(t *testing.T, kube kubernetes.Interface, kind, name string) {
	t.Helper()
	ctx := t.Context()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "serviceimport-reader"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{mcsv1beta1.GroupName},
			Resources: []string{"serviceimports"},
			Verbs:     []string{"get", "list", "watch"},
		}},
	}
	_, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create ClusterRole: %v", err)
	}
	subject := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
	if kind == rbacv1.ServiceAccountKind {
		ns, sa, _ := strings.Cut(name, "/")
		subject = rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "serviceimport-reader-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{subject},
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ClusterRoleBinding: %v", err)
	}
}

// waitAllowed waits until cfg may list ServiceImports: the RBAC authorizer
// sees new bindings through an informer, a moment after they are created.
func waitAllowed(t *testing.T, cfg *rest.Config) {
	t.Helper()
	client := mcsclient.NewForConfigOrDie(cfg)
	poll.Eventually(t, 10*time.Second, "ServiceImports listed after the binding", func() (bool, string) {
		_, err := client.MulticlusterV1beta1().ServiceImports("").List(t.Context(), metav1.ListOptions{})
		if err != nil && !apierrors.IsForbidden(err) {
			t.Fatalf("listing ServiceImports after the binding: %v", err)
		}
		return err == nil, fmt.Sprint(err)
	})
}

// assertIdentity checks whom kube-apiserver authenticates cfg as.
func assertIdentity(t *testing.T, cfg *rest.Config, user string, groups ...string) {
	t.Helper()
	review, err := kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().SelfSubjectReviews().
		Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectReview: %v", err)
	}
	info := review.Status.UserInfo
	if info.Username != user {
		t.Errorf("authenticated as %q, want %q", info.Username, user)
	}
	for _, g := range groups {
		if !slices.Contains(info.Groups, g) {
			t.Errorf("groups of %q = %v, want %q among them", info.Username, info.Groups, g)
		}
	}
}
