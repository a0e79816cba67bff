package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coredns-mcs/coredns-mcs/internal/plugincfg"
)

// TestGeneratedFilesAreCurrent fails when plugin.cfg changed without `make gen`.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	files, err := plugincfg.Generate("..")
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string][]byte{"zplugin.go": files.Imports, "zdirectives.go": files.Directives} {
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale against plugin.cfg: run `make gen`", file)
		}
	}
}

// TestPluginOrder checks multicluster runs right before kubernetes, and that
// every upstream plugin is kept.
func TestPluginOrder(t *testing.T) {
	files, err := plugincfg.Generate("..")
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(files.Plugins))
	for i, p := range files.Plugins {
		names[i] = p.Name
	}
	i := slices.Index(names, "multicluster")
	if i < 0 || i+1 >= len(names) || names[i+1] != "kubernetes" {
		t.Fatalf("multicluster must be right above kubernetes in plugin.cfg: %v", names)
	}
	for _, upstream := range []string{"errors", "health", "ready", "k8s_external", "kubernetes", "forward", "cache", "loop", "reload", "loadbalance", "prometheus", "log", "hosts", "file", "rewrite", "template"} {
		if !slices.Contains(names, upstream) {
			t.Errorf("upstream plugin %s missing from plugin.cfg", upstream)
		}
	}
}

func TestParseRejectsBadLines(t *testing.T) {
	for _, cfg := range []string{"noseparator\n", "a:a\na:b\n", ":pkg\n", "name:\n"} {
		if _, err := plugincfg.Parse([]byte(cfg), plugincfg.Module, func(string) bool { return false }); err == nil {
			t.Errorf("Parse(%q) succeeded", cfg)
		}
	}
}

// TestBinaryListsPluginAndVersion builds the binary and asks it.
func TestBinaryListsPluginAndVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "coredns")
	// The flags of `make build`, so that only the link is new: any other
	// flags would compile every upstream plugin again.
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version=v9.9.9-test", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "-plugins").CombinedOutput()
	if err != nil {
		t.Fatalf("-plugins: %v\n%s", err, out)
	}
	// CoreDNS 1.15 lists plugins one bare name a line (older releases wrote dns.NAME).
	lines := strings.Fields(string(out))
	if !slices.Contains(lines, "multicluster") && !slices.Contains(lines, "dns.multicluster") {
		t.Errorf("-plugins does not list multicluster:\n%s", out)
	}
	out, err = exec.Command(bin, "-version").CombinedOutput()
	if err != nil {
		t.Fatalf("-version: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "coredns-mcs-v9.9.9-test (CoreDNS-1.15.0)") {
		t.Errorf("-version does not name this distribution:\n%s", out)
	}
}
