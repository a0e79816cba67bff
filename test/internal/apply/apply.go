// Package apply server-side applies Kubernetes objects read from YAML or
// JSON files, as `kubectl apply --server-side` does, for tests and the local
// cluster of `make run`.
package apply

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"
)

// Manifest is one object read from a file, with where it came from for
// error messages.
type Manifest struct {
	Object *unstructured.Unstructured
	Source string // file and document
}

// newTypeWait bounds how long applying an object waits for its kind to be
// served, which it is not yet right after its CRD was applied.
const newTypeWait = 30 * time.Second

// Apply server-side applies manifests. Namespaces go first, then
// CRDs, then the rest in file order, so a directory can be written in any
// order.
func Apply(ctx context.Context, cfg *rest.Config, manifests []Manifest) error {
	slices.SortStableFunc(manifests, func(a, b Manifest) int {
		return applyPhase(a.Object) - applyPhase(b.Object)
	})

	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("create dynamic client: %w", err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("create discovery client: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))

	for _, m := range manifests {
		if err := applyObject(ctx, dyn, mapper, m.Object); err != nil {
			return fmt.Errorf("%s: %s %q: %w", m.Source, m.Object.GetKind(), m.Object.GetName(), err)
		}
	}
	return nil
}

func applyPhase(obj *unstructured.Unstructured) int {
	switch obj.GroupVersionKind().GroupKind().String() {
	case "Namespace":
		return 0
	case "CustomResourceDefinition.apiextensions.k8s.io":
		return 1
	default:
		return 2
	}
}

// applyObject applies obj, and its status if it has one: the main resource
// ignores status for types with a status subresource (ServiceImport among
// them), and without a controller nothing else would ever fill it in.
func applyObject(ctx context.Context, dyn dynamic.Interface, mapper *restmapper.DeferredDiscoveryRESTMapper, obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	deadline := time.Now().Add(newTypeWait)
	var mapping *meta.RESTMapping
	for {
		var err error
		mapping, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err == nil {
			break
		}
		if !meta.IsNoMatchError(err) || time.Now().After(deadline) {
			return fmt.Errorf("find resource for %s: %w", gvk, err)
		}
		// A CRD applied a moment ago may not be served yet; rediscover.
		mapper.Reset()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}

	var resource dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if obj.GetNamespace() == "" {
			obj.SetNamespace(metav1.NamespaceDefault)
		}
		resource = dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace())
	}
	data, err := obj.MarshalJSON()
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	force := true
	opts := metav1.PatchOptions{FieldManager: controlplane.FieldManager, Force: &force}
	if _, err := resource.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, opts); err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	if status, ok := obj.Object["status"].(map[string]interface{}); ok && len(status) > 0 {
		_, err := resource.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, opts, "status")
		// NotFound means the type has no status subresource, so the main
		// apply above already stored the status.
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("apply status: %w", err)
		}
	}
	return nil
}

// ReadDir reads every .yaml, .yml and .json file under dir, in lexical
// order, each possibly with several documents or a List.
func ReadDir(dir string) ([]Manifest, error) {
	var manifests []Manifest
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		found, err := ReadFile(path)
		if err != nil {
			return err
		}
		manifests = append(manifests, found...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read manifests: %w", err)
	}
	return manifests, nil
}

// ReadFile reads the objects of one file: several documents, or a List.
func ReadFile(path string) ([]Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var manifests []Manifest
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return manifests, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		source := fmt.Sprintf("%s (document %d)", path, doc)
		data, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		objs, err := decodeObjects(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		for _, obj := range objs {
			manifests = append(manifests, Manifest{Object: obj, Source: source})
		}
	}
}

// decodeObjects decodes one JSON document: nothing (an empty or comment-only
// document), an object, or a List of objects.
func decodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || bytes.Equal(data, []byte("null")) {
		return nil, nil
	}
	var list struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, err
	}
	if strings.HasSuffix(list.Kind, "List") && list.Items != nil {
		var objs []*unstructured.Unstructured
		for _, item := range list.Items {
			found, err := decodeObjects(item)
			if err != nil {
				return nil, err
			}
			objs = append(objs, found...)
		}
		return objs, nil
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	if obj.GetName() == "" {
		return nil, fmt.Errorf("%s has no metadata.name, which apply needs", obj.GetKind())
	}
	return []*unstructured.Unstructured{obj}, nil
}
