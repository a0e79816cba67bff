package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"github.com/coredns-mcs/coredns-mcs/test/internal/buildcache"
)

// A module of two packages, so that a build has a compile of its own
// besides the standard library's.
var module = fstest.MapFS{
	"go.mod":     {Data: []byte("module hello\n\ngo 1.26\n")},
	"lib/lib.go": {Data: []byte("package lib\n\nfunc Greeting() string { return \"hello from lib\" }\n")},
	"main.go":    {Data: []byte("package main\n\nimport \"hello/lib\"\n\nfunc main() { println(lib.Greeting()) }\n")},
}

// TestBuildReadsServedCache builds a module once, serves this machine's
// build cache as test/deploy does, and builds the module again in an empty
// cache through gocacheprog: the second build must
// take the packages from the served cache (no compile of hello/lib runs,
// and the server served entries), and the binary it writes must run.
func TestBuildReadsServedCache(t *testing.T) {
	prog, src := setUp(t)
	build(t, src) // into this machine's cache, which the server then serves
	goCache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	first := strings.TrimSpace(string(goCache))

	var served, missed atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if buildcache.Handle(first, w, r) {
			served.Add(1)
		} else {
			missed.Add(1)
		}
	}))
	defer srv.Close()

	out := build(t, src, "GOCACHE="+t.TempDir(), "GOCACHEPROG="+prog+" "+srv.URL+" "+t.TempDir())
	if compiles(out, "hello/lib") {
		t.Errorf("hello/lib was compiled again, with the served cache holding it:\n%s", out)
	}
	if served.Load() == 0 {
		t.Errorf("the server served no entry (%d misses)", missed.Load())
	}
	if !strings.Contains(out, "gocacheprog: ") || !strings.Contains(out, " hits from "+srv.URL) {
		t.Errorf("gocacheprog did not report its hits:\n%s", out)
	}
	t.Logf("served %d entries, %d misses", served.Load(), missed.Load())
	run(t, src)
}

// TestBuildWithoutServer: a cache server that cannot be reached is a miss
// for every entry, never an error. The build compiles what it must.
func TestBuildWithoutServer(t *testing.T) {
	prog, src := setUp(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close() // nothing listens there now

	out := build(t, src, "GOCACHE="+t.TempDir(), "GOCACHEPROG="+prog+" "+url+" "+t.TempDir())
	if !compiles(out, "hello/lib") {
		t.Errorf("hello/lib was not compiled, with no cache to take it from:\n%s", out)
	}
	run(t, src)
}

// setUp builds gocacheprog and writes the module; it returns the program's
// path and the module's directory.
func setUp(t *testing.T) (string, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the standard library in an empty cache")
	}
	prog := filepath.Join(t.TempDir(), "gocacheprog")
	if out, err := exec.Command("go", "build", "-o", prog, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build gocacheprog: %v\n%s", err, out)
	}
	src := t.TempDir()
	if err := os.CopyFS(src, module); err != nil {
		t.Fatal(err)
	}
	return prog, src
}

// build runs go build -x in the module with env added, and returns what
// it printed (-x: every command it ran).
func build(t *testing.T, src string, env ...string) string {
	t.Helper()
	cmd := exec.Command("go", "build", "-x", "-trimpath", "-o", "hello", ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), append([]string{"CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off", "GOCACHEPROG="}, env...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build (%s): %v\n%s", strings.Join(env, " "), err, out)
	}
	return string(out)
}

// compiles reports whether go build -x's output ran the compiler on pkg.
func compiles(out, pkg string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "/compile ") && strings.Contains(line, " -p "+pkg+" ") {
			return true
		}
	}
	return false
}

// run runs the binary the build wrote.
func run(t *testing.T, src string) {
	t.Helper()
	out, err := exec.Command(filepath.Join(src, "hello")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "hello from lib") {
		t.Fatalf("the built binary: %v, %q", err, out)
	}
}
