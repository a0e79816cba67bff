// Package corefiles holds what the tests share of the shipped Corefiles.
package corefiles

import (
	"strings"

	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// KubernetesLabels is the kubernetes stanza's labels line of the shipped
// Corefiles (manifests/corefile, manifests/standalone, the chart's
// kubernetes.options): the kubernetes plugin leaves out the objects labelled
// with a source cluster, which multicluster caches itself.
const KubernetesLabels = "labels !" + mcsv1beta1.LabelSourceCluster

// WithoutImported returns corefile with KubernetesLabels in its kubernetes
// stanza, after the stanza's "pods insecure" line (indented by eight
// spaces). It panics when corefile has no such line.
func WithoutImported(corefile string) string {
	const pods = "        pods insecure\n"
	if !strings.Contains(corefile, pods) {
		panic("the Corefile has no pods line to add the labels selector after")
	}
	return strings.Replace(corefile, pods, pods+"        "+KubernetesLabels+"\n", 1)
}
