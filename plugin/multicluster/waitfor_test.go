package multicluster

import (
	"testing"
	"time"
)

// waitInterval is how often waitFor asks its condition: the conditions of
// these tests read memory (the index, a counter, a gauge), so asking often
// costs little and ends a wait soon after what it waits for happens.
const waitInterval = 5 * time.Millisecond

// waitFor asks cond at once, then every waitInterval, until it holds; it
// fails t once within has passed, with what it waited for and, for a cond
// that tells one (a func() (bool, string)), the last thing cond saw.
//
// It is this package's one polling helper. The tests under test/ have theirs
// in test/internal/poll, which works the same way; this package cannot import
// it (it is internal to test/).
func waitFor[C func() bool | func() (bool, string)](t testing.TB, within time.Duration, what string, cond C) {
	t.Helper()
	ask := func() (bool, string) {
		switch c := any(cond).(type) {
		case func() bool:
			return c(), ""
		case func() (bool, string):
			return c()
		}
		panic("unreachable")
	}
	deadline := time.Now().Add(within)
	for {
		ok, seen := ask()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			if seen != "" {
				t.Fatalf("within %s: %s; last seen: %s", within, what, seen)
			}
			t.Fatalf("within %s: %s", within, what)
		}
		time.Sleep(waitInterval)
	}
}
