// The zones' SOA serial: a clock that moves at most once a second however
// fast imports change, and never backwards (RFC 1982).

package multicluster

import (
	"sync/atomic"
	"time"
)

// serialClock is the zones' SOA serial, a Unix time in seconds. Changes made
// while nobody has been handed the serial share it, so it moves at most once
// a second and never runs ahead of the clock. A change after a hand-out gets a
// newer serial within a second: at once in a later second, else marked stale
// for the next second's first hand-out. It never goes back, even when the
// clock does (RFC 1982).
type serialClock struct {
	// v is the serial in its upper 32 bits, and the flags below.
	v atomic.Uint64
	// now returns the Unix time in seconds; nil is the system clock. Set
	// before the clock is shared.
	now func() int64
}

const (
	serialHanded = 1 << iota // the serial has been handed out
	serialStale              // and something changed since: the next hand-out in a later second moves it
	serialFlags  = serialHanded | serialStale
)

func packSerial(s uint32, flags uint64) uint64 { return uint64(s)<<32 | flags }

func (c *serialClock) clock() uint32 {
	if c.now != nil {
		return uint32(c.now()) // #nosec G115 -- Unix time as SOA serial, as the kubernetes plugin does
	}
	return uint32(time.Now().Unix()) // #nosec G115 -- as above
}

// start sets the serial to the clock, not yet handed out.
func (c *serialClock) start() { c.v.Store(packSerial(c.clock(), 0)) }

// tick records a change. A change nobody has been told the serial before
// costs one atomic load: the serial not handed out covers it.
func (c *serialClock) tick() {
	for {
		old := c.v.Load()
		if old&serialFlags != serialHanded {
			return // not handed out yet, or already stale
		}
		s, now := uint32(old>>32), c.clock()
		next := packSerial(s, serialFlags)
		if serialBefore(s, now) {
			next = packSerial(now, 0)
		}
		if c.v.CompareAndSwap(old, next) {
			return
		}
	}
}

// Load hands out the serial: the one to put in an SOA or a transfer. Only
// the first hand-out after a change writes (one compare-and-swap, marking
// it handed), which is what lets changes nobody has seen share a serial.
func (c *serialClock) Load() uint32 {
	for {
		old := c.v.Load()
		s := uint32(old >> 32)
		next := packSerial(s, serialHanded)
		switch old & serialFlags {
		case serialHanded:
			return s // the common case: no change since it was last handed out
		case serialFlags:
			now := c.clock()
			switch {
			case now == s:
				// Changed within the second of the serial: the next
				// second's first hand-out moves it.
				return s
			case serialBefore(s, now):
				next = packSerial(now, serialHanded)
			default:
				// The clock went back: one past, never back.
				next = packSerial(s+1, serialHanded)
			}
		}
		if c.v.CompareAndSwap(old, next) {
			return uint32(next >> 32)
		}
	}
}

// serialBefore reports whether SOA serial a is older than b, in serial
// number arithmetic (RFC 1982).
func serialBefore(a, b uint32) bool {
	return a != b && (b-a) < 1<<31
}
