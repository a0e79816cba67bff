package karmadae2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/coredns-mcs/coredns-mcs/test/internal/apply"
	"github.com/coredns-mcs/coredns-mcs/test/internal/karmada"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

var (
	serviceImportResource = schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Resource: "serviceimports"}
	serviceExportResource = schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Resource: "serviceexports"}
)

// guideManifests returns the objects of the YAML block that follows the
// marker `<!-- karmadae2e: NAME -->` in docs/karmada.md.
func guideManifests(t *testing.T, name string) []*unstructured.Unstructured {
	t.Helper()
	marker := "<!-- karmadae2e: " + name + " -->\n```yaml\n"
	start := strings.Index(guide, marker)
	if start < 0 || strings.Count(guide, marker) != 1 {
		t.Fatalf("docs/karmada.md: want exactly one YAML block after %q", strings.TrimSpace(marker))
	}
	block := guide[start+len(marker):]
	block = block[:strings.Index(block, "```")]
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(block)), 4096)
	var objects []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		err := decoder.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("docs/karmada.md, block %s: %v", name, err)
		}
		if len(obj.Object) > 0 {
			objects = append(objects, obj)
		}
	}
	if len(objects) == 0 {
		t.Fatalf("docs/karmada.md, block %s: no objects", name)
	}
	return objects
}

// applyGuide applies the objects of a block of the guide to karmada-apiserver
// in namespace ns, as `kubectl apply --server-side` does, and returns them.
func applyGuide(t *testing.T, name, ns string) []*unstructured.Unstructured {
	t.Helper()
	objects := guideManifests(t, name)
	applyObjects(t, ns, objects...)
	return objects
}

// applyObjects server-side applies objects to karmada-apiserver in
// namespace ns.
func applyObjects(t *testing.T, ns string, objects ...*unstructured.Unstructured) {
	t.Helper()
	var manifests []apply.Manifest
	for _, obj := range objects {
		obj.SetNamespace(ns)
		manifests = append(manifests, apply.Manifest{Object: obj, Source: "docs/karmada.md"})
	}
	if err := apply.Apply(t.Context(), kmd.Config(), manifests); err != nil {
		t.Fatalf("apply to karmada-apiserver: %v", err)
	}
}

// waitFor waits (poll.Eventually) until cond, which makes its calls with
// ctx, holds, and returns how long that took.
func waitFor(t *testing.T, within time.Duration, what string, cond func(ctx context.Context) (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	poll.Eventually(t, within, what, func() (bool, string) { return cond(t.Context()) })
	return time.Since(start)
}

// memberClient returns clients of a member's API server.
func memberClient(t *testing.T, name string) (kubernetes.Interface, dynamic.Interface) {
	t.Helper()
	m := kmd.Member(name)
	if m == nil {
		t.Fatalf("no member %s", name)
	}
	return kubernetes.NewForConfigOrDie(m.Config), dynamic.NewForConfigOrDie(m.Config)
}

// getService returns the Service ns/name of a member, or nil.
func getService(ctx context.Context, client kubernetes.Interface, ns, name string) (*corev1.Service, string) {
	svc, err := client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err.Error()
	}
	return svc, "ClusterIPs " + fmt.Sprint(svc.Spec.ClusterIPs)
}

// exists reports whether an object exists (true), is gone (false), or the
// lookup failed (the error).
func exists(ctx context.Context, client dynamic.Interface, resource schema.GroupVersionResource, ns, name string) (bool, error) {
	_, err := client.Resource(resource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// endpointSlices lists the EndpointSlices of a member labelled
// kubernetes.io/service-name=service.
func endpointSlices(ctx context.Context, client kubernetes.Interface, ns, service string) ([]discovery.EndpointSlice, error) {
	list, err := client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discovery.LabelServiceName + "=" + service})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// describeSlices renders slices for messages: name, labels, endpoints.
func describeSlices(slices []discovery.EndpointSlice) string {
	var parts []string
	for _, s := range slices {
		var eps []string
		for _, e := range s.Endpoints {
			eps = append(eps, fmt.Sprintf("%v ready=%v", e.Addresses, e.Conditions.Ready == nil || *e.Conditions.Ready))
		}
		parts = append(parts, fmt.Sprintf("%s %v %v", s.Name, s.Labels, eps))
	}
	return fmt.Sprint(parts)
}

// writeServeEndpoints writes in member1 what the EndpointSlice controller
// would for the Pod of serve (there is no kubelet to run it): one slice with
// one endpoint at podIP:8080, ready as given.
func writeServeEndpoints(t *testing.T, ns, podIP string, ready bool) {
	t.Helper()
	member1, _ := memberClient(t, karmada.Member1)
	slice := &discovery.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns,
			Name:      "serve-7fk2p",
			Labels: map[string]string{
				discovery.LabelServiceName: "serve",
				discovery.LabelManagedBy:   "endpointslice-controller.k8s.io",
			},
		},
		AddressType: discovery.AddressTypeIPv4,
		Endpoints: []discovery.Endpoint{{
			Addresses:  []string{podIP},
			Conditions: discovery.EndpointConditions{Ready: ptr.To(ready), Serving: ptr.To(ready), Terminating: ptr.To(false)},
		}},
		Ports: []discovery.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](8080)}},
	}
	ctx := t.Context()
	current, err := member1.DiscoveryV1().EndpointSlices(ns).Get(ctx, slice.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = member1.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{})
	case err == nil:
		slice.ResourceVersion = current.ResourceVersion
		_, err = member1.DiscoveryV1().EndpointSlices(ns).Update(ctx, slice, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatalf("write EndpointSlice %s/%s in member1: %v", ns, slice.Name, err)
	}
}

// deleteFromKarmada deletes an object from karmada-apiserver.
func deleteFromKarmada(t *testing.T, resource schema.GroupVersionResource, ns, name string) {
	t.Helper()
	err := kmd.Dynamic().Resource(resource).Namespace(ns).Delete(t.Context(), name, metav1.DeleteOptions{})
	if err != nil {
		t.Fatalf("delete %s %s/%s from karmada-apiserver: %v", resource.Resource, ns, name, err)
	}
}

// inRange reports whether ip is in the IPv4 service range of a cluster
// (karmada.ServiceRanges), which are all /16s.
func inRange(ip, cluster string) bool {
	v4 := strings.Split(karmada.ServiceRanges[cluster], ",")[0]
	prefix := strings.Join(strings.Split(v4, ".")[:2], ".") + "."
	return strings.HasPrefix(ip, prefix)
}
