package process

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

func waitDone(t *testing.T, p *Process) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		_ = p.Stop(time.Second)
		t.Fatalf("%s did not exit", p.Name)
	}
}

func TestOutputAndStarted(t *testing.T) {
	var out bytes.Buffer
	before := time.Now()
	p, err := Start(Spec{Name: "echo", Path: "/bin/sh", Args: []string{"-c", "echo to-stdout; echo to-stderr >&2"}, Output: &out})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, p)
	if err := p.Err(); err != nil {
		t.Fatalf("exit: %v", err)
	}
	if got := out.String(); !strings.Contains(got, "to-stdout") || !strings.Contains(got, "to-stderr") {
		t.Errorf("Output = %q, want both streams", got)
	}
	if p.Started.Before(before) || p.Started.After(time.Now()) {
		t.Errorf("Started = %v, not between the call and its return", p.Started)
	}
}

func TestLogAppendsAndSeesOnlyItsOwnRun(t *testing.T) {
	log := filepath.Join(t.TempDir(), "child.log")
	if err := os.WriteFile(log, []byte("bind: address already in use\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Start(Spec{Name: "echo", Path: "/bin/sh", Args: []string{"-c", "echo second run"}, LogPath: log})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, p)
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if want := "bind: address already in use\nsecond run\n"; string(data) != want {
		t.Errorf("log = %q, want %q", data, want)
	}
	// The earlier run's line is not this process's.
	if p.AddressInUse() {
		t.Error("AddressInUse read an earlier run's log")
	}
}

func TestStopEndsTheGroup(t *testing.T) {
	p, err := Start(Spec{Name: "sleeper", Path: "/bin/sh", Args: []string{"-c", "sleep 60 & sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if !p.Exited() {
		t.Fatal("exited is false after Stop")
	}
	// The background sleep was in the same group and got the signal too:
	// soon the group is empty.
	poll.Eventually(t, 5*time.Second, "the group empty after Stop", func() (bool, string) {
		err := syscall.Kill(-p.Pid, 0)
		return err != nil, fmt.Sprintf("kill -0 of the group: %v", err)
	})
	if err := p.Stop(time.Second); err != nil {
		t.Errorf("Stop after exit: %v", err)
	}
}
