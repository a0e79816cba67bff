// Lists in pages: the informers' lists asked for listPageSize objects at a
// time and thinned page by page, so that a relist never holds a whole
// resource at full size.

package multicluster

import (
	"context"
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// listPageSize is how many objects one list request asks for: client-go's
// default page size (tools/pager/pager.go, defaultPageSize).
const listPageSize = 500

// thinPages returns lw with its list made of pages of listPageSize objects,
// each thinned (slim) as its page arrives, before the next is asked for. The
// reflector's own list comes whole (the watch cache ignores the limit of a
// resourceVersion "0" list: computeListLimit in k8s.io/apiserver's
// cacher.go; a relist sets none: client-go's reflector.go) and is thinned
// after: a relist doubled a large cache's memory (BENCHMARKS.md, Scale). A
// list's pages are one snapshot; an expired continue token fails it (410).
func thinPages(lw *cache.ListWatch) *cache.ListWatch {
	list := lw.ListWithContextFunc
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o meta.ListOptions) (runtime.Object, error) {
			return listThin(ctx, list, o)
		},
		WatchFuncWithContext: lw.WatchFuncWithContext,
	}
}

// listThin lists every page of what o selects through list.
func listThin(ctx context.Context, list func(context.Context, meta.ListOptions) (runtime.Object, error), o meta.ListOptions) (runtime.Object, error) {
	opts := meta.ListOptions{LabelSelector: o.LabelSelector, FieldSelector: o.FieldSelector, Limit: listPageSize}
	out := &meta.List{}
	for pages := 0; ; pages++ {
		page, err := list(ctx, opts)
		if err != nil {
			return nil, err
		}
		lm, err := apimeta.ListAccessor(page)
		if err != nil {
			return nil, err
		}
		if pages == 0 {
			out.ResourceVersion = lm.GetResourceVersion()
		}
		// One allocation per item, so that the page's array of full
		// objects is garbage once this loop leaves it.
		items, err := apimeta.ExtractListWithAlloc(page)
		if err != nil {
			return nil, err
		}
		if out.Items == nil {
			n := len(items)
			if rem := lm.GetRemainingItemCount(); rem != nil && *rem > 0 {
				n += int(*rem)
			}
			out.Items = make([]runtime.RawExtension, 0, n)
		}
		for _, it := range items {
			thin, _ := slim(it)
			out.Items = append(out.Items, runtime.RawExtension{Object: thin.(runtime.Object)})
		}
		next := lm.GetContinue()
		if next == "" {
			return out, nil
		}
		if next == opts.Continue {
			return nil, fmt.Errorf("list: the API server returned the same continue token twice (after %d pages)", pages+1)
		}
		// A continued list takes its resourceVersion from the token and
		// must not set one (k8s.io/apimachinery's ListOptions).
		opts = meta.ListOptions{LabelSelector: o.LabelSelector, FieldSelector: o.FieldSelector, Limit: listPageSize, Continue: next}
	}
}
