// This file finds the layout kubectl mcs check and explain review: coredns-mcs
// swapped in as kube-system/coredns, or standalone behind the cluster's DNS.

package mcsctl

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeclient "k8s.io/client-go/kubernetes"
)

// The standalone layout: coredns-mcs runs as kube-system/coredns-mcs
// (manifests/standalone), behind the cluster's own DNS (the front), which
// forwards to its Service what kubectl mcs front configured it to.
const (
	standaloneNamespace = "kube-system"
	standaloneName      = "coredns-mcs"
	componentLabel      = "app.kubernetes.io/component"
	standaloneComponent = "standalone-dns"
	swapName            = "coredns"
)

// layout is where the server's Corefile and Deployment are, and, in the
// standalone layout, its Service.
type layout struct {
	standalone bool
	why        string
	service    *corev1.Service // the standalone Service, if it exists
}

func (l layout) serviceName() string { return standaloneNamespace + "/" + standaloneName }

// detectLayout finds the standalone layout by its objects: the Service or
// the Deployment kube-system/coredns-mcs, labelled as manifests/standalone
// labels them. Anything else is the swap layout (coredns-mcs is
// kube-system/coredns).
func detectLayout(ctx context.Context, kube kubeclient.Interface) layout {
	var l layout
	if svc, err := kube.CoreV1().Services(standaloneNamespace).Get(ctx, standaloneName, meta.GetOptions{}); err == nil && svc.Labels[componentLabel] == standaloneComponent {
		l = layout{standalone: true, why: fmt.Sprintf("the Service %s/%s (%s: %s) exists", standaloneNamespace, standaloneName, componentLabel, standaloneComponent), service: svc}
	}
	if !l.standalone {
		if d, err := kube.AppsV1().Deployments(standaloneNamespace).Get(ctx, standaloneName, meta.GetOptions{}); err == nil && d.Labels[componentLabel] == standaloneComponent {
			l = layout{standalone: true, why: fmt.Sprintf("the Deployment %s/%s (%s: %s) exists", standaloneNamespace, standaloneName, componentLabel, standaloneComponent)}
		}
	}
	return l
}

// resolve fills the flags left unset with the layout's objects: the flags
// override what the detection finds.
func (o *options) resolve(l layout) {
	name := standaloneNamespace + "/" + swapName
	if l.standalone {
		name = standaloneNamespace + "/" + standaloneName
	}
	if o.configMap == "" {
		o.configMap = name
	}
	if o.deployment == "" {
		o.deployment = name
	}
}

// rbacFix is what grants the server's service account its rules.
func (l layout) rbacFix() string {
	if l.standalone {
		return "apply manifests/standalone (rbac.yaml)"
	}
	return "apply manifests/rbac"
}
