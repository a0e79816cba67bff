//go:build linux

package swap

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-mcs/coredns-mcs/internal/front"
	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/node"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// A resolver client is a pod that looks names up with getaddrinfo, as
// applications do, through its C library and the pod's own resolv.conf
// (nameserver 10.96.0.10, search default.svc.cluster.local
// svc.cluster.local cluster.local, ndots:5): one round of names about every
// 100 ms, for as long as it runs.
type resolverClient struct {
	// name is the C library, and the pod's name after "resolve-".
	name, binary string
}

var resolverClients = []resolverClient{
	{"musl", node.MuslResolver},
	{"glibc", node.GlibcResolver},
}

// The kinds of names a round looks up.
const (
	// kindExternal: a name outside the cluster, new each round, which
	// walks the whole search path (three cluster.local expansions, then
	// the name) before upstream answers it.
	kindExternal = "external"
	// kindLocal: a local Service by its short name (web.demo), and
	// kubernetes.default, through the search path.
	kindLocal = "local"
	// kindImport: the import-only name, absolute: only the standalone
	// server knows it.
	kindImport = "import"
)

var resolutionKinds = []string{kindExternal, kindLocal, kindImport}

// resolverScript is a client's loop: each round, the external name
// rN-CLIENT.example.org (N the round), web.demo, kubernetes.default and
// the import-only name, one after the other, then 100 ms of sleep.
func resolverScript(c resolverClient) string {
	return fmt.Sprintf(`i=0
while :; do
  i=$((i+1))
  %s r$i-%s.%s web.demo kubernetes.default %s
  sleep 0.1
done
`, c.binary, c.name, strings.TrimSuffix(externalZone, "."), importedName)
}

// resolution is one line of a client: when the lookup began (uptime), the
// name, getaddrinfo's status (ok or an EAI_ error), the addresses, and how
// long it took.
type resolution struct {
	at     float64
	name   string
	status string
	addrs  []string
	ms     float64
}

func (r resolution) kind() string {
	switch {
	case strings.HasSuffix(r.name, "."+strings.TrimSuffix(externalZone, ".")):
		return kindExternal
	case r.name == importedName:
		return kindImport
	}
	return kindLocal
}

// resolvers are the client pods.
type resolvers struct {
	s *scenario
	// want is the address each name must answer, by name; external names
	// answer externalAddress.
	want map[string]string
}

// startResolvers starts a pod for each client and waits until each has
// looked up a whole round.
func (s *scenario) startResolvers(webIP string) *resolvers {
	s.t.Helper()
	r := &resolvers{s: s, want: map[string]string{
		"web.demo":           webIP,
		"kubernetes.default": "10.96.0.1",
		importedName:         remoteIP,
	}}
	for _, c := range resolverClients {
		s.kubectl("run", "resolve-"+c.name, "--restart=Never", "--image="+node.DNSUtilsImage, "--image-pull-policy=Never",
			"--command", "--", "sh", "-c", resolverScript(c))
	}
	s.t.Cleanup(func() {
		for _, c := range resolverClients {
			_, _ = s.n.Kubectl(s.ctx, s.work, "delete", "pod", "resolve-"+c.name, "--wait=false")
		}
	})
	r.waitFor("each client's first round", time.Minute, func(c resolverClient, lines []resolution) bool {
		kinds := map[string]bool{}
		for _, l := range lines {
			kinds[l.kind()] = true
		}
		return len(kinds) == len(resolutionKinds)
	})
	return r
}

// read returns a client's lines so far (its pod's log).
func (r *resolvers) read(c resolverClient) []resolution {
	data, err := r.s.n.Client.CoreV1().Pods("default").GetLogs("resolve-"+c.name, &corev1.PodLogOptions{}).DoRaw(r.s.ctx)
	if err != nil {
		return nil
	}
	var out []resolution
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) != 5 {
			continue
		}
		at, err1 := strconv.ParseFloat(f[0], 64)
		ms, err2 := strconv.ParseFloat(f[4], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		var addrs []string
		if f[3] != "-" {
			addrs = strings.Split(f[3], ",")
		}
		out = append(out, resolution{at: at, name: f[1], status: f[2], addrs: addrs, ms: ms})
	}
	return out
}

// waitFor reads the clients' lines until done holds for every client.
func (r *resolvers) waitFor(what string, timeout time.Duration, done func(resolverClient, []resolution) bool) {
	r.s.t.Helper()
	poll.Eventually(r.s.t, timeout, "resolver clients: "+what, func() (bool, string) {
		for _, c := range resolverClients {
			if !done(c, r.read(c)) {
				return false, c.name + " not yet"
			}
		}
		return true, ""
	})
}

// waitUntil waits until every client has begun a lookup at uptime at or
// later.
func (r *resolvers) waitUntil(at float64) {
	r.s.t.Helper()
	r.waitFor(fmt.Sprintf("lookup after uptime %.1f", at), time.Minute+time.Duration(max(at-uptime(r.s.t), 0)*float64(time.Second)),
		func(_ resolverClient, lines []resolution) bool {
			return len(lines) > 0 && lines[len(lines)-1].at >= at
		})
}

// minAnswersBack is how many answers in a row, after its last failure,
// show that a client's import answers again.
const minAnswersBack = 5

// waitImportBack waits until the last minAnswersBack import lookups of
// every client, all begun at uptime since or later, answered the import's
// address.
func (r *resolvers) waitImportBack(since float64) {
	r.s.t.Helper()
	// The cluster DNS runs two pods, each with its own view of the
	// standalone server's health: a few answers in a row may all come
	// from the one that has recovered, while the other still skips it
	// until its next health check (or holds the stand-in's NXDOMAIN for
	// its TTL, which is 0). Answers in a row over longer than that TTL
	// and a health check mean both are back.
	// And as many answers in a row as check wants after the last failure:
	// on a busy machine a span may hold only one or two.
	span := float64(front.StandInTTL) + 1
	r.waitFor("import answering again", time.Minute, func(_ resolverClient, lines []resolution) bool {
		first, last, answers := -1.0, -1.0, 0
		for i := len(lines) - 1; i >= 0; i-- {
			l := lines[i]
			if l.kind() != kindImport {
				continue
			}
			if l.at < since || !r.answered(l) {
				break
			}
			if last < 0 {
				last = l.at
			}
			first = l.at
			answers++
		}
		return last >= 0 && last-first >= span && answers >= minAnswersBack
	})
}

// answered says whether a lookup answered what its name must.
func (r *resolvers) answered(l resolution) bool {
	want := r.want[l.name]
	if l.kind() == kindExternal {
		want = externalAddress
	}
	return l.status == "ok" && slices.Contains(l.addrs, want)
}

// resolverCase is a window of the clients' lookups: [start, end) in
// uptime seconds; ready is when the standalone server was back (0: it was
// never away).
type resolverCase struct {
	name              string
	start, ready, end float64
	// importMayFail: the import-only name may answer NXDOMAIN (the
	// front's stand-in, or stock CoreDNS alone) in this window. Where it
	// is not set, the standalone server is up and every import lookup
	// answers: a slow coredns-mcs is never an unknown name.
	importMayFail bool
}

// kindStats is what one client's lookups of one kind in one case gave.
type kindStats struct {
	lookups  int
	failed   []resolution
	p50, p99 float64
	// lastFailure is when the last failed lookup began (0: none).
	lastFailure float64
	// okAfter is how many lookups answered after the last failure.
	okAfter int
	// inARow is the first two lookups in a row that failed, if any.
	inARow []resolution
}

func (r *resolvers) stats(lines []resolution, kind string, start, end float64) kindStats {
	var st kindStats
	var ms []float64
	for _, l := range lines {
		if l.kind() != kind || l.at < start || l.at >= end {
			continue
		}
		st.lookups++
		ms = append(ms, l.ms)
		if r.answered(l) {
			st.okAfter++
		} else {
			if st.lastFailure > 0 && st.okAfter == 0 && st.inARow == nil {
				st.inARow = []resolution{st.failed[len(st.failed)-1], l}
			}
			st.failed = append(st.failed, l)
			st.lastFailure = l.at
			st.okAfter = 0
		}
	}
	st.p50, st.p99 = percentile(ms, 50), percentile(ms, 99)
	return st
}

// percentile is the nearest-rank percentile p of ms (0 when empty).
func percentile(ms []float64, p float64) float64 {
	if len(ms) == 0 {
		return 0
	}
	s := slices.Clone(ms)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(i, 0)]
}

// failureSummary counts the failures by status: "12 EAI_NONAME".
func failureSummary(failed []resolution) string {
	counts := map[string]int{}
	for _, f := range failed {
		counts[f.status]++
	}
	var parts []string
	for status, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, status))
	}
	slices.Sort(parts)
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, ", ")
}

func failureDetails(failed []resolution) string {
	var parts []string
	for i, f := range failed {
		if i == 6 {
			parts = append(parts, fmt.Sprintf("and %d more", len(failed)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%.2f %s %s %v %.0fms", f.at, f.name, f.status, f.addrs, f.ms))
	}
	return strings.Join(parts, "; ")
}

// check asserts, for every case and client: at least 10 lookups of each
// kind, none of an external or local name failed; the import-only name
// failed only with EAI_NONAME (NXDOMAIN: never a SERVFAIL or a time-out),
// only where the case allows it, and answered again, for good, before the
// case ended. It returns the Markdown table of the cases: in each cell,
// lookups / failed / p50 / p99 (ms).
func (r *resolvers) check(cases []resolverCase) string {
	t := r.s.t
	t.Helper()
	var table strings.Builder
	// Each cell: lookups / failed / p50 / p99 (ms).
	table.WriteString("| case | client | external | local | import |\n")
	table.WriteString("|---|---|---|---|---|\n")
	lines := map[string][]resolution{}
	for _, c := range resolverClients {
		lines[c.name] = r.read(c)
	}
	for _, cs := range cases {
		for _, c := range resolverClients {
			fmt.Fprintf(&table, "| %s | %s |", cs.name, c.name)
			for _, kind := range resolutionKinds {
				st := r.stats(lines[c.name], kind, cs.start, cs.end)
				fmt.Fprintf(&table, " %d / %s / %.1f / %.1f |", st.lookups, failureSummary(st.failed), st.p50, st.p99)
				if st.lookups < 10 {
					t.Errorf("%s, %s: only %d %s lookups in %.1fs", cs.name, c.name, st.lookups, kind, cs.end-cs.start)
				}
				if len(st.failed) == 0 {
					continue
				}
				if kind != kindImport || !cs.importMayFail {
					t.Errorf("%s, %s: %d of %d %s lookups failed: %s", cs.name, c.name, len(st.failed), st.lookups, kind, failureDetails(st.failed))
					continue
				}
				var other []resolution
				for _, f := range st.failed {
					if f.status != "EAI_NONAME" {
						other = append(other, f)
					}
				}
				if len(other) > 0 {
					t.Errorf("%s, %s: import lookups failed otherwise than NXDOMAIN: %s", cs.name, c.name, failureDetails(other))
				}
				if cs.ready == 0 {
					continue // stock CoreDNS alone: never answers it
				}
				if st.okAfter < minAnswersBack {
					t.Errorf("%s, %s: the import did not answer again after the standalone server was back (%d answers after the last failure at %.2f)",
						cs.name, c.name, st.okAfter, st.lastFailure)
				} else {
					t.Logf("%s, %s: the import last failed %.1fs after the case began, %.1fs after the standalone server was ready",
						cs.name, c.name, st.lastFailure-cs.start, st.lastFailure-cs.ready)
				}
			}
			table.WriteString("\n")
		}
	}
	return table.String()
}

// standalonePod returns the running, ready standalone server's pod and the
// pid of its coredns process, as seen from this machine.
func (s *scenario) standalonePod() (*corev1.Pod, int) {
	s.t.Helper()
	pods, err := s.n.Client.CoreV1().Pods("kube-system").List(s.ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=coredns-mcs"})
	if err != nil {
		s.t.Fatal(err)
	}
	var found []int
	var pod *corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		pids, err := s.n.PodProcesses(string(p.UID))
		if err != nil {
			s.t.Fatal(err)
		}
		for _, pid := range pids {
			if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.HasPrefix(string(cmdline), "/coredns\x00") {
				found = append(found, pid)
				pod = p
			}
		}
	}
	if len(found) != 1 {
		s.t.Fatalf("found %d coredns processes of the standalone server (%v), want 1", len(found), found)
	}
	return pod, found[0]
}

// standaloneOutages runs the clients through outages of the standalone
// server (kube-system/coredns-mcs, one replica, the Helm chart's), each
// case about 10 s of lookups: up; scaled to 0 (with dig's checks of what
// answers then: local names as stock CoreDNS alone, search-path expansions
// and imports NXDOMAIN); its pod killed; its coredns process stopped
// (SIGSTOP, a hang) then continued; a rollout restart. It returns the
// cases, contiguous: each ends when the next begins.
func (s *scenario) standaloneOutages(r *resolvers, webIP string, stock digResults) []resolverCase {
	t := s.t
	t.Helper()
	const hold = 8.0 // seconds of lookups while the server is away
	const least = 10.0
	var cases []resolverCase
	// begin closes the previous case and opens the next.
	begin := func(name string, importMayFail bool) *resolverCase {
		now := uptime(t)
		if len(cases) > 0 {
			cases[len(cases)-1].end = now
		}
		cases = append(cases, resolverCase{name: name, start: now, importMayFail: importMayFail})
		return &cases[len(cases)-1]
	}
	// back waits for the server's endpoint, then for the import to answer
	// every client again, and for the case to have lasted least seconds.
	back := func(c *resolverCase) {
		s.waitEndpoints("kube-system", "coredns-mcs", 1)
		c.ready = uptime(t)
		r.waitImportBack(c.ready)
		r.waitUntil(c.start + least)
	}

	// Up, on busy cores: a slow coredns-mcs is never an unknown name.
	c := begin("up, busy cores", false)
	stopBusy := harness.BusyCores(t)
	r.waitUntil(c.start + least)
	stopBusy()

	c = begin("scaled to 0", true)
	s.kubectl("-n", "kube-system", "scale", "deploy/coredns-mcs", "--replicas=0")
	s.kubectl("-n", "kube-system", "wait", "--for=delete", "pod", "-l", "app.kubernetes.io/name=coredns-mcs", "--timeout=2m")
	s.checkScaledDown(webIP, stock)
	r.waitUntil(c.start + hold)
	s.kubectl("-n", "kube-system", "scale", "deploy/coredns-mcs", "--replicas=1")
	s.kubectl("-n", "kube-system", "rollout", "status", "deploy/coredns-mcs", "--timeout=3m")
	back(c)

	c = begin("pod killed", true)
	s.kubectl("-n", "kube-system", "delete", "pod", "-l", "app.kubernetes.io/name=coredns-mcs", "--grace-period=0", "--force")
	// The Deployment brings a new pod; until it is ready the Service has
	// no endpoint (or the dead one, for a moment).
	poll.Eventually(t, 2*time.Minute, "a new standalone pod ready after the kill", func() (bool, string) {
		out := s.kubectl("-n", "kube-system", "get", "pod", "-l", "app.kubernetes.io/name=coredns-mcs",
			"-o", `jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
		return strings.Count(out, " True\n") == 1 && strings.Count(out, "\n") == 1, out
	})
	back(c)

	c = begin("hung (SIGSTOP)", true)
	pod, pid := s.standalonePod()
	resume := func() {
		if err := unix.Kill(pid, unix.SIGCONT); err != nil && err != unix.ESRCH {
			t.Errorf("SIGCONT coredns (pid %d): %v", pid, err)
		}
	}
	t.Cleanup(resume) // on every way out, a failure included
	if err := unix.Kill(pid, unix.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP coredns (pid %d) of %s: %v", pid, pod.Name, err)
	}
	stopped := uptime(t)
	r.waitUntil(c.start + hold)
	resume()
	t.Logf("coredns (pid %d of %s) stopped for %.1fs", pid, pod.Name, uptime(t)-stopped)
	if p, _ := s.standalonePod(); p.UID != pod.UID {
		t.Errorf("the stopped standalone pod %s was replaced by %s", pod.Name, p.Name)
	}
	back(c)

	c = begin("rollout restart", true)
	s.kubectl("-n", "kube-system", "rollout", "restart", "deploy/coredns-mcs")
	s.kubectl("-n", "kube-system", "rollout", "status", "deploy/coredns-mcs", "--timeout=3m")
	back(c)
	cases[len(cases)-1].end = uptime(t)
	return cases
}

// checkScaledDown asks, with dig, while the standalone server is scaled to
// 0: through the cluster DNS, local names answer as stock CoreDNS alone did,
// a pod's search-path expansions and the import-only name answer NXDOMAIN
// (the front's stand-in in cluster.local), never SERVFAIL, and the
// clusterset name SERVFAIL (its stand-in in clusterset.local), never
// NXDOMAIN: at once with read_timeout, within forward's fixed 2 s without
// it while kube-proxy's rules still send the packets to the pod that went.
func (s *scenario) checkScaledDown(webIP string, stock digResults) {
	t := s.t
	t.Helper()
	expansions := []query{
		{"+stats", "example.org.demo.svc.cluster.local.", "A"},
		{"+stats", "example.org.svc.cluster.local.", "A"},
		{"+stats", importedName, "A"},
		{"+stats", clustersetName, "A"},
	}
	got := s.dig("standalone-down", append(localQueries(webIP), expansions...)...)
	for _, q := range localQueries(webIP) {
		if a, b := stock[q], got[q]; a.status != b.status || !slices.Equal(a.records, b.records) {
			t.Errorf("standalone scaled to 0: %s %s over %s: %s %v, stock CoreDNS alone answered %s %v", q.name, q.qtype, protoName(q.proto), b.status, b.records, a.status, a.records)
		}
	}
	for _, q := range expansions {
		want := "NXDOMAIN"
		if q.name == clustersetName {
			want = "SERVFAIL"
		}
		got.expect(t, q, want)
		if m := queryTime.FindStringSubmatch(got[q].raw); m != nil {
			t.Logf("standalone scaled to 0: %s %s in %s ms", q.name, want, m[1])
		}
	}
}
