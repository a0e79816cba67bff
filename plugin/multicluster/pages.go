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
// each object thinned (slim) as its page arrives, before the next page is
// asked for.
//
// The reflector's own list holds every object of a resource at its full size
// at once: its first list asks for resourceVersion "0", which kube-apiserver's
// watch cache answers whole, ignoring the limit (computeListLimit in
// k8s.io/apiserver pkg/storage/cacher/cacher.go), and a relist asks for the
// last resourceVersion without a limit, which it also answers whole (the
// reflector turns paging off for it, tools/cache/reflector.go). Only then
// does the transform thin the objects, one by one as they are queued. At a
// relist, after an API server restart or an expired watch, the full list came
// on top of the stores and doubled a large cache's memory (the Scale section
// of BENCHMARKS.md measured it). Paged, at most one page is in memory at its
// full size; the rest of the list is already thin.
//
// Each list asks for the newest data (resourceVersion unset: a consistent
// read), which is never older than what the reflector asked for. Its pages
// are one snapshot: the continue token pins the resourceVersion of the first
// page, which the list returns. kube-apiserver serves such a list and its
// pages from the watch cache when etcd supports watch progress requests
// (ConsistentReadSupported in pkg/storage/cacher/delegator of k8s.io/apiserver)
// and from its snapshots (the ListFromCacheSnapshot feature, on by default
// since 1.34, pkg/features/kube_features.go); otherwise from etcd, a page at
// a time. A continue token that expired between two pages fails the list
// with 410 Gone, and the reflector lists again from the newest data.
//
// The list returned is a meta/v1 List of the thinned objects: the reflector
// reads only its resourceVersion and its items (tools/cache/reflector.go).
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
