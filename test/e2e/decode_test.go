package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/miekg/dns"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// ServiceImports the API server accepted but Go's decoding of the mcs-api
// types cannot read. The plugin reads no status, and any object it cannot
// read is dropped alone: neither fails a list or a watch.

var importsV1beta1 = schema.GroupVersionResource{Group: mcsv1beta1.GroupName, Version: "v1beta1", Resource: "serviceimports"}

// lowerCaseTime passes the CRD's date-time format check, and fails the
// RFC 3339 parser of meta/v1.Time.
const lowerCaseTime = "2026-01-01t00:00:00z"

// TestImportStatusGoCannotDecode: an import whose status condition has a
// lower-case timestamp, written through the status subresource, does not
// stop a running server from seeing new imports, nor a new server from
// becoming ready; the import itself is served, its status unread.
func TestImportStatusGoCannotDecode(t *testing.T) {
	ctx := context.Background()
	running := startWith(t, cp.Kubeconfig)
	dyn := dynamic.NewForConfigOrDie(cp.Config)

	bad := namespace(t, "decode-status")
	createImport(t, newImport(bad, "broken", "10.42.40.1"))
	// The namespace outlives the test (no controller deletes its objects):
	// the import must not.
	t.Cleanup(func() { _ = mcs.MulticlusterV1beta1().ServiceImports(bad).Delete(ctx, "broken", meta.DeleteOptions{}) })
	patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":"True","lastTransitionTime":%q,"reason":"Imported","message":"imported"}]}}`, lowerCaseTime)
	u, err := dyn.Resource(importsV1beta1).Namespace(bad).Patch(ctx, "broken", types.MergePatchType, []byte(patch), meta.PatchOptions{}, "status")
	if err != nil {
		t.Fatalf("writing the status: %v", err)
	}
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	if len(conditions) != 1 || conditions[0].(map[string]any)["lastTransitionTime"] != lowerCaseTime {
		t.Fatalf("the API server stored the status as %v", conditions)
	}
	// The failure the plugin must not have: the mcs-api clientset cannot
	// decode the object, nor any list that holds it.
	if _, err := mcs.MulticlusterV1beta1().ServiceImports(bad).Get(ctx, "broken", meta.GetOptions{}); err == nil {
		t.Fatal("the mcs-api clientset decodes the import: the test no longer reproduces the failure")
	}

	// (a) The running server sees a new import in another namespace.
	other := namespace(t, "decode-other")
	createImport(t, newImport(other, "web", "10.42.40.2"))
	web, broken := "web."+other+".svc.clusterset.local.", "broken."+bad+".svc.clusterset.local."
	expectAddresses(t, running.server, web, dns.TypeA, propagation, "10.42.40.2")
	expectAddresses(t, running.server, broken, dns.TypeA, propagation, "10.42.40.1")

	// (b) A server started now becomes ready (startWith waits for /ready
	// 200) and answers both.
	fresh := startWith(t, cp.Kubeconfig)
	expectAddresses(t, fresh.server, web, dns.TypeA, propagation, "10.42.40.2")
	expectAddresses(t, fresh.server, broken, dns.TypeA, propagation, "10.42.40.1")

	// (c) Neither takes the API server for unreachable, nor the import for
	// malformed: all of it that DNS reads decoded.
	for name, s := range map[string]resilientServer{"running": running, "fresh": fresh} {
		if v := s.metric(t, "coredns_multicluster_api_unreachable", ""); v != 0 {
			t.Errorf("%s server: coredns_multicluster_api_unreachable = %v, want 0", name, v)
		}
		log := s.log.String()
		if strings.Contains(log, "unreachable") || strings.Contains(log, bad+"/broken") || strings.Contains(log, "could not be decoded") {
			t.Errorf("%s server's log:\n%s", name, log)
		}
	}
}

// TestImportSpecGoCannotDecode runs on a cluster whose ServiceImport CRD
// takes a port as an integer or a string, as a CRD loosened by whoever
// installed it may: an import whose port is a string does not decode where
// DNS reads it. It is skipped, counted and logged once per version; the
// others are served, a new server becomes ready, and a running one goes on
// watching. A good import changed into such a version is withdrawn.
func TestImportSpecGoCannotDecode(t *testing.T) {
	ctx := context.Background()
	c := startOwnCluster(t, controlplane.Options{InstallCRDs: true})
	loosenImportPorts(t, c.cp)
	dyn := dynamic.NewForConfigOrDie(c.cp.Config)

	good := c.namespace(t, "decode-good")
	c.createImport(t, newImport(good, "web", "10.42.41.1"))
	bad := c.namespace(t, "decode-spec")
	broken := createImportWithStringPort(t, dyn, bad, "broken", "10.42.41.9")

	// A new server becomes ready with the import in its first list.
	running := startWith(t, c.cp.Kubeconfig)
	web := "web." + good + ".svc.clusterset.local."
	expectAddresses(t, running.server, web, dns.TypeA, propagation, "10.42.41.1")
	expectRcode(t, running.server, "broken."+bad+".svc.clusterset.local.", dns.TypeA, propagation, dns.RcodeNameError)
	expectMalformedImports(t, running, 1)
	expectLoggedOnce(t, running.server, fmt.Sprintf("Skipping ServiceImport %s/broken (resourceVersion %s): does not decode:", bad, broken.GetResourceVersion()))

	// The running server's watch goes on: a new import in another
	// namespace answers.
	other := c.namespace(t, "decode-other")
	c.createImport(t, newImport(other, "api", "10.42.41.2"))
	api := "api." + other + ".svc.clusterset.local."
	expectAddresses(t, running.server, api, dns.TypeA, propagation, "10.42.41.2")

	// web's new version does not decode: the former one is withdrawn.
	u, err := dyn.Resource(importsV1beta1).Namespace(good).Patch(ctx, "web", types.JSONPatchType, []byte(`[{"op":"replace","path":"/spec/ports/0/port","value":"8080"}]`), meta.PatchOptions{})
	if err != nil {
		t.Fatalf("giving web a port as a string: %v", err)
	}
	expectRcode(t, running.server, web, dns.TypeA, propagation, dns.RcodeNameError)
	expectAddresses(t, running.server, api, dns.TypeA, propagation, "10.42.41.2")
	expectMalformedImports(t, running, 2)
	expectLoggedOnce(t, running.server, fmt.Sprintf("Skipping ServiceImport %s/web (resourceVersion %s): does not decode:", good, u.GetResourceVersion()))

	fresh := startWith(t, c.cp.Kubeconfig)
	expectAddresses(t, fresh.server, api, dns.TypeA, propagation, "10.42.41.2")
	expectRcode(t, fresh.server, web, dns.TypeA, propagation, dns.RcodeNameError)
	expectMalformedImports(t, fresh, 2)
	for name, s := range map[string]resilientServer{"running": running, "fresh": fresh} {
		if v := s.metric(t, "coredns_multicluster_api_unreachable", ""); v != 0 || strings.Contains(s.log.String(), "unreachable") {
			t.Errorf("%s server: coredns_multicluster_api_unreachable = %v; log:\n%s", name, v, s.log.String())
		}
	}
}

// loosenImportPorts makes the served ServiceImport versions take
// spec.ports[].port as an integer or a string.
func loosenImportPorts(t *testing.T, cp *controlplane.ControlPlane) {
	t.Helper()
	port := []string{"schema", "openAPIV3Schema", "properties", "spec", "properties", "ports", "items", "properties", "port"}
	editImportCRDVersions(t, cp, func(version map[string]any) {
		if err := unstructured.SetNestedField(version, map[string]any{"x-kubernetes-int-or-string": true}, port...); err != nil {
			t.Fatal(err)
		}
	})
}

// createImportWithStringPort creates a ClusterSetIP import whose port is the
// string "80", through the dynamic client: the typed one cannot write it.
func createImportWithStringPort(t *testing.T, dyn dynamic.Interface, ns, name, ip string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": mcsv1beta1.GroupVersion.String(),
		"kind":       "ServiceImport",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"type":  "ClusterSetIP",
			"ips":   []any{ip},
			"ports": []any{map[string]any{"name": "http", "protocol": "TCP", "port": "80"}},
		},
	}}
	out, err := dyn.Resource(importsV1beta1).Namespace(ns).Create(context.Background(), u, meta.CreateOptions{})
	if err != nil {
		t.Fatalf("creating %s/%s with a port as a string: %v", ns, name, err)
	}
	return out
}

func expectMalformedImports(t *testing.T, s resilientServer, want float64) {
	t.Helper()
	poll.Eventually(t, propagation, fmt.Sprintf("malformed ServiceImports counted %v", want), func() (bool, string) {
		got := s.metric(t, "coredns_multicluster_malformed_objects_total", `kind="serviceimport"`)
		return got == want, fmt.Sprint(got)
	})
}
