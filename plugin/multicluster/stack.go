// Growing a query goroutine's stack before the query is passed on, while
// the stack is shallow and a copy cheap, rather than deep in the plugins
// after this one.

package multicluster

// CoreDNS serves every UDP query on a new goroutine. Go starts a goroutine
// with a small stack (2 KiB, or the average stack size the garbage collector
// last saw) and, when a call needs more, doubles it: it allocates a new stack,
// copies the old one and walks every frame on it to adjust pointers. The cost
// of that walk grows with the number of frames, so a copy deep in a call chain
// is several times dearer than the same copy near its top.
//
// The kubernetes plugin's lookup is deep. Its chain for a cluster.local A
// query (request parsing, the server, the kubernetes plugin, client-go's
// indexer) peaks just short of the point where an 8 KiB stack must grow.
// Without other plugins in front, the stack is copied twice per query (from
// 2 to 4 KiB while the request is parsed, from 4 to 8 KiB in the kubernetes
// plugin); the plugin's own small frame in front of kubernetes was enough to
// add a third copy, of nearly the whole stack, deep inside client-go. That
// copy, not the plugin's lookup, was nearly all of the plugin's toll on
// cluster.local queries. How near the chain comes to the boundary changes
// with the Go and CoreDNS versions it is built with; the CPU profiles that
// show the copies are in BENCHMARKS.md (CPU profiles under load).
//
// So before passing a query on, the plugin asks for the stack the rest of the
// chain will need, while the stack is still shallow: the one copy it may cost
// there walks a handful of frames, and it replaces the copies that would come
// later, deeper. When the stack is already large enough, as on a TCP
// connection's goroutine that has served queries before, it costs a compare
// and a call.

// stackReserve is the stack room reserveStack asks for. From the depth the
// plugin runs at (about 1 KiB), it makes the runtime grow a goroutine's stack
// straight to 16 KiB, with room to spare over what the deepest cluster.local
// lookup needs.
const stackReserve = 8 << 10

// reserveStack makes sure the calling goroutine has stackReserve bytes of
// stack free. Call it with 0: it then touches no memory and returns 0.
//
// Its frame holds a stackReserve-byte array, so the stack check in its
// prologue, which runs before anything else, demands that much room. The
// array is only used behind a branch that 0 never takes; the compiler cannot
// drop it, because it cannot tell, and because the function is never inlined
// it cannot see the argument either.
//
//go:noinline
func reserveStack(n int) byte {
	if n > 0 {
		var room [stackReserve]byte
		room[n%len(room)] = byte(n)
		return room[(n/2)%len(room)]
	}
	return 0
}
