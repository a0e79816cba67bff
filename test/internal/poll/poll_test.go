package poll

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestUntilHolds: Until returns once cond holds, asking it at once and
// then soon: ten looks that fail take well under a second.
func TestUntilHolds(t *testing.T) {
	looks := 0
	start := time.Now()
	err := Until(context.Background(), "ten looks", func() (bool, string) {
		looks++
		return looks == 10, strconv.Itoa(looks)
	})
	if err != nil || looks != 10 {
		t.Fatalf("Until: %v after %d looks", err, looks)
	}
	// 10+20+40+80+5*100 ms of pauses.
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("ten looks took %s", d)
	}
}

// TestUntilSaysWhatItSaw: a wait that ends without cond holding names what
// it waited for and the last thing cond saw, which it looked at once the
// deadline had passed.
func TestUntilSaysWhatItSaw(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	looks := 0
	err := Until(ctx, "the impossible", func() (bool, string) {
		looks++
		return false, "look " + strconv.Itoa(looks) + " at " + strconv.FormatBool(ctx.Err() != nil)
	})
	if err == nil {
		t.Fatal("Until returned nil for a cond that never holds")
	}
	if !strings.Contains(err.Error(), "the impossible; last seen: look "+strconv.Itoa(looks)+" at true") {
		t.Errorf("error %q does not say what was waited for and what was seen last, after the deadline", err)
	}
}

// TestSlowLooksPauseLonger: after a look that took long the pause is as
// long, so that a costly cond does not run without a break.
func TestSlowLooksPauseLonger(t *testing.T) {
	var looked []time.Time
	err := Until(context.Background(), "three looks", func() (bool, string) {
		looked = append(looked, time.Now())
		time.Sleep(200 * time.Millisecond)
		return len(looked) == 3, ""
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(looked); i++ {
		if d := looked[i].Sub(looked[i-1]); d < 400*time.Millisecond {
			t.Errorf("look %d came %s after the one before, which took 200 ms", i+1, d)
		}
	}
}

// TestEventuallyFails: Eventually fails its test with what Until says.
func TestEventuallyFails(t *testing.T) {
	ft := &fatalT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Eventually(ft, 20*time.Millisecond, "the impossible", func() (bool, string) { return false, "nothing" })
	}()
	<-done
	if want := "within 20ms: the impossible; last seen: nothing"; ft.msg != want {
		t.Errorf("Eventually failed with %q, want %q", ft.msg, want)
	}
}

// fatalT records the message of Fatalf and ends the goroutine, as a test's
// Fatalf does.
type fatalT struct {
	testing.TB
	msg string
}

func (f *fatalT) Helper() {}

func (f *fatalT) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestThroughoutWatchesTheWholeTime: a cond that keeps holding is asked
// until the time has passed, again and again; one that stops holding ends
// the watch at that look, with what it saw.
func TestThroughoutWatchesTheWholeTime(t *testing.T) {
	start := time.Now()
	looks, seen, held := throughout(300*time.Millisecond, func() (bool, string) { return true, "" })
	if !held || looks < 3 || seen != "" || time.Since(start) < 300*time.Millisecond {
		t.Errorf("a cond that holds: held %v after %d looks in %s, want held, several looks, 300ms", held, looks, time.Since(start))
	}
	start = time.Now()
	looks, seen, held = throughout(time.Minute, func() (bool, string) { return false, "changed" })
	if held || looks != 1 || seen != "changed" || time.Since(start) > 10*time.Second {
		t.Errorf("a cond that fails at once: held %v after %d looks, seen %q, in %s", held, looks, seen, time.Since(start))
	}
	ft := &fatalT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		calls := 0
		Throughout(ft, time.Minute, "the same", func() (bool, string) { calls++; return calls < 3, "call " + strconv.Itoa(calls) })
	}()
	<-done
	if !strings.Contains(ft.msg, "(look 3 of a 1m0s watch): no longer the same; seen: call 3") {
		t.Errorf("Throughout failed with %q", ft.msg)
	}
}
