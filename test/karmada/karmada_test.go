package karmada_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/coredns-mcs/coredns-mcs/test/karmada"
)

// TestStart: Karmada comes up with both members joined and Ready, and the
// ClusterPropagationPolicy has installed the ServiceImport CRD in each.
func TestStart(t *testing.T) {
	start := time.Now()
	k := karmada.ForTest(t, karmada.Options{})
	t.Logf("Karmada %s with %d members ready in %s", karmada.Version, len(k.Members), time.Since(start).Round(time.Millisecond))

	clusters, err := k.Dynamic().Resource(schema.GroupVersionResource{Group: "cluster.karmada.io", Version: "v1alpha1", Resource: "clusters"}).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list Clusters: %v", err)
	}
	if len(clusters.Items) != 2 {
		t.Fatalf("%d Clusters, want 2", len(clusters.Items))
	}
	imports := schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Resource: "serviceimports"}
	for _, m := range k.Members {
		if _, err := dynamic.NewForConfigOrDie(m.Config).Resource(imports).List(t.Context(), metav1.ListOptions{}); err != nil {
			t.Errorf("%s: list ServiceImports: %v", m.Name, err)
		}
	}
}
