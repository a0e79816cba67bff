//go:build linux

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	meta "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcsfront "github.com/coredns-mcs/coredns-mcs/internal/front"
	"github.com/coredns-mcs/coredns-mcs/test/internal/cresolve"
	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// A shippedFront is a platform's cluster DNS as it ships: stock CoreDNS at
// the version the platform deploys, with the platform's default Corefile.
type shippedFront struct {
	version  string // a tag of github.com/coredns/coredns
	platform mcsfront.Platform
	// readTimeout is the front's read timeout for coredns-mcs where the
	// version has it; zero: kubectl mcs front's default.
	readTimeout time.Duration
}

// shippedFronts are the CoreDNS versions the platforms of internal/front's
// table ship (front.ShippedCoreDNS), each with k3s's Corefile where k3s
// ships it, else kubeadm's; and v1.15.0, this module's. FRONT_VERSIONS
// ("1.14.4 1.15.0", make test's) keeps those of them alone.
func shippedFronts() []shippedFront {
	only := strings.Fields(os.Getenv("FRONT_VERSIONS"))
	var fronts []shippedFront
	for _, v := range append(mcsfront.ShippedCoreDNS(), "1.15.0") {
		if len(only) > 0 && !slices.Contains(only, v) {
			continue
		}
		p := mcsfront.Kubeadm
		if mcsfront.ShipsCoreDNS(mcsfront.K3s, v) {
			p = mcsfront.K3s
		}
		fronts = append(fronts, shippedFront{version: "v" + v, platform: p})
	}
	return fronts
}

// frontClient is one C library with one resolv.conf options line.
type frontClient struct {
	name    string // musl or glibc
	options []string
}

var frontClients = []frontClient{
	{"musl", []string{"ndots:5"}},
	{"glibc", []string{"ndots:5"}},
	{"musl", []string{"ndots:5", "timeout:1"}},
	{"glibc", []string{"ndots:5", "timeout:1"}},
}

func (c frontClient) String() string {
	if len(c.options) == 1 {
		return c.name
	}
	return c.name + " " + strings.Join(c.options[1:], " ")
}

// label is the client's name as a DNS label (glibc refuses a name with a
// colon before it asks).
func (c frontClient) label() string {
	return strings.NewReplacer(" ", "-", ":", "").Replace(c.String())
}

// TestFrontAtShippedVersions runs, for every CoreDNS version a platform
// ships, stock CoreDNS of that version with the platform's Corefile and
// what kubectl mcs front writes for that version, in front of coredns-mcs
// standalone, and looks names up through it with getaddrinfo of musl and
// glibc, with a pod's resolv.conf (ndots:5, and ndots:5 timeout:1), while
// the standalone server is up (4 s), killed (4 s), started again (4 s),
// hung (SIGSTOP, 6 s) and resumed (4 s). External and local names never
// fail in any phase with the C libraries' default time-outs; where the
// version has forward's read_timeout, not with timeout:1 either, and a
// hang costs an external lookup less than the forward's fixed 2 s read
// timeout; where it has not, one such timeout, not two. The table of what
// each client saw per phase is logged: docs/platforms.md quotes it. The
// 1 s clients and the bounds of time are judged with
// FRONT_VERSIONS_STRICT=1 only (see strict).
func TestFrontAtShippedVersions(t *testing.T) {
	cresolve.Require(t)
	musl, glibc, err := cresolve.Build(context.Background(), filepath.Join(workDir, "cresolve"))
	if err != nil {
		t.Fatal(err)
	}
	binaries := map[string]string{"musl": musl, "glibc": glibc}
	// strict judges what depends on the machine's pace too: the 1 s
	// clients, an import answer slower than the read timeout while the
	// server is up, and how long a lookup may take. make test leaves it
	// off: on a machine whose other work starves the servers for seconds
	// (make test's own builds), those measure the machine; the figures of
	// docs/platforms.md come from runs with it on. Off, every lookup of
	// the clients with the C libraries' default time-outs must still get
	// its right answer (an import: its address, or NXDOMAIN while the
	// standalone server is away or slow), and the table is logged.
	strict := os.Getenv("FRONT_VERSIONS_STRICT") != ""
	// After every version's run (parallel subtests end before the
	// parent's cleanup), the rows of docs/platforms.md's table.
	t.Cleanup(func() {
		slices.SortFunc(summaries.rows, func(a, b summaryRow) int { return slices.Compare(a.version[:], b.version[:]) })
		var b strings.Builder
		for _, r := range summaries.rows {
			b.WriteString(r.text + "\n")
		}
		t.Log("rows of docs/platforms.md (At each CoreDNS version a platform ships):\n" + b.String())
	})
	kubernetesIP := ""
	if svc, err := kube.CoreV1().Services("default").Get(context.Background(), "kubernetes", meta.GetOptions{}); err == nil {
		kubernetesIP = svc.Spec.ClusterIP
	} else {
		t.Fatal(err)
	}
	// Every version's binary first (make test builds them in the
	// background; a build under way is waited for), so that no build runs
	// on the CPU while the clients time their lookups.
	if only := strings.Fields(os.Getenv("FRONT_VERSIONS")); len(only) > len(shippedFronts()) {
		t.Fatalf("FRONT_VERSIONS=%q names a version no platform ships (%v, and 1.15.0)", os.Getenv("FRONT_VERSIONS"), mcsfront.ShippedCoreDNS())
	}
	began := time.Now()
	bins := map[string]string{}
	for _, sf := range shippedFronts() {
		bin, err := stockAt(sf.version)
		if err != nil {
			t.Fatal(err)
		}
		bins[sf.version] = bin
	}
	t.Logf("stock CoreDNS at %d versions ready in %.1fs", len(bins), time.Since(began).Seconds())
	for i, sf := range shippedFronts() {
		t.Run(sf.version+"/"+string(sf.platform), func(t *testing.T) {
			// Most of a run waits for the phases' time: the versions run
			// side by side, as many as -parallel lets.
			t.Parallel()
			bin := bins[sf.version]
			ns := namespace(t, "shipped")
			web := createService(t, ns, "web")
			importIP := fmt.Sprintf("10.42.8.%d", i+1)
			createImport(t, newImport(ns, "remote", importIP))
			upstream := startRecordingResolver(t)
			standaloneCorefile := shippedStandaloneCorefile(t)
			if sf.platform == mcsfront.K3s {
				// As docs/platforms.md tells k3s users: no ttl, as k3s's own.
				standaloneCorefile = strings.Replace(standaloneCorefile, "        ttl 30\n", "", 1)
			}
			standalone := startStandalone(t, standaloneCorefile)
			front := startShippedFront(t, sf, bin, standalone.addr, upstream.addr)

			importName := "remote." + ns + ".svc.cluster.local."
			want := map[string]string{
				"web." + ns:          web.Spec.ClusterIP,
				"kubernetes.default": kubernetesIP,
				importName:           importIP,
			}
			var clients []*cresolve.Client
			for _, c := range frontClients {
				clients = append(clients, cresolve.Start(t, c.String(), binaries[c.name], cresolve.Options{
					Nameserver: front.host,
					Search:     []string{ns + ".svc.cluster.local", "svc.cluster.local", "cluster.local"},
					Options:    c.options,
				}, "r$i-"+c.label()+".example.org", "web."+ns, "kubernetes.default", importName))
			}
			rounds := func(n int) func() (bool, string) {
				return func() (bool, string) {
					for _, c := range clients {
						if err := c.Exited(); err != nil {
							t.Fatal(err)
						}
						if lines, _ := c.Lines(); len(lines) < 4*n {
							return false, fmt.Sprintf("%s: %d lookups", c.Name, len(lines))
						}
					}
					return true, ""
				}
			}
			poll.Eventually(t, time.Minute, "each client's first round", rounds(1))

			var phases []frontPhase
			begin := func(name string) {
				now := cresolve.Now()
				if len(phases) > 0 {
					phases[len(phases)-1].end = now
				}
				phases = append(phases, frontPhase{name: name, start: now})
			}
			// hold lets a phase last d, and at least three lookups of every
			// client begin in it.
			hold := func(d time.Duration) {
				t.Helper()
				start := phases[len(phases)-1].start
				poll.Eventually(t, d+2*time.Minute, phases[len(phases)-1].name+": lookups of every client for "+d.String(), func() (bool, string) {
					if now := cresolve.Now(); now < start+d.Seconds() {
						return false, fmt.Sprintf("%.1fs of %s", now-start, d)
					}
					for _, c := range clients {
						lines, _ := c.Lines()
						n := 0
						for _, l := range lines {
							if l.At >= start {
								n++
							}
						}
						if n < 3 {
							return false, fmt.Sprintf("%s: %d lookups in the phase", c.Name, n)
						}
					}
					return true, ""
				})
			}
			begin("up")
			hold(4 * time.Second)
			begin("killed")
			standalone.kill(t)
			hold(4 * time.Second)
			begin("started again")
			standalone.start(t)
			hold(4 * time.Second)
			begin("hung (SIGSTOP)")
			if err := standalone.process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = standalone.process.Signal(syscall.SIGCONT) })
			hold(6 * time.Second)
			begin("resumed")
			if err := standalone.process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			hold(4 * time.Second)
			phases[len(phases)-1].end = cresolve.Now()

			hasReadTimeout := mcsfront.Options{CoreDNSVersion: sf.version}.UsesReadTimeout()
			// A phase is starved when the local names, which never reach
			// the standalone server (front.ServiceNamePattern), took a
			// median of starvedMedianMS or more over every client, or one
			// of them starvedMaxMS: the machine, not the front, set the
			// pace (they take a few ms otherwise). There a 1 s client's
			// time-out, and import answers slower than the read timeout,
			// judge the machine: they are logged, not failed.
			starved := map[string]float64{}
			for _, p := range phases {
				var ms []float64
				for _, c := range clients {
					lines, _ := c.Lines()
					ms = append(ms, p.localMS(lines, want, importName)...)
				}
				slices.Sort(ms)
				if len(ms) > 0 && (ms[len(ms)/2] >= starvedMedianMS || ms[len(ms)-1] >= starvedMaxMS) {
					starved[p.name] = ms[len(ms)/2]
				}
			}
			var sum versionSummary
			var table strings.Builder
			fmt.Fprintf(&table, "CoreDNS %s, %s's Corefile (read_timeout: %v): failed lookups, and external lookups' p50 / p99 / max ms\n", sf.version, sf.platform, hasReadTimeout)
			for ci, c := range clients {
				lines, _ := c.Lines()
				timeout1 := slices.Contains(frontClients[ci].options, "timeout:1")
				for _, p := range phases {
					s := p.stats(lines, want, importName)
					slow := ""
					if s.slowUntil > 0 {
						slow = fmt.Sprintf(", the last lookup of 1 s or more began %.1f s in", s.slowUntil-p.start)
					}
					fmt.Fprintf(&table, "  %-18s %-15s failed %d of %d, import %d answered %d NXDOMAIN, external %.0f / %.0f / %.0f%s\n",
						c.Name, p.name, len(s.failed), s.lookups, s.importAnswered, s.importNXDOMAIN, s.p50, s.p99, s.max, slow)
					sum.add(c.Name, timeout1, p, s)
					if len(s.failed) == 0 {
						continue
					}
					// Without read_timeout, a hang costs each forwarded name
					// forward's fixed 2 s read timeout until its health
					// checks mark the server down, and so does a query the
					// server had when it was killed, or a server starved
					// for 2 s on a busy machine as it starts: with
					// timeout:1, a C library gives up first.
					// docs/platforms.md says so.
					if !hasReadTimeout && timeout1 && p.name != "up" {
						continue
					}
					if !strict && (timeout1 || onlyImportMisses(s.failed, importName)) {
						t.Logf("%s, %s: %d of %d lookups failed (judged with FRONT_VERSIONS_STRICT=1): %s", c.Name, p.name, len(s.failed), s.lookups, strings.Join(s.failed[:min(len(s.failed), 5)], "; "))
						continue
					}
					if m, ok := starved[p.name]; ok && (timeout1 || onlyImportMisses(s.failed, importName)) {
						t.Logf("%s, %s: %d of %d lookups failed, on a starved machine (local names' median %.0f ms, or one of %d ms or more): %s", c.Name, p.name, len(s.failed), s.lookups, m, starvedMaxMS, strings.Join(s.failed[:min(len(s.failed), 5)], "; "))
						continue
					}
					t.Errorf("%s, %s: %d of %d lookups failed: %s", c.Name, p.name, len(s.failed), s.lookups, strings.Join(s.failed[:min(len(s.failed), 5)], "; "))
				}
				for _, p := range phases {
					s := p.stats(lines, want, importName)
					if !strict {
						break
					}
					if hasReadTimeout && s.max >= 2000 {
						t.Errorf("%s, %s: an external lookup took %.0f ms, as long as forward's fixed read timeout: read_timeout did not act", c.Name, p.name, s.max)
					}
					// One expansion of an external name reaches the
					// standalone server (front.ServiceNamePattern): a
					// hang costs it one read timeout, not two, to a client
					// that waits longer than that. One that gives up after
					// 1 s asks again, and glibc then asks A and AAAA one
					// after the other: two read timeouts (4.1 s seen).
					if !hasReadTimeout && !timeout1 && s.max >= 3500 {
						t.Errorf("%s, %s: an external lookup took %.0f ms, two or more of forward's 2 s read timeouts", c.Name, p.name, s.max)
					}
				}
			}
			t.Log("\n" + table.String())
			summaries.Lock()
			summaries.rows = append(summaries.rows, sum.row(sf))
			summaries.Unlock()
			for _, name := range upstream.asked() {
				if strings.HasSuffix(name, "cluster.local.") {
					t.Errorf("the upstream resolver was asked %s", name)
				}
			}
		})
	}
}

// stockAt returns stock CoreDNS at version: the build of this module's
// graph for the version it requires (go.mod), else that release's own.
func stockAt(version string) (string, error) {
	if version == "v1.15.0" {
		return stockCoreDNS()
	}
	return harness.StockCoreDNS(version)
}

// A frontOnLoopback is a cluster DNS on port 53 of a loopback address of
// its own, where a C library's resolv.conf can name it.
type frontOnLoopback struct {
	*server
	host string
}

// loopback53 returns a loopback address whose port 53 is free over UDP and
// TCP.
func loopback53(t *testing.T) string {
	t.Helper()
	for i := range 200 {
		host := fmt.Sprintf("127.53.%d.%d", os.Getpid()%200+1, i+1)
		u, err := net.ListenPacket("udp", host+":53")
		if err != nil {
			continue
		}
		l, err := net.Listen("tcp", host+":53")
		u.Close()
		if err != nil {
			continue
		}
		l.Close()
		return host
	}
	t.Fatal("no loopback address with port 53 free")
	return ""
}

// startShippedFront runs the platform's Corefile with what kubectl mcs
// front writes for the version, forwarding to standalone, its upstream
// resolver upstream, on port 53 of a loopback address of its own.
func startShippedFront(t *testing.T, sf shippedFront, bin, standalone, upstream string) *frontOnLoopback {
	t.Helper()
	opts := mcsfront.Options{
		Standalone:        standalone,
		CoreDNSVersion:    sf.version,
		KubernetesOptions: mcsfront.KubernetesOptions(sf.platform),
		ReadTimeout:       sf.readTimeout,
	}
	servers, err := opts.Servers()
	if err != nil {
		t.Fatal(err)
	}
	blocks := mcsfront.Corefile(servers)
	host := loopback53(t)
	readyPort := harness.FreePort(t)
	// Every block on port 53 binds the front's own address.
	bind := func(corefile string) string {
		return regexp.MustCompile(`(?m)^(\S+):53 \{$`).ReplaceAllString(corefile, "${0}\n    bind "+host)
	}
	forwards := map[string]string{"/etc/resolv.conf": upstream}
	var corefile string
	switch sf.platform {
	case mcsfront.K3s:
		// k3s's Corefile imports coredns-custom's *.server keys, mounted
		// at /etc/coredns/custom (manifests/coredns.yaml of k3s).
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "custom"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "NodeHosts"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		custom := localize(t, bind(blocks), 53, harness.FreePort(t), forwards)
		if err := os.WriteFile(filepath.Join(dir, "custom", mcsfront.CustomKey), []byte(custom), 0o644); err != nil {
			t.Fatal(err)
		}
		corefile = strings.NewReplacer("/etc/coredns/", dir+"/").Replace(mcsfront.K3sCorefile)
	case mcsfront.Kubeadm:
		corefile = mcsfront.Merge(mcsfront.KubeadmCorefile, blocks)
	default:
		t.Fatalf("no Corefile for %s", sf.platform)
	}
	corefile = localize(t, bind(corefile), 53, readyPort, forwards)
	path := filepath.Join(t.TempDir(), "Corefile")
	if err := os.WriteFile(path, []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &server{addr: host + ":53", ready: fmt.Sprintf("http://127.0.0.1:%d/ready", readyPort), corefile: corefile}
	s.log = harness.StartCoreDNS(t, "CoreDNS "+sf.version+" with "+string(sf.platform)+"'s Corefile and the front's blocks", bin, path, s.addr, s.isReady)
	return &frontOnLoopback{server: s, host: host}
}

// summaries gathers a row per version, from the parallel subtests.
var summaries struct {
	sync.Mutex
	rows []summaryRow
}

type summaryRow struct {
	version [3]int
	text    string
}

// versionSummary adds up what the clients saw at one version.
type versionSummary struct {
	failedDefault, failedT1 []string // "client: n of m lookups while PHASE"
	hungMax, killedMax      float64  // external lookups, ms
	upP50                   float64  // the largest p50 of "up"
	slowFor                 float64  // the last lookup of 1 s or more began this long into the hang
}

func (v *versionSummary) add(client string, timeout1 bool, p frontPhase, s frontPhaseStats) {
	if len(s.failed) > 0 {
		f := fmt.Sprintf("%s: %d of %d lookups while %s", client, len(s.failed), s.lookups, p.name)
		if timeout1 {
			v.failedT1 = append(v.failedT1, f)
		} else {
			v.failedDefault = append(v.failedDefault, f)
		}
	}
	switch p.name {
	case "up":
		v.upP50 = max(v.upP50, s.p50)
	case "killed":
		v.killedMax = max(v.killedMax, s.max)
	case "hung (SIGSTOP)":
		v.hungMax = max(v.hungMax, s.max)
		if s.slowUntil > 0 {
			v.slowFor = max(v.slowFor, s.slowUntil-p.start)
		}
	}
}

// row is the version's row of docs/platforms.md's table.
func (v *versionSummary) row(sf shippedFront) summaryRow {
	version := strings.TrimPrefix(sf.version, "v")
	var shippers []string
	for _, r := range mcsfront.Table {
		if mcsfront.ShipsCoreDNS(r.Form, version) && !slices.Contains(shippers, r.Name) {
			shippers = append(shippers, r.Name)
		}
	}
	if len(shippers) == 0 {
		shippers = []string{"(this project's build)"}
	}
	failed := func(f []string) string {
		if len(f) == 0 {
			return "0"
		}
		return strings.Join(f, "; ")
	}
	hung := fmt.Sprintf("%.0f ms", v.hungMax)
	if v.slowFor > 0 {
		hung = fmt.Sprintf("%.1f s, for lookups that began in the first %.1f s of the hang", v.hungMax/1000, v.slowFor)
	}
	pv, _ := parseShippedVersion(version)
	return summaryRow{version: pv, text: fmt.Sprintf("| %s | %s | %s's | %s | %s | %s (up: p50 %.0f ms) | %.0f ms |",
		version, strings.Join(shippers, ", "), sf.platform, failed(v.failedDefault), failed(v.failedT1), hung, v.upP50, v.killedMax)}
}

// parseShippedVersion reads "1.14.6".
func parseShippedVersion(s string) ([3]int, bool) {
	var v [3]int
	_, err := fmt.Sscanf(s, "%d.%d.%d", &v[0], &v[1], &v[2])
	return v, err == nil
}

// A phase whose local lookups took a median of starvedMedianMS, or one of
// them starvedMaxMS, is taken as starved of CPU.
const (
	starvedMedianMS = 20
	starvedMaxMS    = 250
)

// localMS returns how long the lookups of local names that began in the
// phase took.
func (p frontPhase) localMS(lines []cresolve.Line, want map[string]string, importName string) []float64 {
	var ms []float64
	for _, l := range lines {
		if _, local := want[l.Name]; local && l.Name != importName && l.At >= p.start && l.At < p.end {
			ms = append(ms, l.MS)
		}
	}
	return ms
}

// onlyImportMisses reports whether every failure is the import answering
// NXDOMAIN: the stand-in's answer for a standalone server slower than the
// read timeout.
func onlyImportMisses(failed []string, importName string) bool {
	for _, f := range failed {
		if !strings.HasPrefix(f, importName+" EAI_NONAME ") {
			return false
		}
	}
	return true
}

// A frontPhase is a stretch of time (CLOCK_BOOTTIME) with the standalone
// server in one state.
type frontPhase struct {
	name       string
	start, end float64
}

type frontPhaseStats struct {
	lookups                        int
	failed                         []string
	importAnswered, importNXDOMAIN int
	p50, p99, max                  float64 // external lookups, ms
	slowUntil                      float64 // when the last lookup of 1 s or more began
}

// stats judges the lookups that began in the phase: a name of want must
// answer its address, an external name 192.0.2.1 (the upstream's); the
// import may answer NXDOMAIN (EAI_NONAME) outside "up", never an error;
// up, it always answers: a slow coredns-mcs is never an unknown name.
func (p frontPhase) stats(lines []cresolve.Line, want map[string]string, importName string) frontPhaseStats {
	var s frontPhaseStats
	var external []float64
	for _, l := range lines {
		if l.At < p.start || l.At >= p.end {
			continue
		}
		s.lookups++
		if l.MS >= 1000 {
			s.slowUntil = max(s.slowUntil, l.At)
		}
		expect, ok := want[l.Name]
		if !ok {
			expect = "192.0.2.1"
			external = append(external, l.MS)
		}
		answered := l.Status == "ok" && slices.Contains(l.Addrs, expect)
		if l.Name == importName {
			switch {
			case answered:
				s.importAnswered++
			case l.Status == "EAI_NONAME" && p.name != "up":
				s.importNXDOMAIN++
			default:
				s.failed = append(s.failed, fmt.Sprintf("%s %s %v after %.0f ms", l.Name, l.Status, l.Addrs, l.MS))
			}
			continue
		}
		if !answered {
			s.failed = append(s.failed, fmt.Sprintf("%s %s %v after %.0f ms", l.Name, l.Status, l.Addrs, l.MS))
		}
	}
	slices.Sort(external)
	if n := len(external); n > 0 {
		s.p50 = external[n/2]
		s.p99 = external[min(n-1, n*99/100)]
		s.max = external[n-1]
	}
	return s
}
