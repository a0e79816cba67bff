//go:build linux

package netns

import (
	"context"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

func TestNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("creating a network namespace needs root")
		}
		t.Skip("skipping: creating a network namespace needs root")
	}
	ns, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()

	// A listener inside is reachable from inside only.
	l, err := ns.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "inside\n")
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ns.DialContext(ctx, "tcp", l.Addr().String())
	if err != nil {
		t.Fatalf("dial inside: %v", err)
	}
	got, _ := io.ReadAll(c)
	c.Close()
	if string(got) != "inside\n" {
		t.Errorf("read %q from the listener inside", got)
	}
	if c, err := net.DialTimeout("tcp", l.Addr().String(), 2*time.Second); err == nil {
		got, _ := io.ReadAll(c)
		c.Close()
		if string(got) == "inside\n" {
			t.Error("the listener inside the namespace answered a connection from outside")
		}
	}

	// Commands run inside: the namespace has only lo, and it is up.
	out, err := ns.Run(ctx, "ip", "-o", "link")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "lo:") || !strings.Contains(lines[0], "UP") {
		t.Errorf("links inside:\n%s", out)
	}
	if !strings.HasPrefix(ns.Path(), "/proc/") {
		t.Errorf("Path() = %q", ns.Path())
	}
}
