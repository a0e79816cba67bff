package controlplane

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	mcscrd "sigs.k8s.io/mcs-api/config/crd"
	"sigs.k8s.io/yaml"
)

// FieldManager is the server-side apply field manager of everything this
// package (and test/cmd/localcluster) applies.
const FieldManager = "coredns-mcs-controlplane"

var crdResource = schema.GroupVersionResource{
	Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions",
}

// MCSCRDs returns the ServiceImport and ServiceExport CRDs that
// sigs.k8s.io/mcs-api ships, decoded.
func MCSCRDs() ([]*unstructured.Unstructured, error) {
	var crds []*unstructured.Unstructured
	for _, manifest := range [][]byte{mcscrd.ServiceImportCRD, mcscrd.ServiceExportCRD} {
		data, err := yaml.YAMLToJSON(manifest)
		if err != nil {
			return nil, fmt.Errorf("decode mcs-api CRD: %w", err)
		}
		crd := &unstructured.Unstructured{}
		if err := crd.UnmarshalJSON(data); err != nil {
			return nil, fmt.Errorf("decode mcs-api CRD: %w", err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// InstallCRDs installs (or updates) the ServiceImport and ServiceExport CRDs
// and waits until the API server serves them. versions limits the served
// versions like Options.CRDVersions; none means Options.CRDVersions. Calling
// it again with other versions changes what is served, e.g. to test a
// cluster that gains the v1beta1 API while a client runs.
func (c *ControlPlane) InstallCRDs(ctx context.Context, versions ...string) error {
	if len(versions) == 0 {
		versions = c.opts.CRDVersions
	}
	crds, err := MCSCRDs()
	if err != nil {
		return err
	}
	for _, crd := range crds {
		if len(versions) > 0 {
			if err := restrictVersions(crd, versions); err != nil {
				return err
			}
		}
	}
	return c.ApplyCRDs(ctx, crds...)
}

// ApplyCRDs installs (or updates) crds with server-side apply and waits until
// the API server serves every version of each that is served, and until
// creating their objects no longer stalls.
func (c *ControlPlane) ApplyCRDs(ctx context.Context, crds ...*unstructured.Unstructured) error {
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("create dynamic client: %w", err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("create discovery client: %w", err)
	}
	force := true
	for _, crd := range crds {
		data, err := crd.MarshalJSON()
		if err != nil {
			return fmt.Errorf("encode CRD %s: %w", crd.GetName(), err)
		}
		// Server-side apply creates the CRD or updates one installed before,
		// so InstallCRDs is idempotent.
		_, err = dyn.Resource(crdResource).Patch(ctx, crd.GetName(), types.ApplyPatchType, data,
			metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
		if err != nil {
			return fmt.Errorf("apply CRD %s: %w", crd.GetName(), err)
		}
	}
	var established time.Time
	for _, crd := range crds {
		at, err := c.waitCRDServed(ctx, dyn, disco, crd)
		if err != nil {
			return err
		}
		if at.After(established) {
			established = at
		}
	}
	// kube-apiserver holds every create of a custom resource for two
	// seconds while its CRD was established less than two seconds ago (so
	// that other API servers of an HA cluster catch up). Waiting that window
	// out here keeps the first create of a test from stalling mysteriously.
	// The timestamp has whole-second precision, as the server's own check.
	if wait := time.Until(established.Add(2*time.Second + 100*time.Millisecond)); wait > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	return nil
}

// restrictVersions keeps only the named versions of crd, making one of them
// the storage version if the shipped storage version was dropped.
func restrictVersions(crd *unstructured.Unstructured, keep []string) error {
	all, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if err != nil {
		return fmt.Errorf("CRD %s: spec.versions: %w", crd.GetName(), err)
	}
	var kept []interface{}
	var names []string
	hasStorage := false
	for _, v := range all {
		version, ok := v.(map[string]interface{})
		if !ok {
			return fmt.Errorf("CRD %s: unexpected spec.versions entry %T", crd.GetName(), v)
		}
		name, _ := version["name"].(string)
		names = append(names, name)
		if !slices.Contains(keep, name) {
			continue
		}
		if storage, _ := version["storage"].(bool); storage {
			hasStorage = true
		}
		version["served"] = true
		kept = append(kept, version)
	}
	for _, want := range keep {
		if !slices.Contains(names, want) {
			return fmt.Errorf("CRD %s has no version %q (it has %v)", crd.GetName(), want, names)
		}
	}
	if !hasStorage {
		kept[0].(map[string]interface{})["storage"] = true
	}
	return unstructured.SetNestedSlice(crd.Object, kept, "spec", "versions")
}

// waitCRDServed waits until crd is Established and discovery lists its
// resource in every served version, and returns when it became established.
// Clients that start right after InstallCRDs must not see "the server could
// not find the requested resource".
func (c *ControlPlane) waitCRDServed(ctx context.Context, dyn dynamic.Interface, disco discovery.DiscoveryInterface, crd *unstructured.Unstructured) (time.Time, error) {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")

	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	var established time.Time
	check := func() error {
		current, err := dyn.Resource(crdResource).Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		var ok bool
		if established, ok = crdEstablished(current); !ok {
			return fmt.Errorf("not established yet")
		}
		for _, v := range versions {
			version, _ := v.(map[string]interface{})
			if served, _ := version["served"].(bool); !served {
				continue
			}
			gv := group + "/" + version["name"].(string)
			list, err := disco.ServerResourcesForGroupVersion(gv)
			if err != nil {
				return fmt.Errorf("discover %s: %w", gv, err)
			}
			if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == plural }) {
				return fmt.Errorf("%s not in discovery for %s yet", plural, gv)
			}
		}
		return nil
	}
	for {
		err := check()
		if err == nil {
			return established, nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("CRD %s not served: %w", crd.GetName(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// crdEstablished reports whether crd is established and since when.
func crdEstablished(crd *unstructured.Unstructured) (time.Time, bool) {
	conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conditions {
		cond, _ := c.(map[string]interface{})
		if cond["type"] != "Established" {
			continue
		}
		if cond["status"] != "True" {
			return time.Time{}, false
		}
		// An unparsable time only costs the wait in InstallCRDs.
		since, _ := time.Parse(time.RFC3339, fmt.Sprint(cond["lastTransitionTime"]))
		return since, true
	}
	return time.Time{}, false
}
