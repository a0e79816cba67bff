//go:build linux

// Package netns creates network namespaces for tests that run a node, and
// runs code, commands and connections inside them.
//
// A namespace lives while a file refers to it or a process is in it. The
// Namespace holds such a file, so a namespace created here goes away with
// the test binary at the latest, and with it every address, link and
// iptables rule made inside: nothing to undo on the machine.
//
// Go moves goroutines between threads, and a namespace belongs to a thread,
// so code runs inside on a locked thread (Do). A socket belongs to the
// namespace it was created in, and a child process to the namespace of the
// thread that forked it; both keep it after the thread moves back.
package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Namespace is a network namespace created by New.
type Namespace struct {
	file *os.File
}

// New creates a network namespace with its loopback interface up.
func New() (*Namespace, error) {
	type result struct {
		file *os.File
		err  error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		defer orig.Close()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- result{err: fmt.Errorf("unshare: %w", err)}
			return
		}
		file, err := os.Open("/proc/thread-self/ns/net")
		// A thread left in the new namespace must not run other
		// goroutines: it stays locked, and Go ends it when this goroutine
		// returns.
		if restoreErr := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); restoreErr == nil {
			runtime.UnlockOSThread()
		}
		done <- result{file, err}
	}()
	r := <-done
	if r.err != nil {
		return nil, fmt.Errorf("create network namespace: %w", r.err)
	}
	n := &Namespace{file: r.file}
	if err := n.Do(loopbackUp); err != nil {
		n.Close()
		return nil, fmt.Errorf("network namespace: bring up lo: %w", err)
	}
	return n, nil
}

// loopbackUp sets the IFF_UP flag of lo in the calling thread's namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// Path names the namespace for other processes, as nsenter --net=PATH
// takes it. It is valid while the Namespace is open.
func (n *Namespace) Path() string {
	return fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), n.file.Fd())
}

// Enter moves the calling thread into the namespace. The caller must have
// locked the goroutine to its thread (runtime.LockOSThread) and must never
// unlock it: Go then ends the thread with the goroutine, instead of running
// other goroutines in the wrong namespace.
func (n *Namespace) Enter() error {
	if err := unix.Setns(int(n.file.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("enter network namespace: %w", err)
	}
	return nil
}

// Do runs f on a thread inside the namespace.
func (n *Namespace) Do(f func() error) error {
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("network namespace: %w", err)
	}
	defer orig.Close()
	if err := n.Enter(); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	ferr := f()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		// Stay locked: the thread ends with this goroutine.
		return errors.Join(ferr, fmt.Errorf("leave network namespace: %w", err))
	}
	runtime.UnlockOSThread()
	return ferr
}

// DialContext connects to address from inside the namespace. The address
// must be numeric: name resolution could run on another thread.
func (n *Namespace) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var conn net.Conn
	err := n.Do(func() error {
		var err error
		conn, err = (&net.Dialer{}).DialContext(ctx, network, address)
		return err
	})
	return conn, err
}

// Listen listens on address inside the namespace.
func (n *Namespace) Listen(network, address string) (net.Listener, error) {
	var l net.Listener
	err := n.Do(func() error {
		var err error
		l, err = net.Listen(network, address)
		return err
	})
	return l, err
}

// ListenPacket listens on address inside the namespace.
func (n *Namespace) ListenPacket(network, address string) (net.PacketConn, error) {
	var pc net.PacketConn
	err := n.Do(func() error {
		var err error
		pc, err = net.ListenPacket(network, address)
		return err
	})
	return pc, err
}

// Run runs a command inside the namespace and returns its combined output.
func (n *Namespace) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := n.Do(cmd.Start); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := cmd.Wait(); err != nil {
		return []byte(out.String()), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return []byte(out.String()), nil
}

// Close releases the namespace; it goes away once no process is in it.
func (n *Namespace) Close() error {
	return n.file.Close()
}
