package kubectlmcs

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"
)

var importsV1beta1 = schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1beta1", Resource: "serviceimports"}

// lowerCaseTime passes the CRD's date-time format check, and fails the
// RFC 3339 parser of meta/v1.Time (test/e2e TestImportStatusGoCannotDecode).
const lowerCaseTime = "2026-01-01t00:00:00z"

// createUnstructuredImport creates a ClusterSetIP import of ip (none: no
// address) through the dynamic client, which decodes whatever the API
// server accepted.
func (c *cluster) createUnstructuredImport(t *testing.T, ns, name string, ips ...string) {
	t.Helper()
	spec := map[string]any{
		"type":  "ClusterSetIP",
		"ports": []any{map[string]any{"name": "http", "protocol": "TCP", "port": int64(80)}},
	}
	if len(ips) > 0 {
		var l []any
		for _, ip := range ips {
			l = append(l, ip)
		}
		spec["ips"] = l
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "multicluster.x-k8s.io/v1beta1",
		"kind":       "ServiceImport",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       spec,
	}}
	if _, err := c.dyn.Resource(importsV1beta1).Namespace(ns).Create(t.Context(), u, meta.CreateOptions{}); err != nil {
		t.Fatalf("creating the ServiceImport %s/%s: %v", ns, name, err)
	}
}

// poisonStatus writes, through the status subresource, a condition whose
// timestamp the API server accepts and the mcs-api Go types cannot decode.
func (c *cluster) poisonStatus(t *testing.T, ns, name string) {
	t.Helper()
	patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":"True","lastTransitionTime":%q,"reason":"Imported","message":"imported"}]}}`, lowerCaseTime)
	u, err := c.dyn.Resource(importsV1beta1).Namespace(ns).Patch(t.Context(), name, types.MergePatchType, []byte(patch), meta.PatchOptions{}, "status")
	if err != nil {
		t.Fatalf("writing the status: %v", err)
	}
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	if len(conditions) != 1 || conditions[0].(map[string]any)["lastTransitionTime"] != lowerCaseTime {
		t.Fatalf("the API server stored the status as %v", conditions)
	}
}

// TestObjectsTheServerDecodesItself: a ServiceImport the mcs-api Go types
// cannot decode, in the namespace listed first, fails neither explain nor
// check, which read ServiceImports as the server does; check names it, and
// names an import the server skips.
func TestObjectsTheServerDecodesItself(t *testing.T) {
	c := installCluster(t)
	c.namespace(t, "aaa-poison")
	c.namespace(t, "shop")
	c.createUnstructuredImport(t, "aaa-poison", "broken", "10.42.9.1")
	c.poisonStatus(t, "aaa-poison", "broken")
	c.createUnstructuredImport(t, "shop", "cart", "10.42.3.1")
	// A name the API server takes for a custom resource, and DNS cannot
	// hold as one label: the server skips the import.
	c.createUnstructuredImport(t, "shop", "web.v2", "10.42.3.2")
	// The failure kubectl mcs must not have: a typed client cannot list
	// the imports.
	if _, err := c.mcs.MulticlusterV1beta1().ServiceImports("").List(t.Context(), meta.ListOptions{Limit: 1}); err == nil {
		t.Fatal("the mcs-api clientset lists the poisoned import: the test no longer reproduces the failure")
	}

	code, out, errOut := c.kubectlMCS(t, "explain", "cart.shop.svc.clusterset.local")
	t.Logf("explain:\n%s%s", out, errOut)
	if code != 0 || !strings.Contains(out, "Answer of the multicluster plugin: NOERROR") || !strings.Contains(out, "cart.shop.svc.clusterset.local.\t5\tIN\tA\t10.42.3.1") {
		t.Errorf("explain of the good import: exit %d, want 0 and its address", code)
	}
	if !strings.Contains(out, `Note: 1 ServiceImports are skipped by the server, which logs each (kubectl mcs check): shop/web.v2 (name "web.v2" is not a DNS label`) {
		t.Errorf("explain does not name the import the server skips")
	}
	code, out, _ = c.kubectlMCS(t, "explain", "broken.aaa-poison.svc.clusterset.local")
	if code != 0 || !strings.Contains(out, "\tIN\tA\t10.42.9.1") {
		t.Errorf("explain of the poisoned import, which the server serves: exit %d\n%s", code, out)
	}

	code, out, errOut = c.kubectlMCS(t, "check")
	t.Logf("check:\n%s%s", out, errOut)
	if code != 1 {
		t.Errorf("check: exit %d, want 1 (an import is skipped)", code)
	}
	for _, want := range []string{
		"OK    imports         2 ServiceImports served",
		`FAIL  imports         1 of 3 ServiceImports are skipped by the server, which logs each; their names do not answer: shop/web.v2 (name "web.v2" is not a DNS label`,
		"WARN  imports         1 ServiceImports hold fields the mcs-api Go types (v1beta1) cannot decode",
		`fails to list their namespace: aaa-poison/broken (parsing time "` + lowerCaseTime + `"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check lacks %q", want)
		}
	}
}

// TestCheckBoundsLargeSets: thousands of imports without an address make
// one short line of check, which counts them and names the first few.
func TestCheckBoundsLargeSets(t *testing.T) {
	const n = 2000
	c := installCluster(t)
	c.namespace(t, "bulk")
	cfg := rest.CopyConfig(c.cp.Config)
	cfg.QPS, cfg.Burst = 1000, 1000
	mcs := mcsclient.NewForConfigOrDie(cfg)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				if _, err := mcs.MulticlusterV1beta1().ServiceImports("bulk").Create(t.Context(), newImport("bulk", fmt.Sprintf("lost-%04d", i)), meta.CreateOptions{}); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("creating the imports: %v", err)
	}

	code, out, errOut := c.kubectlMCS(t, "check")
	t.Logf("check (%d bytes):\n%s%s", len(out), out, errOut)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	want := fmt.Sprintf("FAIL  imports         %d ClusterSetIP imports have no address and answer NODATA: bulk/lost-0000, bulk/lost-0001, bulk/lost-0002, bulk/lost-0003, bulk/lost-0004 and %d more", n, n-5)
	if !strings.Contains(out, want) {
		t.Errorf("check lacks %q", want)
	}
	for _, l := range strings.Split(out, "\n") {
		if len(l) >= 300 {
			t.Errorf("a line of %d bytes: %.300s...", len(l), l)
		}
	}
}
