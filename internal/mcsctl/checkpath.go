// This file holds kubectl mcs check's review of the swap layout's owner:
// on platforms whose controller keeps kube-system/coredns, the swap holds
// only once that controller no longer puts its own image back
// (docs/deploy.md, "Swap on k3s, EKS and rke2").

package mcsctl

import (
	"context"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeclient "k8s.io/client-go/kubernetes"

	"github.com/coredns-mcs/coredns-mcs/internal/front"
)

// swapDoc is where docs/deploy.md takes each platform's CoreDNS over.
const swapDoc = "docs/deploy.md#swap-on-k3s-eks-and-rke2"

// checkSwapOwner reads the swap layout's Deployment and says what keeps it
// there, if a platform controller does (reviewSwapOwner).
func checkSwapOwner(ctx context.Context, c *checker, kube kubeclient.Interface, o *options) {
	ns, name, err := splitName(o.deployment)
	if err != nil {
		return
	}
	dep, err := kube.AppsV1().Deployments(ns).Get(ctx, name, meta.GetOptions{})
	if err != nil {
		return // checkImage has said so
	}
	reviewSwapOwner(c, o.deployment, dep)
}

// reviewSwapOwner says, for the swap layout, whether the platform
// controller that applied the Deployment puts its own image back: k3s's
// deploy controller at each start unless its manifest is skipped, the EKS
// add-on unless it was deleted with --preserve, an addon manager or AKS
// always (no supported swap). A Helm chart's image comes from its values
// (rke2: the HelmChartConfig), which is where the swap sets it. Nothing is
// said of a Deployment no platform claims (kubeadm's, or the fresh
// install).
func reviewSwapOwner(c *checker, name string, dep *appsv1.Deployment) {
	m := front.ManagerOf(dep, front.Ref{Kind: "Deployment", Namespace: dep.Namespace, Name: dep.Name})
	if m == nil {
		return
	}
	ours := slices.ContainsFunc(dep.Spec.Template.Spec.Containers, func(ct corev1.Container) bool { return strings.Contains(ct.Image, "coredns-mcs") })
	a := dep.GetAnnotations()
	switch {
	case a[front.WranglerOwnerGVK] == front.K3sAddonGVK:
		if ours {
			c.add(warn, "swap", "Deployment %s was applied by %s: k3s applies its coredns.yaml again, with its own image, whenever k3s starts, unless coredns.yaml.skip lies beside it in the manifests directory of every server (or coredns is disabled): %s", name, m.Who, swapDoc)
		} else {
			c.add(warn, "swap", "Deployment %s is kept by %s (%s): to swap, stop k3s applying it first (coredns.yaml.skip on every server): %s", name, m.Who, m.Because, swapDoc)
		}
	case slices.ContainsFunc(dep.GetManagedFields(), func(f meta.ManagedFieldsEntry) bool { return f.Manager == front.EKSFieldManager }):
		if ours {
			c.add(warn, "swap", "Deployment %s has fields managed by %q: unless the CoreDNS add-on was deleted with --preserve (aws eks describe-addon --addon-name coredns finds none), the add-on may put its own image back: %s", name, front.EKSFieldManager, swapDoc)
		} else {
			c.add(warn, "swap", "Deployment %s is kept by %s (%s): to swap, make CoreDNS self-managed first (aws eks delete-addon --addon-name coredns --preserve): %s", name, m.Who, m.Because, swapDoc)
		}
	case strings.HasPrefix(dep.GetLabels()[front.HelmChartLabel], "rke2-coredns"):
		if ours {
			c.add(ok, "swap", "Deployment %s is rendered by the chart %s: its image comes from the chart's values (the HelmChartConfig kube-system/rke2-coredns), which rke2 keeps", name, dep.GetLabels()[front.HelmChartLabel])
		} else {
			c.add(warn, "swap", "Deployment %s is rendered by the chart %s: to swap, set image and servers in the HelmChartConfig kube-system/rke2-coredns: %s", name, dep.GetLabels()[front.HelmChartLabel], swapDoc)
		}
	case dep.GetLabels()[front.HelmManagedByLabel] == "Helm":
		if !ours {
			c.add(warn, "swap", "Deployment %s is kept by %s: set the image in the chart's values", name, m.Who)
		}
	default:
		// The addon manager, AKS: nothing to take over.
		c.add(fail, "swap", "Deployment %s is kept by %s (%s), which puts its own image back: no supported swap there; run coredns-mcs standalone (docs/platforms.md; %s)", name, m.Who, m.Because, swapDoc)
	}
}
