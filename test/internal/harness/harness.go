// Package harness holds small pieces shared by the tests that run coredns as
// a process: free loopback ports, a buffer for the process's output, and a
// DNS exchange over a connection the test dialled.
package harness

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// FreePort returns a port on 127.0.0.1 that was free for both TCP and UDP a
// moment ago: coredns serves DNS on both.
func FreePort(t testing.TB) int {
	t.Helper()
	ports, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// handedOut are the ports FreePorts returned in this process (a test
// binary, mcsbench's run). coredns binds
// its listeners with SO_REUSEPORT (plugin/pkg/reuseport), so two servers
// given one port would both start, and the kernel would hand each new
// connection to one of them: a server's /ready, say, polled on another's
// metrics listener, which answers 404. A port the kernel offers again,
// after the server it was given to closed it, is not given out twice:
// nor to a test's server while the one it killed waits to start again.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// FreePorts returns n distinct ports on 127.0.0.1 that were free, for both
// TCP and UDP, a moment ago, and that no other call returned.
func FreePorts(n int) ([]int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	var ports []int
	var held []io.Closer
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		held = append(held, l)
		port := l.Addr().(*net.TCPAddr).Port
		if handedOut.ports[port] {
			continue // held, so a new port comes next
		}
		u, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // taken for UDP; the TCP listener stays held, so a new port comes next
		}
		held = append(held, u)
		ports = append(ports, port)
	}
	for _, port := range ports {
		handedOut.ports[port] = true
	}
	return ports, nil
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

// Exchange sends m on conn, a UDP or TCP connection to a DNS server (dns.Conn
// frames TCP messages), and reads the reply, within ctx's deadline. It
// closes conn.
func Exchange(ctx context.Context, conn net.Conn, m *dns.Msg) (*dns.Msg, error) {
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	co := &dns.Conn{Conn: conn}
	if err := co.WriteMsg(m); err != nil {
		return nil, err
	}
	r, err := co.ReadMsg()
	if err != nil {
		return nil, err
	}
	return r, distinct(m, r)
}

// DocBlock returns the first fenced code block after marker (such as an
// HTML comment naming a recipe) in the Markdown file doc, so that a test
// runs what the documentation shows.
func DocBlock(doc, marker string) (string, error) {
	data, err := os.ReadFile(doc)
	if err != nil {
		return "", err
	}
	_, after, ok := strings.Cut(string(data), marker)
	if ok {
		// The opening fence, with its language if any, ends a line.
		_, after, ok = strings.Cut(after, "```")
		if ok {
			_, after, ok = strings.Cut(after, "\n")
		}
	}
	block, _, closed := strings.Cut(after, "```\n")
	if !ok || !closed {
		return "", fmt.Errorf("%s: no code block after %q", doc, marker)
	}
	return block, nil
}

// CI reports whether missing tools must fail tests instead of skipping them.
func CI() bool { return os.Getenv("CI") == "true" }

// Unavailable fails t under CI=true and skips it otherwise: CI must never
// pass by silently leaving tests out.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if CI() {
		t.Fatalf("required in CI: %s", msg)
	}
	t.Skipf("skipping: %s", msg)
}

// WaitFor waits (poll.Eventually) until ready holds for a process started
// with exited and log, and fails t at once if the process ends first; what
// names the process in messages, which show its log.
func WaitFor(t testing.TB, what string, exited <-chan struct{}, log fmt.Stringer, within time.Duration, ready func() bool) {
	t.Helper()
	poll.Eventually(t, within, what+" ready", func() (bool, string) {
		select {
		case <-exited:
			t.Fatalf("%s exited:\n%s", what, log)
		default:
		}
		if ready() {
			return true, ""
		}
		return false, "not ready; log:\n" + log.String()
	})
}
