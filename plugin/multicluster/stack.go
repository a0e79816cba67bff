// Growing a query goroutine's stack before the query is passed on, while
// the stack is shallow and a copy cheap, rather than deep in the plugins
// after this one.

package multicluster

// Go grows a goroutine's stack by copying it and walking every frame, so a
// copy deep in a call chain costs several times one near its top. The
// kubernetes plugin's cluster.local lookup peaks just short of where an
// 8 KiB stack must grow; this plugin's frame in front of it was enough to
// add a copy deep inside client-go, nearly all of the plugin's toll on
// cluster.local queries (BENCHMARKS.md, CPU profiles under load). So the
// plugin grows the stack once, while it is shallow, before passing a query
// on; a stack already large enough costs a compare and a call.

// stackReserve is the stack room reserveStack asks for. From the depth the
// plugin runs at (about 1 KiB), it makes the runtime grow a goroutine's stack
// straight to 16 KiB, with room to spare over what the deepest cluster.local
// lookup needs.
const stackReserve = 8 << 10

// reserveStack makes sure the calling goroutine has stackReserve bytes of
// stack free: its frame holds an array that large, which its prologue's
// stack check demands, used only behind a branch 0 never takes (and never
// inlined, so the compiler cannot see the 0). Call it with 0.
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
