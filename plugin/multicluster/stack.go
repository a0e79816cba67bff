// Growing a query goroutine's stack before the query is passed on, while
// the stack is shallow and a copy cheap, rather than deep in the plugins
// after this one.

package multicluster

// Go grows a goroutine's stack by copying it and walking every frame, so a
// copy deep in a call chain costs several times one near its top. The
// kubernetes plugin's cluster.local lookup peaks just short of where an 8 KiB
// stack must grow, and this plugin's frame pushed that copy deep into
// client-go (BENCHMARKS.md, CPU profiles): so the stack grows once, shallow,
// before a query is passed on; one large enough costs a compare and a call.

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
