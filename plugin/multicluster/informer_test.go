package multicluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// restartingAPI is an API server for one informer that can be stopped and
// started again, as kube-apiserver is on an upgrade: while it is down every
// call is refused; once it is back, a watch from a resourceVersion of before
// the restart ends with 410 Gone, as from the new API server's watch cache,
// and a list returns one EndpointSlice per start, so that the informer's
// store shows which start it listed last.
type restartingAPI struct {
	mu     sync.Mutex
	down   bool
	starts int
	watch  *watch.FakeWatcher
	opened time.Time // when watch was
	listed chan int  // the start each list saw
}

func newRestartingAPI() *restartingAPI {
	return &restartingAPI{listed: make(chan int, 100)}
}

var errRefused = &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/apis/discovery.k8s.io/v1/endpointslices",
	Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}

func (a *restartingAPI) resourceVersion() string { return strconv.Itoa(1000*a.starts + 1) }

func (a *restartingAPI) listWatch() *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(context.Context, meta.ListOptions) (runtime.Object, error) {
			a.mu.Lock()
			defer a.mu.Unlock()
			if a.down {
				return nil, errRefused
			}
			list := &discovery.EndpointSliceList{ListMeta: meta.ListMeta{ResourceVersion: a.resourceVersion()}}
			for i := 0; i <= a.starts; i++ {
				list.Items = append(list.Items, discovery.EndpointSlice{ObjectMeta: meta.ObjectMeta{
					Namespace: "ns", Name: fmt.Sprintf("start-%d", i), ResourceVersion: strconv.Itoa(1000*i + 1),
				}, AddressType: discovery.AddressTypeIPv4})
			}
			a.listed <- a.starts
			return list, nil
		},
		WatchFuncWithContext: func(_ context.Context, o meta.ListOptions) (watch.Interface, error) {
			a.mu.Lock()
			defer a.mu.Unlock()
			if a.down {
				return nil, errRefused
			}
			w := watch.NewFakeWithChanSize(1, false)
			if rv, _ := strconv.Atoi(o.ResourceVersion); rv < 1000*a.starts {
				gone := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, 1000*a.starts+1)).Status()
				w.Error(&gone)
				return w, nil
			}
			a.watch, a.opened = w, time.Now()
			return w, nil
		},
	}
}

// stop ends the open watch, as a killed API server's connection does, and
// refuses every call until start.
func (a *restartingAPI) stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.down = true
	if a.watch != nil {
		a.watch.Stop()
		a.watch = nil
	}
}

// watching reports whether a watch has been open for a second: one the API
// server ends sooner, with no event, the reflector takes for a failure of
// its own, whereas the watch an upgrade ends has run for minutes.
func (a *restartingAPI) watching() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.watch != nil && time.Since(a.opened) > time.Second
}

func (a *restartingAPI) start() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.down = false
	a.starts++
}

// TestInformerFollowsRestartedAPIServer stops the API server long enough for
// client-go's reflector back-off to grow past 6 s, and starts it again: the
// informer lists again, and so sees what changed meanwhile, within 5 s of the
// API server answering, rather than after the back-off the outage grew (the
// reflector's own loop: 6.4 s at the least). A second, shorter outage right
// after the first is followed as soon.
func TestInformerFollowsRestartedAPIServer(t *testing.T) {
	api := newRestartingAPI()
	store := newStore(nil)
	identity := func(o meta.Object) (meta.Object, error) { return o, nil }
	ctrl := newInformer(kindEndpointSlice, api.listWatch(), &discovery.EndpointSlice{}, identity, func(error) {}, time.Second, nil, store)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { ctrl.RunWithContext(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, 10*time.Second, "informer synced", ctrl.HasSynced)
	if got := <-api.listed; got != 0 {
		t.Fatalf("first list saw start %d", got)
	}

	for i, outage := range []time.Duration{6 * time.Second, 2 * time.Second} {
		waitFor(t, 10*time.Second, "a watch open for a second", api.watching)
		api.stop()
		time.Sleep(outage) // the outage itself, which the back-off grows through
		api.start()
		back := time.Now()
		select {
		case got := <-api.listed:
			if got != i+1 {
				t.Fatalf("restart %d: the list saw start %d", i+1, got)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("restart %d: no list within 30 s of the API server answering again", i+1)
		}
		took := time.Since(back)
		t.Logf("restart %d after %s down: listed again %s after the API server answered", i+1, outage, took.Round(time.Millisecond))
		if took > 5*time.Second {
			t.Errorf("restart %d after %s down: listed again %s after the API server answered, want at most 5s", i+1, outage, took.Round(time.Millisecond))
		}
		key := fmt.Sprintf("ns/start-%d", i+1)
		waitFor(t, 10*time.Second, key+" stored", func() bool { _, ok, _ := store.GetByKey(key); return ok })
	}
}

// TestRelistPolicy checks the waits between ListAndWatch calls: none after
// a watch that worked, growing from watchBackoff's first to its cap (with
// jitter) after failures and after watches that ended at once, and from
// the first again after a watch that worked.
func TestRelistPolicy(t *testing.T) {
	var p relistPolicy
	if d := p.next(nil, workingWatch); d != 0 {
		t.Errorf("after a working watch: wait %s, want none", d)
	}
	failed := errors.New("connection refused")
	within := func(d, base time.Duration) bool {
		return d >= base && d <= base+time.Duration(float64(base)*watchBackoff.Jitter)
	}
	for i, base := range []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, time.Second, time.Second} {
		var d time.Duration
		if i%2 == 0 {
			d = p.next(failed, time.Millisecond)
		} else {
			d = p.next(nil, time.Second) // a watch that ended at once
		}
		if !within(d, base) {
			t.Errorf("attempt %d: wait %s, want %s to %s", i+1, d, base, base+base/2)
		}
	}
	if d := p.next(nil, time.Minute); d != 0 {
		t.Errorf("after a working watch: wait %s, want none", d)
	}
	if d := p.next(failed, 0); !within(d, 250*time.Millisecond) {
		t.Errorf("first failure after a working watch: wait %s, want the first step", d)
	}

	// An API server that answers, but with an error (too busy, failing),
	// is asked again as client-go's reflector would: from 0.8 s doubling to
	// 30 s, jittered up to as long again.
	var busy relistPolicy
	tooMany := apierrors.NewTooManyRequests("busy", 1)
	last := time.Duration(0)
	for i := range 8 {
		d := busy.next(tooMany, time.Millisecond)
		base := min(800*time.Millisecond<<i, 30*time.Second)
		if d < base || d > 2*base {
			t.Errorf("answered error %d: wait %s, want %s to %s", i+1, d, base, 2*base)
		}
		last = d
	}
	if last < 30*time.Second {
		t.Errorf("after 8 answered errors: wait %s, want 30 s or more", last)
	}
	if d := busy.next(nil, workingWatch); d != 0 {
		t.Errorf("after a working watch: wait %s, want none", d)
	}
}
