package multicluster

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeSeconds is a settable clock of Unix seconds.
type fakeSeconds struct{ t atomic.Int64 }

func (f *fakeSeconds) now() int64  { return f.t.Load() }
func (f *fakeSeconds) set(t int64) { f.t.Store(t) }
func (f *fakeSeconds) add(d int64) { f.t.Add(d) }
func newSerialAt(t int64) (*serialClock, *fakeSeconds) {
	f := &fakeSeconds{}
	f.set(t)
	c := &serialClock{now: f.now}
	c.start()
	return c, f
}

func TestSerialCoalesces(t *testing.T) {
	c, clock := newSerialAt(1_000_000)
	if got := c.Load(); got != 1_000_000 {
		t.Fatalf("serial %d at start, want the clock's 1000000", got)
	}
	// A thousand changes in one second, the serial handed out between
	// them: it does not move within the second, and never runs ahead of
	// the clock.
	for range 1000 {
		c.tick()
		if got := c.Load(); got != 1_000_000 {
			t.Fatalf("serial %d within the second, want 1000000", got)
		}
	}
	// The next second's first hand-out moves it to the clock, once.
	clock.add(1)
	if got := c.Load(); got != 1_000_001 {
		t.Fatalf("serial %d in the next second, want 1000001", got)
	}
	if got := c.Load(); got != 1_000_001 {
		t.Fatalf("serial %d read again, want 1000001", got)
	}
	// Nothing changed: seconds later it is where it was.
	clock.add(10)
	if got := c.Load(); got != 1_000_001 {
		t.Fatalf("serial %d without a change, want 1000001", got)
	}
	// A change in a later second after a hand-out moves it at once.
	c.tick()
	if got := c.Load(); got != 1_000_011 {
		t.Fatalf("serial %d after a change in a later second, want 1000011", got)
	}
	// Changes nobody was told of in between share one serial.
	clock.add(5)
	c.tick()
	clock.add(5)
	c.tick()
	c.tick()
	if got := c.Load(); got != 1_000_016 {
		t.Fatalf("serial %d, want the first change's second after the hand-out, 1000016", got)
	}
}

// The clock going back never takes the serial back: a change after a
// hand-out still moves it, by one.
func TestSerialClockGoesBack(t *testing.T) {
	c, clock := newSerialAt(2_000_000)
	s := c.Load()
	clock.set(1_999_000)
	c.tick()
	if got := c.Load(); got != s+1 {
		t.Fatalf("serial %d after a change with the clock behind, want %d", got, s+1)
	}
	if got := c.Load(); got != s+1 {
		t.Fatalf("serial %d read again, want %d", got, s+1)
	}
}

// The serial wraps as serial numbers do (RFC 1982): past 2^32-1 it is the
// clock modulo 2^32, still after the one before.
func TestSerialWraps(t *testing.T) {
	c, clock := newSerialAt(1<<32 - 1)
	s := c.Load()
	clock.add(1)
	c.tick()
	if got := c.Load(); got != 0 || !serialBefore(s, got) {
		t.Fatalf("serial %d -> %d across 2^32, want 0, after", s, got)
	}
}

// A model of the guarantees, against random sequences of changes,
// hand-outs and seconds passing: a serial handed out before a change is
// older than every serial handed out from the next second after the change
// on; the serial never goes back and never runs ahead of the clock, so it
// takes at most one value a second.
func TestSerialModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for run := range 200 {
		base := int64(1_700_000_000 + rng.IntN(1000))
		c, clock := newSerialAt(base)
		var (
			last       = c.Load()
			seenBefore []uint32 // serials handed out before the last change
			changedAt  = int64(-1)
		)
		for step := range 500 {
			switch rng.IntN(4) {
			case 0:
				clock.add(int64(rng.IntN(2)))
			case 1:
				c.tick()
				seenBefore = append(seenBefore[:0], last)
				changedAt = clock.now()
			default:
				got := c.Load()
				if serialBefore(got, last) {
					t.Fatalf("run %d step %d: serial went back %d -> %d", run, step, last, got)
				}
				if int64(got) > clock.now() {
					t.Fatalf("run %d step %d: serial %d ahead of the clock %d", run, step, got, clock.now())
				}
				if changedAt >= 0 && clock.now() > changedAt {
					for _, old := range seenBefore {
						if !serialBefore(old, got) {
							t.Fatalf("run %d step %d: serial %d handed out before a change at %d, still %d at %d", run, step, old, changedAt, got, clock.now())
						}
					}
				}
				last = got
			}
		}
	}
}

// Changes and hand-outs from many goroutines (run with -race): every
// reader sees the serial move forward only, and a hand-out a second after
// the last change is newer than every serial handed out before it.
func TestSerialConcurrent(t *testing.T) {
	c, clock := newSerialAt(3_000_000)
	var wg sync.WaitGroup
	var maxSeen atomic.Uint32
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				c.tick()
			}
		})
		wg.Go(func() {
			last := c.Load()
			for {
				select {
				case <-stop:
					return
				default:
				}
				s := c.Load()
				if serialBefore(s, last) {
					t.Errorf("serial went back %d -> %d", last, s)
					return
				}
				last = s
				for m := maxSeen.Load(); serialBefore(m, s) && !maxSeen.CompareAndSwap(m, s); m = maxSeen.Load() {
				}
			}
		})
	}
	// The clock moves a second at a time, each once the changing and
	// handing-out goroutines have brought the serial to the second before.
	deadline := time.Now().Add(time.Minute)
	halted := false
	halt := func() {
		if !halted {
			halted = true
			close(stop)
			wg.Wait()
		}
	}
	defer halt()
	for range 20 {
		clock.add(1)
		waitFor(t, time.Until(deadline), "the serial at the clock", func() (bool, string) {
			s, now := c.Load(), clock.now()
			return s == uint32(now), fmt.Sprintf("serial %d with the clock at %d", s, now)
		})
	}
	halt()
	if got := c.Load(); int64(got) > clock.now() {
		t.Errorf("serial %d ahead of the clock %d", got, clock.now())
	}
	before := c.Load()
	c.tick()
	clock.add(1)
	if got := c.Load(); !serialBefore(before, got) || !serialBefore(maxSeen.Load(), got) {
		t.Errorf("after a change and a second: serial %d, handed out before %d (max %d)", got, before, maxSeen.Load())
	}
}

// BenchmarkSerialTick is the write path's share of the serial: one change
// recorded, with the serial handed out every handEvery changes, against
// the former clock, which read the time on every change and moved the
// serial each time.
func BenchmarkSerialTick(b *testing.B) {
	for _, handEvery := range []int{1, 100, 0} {
		name := "handed=never"
		if handEvery > 0 {
			name = "handed=every-" + strconv.Itoa(handEvery)
		}
		b.Run("coalesced/"+name, func(b *testing.B) {
			var c serialClock
			c.start()
			i := 0
			for b.Loop() {
				c.tick()
				if i++; handEvery > 0 && i%handEvery == 0 {
					c.Load()
				}
			}
		})
		b.Run("per-change/"+name, func(b *testing.B) {
			var c perChangeSerial
			c.tick()
			i := 0
			for b.Loop() {
				c.tick()
				if i++; handEvery > 0 && i%handEvery == 0 {
					c.v.Load()
				}
			}
		})
	}
}

// perChangeSerial is the serial as it was, for the benchmark's comparison:
// the Unix time of the last change, or one past the serial before.
type perChangeSerial struct{ v atomic.Uint32 }

func (c *perChangeSerial) tick() {
	now := uint32(time.Now().Unix()) // #nosec G115 -- as serialClock
	for {
		last := c.v.Load()
		next := now
		if !serialBefore(last, now) {
			next = last + 1
		}
		if c.v.CompareAndSwap(last, next) {
			return
		}
	}
}

func TestSerialBefore(t *testing.T) {
	for _, tc := range []struct {
		a, b uint32
		want bool
	}{
		{1, 2, true}, {2, 1, false}, {5, 5, false},
		{0xffffffff, 1, true}, // wrapped
		{1, 0xffffffff, false},
	} {
		if got := serialBefore(tc.a, tc.b); got != tc.want {
			t.Errorf("serialBefore(%d, %d) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
