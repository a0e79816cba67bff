// The informer every kind is watched with: it converts each object as it
// is stored, logs and drops what fails, keeps the objects gauge, and wraps
// its list and watch calls so that refusals are retried and reported.

package multicluster

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/coredns/coredns/plugin/kubernetes/object"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// metricKinded is a stored object that the objects gauge counts under a
// kind of its own rather than its informer's.
type metricKinded interface{ metricKind() string }

// metricKindOf is the kind the objects gauge counts obj under.
func metricKindOf(obj any, informerKind string) string {
	if k, ok := obj.(metricKinded); ok {
		return k.metricKind()
	}
	return informerKind
}

// informerHandler is what an informer (newInformer) calls after it stored a
// converted object (set) or removed one (delete): the callback that hands
// store events on, to the sources or to a count. It has nothing to do with
// the DNS handler (ServeDNS, handler.go).
type informerHandler struct {
	set    func(meta.Object)
	delete func(meta.Object)
}

// withProblems carries the problems of a conversion to the informer, which
// logs them and stores the object alone.
type withProblems struct {
	meta.Object
	problems []string
}

// reported returns what a conversion returns to the informer: the object,
// wrapped with its problems if it has any.
func reported[T meta.Object](obj T, problems []string, err error) (meta.Object, error) {
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return &withProblems{Object: obj, problems: problems}, nil
	}
	return obj, nil
}

// newInformer returns the controller that fills store with converted
// objects, and passes each change to h. Unlike a plain informer it logs an
// object that fails conversion once per version and drops it (an earlier
// good version is withdrawn), and it keeps the reflector quiet about errors
// onError turns into a degraded state. store is a client-go store
// (cache.NewIndexer), or one whose writes h makes (importStore, sliceStore).
func newInformer(kind string, lw *cache.ListWatch, objType runtime.Object, convert object.ToFunc, onError func(error), retry time.Duration, h *informerHandler, store informerStore) cache.Controller {
	metricKind := strings.ToLower(kind)
	count := func(obj any) prometheus.Gauge { return objects.WithLabelValues(metricKindOf(obj, metricKind)) }
	// skipped holds the version of each object dropped whole, which the store
	// does not remember, so that a relist does not log it again. Only
	// process, which runs on one goroutine, uses it. An object deleted while
	// the watch was down stays until its key comes back: a few bytes.
	skipped := map[string]string{}
	process := func(obj any, _ bool) error {
		for _, d := range obj.(cache.Deltas) {
			switch d.Type {
			case cache.Sync, cache.Replaced, cache.Added, cache.Updated:
				in, ok := d.Object.(meta.Object)
				if !ok {
					continue
				}
				old, exists, _ := store.Get(in)
				sameVersion := exists && old.(meta.Object).GetResourceVersion() == in.GetResourceVersion()
				key := objectKey(in)
				if unchanged(in, exists, sameVersion, skipped[key]) {
					// A relist (after 410 Gone, or an API server restart)
					// delivers every object again: one already stored, or
					// already skipped, in this version changes nothing, so
					// the index, its views and the SOA serial stay as they are.
					continue
				}
				out, err := convert(in)
				if err != nil {
					if v, ok := skipped[key]; !sameVersion && (!ok || v != in.GetResourceVersion()) {
						objectLog.printf("Skipping %s %s/%s (resourceVersion %s): %v", kind, in.GetNamespace(), in.GetName(), in.GetResourceVersion(), err)
						malformedTotal.WithLabelValues(metricKind).Inc()
					}
					skipped[key] = in.GetResourceVersion()
					if exists {
						_ = store.Delete(old)
						count(old).Dec()
						if h != nil {
							h.delete(old.(meta.Object))
						}
					}
					continue
				}
				delete(skipped, key)
				if p, ok := out.(*withProblems); ok {
					out = p.Object
					if !sameVersion {
						objectLog.printf("%s %s/%s (resourceVersion %s): %s", kind, in.GetNamespace(), in.GetName(), in.GetResourceVersion(), joinProblems(p.problems))
						malformedTotal.WithLabelValues(metricKind).Inc()
					}
				}
				if err := store.Add(out); err != nil {
					return err
				}
				if !exists {
					count(out).Inc()
				} else if before, after := metricKindOf(old, metricKind), metricKindOf(out, metricKind); before != after {
					objects.WithLabelValues(before).Dec()
					objects.WithLabelValues(after).Inc()
				}
				if h != nil {
					h.set(out.(meta.Object))
				}
			case cache.Deleted:
				var key string
				switch o := d.Object.(type) {
				case cache.DeletedFinalStateUnknown:
					key = o.Key
				case meta.Object:
					key = objectKey(o)
				default:
					continue
				}
				delete(skipped, key)
				old, exists, _ := store.GetByKey(key)
				if !exists {
					continue
				}
				_ = store.Delete(old)
				count(old).Dec()
				if h != nil {
					h.delete(old.(meta.Object))
				}
			}
		}
		return nil
	}
	return &informer{
		kind: kind,
		// A RealFIFO, not a DeltaFIFO: the DeltaFIFO's map of pending keys
		// grows to every object at a (re)list and, a Go map, never gives
		// the room back (an entry per object, for as long as the process
		// runs); the RealFIFO's queue is a slice that is dropped once
		// drained. slim thins each object as it is queued.
		queue:   cache.NewRealFIFOWithOptions(cache.RealFIFOOptions{KeyFunction: cache.MetaNamespaceKeyFunc, KnownObjects: store, Transformer: slim}),
		lw:      cache.ToListWatcherWithWatchListSemantics(thinPages(reporting(kind, lw, onError, retry)), listThenWatch{}),
		objType: objType,
		process: process,
	}
}

// informer is the controller of cache.New (a reflector filling a queue that
// one goroutine drains into process) but for its waits between attempts.
// client-go's reflector (Reflector.RunWithContext, tools/cache/reflector.go)
// backs off after every ListAndWatch, a watch ended by 410 Gone included,
// growing to 30 s over an outage: after an API server restart its relist
// came 13 s and more late. Here a watch that ran relists at once
// (relistPolicy), and failures retry within watchBackoff's cap.
type informer struct {
	kind    string
	queue   cache.Queue
	lw      cache.ListerWatcher
	objType runtime.Object
	process cache.ProcessFunc

	mu        sync.Mutex
	reflector *cache.Reflector
}

// watchBackoff is the wait before another attempt after a failed list or
// watch: doubling from 250 ms up to 1 s, each wait jittered up to half as
// long again, so that the plugin asks an API server that is back within
// 1.5 s.
var watchBackoff = wait.Backoff{Duration: 250 * time.Millisecond, Factor: 2, Jitter: 0.5, Steps: 3, Cap: time.Second}

// refusedBackoff is the wait after a list the API server answered with an
// error (429 Too Many Requests, a 5xx): client-go's reflector's own
// (NewReflectorWithOptions in tools/cache/reflector.go: 800 ms doubling to
// 30 s, jitter 1.0), so that an API server too busy to serve is not asked
// for whole lists every second by every replica. watchBackoff is for calls
// that got no answer at all: an API server that is down, or restarting.
var refusedBackoff = wait.Backoff{Duration: 800 * time.Millisecond, Factor: 2, Jitter: 1.0, Steps: 6, Cap: 30 * time.Second}

// workingWatch is how long a ListAndWatch must have run for its end (the
// API server ended the watch, or restarted) to be followed by a relist at
// once; one that ended sooner is retried as a failure, so that an API
// server that ends every watch at once is not asked again and again.
const workingWatch = 5 * time.Second

func (in *informer) Run(stopCh <-chan struct{}) { in.RunWithContext(wait.ContextForChannel(stopCh)) }

// RunWithContext runs the reflector and drains the queue until ctx ends.
func (in *informer) RunWithContext(ctx context.Context) {
	go func() {
		<-ctx.Done()
		in.queue.Close()
	}()
	backoff := watchBackoff
	r := cache.NewReflectorWithOptions(in.lw, in.objType, in.queue, cache.ReflectorOptions{TypeDescription: in.kind, Backoff: &backoff})
	in.mu.Lock()
	in.reflector = r
	in.mu.Unlock()
	var running sync.WaitGroup
	running.Go(func() { in.listAndWatch(ctx, r) })
	for {
		if _, err := in.queue.Pop(cache.PopProcessFunc(in.process)); errors.Is(err, cache.ErrFIFOClosed) {
			break
		}
	}
	running.Wait()
}

// listAndWatch calls the reflector's ListAndWatch until ctx ends: again at
// once after a watch that worked for workingWatch, else after the next wait
// of watchBackoff.
func (in *informer) listAndWatch(ctx context.Context, r *cache.Reflector) {
	var p relistPolicy
	for ctx.Err() == nil {
		began := time.Now()
		err := r.ListAndWatchWithContext(ctx)
		if err != nil && ctx.Err() == nil {
			watchError(ctx, r, err)
		}
		d := p.next(err, time.Since(began))
		if d == 0 {
			continue
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// relistPolicy decides how long to wait before the next ListAndWatch.
type relistPolicy struct{ backoff, refused *wait.Backoff }

// next is the wait after a ListAndWatch that returned err after running
// for ran: none after a watch that worked; the next step of refusedBackoff
// after an error the API server answered; else the next step of
// watchBackoff. A working watch starts both again from their first.
func (p *relistPolicy) next(err error, ran time.Duration) time.Duration {
	if err == nil && ran >= workingWatch {
		p.backoff, p.refused = nil, nil
		return 0
	}
	if err != nil && !isUnreachable(err) && !isUndecodable(err) {
		if p.refused == nil {
			b := refusedBackoff
			p.refused = &b
		}
		return p.refused.Step()
	}
	if p.backoff == nil {
		b := watchBackoff
		p.backoff = &b
	}
	return p.backoff.Step()
}

// watchError logs err as client-go's informers do, but for what reporting
// logs once, not on every attempt: refusals, which are a degraded state,
// and calls the API server did not answer (reach).
func watchError(ctx context.Context, r *cache.Reflector, err error) {
	if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || isUnreachable(err) {
		return
	}
	cache.DefaultWatchErrorHandler(ctx, r, err)
}

func (in *informer) HasSynced() bool { return in.queue.HasSynced() }

func (in *informer) HasSyncedChecker() cache.DoneChecker { return in.queue.HasSyncedChecker() }

func (in *informer) LastSyncResourceVersion() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.reflector == nil {
		return ""
	}
	return in.reflector.LastSyncResourceVersion()
}

// newStore is the client-go store of an informer whose handler does not keep
// the objects itself.
func newStore(indexers cache.Indexers) cache.Indexer {
	return cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, indexers)
}

// unchanged reports whether in, delivered again, is the version of it the
// store holds (exists, sameVersion) or the version last dropped as malformed
// (skippedVersion). An object without a resourceVersion is never taken as
// unchanged: the API server always sets one.
func unchanged(in meta.Object, exists, sameVersion bool, skippedVersion string) bool {
	rv := in.GetResourceVersion()
	if rv == "" {
		return false
	}
	return (exists && sameVersion) || (!exists && skippedVersion == rv)
}

// listThenWatch makes the reflectors list, in pages (thinPages), then watch,
// instead of streaming the initial objects as watch events (client-go's
// WatchListClient, on by default since 1.35): measured with make bench, the
// stream made the server slower to Ready, mostly waiting for the bookmark
// that ends the initial events (docs/deploy.md; BENCHMARKS.md, Scale).
type listThenWatch struct{}

func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }

// objectKey is the store key of o: namespace/name, or name.
func objectKey(o meta.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

// reporting returns lw with the outcome of every list and watch call passed
// to report. A call refused for what only an administrator can fix (a
// missing RBAC rule or CRD) is retried here, from retry up to maxRetry,
// rather than by the reflector's back-off of up to a minute, so that the
// plugin heals soon after the fix, in one degraded state meanwhile. Each
// watch goes through expiryLogging, which logs a 410 Gone with its kind.
func reporting(kind string, lw *cache.ListWatch, report func(error), retry time.Duration) *cache.ListWatch {
	list, watchFunc := lw.ListWithContextFunc, lw.WatchFuncWithContext
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o meta.ListOptions) (runtime.Object, error) {
			return retryRefused(ctx, retry, report, func() (runtime.Object, error) { return list(ctx, o) })
		},
		WatchFuncWithContext: func(ctx context.Context, o meta.ListOptions) (watch.Interface, error) {
			w, err := retryRefused(ctx, retry, report, func() (watch.Interface, error) { return watchFunc(ctx, o) })
			if err != nil || w == nil {
				return w, err
			}
			return expiryLogging(kind, w), nil
		},
	}
}

// expiredWatch passes on the events of a watch and logs the one that says
// the resourceVersion it started from is gone (410 Gone, reason Expired):
// the API server's watch cache no longer holds the events since then, as
// after a watch was down longer than the cache keeps them, and the
// reflector (client-go tools/cache/reflector.go, isExpiredError) lists
// every object again. The log line is what tells a relist of that cause
// from an ordinary watch restart.
type expiredWatch struct {
	in   watch.Interface
	out  chan watch.Event
	done chan struct{}
	once sync.Once
}

func expiryLogging(kind string, in watch.Interface) watch.Interface {
	w := &expiredWatch{in: in, out: make(chan watch.Event), done: make(chan struct{})}
	go func() {
		defer close(w.out)
		for e := range in.ResultChan() {
			if e.Type == watch.Error {
				if err := apierrors.FromObject(e.Object); apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					log.Infof("Watch of %s objects expired (410 Gone), listing them again: %v", kind, err)
				}
			}
			select {
			case w.out <- e:
			case <-w.done:
				return
			}
		}
	}()
	return w
}

func (w *expiredWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *expiredWatch) Stop() {
	w.once.Do(func() {
		close(w.done)
		w.in.Stop()
	})
}

// retryRefused calls f, and again while it is refused as Forbidden or
// NotFound, until ctx ends; a retry of 0 calls it once.
func retryRefused[T any](ctx context.Context, retry time.Duration, report func(error), f func() (T, error)) (T, error) {
	wait := retry
	for {
		v, err := f()
		report(err)
		if retry <= 0 || !(apierrors.IsForbidden(err) || apierrors.IsNotFound(err)) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(wait):
		}
		wait = min(2*wait, maxRetry)
	}
}
