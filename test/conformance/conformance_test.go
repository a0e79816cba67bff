//go:build linux

// Package conformance runs Kubernetes' own DNS conformance specs (the
// [sig-network] DNS specs marked [Conformance] of k8s.io/kubernetes
// test/e2e/network/dns.go, v1.37.1) on a real node, once with kubeadm's
// cluster DNS as kubeadm deploys it (stock CoreDNS at the version kubeadm
// v1.37.1 ships) and once with coredns-mcs swapped in as docs/deploy.md
// says, the multicluster plugin serving clusterset.local and its
// cluster.local fallback with imports present. Every spec must pass both
// times.
//
// CONFORMANCE_UPDATE_DOCS=1 writes the two reports side by side into
// docs/conformance.md.
package conformance

import (
	"compress/gzip"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/coredns-mcs/coredns-mcs/internal/front"
	"github.com/coredns-mcs/coredns-mcs/internal/ociimage"
	"github.com/coredns-mcs/coredns-mcs/test/internal/cresolve"
	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/node"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
	"github.com/coredns-mcs/coredns-mcs/test/internal/testbin"
)

const (
	// The images the DNS specs run, by the names the suite asks for
	// (configs[Agnhost] and configs[GlibcDnsTesting] in
	// test/utils/image/manifest.go of k8s.io/kubernetes v1.37.1), built
	// here: nothing is pulled.
	agnhostImage = "registry.k8s.io/e2e-test-images/agnhost:2.66.1"
	glibcImage   = "registry.k8s.io/e2e-test-images/glibc-dns-testing:2.1.1"
	stockImage   = "coredns-mcs.test/coredns:v" + front.KubeadmCoreDNSVersion
	mcsImageName = "ghcr.io/coredns-mcs/coredns-mcs"
	mcsImageTag  = "conformance"

	// focus picks the DNS conformance specs, as the suite's own
	// conformance runs pick them by label.
	focus = `\[sig-network\] DNS .*\[Conformance\]`
)

// conformanceSpecs is how many specs of dns.go v1.37.1 are
// framework.ConformanceIt: a run that finds fewer ran the wrong suite.
const conformanceSpecs = 8

func TestDNSConformance(t *testing.T) {
	node.Require(t)
	root, err := testbin.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	suite := testbin.Binary(t, "conformance", "dnsconformance")
	agnhost := testbin.Binary(t, "conformance", "agnhost")
	work := t.TempDir()
	kubeVersion := checkSources(t, root, suite)

	began := time.Now()
	ours, err := harness.CoreDNSBinary(work)
	if err != nil {
		t.Fatal(err)
	}
	stock, err := harness.StockCoreDNS("v" + front.KubeadmCoreDNSVersion)
	if err != nil {
		t.Fatal(err)
	}
	versions := fmt.Sprintf("Kubernetes %s (the node, and the module the specs are built from); `coredns -version`: stock %s, coredns-mcs %s",
		kubeVersion, binaryVersion(t, stock), binaryVersion(t, ours))
	t.Log(versions)
	images := []string{
		coreDNSImage(t, ours, mcsImageName+":"+mcsImageTag, filepath.Join(work, "coredns-mcs.tar")),
		coreDNSImage(t, stock, stockImage, filepath.Join(work, "stock.tar")),
		probeImage(t, t.Context(), filepath.Join(work, "agnhost.tar"), agnhostImage, musl, agnhost),
		probeImage(t, t.Context(), filepath.Join(work, "glibc.tar"), glibcImage, glibc, ""),
	}
	t.Logf("images built in %.1fs", time.Since(began).Seconds())

	n := node.ForTest(t, node.Options{InstallCRDs: true, Images: images})
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Minute)
	defer cancel()
	if v, err := n.Client.Discovery().ServerVersion(); err != nil || v.GitVersion != kubeVersion {
		t.Fatalf("the node runs Kubernetes %v (%v), the specs are %s's", v, err, kubeVersion)
	}
	kubectl := func(input string, args ...string) string {
		t.Helper()
		var in *strings.Reader
		if input != "" {
			in = strings.NewReader(input)
		}
		var out string
		var err error
		if in != nil {
			out, err = n.KubectlWithInput(ctx, work, in, args...)
		} else {
			out, err = n.Kubectl(ctx, work, args...)
		}
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	// kubeadm's cluster DNS, stock CoreDNS at kubeadm's version.
	manifest, err := os.ReadFile(filepath.Join(root, "test", "swap", "testdata", "kubeadm-coredns.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	kubectl(regexp.MustCompile(`coredns-mcs\.test/coredns:v[0-9.]+`).ReplaceAllString(string(manifest), stockImage), "create", "-f", "-")
	kubectl("", "-n", "kube-system", "rollout", "status", "deploy/coredns", "--timeout=3m")
	// The imports coredns-mcs serves: present in both runs, read by ours.
	kubectl("", "apply", "-f", filepath.Join(root, "test", "swap", "testdata", "demo.yaml"))

	reports := map[string]*runReport{}
	reports["stock"] = runSuite(t, ctx, n, suite, work, "stock CoreDNS "+front.KubeadmCoreDNSVersion)

	// The swap, as docs/deploy.md says: the kustomization with this
	// image's tag, applied server-side over kubeadm's objects.
	manifests := copyManifests(t, root, work, mcsImageTag)
	kubectl("", "apply", "--server-side", "--force-conflicts", "-k", manifests)
	kubectl("", "-n", "kube-system", "rollout", "status", "deploy/coredns", "--timeout=3m")
	poll.Eventually(t, 2*time.Minute, "only coredns-mcs pods behind kube-dns", func() (bool, string) {
		out, err := n.Kubectl(ctx, work, "-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-dns",
			"-o", `jsonpath={range .items[*]}{.spec.containers[0].image} {.metadata.deletionTimestamp}{"\n"}{end}`)
		if err != nil {
			return false, err.Error()
		}
		for l := range strings.Lines(out) {
			if f := strings.Fields(l); len(f) > 0 && (f[0] != mcsImageName+":"+mcsImageTag || len(f) > 1) {
				return false, out
			}
		}
		return strings.TrimSpace(out) != "", out
	})
	// The plugin answers an import from every cluster DNS pod (the
	// node's network namespace reaches pods, not Service addresses): it is
	// in place, not only its image.
	poll.Eventually(t, time.Minute, "remote.demo.svc.cluster.local from the import, at every kube-dns endpoint", func() (bool, string) {
		eps, err := n.Kubectl(ctx, work, "-n", "kube-system", "get", "endpointslices", "-l", "kubernetes.io/service-name=kube-dns",
			"-o", `jsonpath={range .items[*].endpoints[*]}{.addresses[0]}{"\n"}{end}`)
		if err != nil || strings.TrimSpace(eps) == "" {
			return false, fmt.Sprintf("kube-dns endpoints %q: %v", eps, err)
		}
		for ip := range strings.FieldsSeq(eps) {
			out, err := n.NetNS.Run(ctx, "dig", "+short", "@"+ip, "remote.demo.svc.cluster.local", "A")
			if err != nil || strings.TrimSpace(string(out)) != "10.100.0.50" {
				return false, fmt.Sprintf("@%s: %s %v", ip, out, err)
			}
		}
		return true, ""
	})
	reports["coredns-mcs"] = runSuite(t, ctx, n, suite, work, "coredns-mcs")

	for _, name := range []string{"stock", "coredns-mcs"} {
		r := reports[name]
		if !r.succeeded {
			t.Errorf("%s: the suite did not succeed (exit: %v)", name, r.exit)
		}
		for _, f := range r.suiteFailures {
			t.Errorf("%s: %s", name, f)
		}
		if len(r.specs) != conformanceSpecs {
			t.Errorf("%s: %d DNS conformance specs ran, want %d: %v", name, len(r.specs), conformanceSpecs, r.names())
		}
		for _, s := range r.specs {
			if s.State != "passed" {
				t.Errorf("%s: %q %s: %s", name, s.name(), s.State, s.Failure.Message)
			}
		}
	}
	if a, b := reports["stock"].names(), reports["coredns-mcs"].names(); !slices.Equal(a, b) {
		t.Errorf("the runs ran different specs:\nstock %v\ncoredns-mcs %v", a, b)
	}
	table := reportTable(reports["stock"], reports["coredns-mcs"])
	t.Log("\n" + versions + "\n\n" + table)
	if os.Getenv("CONFORMANCE_UPDATE_DOCS") != "" && !t.Failed() {
		updateDocs(t, filepath.Join(root, "docs", "conformance.md"), versions, table)
	}
}

// runReport is what one run of the suite reported: the specs focus picked,
// and the suite's own counts and outcome.
type runReport struct {
	label    string
	duration time.Duration
	exit     error
	specs    []specReport
	// total is how many specs the binary holds, willRun how many of them
	// the focus picked (Ginkgo's PreRunStats).
	total, willRun int
	succeeded      bool
	// suiteFailures are the failures of the suite's set-up and tear-down
	// nodes (SynchronizedBeforeSuite...), which no spec reports.
	suiteFailures []string
}

func (r *runReport) names() []string {
	var names []string
	for _, s := range r.specs {
		names = append(names, s.name())
	}
	slices.Sort(names)
	return names
}

// specReport is the part of a Ginkgo v2 spec report (its --json-report)
// read here.
type specReport struct {
	ContainerHierarchyTexts []string
	LeafNodeType            string
	LeafNodeText            string
	State                   string
	RunTime                 time.Duration
	Failure                 struct {
		Message string
	}
}

func (s specReport) name() string {
	return strings.Join(append(slices.Clone(s.ContainerHierarchyTexts), s.LeafNodeText), " ")
}

// runSuite runs the DNS conformance specs in the node's network namespace
// against its API server, and reads their report.
func runSuite(t *testing.T, ctx context.Context, n *node.Node, suite, work, label string) *runReport {
	t.Helper()
	dir := filepath.Join(work, "run-"+strings.ReplaceAll(strings.Fields(label)[0], "/", "-"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	reportFile := filepath.Join(dir, "report.json")
	cmd := exec.CommandContext(ctx, suite,
		"--kubeconfig="+n.ControlPlane.Kubeconfig,
		"--provider=skeleton",
		"--kubectl-path="+filepath.Join(n.KubeDir, "kubectl"),
		"--ginkgo.focus="+focus,
		"--ginkgo.json-report="+reportFile,
		"--ginkgo.no-color",
		"--ginkgo.timeout=30m",
		"--report-dir="+dir,
	)
	cmd.Dir = dir
	out := &harness.Output{}
	cmd.Stdout, cmd.Stderr = out, out
	began := time.Now()
	if err := n.NetNS.Do(cmd.Start); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	r := &runReport{label: label, duration: time.Since(began), exit: err}
	t.Logf("%s: the suite ran %.0fs (%v)", label, r.duration.Seconds(), err)
	data, rerr := os.ReadFile(reportFile)
	if rerr != nil {
		t.Fatalf("%s: no report (%v); the suite said:\n%s", label, rerr, tail(out.String(), 60))
	}
	var reports []struct {
		SuiteSucceeded bool
		PreRunStats    struct{ TotalSpecs, SpecsThatWillRun int }
		SpecReports    []specReport
	}
	if err := json.Unmarshal(data, &reports); err != nil {
		t.Fatalf("%s: %s: %v", label, reportFile, err)
	}
	if len(reports) != 1 {
		t.Fatalf("%s: %s holds %d suite reports, want 1", label, reportFile, len(reports))
	}
	rep := reports[0]
	r.total, r.willRun, r.succeeded = rep.PreRunStats.TotalSpecs, rep.PreRunStats.SpecsThatWillRun, rep.SuiteSucceeded
	picked := regexp.MustCompile(focus)
	for _, s := range rep.SpecReports {
		switch {
		case s.LeafNodeType == "It" && picked.MatchString(s.name()):
			r.specs = append(r.specs, s)
		case s.LeafNodeType != "It" && s.State != "passed" && s.State != "skipped":
			r.suiteFailures = append(r.suiteFailures, fmt.Sprintf("%s %s: %s", s.LeafNodeType, s.State, s.Failure.Message))
		}
	}
	slices.SortFunc(r.specs, func(a, b specReport) int { return strings.Compare(a.name(), b.name()) })
	states := map[string]int{}
	for _, s := range r.specs {
		states[s.State]++
	}
	t.Logf("%s: %d specs picked (the binary holds %d, the focus picked %d), by state %v", label, len(r.specs), r.total, r.willRun, states)
	if err != nil {
		t.Logf("%s: the suite's output ends:\n%s", label, tail(out.String(), 60))
	}
	return r
}

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	return strings.Join(l[max(0, len(l)-lines):], "\n")
}

// reportTable is the Markdown table of the two runs, spec by spec, then
// the specs by state, as each run's report counts them.
func reportTable(stock, ours *runReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| spec | %s | %s |\n|---|---|---|\n", stock.label, ours.label)
	theirs := map[string]specReport{}
	for _, s := range ours.specs {
		theirs[s.name()] = s
	}
	for _, s := range stock.specs {
		o, ok := theirs[s.name()]
		if !ok {
			o.State = "not run"
		}
		fmt.Fprintf(&b, "| %s | %s (%.0f s) | %s (%.0f s) |\n", s.name(), s.State, s.RunTime.Seconds(), o.State, o.RunTime.Seconds())
	}
	count := func(r *runReport, state string) int {
		n := 0
		for _, s := range r.specs {
			if s.State == state {
				n++
			}
		}
		return n
	}
	// Ginkgo's states: passed, skipped, pending, failed, aborted,
	// panicked, interrupted, timedout.
	states := []string{"passed", "failed", "skipped"}
	for _, r := range []*runReport{stock, ours} {
		for _, s := range r.specs {
			if !slices.Contains(states, s.State) {
				states = append(states, s.State)
			}
		}
	}
	for _, state := range states {
		fmt.Fprintf(&b, "| **%s** | **%d of %d** | **%d of %d** |\n", state, count(stock, state), len(stock.specs), count(ours, state), len(ours.specs))
	}
	run := func(r *runReport) string {
		return fmt.Sprintf("%.0f s; the focus picked %d of the binary's %d specs", r.duration.Seconds(), r.willRun, r.total)
	}
	fmt.Fprintf(&b, "| the suite's run | %s | %s |\n", run(stock), run(ours))
	return b.String()
}

// updateDocs puts table between the markers of docs/conformance.md, with
// the date and the tree's commit.
func updateDocs(t *testing.T, path, versions, table string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- conformance run: begin -->\n", "<!-- conformance run: end -->\n"
	i, j := strings.Index(string(data), begin), strings.Index(string(data), end)
	if i < 0 || j < i {
		t.Fatalf("%s has no markers %q and %q", path, begin, end)
	}
	commit, _ := exec.Command("git", "-C", filepath.Dir(path), "rev-parse", "--short", "HEAD").Output()
	stamp := fmt.Sprintf("One run, %s, at commit %s (its tree, with the run's own changes if any), on a %d-core machine. %s.\n\n",
		time.Now().UTC().Format("15:04 UTC, 2006-01-02"), strings.TrimSpace(string(commit)), runtime.NumCPU(), versions)
	updated := string(data[:i+len(begin)]) + stamp + table + string(data[j:])
	if err := os.WriteFile(path, []byte(updated), 0o644); err != nil {
		t.Fatal(err)
	}
}

// coreDNSImage writes the image of a coredns binary, as make image builds
// it.
func coreDNSImage(t *testing.T, binary, ref, archive string) string {
	t.Helper()
	img, err := ociimage.CoreDNS{Binary: binary, Platform: platform()}.Image()
	if err != nil {
		t.Fatal(err)
	}
	if err := ociimage.WriteArchive(archive, ref, img); err != nil {
		t.Fatal(err)
	}
	return archive
}

func platform() v1.Platform { return v1.Platform{OS: "linux", Architecture: runtime.GOARCH} }

// probeApplets are the busybox commands the specs' probe scripts and
// pods run (createProbeCommand in test/e2e/network/dns_common.go: a
// shell loop of seq, test, echo and sleep around dig and getent), and awk
// for muslGetent.
var probeApplets = []string{"sh", "seq", "test", "[", "echo", "sleep", "cat", "grep", "ls", "true", "false", "mkdir", "env", "awk"}

// muslGetent is the agnhost image's getent: `getent hosts NAME...` through
// musl's getaddrinfo (test/internal/cresolve's resolve.c, linked
// statically with musl at node.MuslResolver), one "ADDRESS NAME" line an
// address, exit status 2 when a name has none; any other database, or no
// name, exits 1. The probes read only whether it prints (createProbeCommand:
// test -n "$(getent hosts NAME)").
const muslGetent = `#!/bin/sh
[ "$1" = hosts ] && [ $# -ge 2 ] || exit 1
shift
` + node.MuslResolver + ` "$@" | awk '$3 == "ok" { n = split($4, a, ","); for (i = 1; i <= n; i++) print a[i], $2; next } { missing = 1 } END { exit missing ? 2 : 0 }'
`

// The C library of a probe image's getent: the specs probe with both, in
// two containers of one pod ("musl" in agnhost, "glibc" in
// glibc-dns-testing: dnsQuerier in test/e2e/network/dns.go).
const (
	musl  = "musl"
	glibc = "glibc"
)

// probeImage writes an image the DNS specs' probes run in: Debian's
// static busybox for the shell, this machine's dig with the libraries ldd
// lists for it, and getent through a C library's resolver, which is what
// the two probe containers differ in here (dig is this machine's, glibc's,
// in both, where upstream's agnhost has Alpine's): agnhost is an Alpine image
// (test/images/agnhost/BASEIMAGE of k8s.io/kubernetes v1.37.1), so musl,
// and glibc-dns-testing a Debian one with dnsutils
// (test/images/glibc-dns-testing/Dockerfile), so glibc. libc musl gives
// getent as muslGetent; glibc gives this machine's glibc getent. When
// agnhost is set, the image also has the agnhost binary of the suite's own
// module as /agnhost, its entrypoint, as test/images/agnhost/Dockerfile
// has it.
func probeImage(t *testing.T, ctx context.Context, archive, ref, libc, agnhost string) string {
	t.Helper()
	var programs []string
	for _, name := range []string{"busybox", "dig", "getent"} {
		p, err := exec.LookPath(name)
		if err != nil {
			harness.Unavailable(t, "%s is needed for the probe images: %v", name, err)
		}
		programs = append(programs, p)
	}
	busybox, dig, getent := programs[0], programs[1], programs[2]
	var files []ociimage.File
	var err error
	switch libc {
	case glibc:
		files, err = ociimage.Programs(dig, getent)
	case musl:
		files, err = ociimage.Programs(dig)
		if err == nil {
			var resolver string
			if resolver, err = muslResolver(ctx); err == nil {
				files = append(files,
					ociimage.Copy(node.MuslResolver, 0o755, resolver),
					ociimage.Regular("/usr/bin/getent", 0o755, []byte(muslGetent)))
			}
		}
	default:
		err = fmt.Errorf("libc %q", libc)
	}
	if err != nil {
		t.Fatal(err)
	}
	files = append(files,
		ociimage.Copy("/bin/busybox", 0o755, busybox),
		ociimage.Regular("/etc/nsswitch.conf", 0o644, []byte("hosts: files dns\n")),
		ociimage.Regular("/etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")),
		ociimage.Regular("/etc/group", 0o644, []byte("root:x:0:\nnogroup:x:65534:\n")),
		ociimage.Dir("/tmp", 0o777|os.ModeSticky, 0, 0),
	)
	for _, applet := range probeApplets {
		files = append(files, ociimage.Symlink("/bin/"+applet, "busybox"))
	}
	config := ociimage.Config{Platform: platform(), Cmd: []string{"sh"}, Env: []string{"PATH=/usr/bin:/bin:/usr/sbin:/sbin"}}
	if agnhost != "" {
		files = append(files, ociimage.Copy("/agnhost", 0o755, agnhost))
		config.Entrypoint = []string{"/agnhost"}
		config.Cmd = []string{"pause"}
	}
	layer, err := ociimage.Layer(files, ociimage.LayerOptions{Level: gzip.BestSpeed})
	if err != nil {
		t.Fatal(err)
	}
	img, err := ociimage.Image(config, layer)
	if err != nil {
		t.Fatal(err)
	}
	if err := ociimage.WriteArchive(archive, ref, img); err != nil {
		t.Fatal(err)
	}
	return archive
}

// muslResolver returns resolve.c linked statically with musl, built
// (cresolve.Build) into the cache the node's dnsutils image uses.
func muslResolver(ctx context.Context) (string, error) {
	if _, err := exec.LookPath("musl-gcc"); err != nil {
		return "", fmt.Errorf("musl-gcc (Debian: musl-tools) builds the musl probe's getent: %w", err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	m, _, err := cresolve.Build(ctx, filepath.Join(cache, "coredns-mcs", "node"))
	return m, err
}

// copyManifests copies manifests/ into work and sets the image tag in the
// copy's kustomization.yaml, as docs/deploy.md's step 2 does by hand.
func copyManifests(t *testing.T, root, work, tag string) string {
	t.Helper()
	dst := filepath.Join(work, "manifests")
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(root, "manifests"))); err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^(\s*-\s*name:\s*` + regexp.QuoteMeta(mcsImageName) + `\s*\n\s*newTag:\s*)\S+`)
	k := filepath.Join(dst, "kustomization.yaml")
	data, err := os.ReadFile(k)
	if err != nil {
		t.Fatal(err)
	}
	if !re.Match(data) {
		t.Fatalf("%s has no images entry for %s with a newTag", k, mcsImageName)
	}
	if err := os.WriteFile(k, []byte(re.ReplaceAllString(string(data), "${1}"+tag)), 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// checkSources checks what this test assumes of k8s.io/kubernetes against
// the source the specs are built from (the conformance set's version of the
// module, in the module cache), and returns that version: the suite binary
// was built from it; dns.go holds conformanceSpecs ConformanceIt specs;
// kubeadm deploys CoreDNS at front.KubeadmCoreDNSVersion
// (cmd/kubeadm/app/constants/constants.go); and the specs' images are
// agnhostImage and glibcImage (test/utils/image/manifest.go).
func checkSources(t *testing.T, root, suite string) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", "k8s.io/kubernetes")
	cmd.Dir = filepath.Join(root, "test", "testbin", "conformance")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	var mod struct{ Dir, Version, Error string }
	if err == nil {
		err = json.Unmarshal(out, &mod)
	}
	if err != nil || mod.Dir == "" {
		t.Fatalf("go mod download k8s.io/kubernetes in %s: %v %s", cmd.Dir, err, mod.Error)
	}
	info, err := buildinfo.ReadFile(suite)
	if err != nil {
		t.Fatal(err)
	}
	built := ""
	for _, d := range info.Deps {
		if d.Path == "k8s.io/kubernetes" {
			built = d.Version
		}
	}
	if built != mod.Version {
		t.Fatalf("%s is built from k8s.io/kubernetes %q, the set's go.mod requires %s", suite, built, mod.Version)
	}
	read := func(rel string) string {
		data, err := os.ReadFile(filepath.Join(mod.Dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	find := func(rel, expr string) string {
		m := regexp.MustCompile(expr).FindStringSubmatch(read(rel))
		if m == nil {
			t.Fatalf("%s of k8s.io/kubernetes %s: no match for %s", rel, mod.Version, expr)
		}
		return m[1]
	}
	if n := strings.Count(read("test/e2e/network/dns.go"), "framework.ConformanceIt("); n != conformanceSpecs {
		t.Errorf("test/e2e/network/dns.go of k8s.io/kubernetes %s has %d ConformanceIt specs, this test expects %d", mod.Version, n, conformanceSpecs)
	}
	if v := find("cmd/kubeadm/app/constants/constants.go", `\bCoreDNSVersion\s*=\s*"([^"]+)"`); v != "v"+front.KubeadmCoreDNSVersion {
		t.Errorf("kubeadm %s deploys CoreDNS %s, this test runs %s as the stock one", mod.Version, v, front.KubeadmCoreDNSVersion)
	}
	const manifest = "test/utils/image/manifest.go"
	registry := find(manifest, `PromoterE2eRegistry:\s*"([^"]+)"`)
	for id, want := range map[string]string{"Agnhost": agnhostImage, "GlibcDnsTesting": glibcImage} {
		m := regexp.MustCompile(`configs\[` + id + `\]\s*=\s*Config\{list\.PromoterE2eRegistry,\s*"([^"]+)",\s*"([^"]+)"\}`).FindStringSubmatch(read(manifest))
		if m == nil {
			t.Fatalf("%s of k8s.io/kubernetes %s: no configs[%s] in the e2e registry", manifest, mod.Version, id)
		}
		if got := registry + "/" + m[1] + ":" + m[2]; got != want {
			t.Errorf("the specs run %s as %s, this test builds %s", id, got, want)
		}
	}
	return mod.Version
}

// binaryVersion is the first line of a coredns binary's -version.
func binaryVersion(t *testing.T, binary string) string {
	t.Helper()
	out, err := exec.Command(binary, "-version").Output()
	if err != nil {
		t.Fatalf("%s -version: %v", binary, err)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}
