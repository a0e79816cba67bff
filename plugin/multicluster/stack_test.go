package multicluster

import (
	"context"
	"testing"
	"unsafe"

	"github.com/miekg/dns"
)

// deepNext is a next plugin that descends chain bytes, as the kubernetes
// plugin's lookup does, and answers rcodeStackMoved if the stack was copied
// on the way.
type deepNext struct{ chain int }

const rcodeStackMoved = dns.RcodeServerFailure

func (deepNext) Name() string { return "deep" }
func (d deepNext) ServeDNS(context.Context, dns.ResponseWriter, *dns.Msg) (int, error) {
	if stackMoves(func() { descend(d.chain) }) {
		return rcodeStackMoved, nil
	}
	return dns.RcodeSuccess, nil
}

// descend uses about depth bytes of stack below its caller.
//
//go:noinline
func descend(depth int) byte {
	var frame [512]byte
	frame[depth%len(frame)] = byte(depth)
	if depth > len(frame) {
		return descend(depth-len(frame)) + frame[(depth/3)%len(frame)]
	}
	return frame[(depth/5)%len(frame)]
}

// stackMoves reports whether the stack of the calling goroutine was copied
// (moved) while f ran: a copy moves every frame, so the address of a local
// changes.
//
//go:noinline
func stackMoves(f func()) bool {
	var marker byte
	before := uintptr(unsafe.Pointer(&marker))
	f()
	return uintptr(unsafe.Pointer(&marker)) != before
}

// onFreshGoroutine runs f on a new goroutine, as CoreDNS runs each UDP query,
// and returns its result.
func onFreshGoroutine(f func() bool) bool {
	done := make(chan bool)
	go func() { done <- f() }()
	return <-done
}

func TestReserveStack(t *testing.T) {
	// The chain under the plugin needs about 6.5 KiB: on a goroutine with a
	// stack smaller than that, the descent must copy the stack.
	const chain = 6 << 10
	// A fresh goroutine's stack may start larger than the default 2 KiB (the
	// runtime starts it at the average it last saw); then nothing can be seen
	// here. Such a start is rare in a test binary; report it rather than pass.
	if !onFreshGoroutine(func() bool { return stackMoves(func() { descend(chain) }) }) {
		t.Skip("fresh goroutines start with stacks large enough for the whole descent; nothing to observe")
	}

	// What the plugin guarantees the next plugin: a query passed on from
	// ServeDNS finds the room for the whole chain already there.
	m := benchPlugin(t)
	m.Next = deepNext{chain: chain}
	r := new(dns.Msg)
	r.SetQuestion("kubernetes.default.svc.cluster.local.", dns.TypeA)
	moved := onFreshGoroutine(func() bool {
		rcode, _ := m.ServeDNS(context.Background(), &nullWriter{}, r)
		return rcode == rcodeStackMoved
	})
	if moved {
		t.Error("a query passed on to a 6 KiB deep next plugin copied the stack there: ServeDNS does not reserve the room (reserveStack removed, inlined, or its frame optimised away?)")
	}

	// The fast path: with the room already there, it copies nothing.
	moved = onFreshGoroutine(func() bool {
		reserveStack(0)
		return stackMoves(func() { reserveStack(0) })
	})
	if moved {
		t.Error("a second reserveStack(0) copied the stack")
	}
}

// TestReserveStackReturnsZero: the argument the plugin passes never takes the
// branch that uses the frame, and the frame's room starts zeroed.
func TestReserveStackReturnsZero(t *testing.T) {
	if got := reserveStack(0); got != 0 {
		t.Errorf("reserveStack(0) = %d, want 0", got)
	}
	if got := reserveStack(3); got != 0 {
		t.Errorf("reserveStack(3) = %d, want 0 (the room starts zeroed)", got)
	}
}

func BenchmarkReserveStackRoomAlreadyThere(b *testing.B) {
	reserveStack(0)
	for b.Loop() {
		reserveStack(0)
	}
}
