package multicluster

import (
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestExpiryLogging checks that a watch passes every event on, that a 410
// Gone (Expired) event is logged once with its kind and other errors are
// not, and that stopping the watch stops the one beneath even while an
// event waits to be read.
func TestExpiryLogging(t *testing.T) {
	logs := captureLog(t)
	in := watch.NewRaceFreeFake()
	w := expiryLogging("ServiceImport", in)
	expired := apierrors.NewResourceExpired("too old resource version: 5 (9)").Status()
	internal := apierrors.NewInternalError(errors.New("etcd unavailable")).Status()
	in.Add(&meta.PartialObjectMetadata{})
	in.Error(&internal)
	in.Error(&expired)
	for i, want := range []watch.EventType{watch.Added, watch.Error, watch.Error} {
		select {
		case e := <-w.ResultChan():
			if e.Type != want {
				t.Fatalf("event %d: %s, want %s", i, e.Type, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d not passed on", i)
		}
	}
	if n := logs.count("Watch of ServiceImport objects expired (410 Gone)"); n != 1 {
		t.Errorf("%d expiry lines, want 1:\n%s", n, logs)
	}
	if n := logs.count("410"); n != 1 {
		t.Errorf("other errors logged as expiry:\n%s", logs)
	}

	// An event nobody reads, then Stop: the watch beneath stops and the
	// result channel closes.
	in.Add(&meta.PartialObjectMetadata{})
	w.Stop()
	w.Stop()
	select {
	case <-drained(w.ResultChan()):
	case <-time.After(10 * time.Second):
		t.Fatal("result channel not closed after Stop")
	}
	if !in.IsStopped() {
		t.Error("the watch beneath was not stopped")
	}
}

func drained(c <-chan watch.Event) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		for range c {
		}
		close(done)
	}()
	return done
}
