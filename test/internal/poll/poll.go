// Package poll is the tests' one way to wait for something they can observe
// but are not told of: a DNS answer, an object in the API, a metric, a line
// in a log. It asks a condition at once and then again after short pauses,
// until the condition holds or a deadline passes, and then says what the
// condition saw last.
//
// The pause starts at FirstPause and doubles up to MaxPause, so a wait ends
// soon after what it waits for happens, and a long wait does not keep a
// loaded machine busy. It is never shorter than the last look took (up to a
// second): a costly look (a kubectl run, a query of a server that does not
// answer) takes at most about half of the wait's time.
//
// It imports nothing but the standard library, so that every test package
// under test/, test/internal's own included, can use it. The unit tests of
// plugin/multicluster cannot import it (it is internal to test/) and have
// their own waitFor.
package poll

import (
	"context"
	"fmt"
	"testing"
	"time"
)

const (
	// FirstPause is the pause after the first look that failed.
	FirstPause = 10 * time.Millisecond
	// MaxPause is the longest pause between two cheap looks.
	MaxPause = 100 * time.Millisecond
	// maxLookPause bounds the pause that follows a slow look.
	maxLookPause = time.Second
)

// Cond reports whether what is waited for holds, and what it saw: the text
// a failed wait shows.
type Cond func() (done bool, seen string)

// Until asks cond until it holds, and returns nil; once ctx is done it asks
// cond a last time, and returns an error that names what was waited for and
// what cond saw last. A cond that makes calls can make them with ctx, so
// that one still under way when ctx ends ends with it.
func Until(ctx context.Context, what string, cond Cond) error {
	start := time.Now()
	if seen, ok := until(ctx, cond); !ok {
		return fmt.Errorf("after %s: %s; last seen: %s", time.Since(start).Round(time.Millisecond), what, seen)
	}
	return nil
}

// Eventually fails t unless cond holds within the given time; see Until.
func Eventually(t testing.TB, within time.Duration, what string, cond Cond) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if seen, ok := until(ctx, cond); !ok {
		t.Fatalf("within %s: %s; last seen: %s", within, what, seen)
	}
}

// until asks cond until it holds or, once ctx is done, a last time; it
// returns what cond saw last, and whether it held.
func until(ctx context.Context, cond Cond) (string, bool) {
	pause := FirstPause
	var timer *time.Timer
	for {
		looked := time.Now()
		done, seen := cond()
		if done {
			return seen, true
		}
		if ctx.Err() != nil {
			return seen, false
		}
		wait := max(pause, min(time.Since(looked), maxLookPause))
		pause = min(2*pause, MaxPause)
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		} else {
			timer.Reset(wait)
		}
		select {
		case <-ctx.Done():
		case <-timer.C:
		}
	}
}

// Throughout fails t unless cond holds at every look over the whole of d:
// what must stay as it is (nothing happens), rather than come about. It
// looks at once, then after the pauses Until takes, and a last time once d
// has passed; it fails at the first look at which cond does not hold, with
// what cond saw then.
func Throughout(t testing.TB, d time.Duration, what string, cond Cond) {
	t.Helper()
	start := time.Now()
	looks, seen, ok := throughout(d, cond)
	if !ok {
		t.Fatalf("after %s (look %d of a %s watch): no longer %s; seen: %s", time.Since(start).Round(time.Millisecond), looks, d, what, seen)
	}
}

// throughout asks cond until d has passed (a last time then) or until it
// does not hold; it returns how many looks it took, what cond saw last,
// and whether it held at every look.
func throughout(d time.Duration, cond Cond) (looks int, seen string, held bool) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	broke := false
	until(ctx, func() (bool, string) {
		looks++
		var ok bool
		ok, seen = cond()
		broke = !ok
		// A look that does not hold ends the watch.
		return broke, seen
	})
	return looks, seen, !broke
}
