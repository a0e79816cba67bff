package multicluster

import (
	"context"
	"errors"
	"fmt"
	"testing"

	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// pagedSlices serves pages of EndpointSlices the way kube-apiserver does: a
// page of at most Limit objects and a continue token while more remain. It
// records every request and every page it returned.
type pagedSlices struct {
	all       []discovery.EndpointSlice
	requests  []meta.ListOptions
	handedOut []*discovery.EndpointSliceList
	failAt    int  // request index that fails, -1 for none
	sameToken bool // return the request's continue token again
}

func (p *pagedSlices) list(_ context.Context, o meta.ListOptions) (runtime.Object, error) {
	p.requests = append(p.requests, o)
	if len(p.requests)-1 == p.failAt {
		return nil, errors.New("connection refused")
	}
	start := 0
	if o.Continue != "" {
		if _, err := fmt.Sscanf(o.Continue, "from-%d", &start); err != nil {
			return nil, err
		}
	}
	end := min(start+int(o.Limit), len(p.all))
	if o.Limit == 0 {
		end = len(p.all)
	}
	l := &discovery.EndpointSliceList{ListMeta: meta.ListMeta{ResourceVersion: fmt.Sprint(100 + len(p.requests))}}
	for i := start; i < end; i++ {
		l.Items = append(l.Items, *p.all[i].DeepCopy())
	}
	if end < len(p.all) {
		l.Continue = fmt.Sprintf("from-%d", end)
		left := int64(len(p.all) - end)
		l.RemainingItemCount = &left
	}
	if p.sameToken && o.Continue != "" {
		l.Continue = o.Continue
	}
	p.handedOut = append(p.handedOut, l)
	return l, nil
}

func fatSlices(n int) []discovery.EndpointSlice {
	out := make([]discovery.EndpointSlice, n)
	for i := range out {
		ready := true
		out[i] = discovery.EndpointSlice{
			ObjectMeta: meta.ObjectMeta{
				Namespace: "ns1", Name: fmt.Sprintf("db-%d", i), ResourceVersion: fmt.Sprint(i + 1),
				Labels:        map[string]string{labelServiceName: "db", labelSourceCluster: "east", "app": "db"},
				Annotations:   map[string]string{"endpoints.kubernetes.io/last-change-trigger-time": "now"},
				ManagedFields: []meta.ManagedFieldsEntry{{Manager: "controller"}},
			},
			AddressType: discovery.AddressTypeIPv4,
			Endpoints:   []discovery.Endpoint{{Addresses: []string{fmt.Sprintf("10.1.%d.%d", i/250, i%250+1)}, Conditions: discovery.EndpointConditions{Ready: &ready}}},
		}
	}
	return out
}

// The list is read in pages of listPageSize and comes back whole, in order,
// at the first page's version, each object thin and none of them inside a
// page's array (which would keep the page's whole objects alive).
func TestThinPagesListsInThinPages(t *testing.T) {
	n := 2*listPageSize + 7
	p := &pagedSlices{all: fatSlices(n), failAt: -1}
	lw := thinPages(&cache.ListWatch{ListWithContextFunc: p.list})
	// What the reflector asks for first: resourceVersion "0", its own limit.
	got, err := lw.ListWithContext(context.Background(), meta.ListOptions{ResourceVersion: "0", Limit: 500, LabelSelector: labelServiceName})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.requests) != 3 {
		t.Fatalf("%d requests for %d objects in pages of %d, want 3", len(p.requests), n, listPageSize)
	}
	for i, o := range p.requests {
		wantContinue := ""
		if i > 0 {
			wantContinue = fmt.Sprintf("from-%d", i*listPageSize)
		}
		if o.ResourceVersion != "" || o.ResourceVersionMatch != "" || o.Limit != listPageSize || o.Continue != wantContinue || o.LabelSelector != labelServiceName {
			t.Errorf("request %d: %+v; want the newest data, limit %d, continue %q, the label selector kept", i, o, listPageSize, wantContinue)
		}
	}
	l := got.(*meta.List)
	if l.ResourceVersion != "101" {
		t.Errorf("list resourceVersion %q, want the first page's (101)", l.ResourceVersion)
	}
	if len(l.Items) != n || cap(l.Items) != n {
		t.Fatalf("%d items (capacity %d), want %d", len(l.Items), cap(l.Items), n)
	}
	inPage := map[*discovery.EndpointSlice]bool{}
	for _, pg := range p.handedOut {
		for i := range pg.Items {
			inPage[&pg.Items[i]] = true
		}
	}
	for i, it := range l.Items {
		es := it.Object.(*discovery.EndpointSlice)
		if inPage[es] {
			t.Fatalf("item %d is an element of a page's array", i)
		}
		if es.Name != fmt.Sprintf("db-%d", i) || es.ManagedFields != nil || es.Annotations != nil || len(es.Labels) != 2 {
			t.Fatalf("item %d: %s, managedFields %v, annotations %v, labels %v; want db-%d, thin", i, es.Name, es.ManagedFields, es.Annotations, es.Labels, i)
		}
	}
}

func TestThinPagesFailures(t *testing.T) {
	p := &pagedSlices{all: fatSlices(listPageSize + 1), failAt: 1}
	if _, err := thinPages(&cache.ListWatch{ListWithContextFunc: p.list}).ListWithContext(context.Background(), meta.ListOptions{}); err == nil {
		t.Error("a failed second page: no error")
	}
	p = &pagedSlices{all: fatSlices(2*listPageSize + 1), failAt: -1, sameToken: true}
	if _, err := thinPages(&cache.ListWatch{ListWithContextFunc: p.list}).ListWithContext(context.Background(), meta.ListOptions{}); err == nil || len(p.requests) != 2 {
		t.Errorf("the same continue token twice: %v after %d requests; want an error after 2", err, len(p.requests))
	}
	p = &pagedSlices{failAt: -1}
	got, err := thinPages(&cache.ListWatch{ListWithContextFunc: p.list}).ListWithContext(context.Background(), meta.ListOptions{})
	if err != nil || len(got.(*meta.List).Items) != 0 {
		t.Errorf("empty: %v, %v", got, err)
	}
}

// The watch is the one given.
func TestThinPagesWatch(t *testing.T) {
	fw := watch.NewFake()
	var asked meta.ListOptions
	lw := thinPages(&cache.ListWatch{WatchFuncWithContext: func(_ context.Context, o meta.ListOptions) (watch.Interface, error) {
		asked = o
		return fw, nil
	}})
	w, err := lw.WatchWithContext(context.Background(), meta.ListOptions{ResourceVersion: "42"})
	if err != nil || w != fw || asked.ResourceVersion != "42" {
		t.Errorf("watch %v (%v) asked %+v; want the fake, from 42", w, err, asked)
	}
}
