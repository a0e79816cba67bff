package multicluster

import (
	"context"
	"encoding/json"
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"
)

// typedImports serves the ServiceImports of an mcs-api clientset, the
// tests' fake one, as the plugin's REST client does (restImports): as
// importObjects, each encoded to JSON and decoded by importObject.
type typedImports struct{ c mcsclient.Interface }

func (t typedImports) listWatch(version, ns string) *cache.ListWatch {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o meta.ListOptions) (runtime.Object, error) {
			return t.c.MulticlusterV1beta1().ServiceImports(ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o meta.ListOptions) (watch.Interface, error) {
			return t.c.MulticlusterV1beta1().ServiceImports(ns).Watch(ctx, o)
		},
	}
	if version == "v1alpha1" {
		lw = &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o meta.ListOptions) (runtime.Object, error) {
				return t.c.MulticlusterV1alpha1().ServiceImports(ns).List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o meta.ListOptions) (watch.Interface, error) {
				return t.c.MulticlusterV1alpha1().ServiceImports(ns).Watch(ctx, o)
			},
		}
	}
	return asImportListWatch(lw)
}

// asImportListWatch returns lw, whose lists and events are of typed
// ServiceImports, with them turned into importObjects.
func asImportListWatch(lw *cache.ListWatch) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o meta.ListOptions) (runtime.Object, error) {
			list, err := lw.ListWithContextFunc(ctx, o)
			if err != nil {
				return nil, err
			}
			return asImportList(list), nil
		},
		WatchFuncWithContext: func(ctx context.Context, o meta.ListOptions) (watch.Interface, error) {
			w, err := lw.WatchFuncWithContext(ctx, o)
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
				if _, ok := e.Object.(*meta.Status); !ok && e.Object != nil {
					e.Object = asImport(e.Object)
				}
				return e, true
			}), nil
		},
	}
}

// asImportList turns a list of typed ServiceImports into an
// importObjectList.
func asImportList(list runtime.Object) *importObjectList {
	lm, err := apimeta.ListAccessor(list)
	if err != nil {
		panic(err)
	}
	items, err := apimeta.ExtractList(list)
	if err != nil {
		panic(err)
	}
	out := &importObjectList{ListMeta: meta.ListMeta{ResourceVersion: lm.GetResourceVersion(), Continue: lm.GetContinue(), RemainingItemCount: lm.GetRemainingItemCount()}}
	for _, it := range items {
		out.Items = append(out.Items, *asImport(it))
	}
	return out
}

// asImport turns a typed ServiceImport into an importObject through its
// JSON.
func asImport(obj runtime.Object) *importObject {
	b, err := json.Marshal(obj)
	if err != nil {
		panic(fmt.Sprintf("encoding %T: %v", obj, err))
	}
	var o importObject
	if err := json.Unmarshal(b, &o); err != nil {
		panic(fmt.Sprintf("decoding %s: %v", b, err))
	}
	return &o
}
