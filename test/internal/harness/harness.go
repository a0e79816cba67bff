// Package harness holds small pieces shared by the tests that run coredns as
// a process: free loopback ports, and a buffer for the process's output.
package harness

import (
	"bytes"
	"fmt"
	"net"
	"sync"
	"testing"
)

// FreePort returns a port on 127.0.0.1 that was free for both TCP and UDP a
// moment ago: coredns serves DNS on both.
func FreePort(t testing.TB) int {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			u.Close()
			return port
		}
	}
	t.Fatal("no port free for both TCP and UDP on 127.0.0.1")
	return 0
}

// Output collects what a process writes. Its stdout and stderr are copied
// by goroutines of their own while tests read it, hence the lock.
type Output struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}
