package karmada

import (
	"context"
	"fmt"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// systemLabels mark what joining creates as Karmada's (karmada.io/system,
// pkg/util/constants.go), as `karmadactl join` does.
var systemLabels = map[string]string{"karmada.io/system": "true"}

// joinMembers registers both members in push mode and waits until Karmada
// reports them Ready.
func (k *Karmada) joinMembers(ctx context.Context) error {
	if err := k.ensureNamespace(ctx, clusterNamespace); err != nil {
		return err
	}
	for _, m := range k.Members {
		if err := k.join(ctx, m); err != nil {
			return fmt.Errorf("join %s: %w", m.Name, err)
		}
	}
	return k.waitMembersReady(ctx)
}

// join does what `karmadactl join NAME` does for a push-mode member
// (pkg/karmadactl/join/join.go and pkg/util/credential.go in Karmada
// v1.18.2): in the member, a ServiceAccount karmada-NAME in karmada-cluster
// bound to a ClusterRole with every right; in karmada-apiserver, a Secret
// karmada-cluster/NAME with that account's token and the member's CA
// (keys "token" and "caBundle"), and the Cluster NAME with syncMode Push, the
// member's API endpoint, its id (the UID of its kube-system namespace) and a
// reference to the Secret, which the Cluster then owns.
//
// One difference: join reads the token from a legacy token Secret that the
// member's token controller fills in; members here run no
// controller-manager, so the token comes from the TokenRequest API.
// The impersonator account that join also creates serves only Karmada's
// cluster proxy (pkg/controllers/unifiedauth), which the tests do not use.
func (k *Karmada) join(ctx context.Context, m *Member) error {
	member, err := kubernetes.NewForConfig(m.Config)
	if err != nil {
		return err
	}
	account := "karmada-" + m.Name
	role := "karmada-controller-manager:" + account
	_, err = member.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: clusterNamespace, Labels: systemLabels},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", clusterNamespace, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNamespace, Name: account, Labels: systemLabels}}
	if _, err := member.CoreV1().ServiceAccounts(clusterNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create ServiceAccount: %w", err)
	}
	cr := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: role, Labels: systemLabels},
		Rules: []rbacv1.PolicyRule{
			{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
			{Verbs: []string{"get"}, NonResourceURLs: []string{"*"}},
		},
	}
	if _, err := member.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create ClusterRole: %w", err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role, Labels: systemLabels},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: clusterNamespace, Name: account}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
	}
	if _, err := member.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create ClusterRoleBinding: %w", err)
	}
	// A day outlives any test run; the API server's default maximum allows it.
	token, err := member.CoreV1().ServiceAccounts(clusterNamespace).CreateToken(ctx, account, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("request a token for %s: %w", account, err)
	}
	kubeSystem, err := member.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read the cluster id: %w", err)
	}
	caBundle, err := readFile(m.CAFile)
	if err != nil {
		return err
	}

	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: clusterNamespace, Name: m.Name, Labels: systemLabels},
		Data:       map[string][]byte{"caBundle": caBundle, "token": []byte(token.Status.Token)},
	}
	secret, err = k.kube.CoreV1().Secrets(clusterNamespace).Create(ctx, secret, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create Secret %s/%s: %w", clusterNamespace, m.Name, err)
	}
	cluster := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.karmada.io/v1alpha1",
		"kind":       "Cluster",
		"metadata":   map[string]any{"name": m.Name},
		"spec": map[string]any{
			"syncMode":    "Push",
			"apiEndpoint": m.Host,
			"id":          string(kubeSystem.UID),
			"secretRef":   map[string]any{"namespace": clusterNamespace, "name": secret.Name},
		},
	}}
	cluster, err = k.dynamic.Resource(clusterResource).Create(ctx, cluster, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create Cluster %s: %w", m.Name, err)
	}
	owner := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"cluster.karmada.io/v1alpha1","kind":"Cluster","name":%q,"uid":%q,"controller":true,"blockOwnerDeletion":true}]}}`,
		cluster.GetName(), cluster.GetUID())
	if _, err := k.kube.CoreV1().Secrets(clusterNamespace).Patch(ctx, secret.Name, types.MergePatchType, []byte(owner), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("make Cluster %s own its Secret: %w", m.Name, err)
	}
	return nil
}

// waitMembersReady waits until every Cluster reports Ready=True, which
// karmada-controller-manager's cluster status controller sets after it
// reached the member with the joined credentials.
func (k *Karmada) waitMembersReady(ctx context.Context) error {
	for _, m := range k.Members {
		err := k.poll(ctx, "Cluster "+m.Name+" Ready", func(ctx context.Context) error {
			cluster, err := k.dynamic.Resource(clusterResource).Get(ctx, m.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if status, message := condition(cluster, "Ready"); status != "True" {
				return fmt.Errorf("Ready=%s: %s", status, message)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Karmada's policy resources.
var (
	PropagationPolicyResource        = schema.GroupVersionResource{Group: "policy.karmada.io", Version: "v1alpha1", Resource: "propagationpolicies"}
	ClusterPropagationPolicyResource = schema.GroupVersionResource{Group: "policy.karmada.io", Version: "v1alpha1", Resource: "clusterpropagationpolicies"}
	MultiClusterServiceResource      = schema.GroupVersionResource{Group: "networking.karmada.io", Version: "v1alpha1", Resource: "multiclusterservices"}
)

// MCSCRDPolicy is the ClusterPropagationPolicy that Start creates to install
// the ServiceExport and ServiceImport CRDs (Karmada's copies, v1alpha1) in
// every member, as Karmada's multi-cluster service guide and its e2e test
// (test/e2e/suites/base/mcs_test.go) do.
const MCSCRDPolicy = "serviceexport-serviceimport-crds"

// propagateMCSCRDs creates MCSCRDPolicy and waits until both members serve
// ServiceExports and ServiceImports.
func (k *Karmada) propagateMCSCRDs(ctx context.Context) error {
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy.karmada.io/v1alpha1",
		"kind":       "ClusterPropagationPolicy",
		"metadata":   map[string]any{"name": MCSCRDPolicy},
		"spec": map[string]any{
			"resourceSelectors": []any{
				map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "name": "serviceexports.multicluster.x-k8s.io"},
				map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "name": "serviceimports.multicluster.x-k8s.io"},
			},
			"placement": map[string]any{
				"clusterAffinity": map[string]any{"clusterNames": []any{Member1, Member2}},
			},
		},
	}}
	if _, err := k.dynamic.Resource(ClusterPropagationPolicyResource).Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create ClusterPropagationPolicy %s: %w", MCSCRDPolicy, err)
	}
	for _, m := range k.Members {
		disco, err := discovery.NewDiscoveryClientForConfig(m.Config)
		if err != nil {
			return err
		}
		err = k.poll(ctx, m.Name+" serves multicluster.x-k8s.io/v1alpha1", func(context.Context) error {
			list, err := disco.ServerResourcesForGroupVersion("multicluster.x-k8s.io/v1alpha1")
			if err != nil {
				return err
			}
			for _, want := range []string{"serviceexports", "serviceimports"} {
				if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == want }) {
					return fmt.Errorf("no %s yet", want)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	// karmada-scheduler places a ServiceExport or ServiceImport only on
	// members whose Cluster status lists the API (the APIEnablement filter),
	// and it does not retry a binding that failed for that when the status
	// changes later, only after up to five minutes
	// (DefaultBindingMaxInUnschedulableBindingsDuration in
	// pkg/scheduler/internal/queue/scheduling_queue.go; status updates do
	// not requeue, see updateCluster in pkg/scheduler/event_handler.go).
	// The cluster status controller refreshes the list every
	// --cluster-status-update-frequency (10 s). So wait for it, as a user
	// must before the first export.
	for _, m := range k.Members {
		err := k.poll(ctx, "Cluster "+m.Name+" lists serviceexports and serviceimports in status.apiEnablements", func(ctx context.Context) error {
			cluster, err := k.dynamic.Resource(clusterResource).Get(ctx, m.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			enablements, _, _ := unstructured.NestedSlice(cluster.Object, "status", "apiEnablements")
			var found []string
			for _, e := range enablements {
				enablement, _ := e.(map[string]any)
				if enablement["groupVersion"] != "multicluster.x-k8s.io/v1alpha1" {
					continue
				}
				resources, _ := enablement["resources"].([]any)
				for _, r := range resources {
					resource, _ := r.(map[string]any)
					found = append(found, fmt.Sprint(resource["name"]))
				}
			}
			if !slices.Contains(found, "serviceexports") || !slices.Contains(found, "serviceimports") {
				return fmt.Errorf("multicluster.x-k8s.io/v1alpha1 resources listed: %v", found)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	// kube-apiserver holds creates of a custom resource for two seconds
	// after its CRD is established; that has passed by now.
	return nil
}
