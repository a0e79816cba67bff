package deploy

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/coredns-mcs/coredns-mcs/test/internal/apply"
)

// TestStandaloneRBACReadsOnly: the standalone server's ClusterRole grants
// list and watch on what its Corefile reads and nothing more: no core
// endpoints (CoreDNS 1.15's kubernetes plugin watches endpointslices), no
// pods (its Corefile has pods insecure, not pods verified), no verb that
// writes.
func TestStandaloneRBACReadsOnly(t *testing.T) {
	manifests, err := apply.ReadFile("../../manifests/standalone/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/namespaces", "/services", "about.k8s.io/clusterproperties", "discovery.k8s.io/endpointslices", "multicluster.x-k8s.io/serviceimports"}
	var got []string
	for _, m := range manifests {
		if m.Object.GetKind() != "ClusterRole" {
			continue
		}
		rules, _, _ := unstructured.NestedSlice(m.Object.Object, "rules")
		for _, r := range rules {
			rule := r.(map[string]any)
			groups, _, _ := unstructured.NestedStringSlice(rule, "apiGroups")
			resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
			verbs, _, _ := unstructured.NestedStringSlice(rule, "verbs")
			if slices.ContainsFunc(verbs, func(v string) bool { return v != "list" && v != "watch" }) {
				t.Errorf("%s: verbs %v on %v, want list and watch only", m.Source, verbs, resources)
			}
			for _, g := range groups {
				for _, res := range resources {
					got = append(got, g+"/"+res)
				}
			}
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("the standalone ClusterRole grants %v, want %v", got, want)
	}
}
