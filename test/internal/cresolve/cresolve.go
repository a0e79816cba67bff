//go:build linux

// Package cresolve looks names up as applications do: resolve.c calls
// getaddrinfo, and is built against musl (static, as Alpine images link)
// and this machine's glibc (as Debian images link), so that a test sees
// what each C library makes of a cluster DNS's answers, search list and
// time-outs included. Build compiles the two; Start runs one in a loop on
// this machine, in a mount namespace of its own whose /etc/resolv.conf is
// the test's (nameserver, search list, options), with no container.
package cresolve

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
)

// Source is testdata/resolve.c: for each name, one line "BOOTTIME NAME STATUS
// ADDRESSES MS" (see its comment).
//
//go:embed testdata/resolve.c
var Source []byte

// Build compiles Source with musl-gcc (static) and gcc into cacheDir,
// cached by the hash of the source, the compiler's version and the flags,
// and returns the two binaries' paths.
func Build(ctx context.Context, cacheDir string) (musl, glibc string, err error) {
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", "", err
	}
	build := func(compiler string, flags ...string) (string, error) {
		version, err := exec.CommandContext(ctx, compiler, "--version").Output()
		if err != nil {
			return "", fmt.Errorf("%s: %w", compiler, err)
		}
		sum := sha256.Sum256([]byte(string(Source) + "\x00" + compiler + "\x00" + string(version) + "\x00" + strings.Join(flags, " ")))
		binary := filepath.Join(cacheDir, "resolve-"+compiler+"-"+hex.EncodeToString(sum[:8]))
		if _, err := os.Stat(binary); err == nil {
			return binary, nil
		}
		work, err := os.MkdirTemp(cacheDir, "resolve-*.tmp")
		if err != nil {
			return "", err
		}
		defer os.RemoveAll(work)
		src := filepath.Join(work, "resolve.c")
		if err := os.WriteFile(src, Source, 0o644); err != nil {
			return "", err
		}
		out := filepath.Join(work, "resolve")
		args := append(slices.Clone(flags), "-o", out, src)
		if msg, err := exec.CommandContext(ctx, compiler, args...).CombinedOutput(); err != nil {
			return "", fmt.Errorf("%s %s: %w: %s", compiler, strings.Join(args, " "), err, msg)
		}
		return binary, os.Rename(out, binary)
	}
	if musl, err = build("musl-gcc", "-O2", "-static", "-Wall", "-Werror"); err != nil {
		return "", "", err
	}
	if out, err := exec.CommandContext(ctx, "ldd", musl).CombinedOutput(); err == nil && !strings.Contains(string(out), "not a dynamic executable") {
		return "", "", fmt.Errorf("%s is not static", musl)
	}
	if glibc, err = build("gcc", "-O2", "-Wall", "-Werror"); err != nil {
		return "", "", err
	}
	return musl, glibc, nil
}

// Line is one lookup: when it began (seconds of CLOCK_BOOTTIME), the name,
// getaddrinfo's status ("ok" or an EAI_ name), the addresses, and how long
// it took.
type Line struct {
	At     float64
	Name   string
	Status string
	Addrs  []string
	MS     float64
}

// ParseLine reads a line resolve.c wrote.
func ParseLine(s string) (Line, bool) {
	f := strings.Fields(s)
	if len(f) != 5 {
		return Line{}, false
	}
	at, err1 := strconv.ParseFloat(f[0], 64)
	ms, err2 := strconv.ParseFloat(f[4], 64)
	if err1 != nil || err2 != nil {
		return Line{}, false
	}
	l := Line{At: at, Name: f[1], Status: f[2], MS: ms}
	if f[3] != "-" {
		l.Addrs = strings.Split(f[3], ",")
	}
	return l, true
}

// Now returns CLOCK_BOOTTIME in seconds, the clock of Line.At.
func Now() float64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		panic(err)
	}
	return float64(ts.Sec) + float64(ts.Nsec)/1e9
}

// Require skips the test unless this machine can run Start: root (a mount
// namespace of its own, and a nameserver on port 53), unshare and mount,
// and the compilers of Build. .ci/run installs them.
func Require(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		harness.Unavailable(t, "cresolve: needs root for a mount namespace and port 53")
	}
	for _, tool := range []string{"unshare", "mount", "musl-gcc", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			harness.Unavailable(t, "cresolve: %s not found (.ci/run installs it; Debian: musl-tools)", tool)
		}
	}
}

// Client is a resolver that looks names up in a loop until the test ends.
type Client struct {
	Name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

// Options of a client's /etc/resolv.conf.
type Options struct {
	// Nameserver is the cluster DNS's address (port 53: a C library's
	// resolv.conf takes no port).
	Nameserver string
	// Search is the search list (a pod's: NS.svc.cluster.local
	// svc.cluster.local cluster.local).
	Search []string
	// Options are resolv.conf's options ("ndots:5", "timeout:1").
	Options []string
}

// ResolvConf renders o as resolv.conf.
func (o Options) ResolvConf() string {
	s := "nameserver " + o.Nameserver + "\n"
	if len(o.Search) > 0 {
		s += "search " + strings.Join(o.Search, " ") + "\n"
	}
	if len(o.Options) > 0 {
		s += "options " + strings.Join(o.Options, " ") + "\n"
	}
	return s
}

// Start runs binary in a loop, each round with names (in which "$i" is
// the round's number), then 100 ms of sleep, in a mount namespace whose
// /etc/resolv.conf says o, until the test ends; it stops exactly the
// processes it started.
func Start(t testing.TB, name, binary string, o Options, names ...string) *Client {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(conf, []byte(o.ResolvConf()), 0o644); err != nil {
		t.Fatal(err)
	}
	loop := fmt.Sprintf("i=0\nwhile :; do\n  i=$((i+1))\n  %s %s\n  sleep 0.1\ndone\n", binary, strings.Join(names, " "))
	// mount --bind follows a symlinked /etc/resolv.conf to its target, which
	// is mounted over in this namespace only.
	c := &Client{Name: name, done: make(chan struct{})}
	c.cmd = exec.Command("unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
		`mount --bind "$1" /etc/resolv.conf && exec sh -c "$2"`, "sh", conf, loop)
	c.cmd.Stdout = (*lockedWriter)(c)
	c.cmd.Stderr = (*lockedWriter)(c)
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start resolver %s: %v", name, err)
	}
	go func() { _ = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(c.stop)
	return c
}

type lockedWriter Client

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.Write(p)
}

// stop kills the client's process group (the loop and the lookup it is in)
// and waits for it.
func (c *Client) stop() {
	select {
	case <-c.done:
		return
	default:
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
	}
}

// Lines returns the client's lookups so far, and any line that is not one
// (a message of unshare, mount or sh).
func (c *Client) Lines() (lines []Line, other []string) {
	c.mu.Lock()
	text := c.out.String()
	c.mu.Unlock()
	for _, s := range strings.Split(text, "\n") {
		if s == "" {
			continue
		}
		if l, ok := ParseLine(s); ok {
			lines = append(lines, l)
		} else {
			other = append(other, s)
		}
	}
	return lines, other
}

// Exited reports whether the client's loop has ended (it should not, while
// the test runs: unshare or mount failed).
func (c *Client) Exited() error {
	select {
	case <-c.done:
		_, other := c.Lines()
		return errors.New(c.Name + " exited: " + strings.Join(other, "; "))
	default:
		return nil
	}
}
