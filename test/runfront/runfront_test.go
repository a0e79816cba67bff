//go:build linux

// Package runfront runs make run-front as a user does.
package runfront

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
	"github.com/coredns-mcs/coredns-mcs/test/internal/testbin"
)

// TestMakeRunFront runs make run-front with no argument, as printed in the
// README: the local API server, coredns-mcs standalone, and stock CoreDNS at
// the version kubeadm ships with kubeadm's Corefile and the added blocks in
// front of it. Through the front, over UDP, the import-only name answers
// from the import; with the standalone server hung (SIGSTOP to the PID it
// printed) the import name answers NXDOMAIN and the names the front answers
// itself (a local Service, and the search-path expansion of an external
// name, which stays with the front) answer as before, without waiting on
// the hung server; resumed, the import name answers again. Ctrl-C (SIGINT
// to the process group, as a terminal sends it) stops everything it
// started: no process of its tree is left, and its temporary directory is
// gone.
//
// It runs in the repository itself: make run-front builds build/coredns
// there, which make test has just built (the same sources, so the go
// command leaves it as it is).
func TestMakeRunFront(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: runs make run-front, which -short leaves out")
	}
	if _, err := exec.LookPath("make"); err != nil {
		harness.Unavailable(t, "make not found (apt-get install make): %v", err)
	}
	root, err := testbin.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// A cold start builds kube-apiserver and etcd (about 10 minutes on 2
	// cores) and stock CoreDNS; make test has built both by now.
	ctx, cancel := context.WithTimeout(t.Context(), 25*time.Minute)
	defer cancel()
	cmd := exec.Command("make", "--no-print-directory", "run-front")
	cmd.Dir = root
	cmd.Env = userEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	pgid := cmd.Process.Pid
	out := &lines{changed: make(chan struct{}, 1)}
	go out.read(r)
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()

	// Whatever happens, nothing it started outlives the test: the process
	// group while make runs, and the processes of its tree seen while make
	// ran (etcd and kube-apiserver run in groups of their own; they also
	// die with localcluster, test/internal/process). Only while make runs
	// is its PID, and so its group's, not another process's.
	var seen []proc
	defer func() {
		select {
		case <-exited:
		default:
			_ = syscall.Kill(-pgid, syscall.SIGCONT)
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		for _, p := range seen {
			if p.alive() {
				_ = syscall.Kill(p.pid, syscall.SIGCONT)
				_ = syscall.Kill(p.pid, syscall.SIGKILL)
			}
		}
		<-exited
		if t.Failed() {
			t.Logf("make run-front printed:\n%s", out.String())
		}
	}()

	text := out.waitFor(t, ctx, exited, "Ctrl-C stops everything.")
	t.Logf("make run-front ready after %s", time.Since(start).Round(100*time.Millisecond))
	port := match(t, text, `dig @127\.0\.0\.1 -p (\d+) checkout\.demo\.svc\.cluster\.local`)
	standalone := match(t, text, `kill -STOP (\d+) `)
	if pids := match(t, text, `PIDs: front \d+, standalone (\d+),`); pids != standalone {
		t.Fatalf("the standalone server's PID is %s in the kill lines and %s in the PIDs line", standalone, pids)
	}
	frontDir := filepath.Dir(match(t, text, `Corefiles: (\S+/front/Corefile),`))
	addr := "127.0.0.1:" + port
	seen = tree(pgid)
	pid, _ := strconv.Atoi(standalone)
	if !slices.ContainsFunc(seen, func(p proc) bool { return p.pid == pid }) {
		t.Fatalf("PID %d, printed as the standalone server's, is not a process make run-front started", pid)
	}

	const (
		importName = "checkout.demo.svc.cluster.local."
		importIP   = "10.42.0.10"
		localName  = "frontend.demo.svc.cluster.local."
		localIP    = "10.96.100.100"
		// The search-path expansion NAME.NS.svc.cluster.local of
		// example.com: three labels before svc, which the front's own
		// block answers (docs/platforms.md).
		expansion = "example.com.demo.svc.cluster.local."
	)
	answers := func(name, ip string) (bool, string) {
		r, err := ask(addr, name)
		if err != nil {
			return false, err.Error()
		}
		return r.Rcode == dns.RcodeSuccess && hasA(r, ip), r.String()
	}
	nxdomain := func(name string) (bool, string) {
		r, err := ask(addr, name)
		if err != nil {
			return false, err.Error()
		}
		return r.Rcode == dns.RcodeNameError, r.String()
	}
	poll.Eventually(t, 10*time.Second, importName+" through the front answers "+importIP, func() (bool, string) {
		return answers(importName, importIP)
	})
	if ok, got := answers(localName, localIP); !ok {
		t.Fatalf("%s: want %s; got %s", localName, localIP, got)
	}
	// The watch loop's pod lookups, as printed: a short name through the
	// search list of a pod in demo.
	podLookup := match(t, text, `\$\(([^ ]+/localfront) -lookup \\?\$n -server 127\.0\.0\.1:`+port+`\)`)
	for name, want := range map[string][]string{
		"checkout":    {"checkout.demo.svc.cluster.local NOERROR"},
		"example.com": {"example.com.demo.svc.cluster.local NXDOMAIN", "example.com.svc.cluster.local NXDOMAIN", "example.com.cluster.local NXDOMAIN", "; "},
	} {
		got, err := exec.CommandContext(ctx, podLookup, "-lookup", name, "-server", addr).CombinedOutput()
		if err != nil {
			t.Fatalf("%s -lookup %s: %v\n%s", podLookup, name, err, got)
		}
		for _, w := range want {
			if !strings.Contains(string(got), w) {
				t.Errorf("the pod lookup of %s: %q lacks %q", name, got, w)
			}
		}
	}

	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	hung := time.Now()
	poll.Eventually(t, 15*time.Second, importName+" answers NXDOMAIN with the standalone server hung", func() (bool, string) {
		return nxdomain(importName)
	})
	t.Logf("hung: %s answered NXDOMAIN after %s", importName, time.Since(hung).Round(time.Millisecond))
	// What the front answers itself does not wait on the hung server:
	// well under forward's fixed 2 s read timeout, which a name forwarded
	// to it would cost before CoreDNS 1.14.5.
	for range 5 {
		for _, c := range []struct {
			name string
			ok   func() (bool, string)
		}{
			{localName, func() (bool, string) { return answers(localName, localIP) }},
			{expansion, func() (bool, string) { return nxdomain(expansion) }},
		} {
			began := time.Now()
			ok, got := c.ok()
			if took := time.Since(began); !ok || took > 1500*time.Millisecond {
				t.Errorf("%s with the standalone server hung, after %s: %s", c.name, took.Round(time.Millisecond), got)
			}
		}
	}

	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	poll.Eventually(t, 15*time.Second, importName+" answers "+importIP+" again once the standalone server resumes", func() (bool, string) {
		return answers(importName, importIP)
	})
	t.Logf("resumed: %s answered again after %s", importName, time.Since(resumed).Round(time.Millisecond))

	// Ctrl-C.
	for _, p := range tree(pgid) {
		if !slices.Contains(seen, p) {
			seen = append(seen, p)
		}
	}
	if err := syscall.Kill(-pgid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	stopping := time.Now()
	select {
	case <-exited:
	case <-time.After(time.Minute):
		t.Fatal("make run-front did not end within a minute of Ctrl-C")
	}
	poll.Eventually(t, 30*time.Second, "every process make run-front started has exited", func() (bool, string) {
		var left []string
		for _, p := range seen {
			if p.alive() {
				left = append(left, p.String())
			}
		}
		if err := syscall.Kill(-pgid, 0); !errors.Is(err, syscall.ESRCH) {
			left = append(left, "a process of its group")
		}
		return len(left) == 0, strings.Join(left, ", ")
	})
	t.Logf("stopped %d processes %s after Ctrl-C", len(seen), time.Since(stopping).Round(100*time.Millisecond))
	// Stopped by Ctrl-C, not by one of its processes ending first.
	after := strings.TrimPrefix(out.String(), text)
	if strings.Contains(after, " exited") {
		t.Errorf("after Ctrl-C, make run-front printed:\n%s", after)
	}
	t.Logf("after Ctrl-C, make run-front printed:\n%s", after)
	if _, err := os.Stat(frontDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s, of make run-front's temporary directory, is left: %v", frontDir, err)
	}
}

// userEnv is the environment of a user who types make run-front: without
// make's own variables, and without the variables that set its ports,
// platform and version (their defaults, or a free port where one is taken).
func userEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "MAKEFLAGS", "MAKELEVEL", "MFLAGS", "VERSION", "PORT", "STANDALONE_PORT", "STAND_IN_PORT",
			"HEALTH_PORT", "READY_PORT", "METRICS_PORT", "PLATFORM", "COREDNS_VERSION":
			continue
		}
		env = append(env, kv)
	}
	return env
}

func ask(addr, name string) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	return harness.Ask("udp", addr, m)
}

func hasA(r *dns.Msg, ip string) bool {
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok && a.A.String() == ip {
			return true
		}
	}
	return false
}

// match returns the first group of pattern in text, and fails t without.
func match(t *testing.T, text, pattern string) string {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("make run-front printed nothing matching %s:\n%s", pattern, text)
	}
	return m[1]
}

// lines collects what make run-front prints.
type lines struct {
	mu      sync.Mutex
	b       strings.Builder
	changed chan struct{}
}

func (l *lines) read(r *os.File) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		l.mu.Lock()
		l.b.WriteString(sc.Text() + "\n")
		l.mu.Unlock()
		select {
		case l.changed <- struct{}{}:
		default:
		}
	}
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor returns what was printed once it holds want, and fails t if
// make ends or ctx does first.
func (l *lines) waitFor(t *testing.T, ctx context.Context, exited <-chan struct{}, want string) string {
	t.Helper()
	for {
		if s := l.String(); strings.Contains(s, want) {
			return s
		}
		select {
		case <-l.changed:
		case <-exited:
			t.Fatalf("make run-front ended before printing %q", want)
		case <-ctx.Done():
			t.Fatalf("make run-front printed no %q in time", want)
		}
	}
}

// A proc is a process, told apart from a later one of the same PID by its
// start time.
type proc struct {
	pid   int
	start string // field 22 of /proc/PID/stat
	comm  string
}

func (p proc) String() string { return p.comm + " (PID " + strconv.Itoa(p.pid) + ")" }

// alive reports whether p has not exited: a zombie has.
func (p proc) alive() bool {
	st, ok := stat(p.pid)
	return ok && st.start == p.start && st.state != "Z"
}

type procStat struct {
	ppid         int
	state, start string
	comm         string
}

func stat(pid int) (procStat, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	s := string(data)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return procStat{}, false
	}
	f := strings.Fields(s[end+1:]) // from field 3, the state
	if len(f) < 20 {
		return procStat{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	return procStat{ppid: ppid, state: f[0], start: f[19], comm: s[open+1 : end]}, true
}

// tree returns the live processes descending from root, root included.
func tree(root int) []proc {
	entries, _ := os.ReadDir("/proc")
	children := map[int][]int{}
	stats := map[int]procStat{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := stat(pid); ok {
			stats[pid] = st
			children[st.ppid] = append(children[st.ppid], pid)
		}
	}
	var out []proc
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if st, ok := stats[pid]; ok && st.state != "Z" {
			out = append(out, proc{pid: pid, start: st.start, comm: st.comm})
		}
		queue = append(queue, children[pid]...)
	}
	return out
}
