package filecap

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// netBindServiceXattr is what libcap's `setcap cap_net_bind_service=+ep`
// writes (read back with getxattr on Debian 12, libcap2 2.66).
var netBindServiceXattr = []byte{
	0x01, 0x00, 0x00, 0x02, // revision 2, effective
	0x00, 0x04, 0x00, 0x00, // permitted 0-31: bit 10
	0, 0, 0, 0, // inheritable 0-31
	0, 0, 0, 0, // permitted 32-63
	0, 0, 0, 0, // inheritable 32-63
}

func TestValue(t *testing.T) {
	if got := Value(NetBindService); !bytes.Equal(got, netBindServiceXattr) {
		t.Errorf("Value(CAP_NET_BIND_SERVICE) = %x, want %x", got, netBindServiceXattr)
	}
	// Capabilities above 31 go to the second word.
	got := Value(40) // CAP_CHECKPOINT_RESTORE
	if want := []byte{0, 1, 0, 0}; !bytes.Equal(got[12:16], want) {
		t.Errorf("Value(40) permitted 32-63 = %x, want %x", got[12:16], want)
	}
}

// TestSetMatchesSetcap sets the capability on one file with
// Set and on another with libcap's setcap, and compares what
// the kernel stored.
func TestSetMatchesSetcap(t *testing.T) {
	if os.Geteuid() != 0 {
		requireInCI(t, "setting file capabilities needs root")
	}
	setcap, err := exec.LookPath("setcap")
	if err != nil {
		setcap = "/usr/sbin/setcap"
		if _, err := os.Stat(setcap); err != nil {
			requireInCI(t, "setcap (Debian package libcap2-bin) is not installed")
		}
	}
	dir := t.TempDir()
	ours, theirs := filepath.Join(dir, "ours"), filepath.Join(dir, "theirs")
	for _, p := range []string{ours, theirs} {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := Set(ours, NetBindService); err != nil {
		if errors.Is(err, unix.ENOTSUP) {
			requireInCI(t, "the temporary directory's file system has no extended attributes")
		}
		t.Fatal(err)
	}
	if out, err := exec.Command(setcap, "cap_net_bind_service=+ep", theirs).CombinedOutput(); err != nil {
		t.Fatalf("setcap: %v: %s", err, out)
	}
	if got, want := getxattr(t, ours), getxattr(t, theirs); !bytes.Equal(got, want) || !bytes.Equal(got, netBindServiceXattr) {
		t.Errorf("Set stored %x, setcap stored %x, want both %x", got, want, netBindServiceXattr)
	}
}

func getxattr(t *testing.T, path string) []byte {
	t.Helper()
	buf := make([]byte, 64)
	n, err := unix.Getxattr(path, Xattr, buf)
	if err != nil {
		t.Fatalf("getxattr %s: %v", path, err)
	}
	return buf[:n]
}

// requireInCI fails the test under CI=true and skips it otherwise.
func requireInCI(t *testing.T, reason string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(reason)
	}
	t.Skip("skipping: " + reason)
}
