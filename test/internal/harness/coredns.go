package harness

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/coredns-mcs/coredns-mcs/plugin/multicluster/dnscheck"
)

// CoreDNSBinary returns $COREDNS_BINARY, or builds the binary into dir.
func CoreDNSBinary(dir string) (string, error) {
	if b := os.Getenv("COREDNS_BINARY"); b != "" {
		if _, err := os.Stat(b); err != nil {
			return "", fmt.Errorf("COREDNS_BINARY: %w", err)
		}
		return b, nil
	}
	return GoBuild(filepath.Join(dir, "coredns"), "github.com/coredns-mcs/coredns-mcs/coredns")
}

// GoBuild builds the main package pkg (an import path in this module's
// graph) into out with the flags of make build: a static binary, fit for an
// image, and the compiled packages of an earlier make build are reused.
func GoBuild(out, pkg string) (string, error) {
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, msg)
	}
	return out, nil
}

// Ask sends m to addr over proto ("udp" or "tcp"), as dig does, and tries
// twice more on a network error: a busy machine may drop a UDP datagram. An
// answer that holds one record twice in an RRset is an error
// (dnscheck.Distinct).
func Ask(proto, addr string, m *dns.Msg) (*dns.Msg, error) {
	c := dns.Client{Net: proto, Timeout: 2 * time.Second}
	var err error
	for range 3 {
		var r *dns.Msg
		if r, _, err = c.Exchange(m, addr); err == nil {
			return r, distinct(m, r)
		}
	}
	return nil, err
}

// distinct checks r, the answer to m, with dnscheck.Distinct.
func distinct(m, r *dns.Msg) error {
	if err := dnscheck.Distinct(r); err != nil {
		q := "?"
		if len(m.Question) > 0 {
			q = m.Question[0].Name + " " + dns.TypeToString[m.Question[0].Qtype]
		}
		return fmt.Errorf("answer to %s: %w", q, err)
	}
	return nil
}

// StartProcess runs the program bin with args until the test ends, when it
// is killed; its output is collected, and logged if the test failed. exited
// is closed when it ends.
func StartProcess(t testing.TB, name, bin string, args ...string) (out *Output, exited <-chan struct{}) {
	t.Helper()
	out, exited, _ = StartProcessPID(t, name, bin, args...)
	return out, exited
}

// StartProcessPID is StartProcess that also returns the process, for a
// test that stops (SIGSTOP) or kills it itself.
func StartProcessPID(t testing.TB, name, bin string, args ...string) (out *Output, exited <-chan struct{}, process *os.Process) {
	t.Helper()
	out = &Output{}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("%s log:\n%s", name, out.String())
		}
	})
	return out, done, cmd.Process
}

// StartCoreDNS runs binary with the Corefile at path, whose server listens
// on addr, until the test ends (see StartProcess), and waits up to 30 s
// until it answers over UDP and TCP and ready (if not nil) holds. name is
// used in messages.
func StartCoreDNS(t testing.TB, name, binary, path, addr string, ready func() bool) *Output {
	t.Helper()
	log, _, _ := StartCoreDNSPID(t, name, binary, path, addr, ready)
	return log
}

// StartCoreDNSPID is StartCoreDNS that also returns the process and a
// channel closed when it has exited.
func StartCoreDNSPID(t testing.TB, name, binary, path, addr string, ready func() bool) (*Output, *os.Process, <-chan struct{}) {
	t.Helper()
	log, exited, process := StartProcessPID(t, name, binary, "-conf", path)
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			t.Fatalf("%s exited:\n%s", name, log.String())
		default:
		}
		serving := Serving(addr)
		if serving && (ready == nil || ready()) {
			return log, process, exited
		}
		if time.Now().After(deadline) {
			// The ready plugin logs which plugins are not ready each time
			// it is asked ("Plugins not ready").
			t.Fatalf("%s not ready after 30s (answering DNS on %s: %v):\n%s", name, addr, serving, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Serving reports whether a DNS server at addr replies at all.
//
// Both transports are asked: CoreDNS starts its UDP and TCP servers on
// separate goroutines, and a TCP query sent while only UDP serves was once
// seen to fail (unexpected EOF on three fresh connections in a row).
func Serving(addr string) bool {
	m := new(dns.Msg)
	m.SetQuestion("ping.invalid.", dns.TypeA)
	for _, proto := range []string{"udp", "tcp"} {
		c := dns.Client{Net: proto, Timeout: 200 * time.Millisecond}
		if _, _, err := c.Exchange(m, addr); err != nil {
			return false
		}
	}
	return true
}

// HTTPOK reports whether GET url answers 200, as the ready plugin does once
// every plugin is ready.
func HTTPOK(url string) bool {
	resp, err := http.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// stockPlugins are the plugins of the Corefiles the platforms ship
// (kubeadm's, k3s's: internal/front) and of what kubectl mcs front adds to
// them.
var stockPlugins = []string{
	"bind", "cache", "errors", "forward", "health", "hosts", "kubernetes", "loadbalance",
	"log", "loop", "metrics", "ready", "reload", "template", "view",
}

// StockCoreDNSPath returns where StockCoreDNS keeps stock CoreDNS at
// version ("v1.13.1") built with the go command's toolchain:
// ~/.cache/coredns-mcs/stock-coredns/VERSION-GOVERSION/coredns. The file is
// there once it has been built.
func StockCoreDNSPath(version string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	goVersion, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	return filepath.Join(base, "coredns-mcs", "stock-coredns", version+"-"+strings.TrimSpace(string(goVersion)), "coredns"), nil
}

// StockCoreDNS returns CoreDNS at version ("v1.13.1") as a platform ships
// it, for the plugins its Corefile uses: the release's own module (its
// go.mod and go.sum, so every dependency at the version the release
// selects, verified by the release's own checksums), with a main package
// added that runs its coremain with stockPlugins only. Leaving out the
// plugins no Corefile here uses (the cloud providers' SDKs, etcd, tracing)
// makes the build about half as long. The binary is cached under
// ~/.cache/coredns-mcs/stock-coredns by version and Go toolchain; a build
// holds a lock, so that test processes running at once build it once.
func StockCoreDNS(version string) (string, error) {
	bin, err := StockCoreDNSPath(version)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	dir := filepath.Dir(bin)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	tmp, err := os.MkdirTemp(dir, "build-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	env := append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off")
	run := func(dir string, args ...string) ([]byte, error) {
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.Output()
		if err != nil {
			msg := ""
			if ee, ok := err.(*exec.ExitError); ok {
				msg = string(ee.Stderr)
			}
			return nil, fmt.Errorf("CoreDNS %s: go %s: %w\n%s", version, strings.Join(args, " "), err, msg)
		}
		return out, nil
	}
	out, err := run(tmp, "mod", "download", "-json", "github.com/coredns/coredns@"+version)
	if err != nil {
		return "", err
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return "", fmt.Errorf("CoreDNS %s: go mod download: no directory in %q", version, out)
	}
	src := filepath.Join(tmp, "src")
	if msg, err := exec.Command("cp", "-r", mod.Dir, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("copy %s: %w: %s", mod.Dir, err, msg)
	}
	if msg, err := exec.Command("chmod", "-R", "u+w", src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("chmod %s: %w: %s", src, err, msg)
	}
	var main strings.Builder
	main.WriteString("// Command stock is CoreDNS " + version + " with the plugins of the platforms' Corefiles.\npackage main\n\nimport (\n\t\"github.com/coredns/coredns/coremain\"\n\n")
	for _, p := range stockPlugins {
		main.WriteString("\t_ \"github.com/coredns/coredns/plugin/" + p + "\"\n")
	}
	main.WriteString(")\n\nfunc main() { coremain.Run() }\n")
	if err := os.MkdirAll(filepath.Join(src, "stock"), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "stock", "main.go"), []byte(main.String()), 0o644); err != nil {
		return "", err
	}
	if _, err := run(src, "build", "-trimpath", "-ldflags=-s -w", "-o", bin+".tmp", "./stock"); err != nil {
		return "", err
	}
	return bin, os.Rename(bin+".tmp", bin)
}
