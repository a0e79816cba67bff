//go:build linux

package swap

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/miekg/dns"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-mcs/coredns-mcs/internal/filecap"
	"github.com/coredns-mcs/coredns-mcs/internal/ociimage"
	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/node"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// scenario is the state of one run of the user's scenario.
type scenario struct {
	t    *testing.T
	n    *node.Node
	ctx  context.Context
	root string
	work string
}

func (s *scenario) testdata(name string) string {
	return filepath.Join(s.root, "test", "swap", "testdata", name)
}

// kubectl runs kubectl in the work directory and fails the test if it
// fails.
func (s *scenario) kubectl(args ...string) string {
	s.t.Helper()
	out, err := s.n.Kubectl(s.ctx, s.work, args...)
	if err != nil {
		s.t.Fatal(err)
	}
	return out
}

// waitOldDNSPodsGone waits, after `rollout status` of deploy/coredns has
// returned, until the Deployment's old pods are gone: rollout status returns
// once none of them counts as a replica, while they are still terminating
// (deletionTimestamp set, serving through lameduck), and kube-proxy has
// moved off them since they turned terminating.
func (s *scenario) waitOldDNSPodsGone() {
	s.t.Helper()
	replicas := s.kubectl("-n", "kube-system", "get", "deploy", "coredns", "-o", "jsonpath={.spec.replicas}")
	poll.Eventually(s.t, oldPodsGone, "the old coredns pods gone", func() (bool, string) {
		out, err := s.n.Kubectl(s.ctx, s.work, "-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-dns",
			"-o", `jsonpath={range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}`)
		if err != nil {
			return false, err.Error()
		}
		pods := 0
		for l := range strings.Lines(out) {
			switch f := strings.Fields(l); len(f) {
			case 0:
			case 1:
				pods++
			default:
				return false, f[0] + " terminating since " + f[1]
			}
		}
		if strconv.Itoa(pods) != strings.TrimSpace(replicas) {
			return false, fmt.Sprintf("%d pods, want %s", pods, replicas)
		}
		return true, ""
	})
}

// kubectlWithInput is kubectl with input on stdin: `... | kubectl ARGS`.
func (s *scenario) kubectlWithInput(input string, args ...string) string {
	s.t.Helper()
	out, err := s.n.KubectlWithInput(s.ctx, s.work, strings.NewReader(input), args...)
	if err != nil {
		s.t.Fatal(err)
	}
	return out
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyManifests copies manifests/ into the work directory and sets the
// image tag in the copy's kustomization.yaml and install/kustomization.yaml,
// as docs/deploy.md's step 2 does by hand.
func (s *scenario) copyManifests(tag string) string {
	s.t.Helper()
	src := filepath.Join(s.root, "manifests")
	dst := filepath.Join(s.work, "manifests")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		s.t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^(\s*-\s*name:\s*` + regexp.QuoteMeta(mcsImageName) + `\s*\n\s*newTag:\s*)\S+`)
	for _, kustomization := range []string{filepath.Join(dst, "kustomization.yaml"), filepath.Join(dst, "install", "kustomization.yaml"), filepath.Join(dst, "standalone", "kustomization.yaml")} {
		data, err := os.ReadFile(kustomization)
		if err != nil {
			s.t.Fatal(err)
		}
		if !re.Match(data) {
			s.t.Fatalf("%s has no images entry for %s with a newTag:\n%s", kustomization, mcsImageName, data)
		}
		writeFile(s.t, kustomization, re.ReplaceAllString(string(data), "${1}"+tag))
	}
	return dst
}

// waitEndpoints waits until the EndpointSlices of a Service, which
// kube-controller-manager writes, list want ready endpoints.
func (s *scenario) waitEndpoints(namespace, service string, want int) {
	s.t.Helper()
	poll.Eventually(s.t, time.Minute, fmt.Sprintf("Service %s/%s with %d ready endpoints", namespace, service, want), func() (bool, string) {
		slices, err := s.n.Client.DiscoveryV1().EndpointSlices(namespace).List(s.ctx, metav1.ListOptions{
			LabelSelector: discoveryv1.LabelServiceName + "=" + service,
		})
		if err != nil {
			s.t.Fatal(err)
		}
		ready := 0
		for _, slice := range slices.Items {
			for _, ep := range slice.Endpoints {
				if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
					ready += len(ep.Addresses)
				}
			}
		}
		return ready == want, fmt.Sprintf("%d ready endpoints", ready)
	})
}

// expectLog waits until `kubectl -n kube-system logs deploy/coredns` (the
// docs' check) shows every line of want.
func (s *scenario) expectLog(want ...string) {
	s.t.Helper()
	poll.Eventually(s.t, 30*time.Second, fmt.Sprintf("the coredns log showing %q", want), func() (bool, string) {
		out, err := s.n.Kubectl(s.ctx, s.work, "-n", "kube-system", "logs", "deploy/coredns")
		missing := ""
		for _, w := range want {
			if !strings.Contains(out, w) {
				missing = w
			}
		}
		return err == nil && missing == "", fmt.Sprintf("lacks %q (%v):\n%s", missing, err, out)
	})
}

// uptime is the machine's /proc/uptime, the clock the looker-up pod stamps
// its lines with.
func uptime(t *testing.T) float64 {
	t.Helper()
	data, err := os.ReadFile("/proc/uptime")
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseFloat(strings.Fields(string(data))[0], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// corednsBinary is the binary under test: $COREDNS_BINARY (make test sets
// it to build/coredns), else built as make build does.
func corednsBinary(t *testing.T, dir string) string {
	t.Helper()
	b, err := harness.CoreDNSBinary(dir)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// stockCoreDNS returns CoreDNS at stockVersion, built from that release's
// own module (harness.StockCoreDNS), copied into dir.
func stockCoreDNS(t *testing.T, dir string) string {
	t.Helper()
	began := time.Now()
	cached, err := harness.StockCoreDNS(stockVersion)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(cached)
	if err != nil {
		t.Fatal(err)
	}
	b := filepath.Join(dir, "coredns-stock")
	if err := os.WriteFile(b, data, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("stock CoreDNS %s: %.1fs", stockVersion, time.Since(began).Seconds())
	return b
}

// buildImage writes the image of a coredns binary, as make image builds it.
func buildImage(t *testing.T, binary, ref, archive string) string {
	t.Helper()
	img, err := ociimage.CoreDNS{
		Binary:   binary,
		Platform: v1.Platform{OS: "linux", Architecture: runtime.GOARCH},
	}.Image()
	if err != nil {
		t.Fatal(err)
	}
	if err := ociimage.WriteArchive(archive, ref, img); err != nil {
		t.Fatal(err)
	}
	return archive
}

// query is one dig: its transport (+notcp or +tcp), name and type.
type query struct {
	proto, name, qtype string
}

var protos = []string{"+notcp", "+tcp"}

func protoName(proto string) string {
	if proto == "+tcp" {
		return "TCP"
	}
	return "UDP"
}

// reverse returns the PTR name of an address of the scenario.
func reverse(ip string) string {
	name, err := dns.ReverseAddr(ip)
	if err != nil {
		panic(err)
	}
	return name
}

// dnsQueries are the names the scenario checks, over UDP and TCP.
func dnsQueries(webIP string) []query {
	var qs []query
	for _, proto := range protos {
		qs = append(qs,
			query{proto, localName, "A"},
			query{proto, importedName, "A"},
			query{proto, clustersetName, "A"},
			query{proto, "web.demo.svc.clusterset.local.", "A"},
			query{proto, "_http._tcp." + clustersetName, "SRV"},
			query{proto, reverse(remoteIP), "PTR"},
			query{proto, reverse(webIP), "PTR"},
			query{proto, "kubernetes.default.svc.cluster.local.", "A"},
		)
	}
	return qs
}

// answer is what dig printed for one query.
type answer struct {
	status string
	// records are the answer section's records: TYPE then RDATA.
	records []string
	raw     string
}

type digResults map[query]answer

var statusRE = regexp.MustCompile(`status: ([A-Z]+),`)

// dig runs the queries with dig in a pod, as the docs' check does
// (`kubectl run ... --image=<dnsutils>`), through the cluster DNS of the
// pod's resolv.conf, and returns what dig printed for each.
func (s *scenario) dig(name string, qs ...query) digResults {
	s.t.Helper()
	var script strings.Builder
	for _, q := range qs {
		// The query's own flag last, so that +stats outlasts +noall. A
		// time-out of 5 s, the C libraries' default: a cluster DNS
		// without forward's read_timeout (CoreDNS before 1.14.5) waits 2 s
		// for a standalone server whose pod has just gone, until
		// kube-proxy's rules follow, before its stand-in answers.
		fmt.Fprintf(&script, "echo '== %s %s %s'; dig +tries=2 +timeout=5 +noall +comments +answer %s %s %s 2>&1\n",
			q.proto, q.name, q.qtype, q.proto, q.name, q.qtype)
	}
	script.WriteString("echo '== end'\n")
	pod := "dig-" + name
	s.kubectl("run", pod, "--restart=Never", "--image="+node.DNSUtilsImage, "--image-pull-policy=Never",
		"--command", "--", "sh", "-c", script.String())
	s.kubectl("wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/"+pod, "--timeout=2m")
	out := s.kubectl("logs", pod)
	s.kubectl("delete", "pod", pod, "--wait=false")

	results := digResults{}
	blocks := strings.Split("\n"+out, "\n== ")
	for _, block := range blocks[1:] {
		header, body, _ := strings.Cut(block, "\n")
		f := strings.Fields(header)
		if len(f) != 3 {
			continue // "end"
		}
		a := answer{raw: body}
		if m := statusRE.FindStringSubmatch(body); m != nil {
			a.status = m[1]
		}
		for _, line := range strings.Split(body, "\n") {
			rr := strings.Fields(line)
			if len(rr) < 5 || strings.HasPrefix(line, ";") {
				continue
			}
			// NAME TTL CLASS TYPE RDATA...
			a.records = append(a.records, rr[3]+" "+strings.Join(rr[4:], " "))
		}
		results[query{f[0], f[1], f[2]}] = a
	}
	if !strings.Contains(out, "== end") || len(results) != len(qs) {
		s.t.Fatalf("dig pod %s printed %d of %d answers:\n%s", pod, len(results), len(qs), out)
	}
	return results
}

// expect checks that dig got status and, for each of rdata, an answer
// record of the query's type with that data (or ending in it, so that SRV
// can be checked without its weight).
func (r digResults) expect(t *testing.T, q query, status string, rdata ...string) {
	t.Helper()
	a, ok := r[q]
	if !ok {
		t.Errorf("%s %s over %s: not asked", q.name, q.qtype, protoName(q.proto))
		return
	}
	if a.status != status {
		t.Errorf("%s %s over %s: status %q, want %s:\n%s", q.name, q.qtype, protoName(q.proto), a.status, status, a.raw)
		return
	}
	for _, want := range rdata {
		found := false
		for _, rec := range a.records {
			typ, data, _ := strings.Cut(rec, " ")
			if typ == q.qtype && (data == want || strings.HasSuffix(data, " "+want)) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s %s over %s: no %s record %q in:\n%s", q.name, q.qtype, protoName(q.proto), q.qtype, want, a.raw)
		}
	}
}

// lookups is the pod that looks names up all along the swap and the undo.
type lookups struct {
	s   *scenario
	pod string
}

// lookup is one line of the pod: when (uptime) dig returned, the name and
// transport, the status, and the first A record's address.
type lookup struct {
	at                     float64
	name, proto, status, a string
}

// lookupClient is one loop of the lookups pod.
type lookupClient struct {
	name string
	// args are dig's transport arguments; label is how the pod prints
	// them (no spaces).
	args, label string
	what        string
	// fixedPort: every query leaves from the same UDP source port, as
	// from a resolver that keeps its socket (NodeLocal DNSCache, for one).
	fixedPort bool
}

var lookupClients = []lookupClient{
	{name: localName, args: "+notcp", label: "+notcp", what: "over UDP"},
	{name: localName, args: "+tcp", label: "+tcp", what: "over TCP"},
	{name: clustersetName, args: "+notcp", label: "+notcp", what: "over UDP"},
	{name: localName, args: "+notcp -b 0.0.0.0#5353", label: "+notcp_-b_0.0.0.0#5353", what: "over UDP from one source port", fixedPort: true},
}

// lookupScript runs one loop per lookupClient, each looking its name up
// with dig and sleeping 100 ms between lookups, forever. dig gives each
// query one try of at most 2 s. Each line is one write, short enough not
// to interleave with the other loops'.
func lookupScript() string {
	var b strings.Builder
	b.WriteString(`q() {
  out=$(dig $1 +tries=1 +timeout=2 +noall +comments +answer "$2" A 2>&1)
  st=$(echo "$out" | sed -n 's/.*status: \([A-Z]*\),.*/\1/p')
  ip=$(echo "$out" | awk '$4 == "A" { print $5; exit }')
  echo "$(cut -d' ' -f1 /proc/uptime) $2 $(echo $1 | tr ' ' _) ${st:-NOANSWER} ${ip:--}"
}
loop() {
  while :; do q "$1" "$2"; sleep 0.1; done
}
`)
	for _, c := range lookupClients {
		fmt.Fprintf(&b, "loop %q %s &\n", c.args, c.name)
	}
	b.WriteString("wait\n")
	return b.String()
}

// startLookups starts the looker-up pod and waits for its first lines.
func (s *scenario) startLookups() *lookups {
	s.t.Helper()
	l := &lookups{s: s, pod: "lookups"}
	s.kubectl("run", l.pod, "--restart=Never", "--image="+node.DNSUtilsImage, "--image-pull-policy=Never",
		"--command", "--", "sh", "-c", lookupScript())
	poll.Eventually(s.t, time.Minute, "the first lines of the lookups pod", func() (bool, string) {
		lines := l.read()
		return len(lines) >= 9, fmt.Sprintf("%d lines", len(lines))
	})
	return l
}

// read returns the pod's lines so far.
func (l *lookups) read() []lookup {
	data, err := l.s.n.Client.CoreV1().Pods("default").GetLogs(l.pod, &corev1.PodLogOptions{}).DoRaw(l.s.ctx)
	if err != nil {
		return nil
	}
	var out []lookup
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 5 {
			continue
		}
		at, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		out = append(out, lookup{at: at, name: f[1], proto: f[2], status: f[3], a: f[4]})
	}
	return out
}

// stop reads every line and deletes the pod.
func (l *lookups) stop() lookupResults {
	lines := l.read()
	l.s.kubectl("delete", "pod", l.pod, "--wait=false")
	return lines
}

type lookupResults []lookup

// count returns how many lookups of name by the client labelled label
// returned within [start, end], and those that did not answer NOERROR with
// address want.
func (r lookupResults) count(name, label string, start, end float64, want string) (int, []lookup) {
	total := 0
	var failed []lookup
	for _, l := range r {
		if l.name != name || l.proto != label || l.at < start || l.at > end {
			continue
		}
		total++
		if l.status != "NOERROR" || l.a != want {
			failed = append(failed, l)
		}
	}
	return total, failed
}

// longestGap returns the longest time within [start, end] in which the
// client labelled label returned no lookup of name: from start to the
// first, between two, or from the last to end.
func (r lookupResults) longestGap(name, label string, start, end float64) float64 {
	gap, prev := 0.0, start
	for _, l := range r {
		if l.name != name || l.proto != label || l.at < start || l.at > end {
			continue
		}
		gap, prev = max(gap, l.at-prev), max(prev, l.at)
	}
	return max(gap, end-prev)
}

// last returns when the last lookup of name over UDP within [start, end]
// that answered want (ok) or did not (!ok) returned; start if none did.
func (r lookupResults) last(name string, start, end float64, ok bool, want string) float64 {
	at := start
	for _, l := range r {
		if l.name == name && l.proto == "+notcp" && l.at >= start && l.at <= end && (l.status == "NOERROR" && l.a == want) == ok {
			at = max(at, l.at)
		}
	}
	return at
}

func failureList(failed []lookup) string {
	if len(failed) == 0 {
		return ""
	}
	var parts []string
	for i, f := range failed {
		if i == 8 {
			parts = append(parts, fmt.Sprintf("and %d more", len(failed)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%.2f %s %s", f.at, f.status, f.a))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// checkMetrics reads CoreDNS's metrics through `kubectl port-forward` (the
// docs' check): no degraded reason, and imports ServiceImports cached.
func (s *scenario) checkMetrics(imports int) {
	s.t.Helper()
	cmd, out, err := s.n.StartKubectl(s.ctx, "-n", "kube-system", "port-forward", "deploy/coredns", "9153:9153")
	if err != nil {
		s.t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	client := &http.Client{Transport: &http.Transport{DialContext: s.n.NetNS.DialContext}, Timeout: 5 * time.Second}
	var metrics string
	poll.Eventually(s.t, 30*time.Second, "metrics through kubectl port-forward", func() (bool, string) {
		resp, err := client.Get("http://127.0.0.1:9153/metrics")
		if err != nil {
			return false, fmt.Sprintf("%v; kubectl said:\n%s", err, out.String())
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		metrics = string(body)
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	var objects string
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, "coredns_multicluster_degraded{") && !strings.HasSuffix(line, " 0") {
			s.t.Errorf("degraded: %s", line)
		}
		if strings.HasPrefix(line, `coredns_multicluster_objects{kind="serviceimport"}`) {
			objects = line
		}
	}
	if want := fmt.Sprintf(`coredns_multicluster_objects{kind="serviceimport"} %d`, imports); objects != want {
		s.t.Errorf("metrics: %q, want %q", objects, want)
	}
}

// checkContainers checks, on the node, how the kubelet runs each CoreDNS
// container of the new image: uid 65532, no privilege escalation, only
// NET_BIND_SERVICE, a read-only root file system, listening on port 53,
// the binary's file capability, and the ServiceAccount token as its only
// credential.
func (s *scenario) checkContainers() {
	s.t.Helper()
	pods, err := s.n.Client.CoreV1().Pods("kube-system").List(s.ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
	if err != nil {
		s.t.Fatal(err)
	}
	checked := 0
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning || pod.Spec.Containers[0].Image != mcsImageName+":"+mcsImageTag {
			continue
		}
		pids, err := s.n.PodProcesses(string(pod.UID))
		if err != nil {
			s.t.Fatal(err)
		}
		for _, pid := range pids {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if !strings.HasPrefix(string(cmdline), "/coredns\x00") {
				continue
			}
			checked++
			s.checkProcess(pod.Name, pid, strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00"))
		}
	}
	if checked < 2 {
		s.t.Errorf("found %d coredns processes of the new image, want 2", checked)
	}
}

func (s *scenario) checkProcess(pod string, pid int, argv []string) {
	s.t.Helper()
	proc := fmt.Sprintf("/proc/%d", pid)
	status, err := os.ReadFile(proc + "/status")
	if err != nil {
		s.t.Fatal(err)
	}
	fields := map[string]string{}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok {
			fields[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	for k, want := range map[string]string{
		"Uid":        "65532 65532 65532 65532",
		"Gid":        "65532 65532 65532 65532",
		"NoNewPrivs": "1",
		// Only CAP_NET_BIND_SERVICE (bit 10), in every set that matters.
		"CapEff": "0000000000000400",
		"CapPrm": "0000000000000400",
		"CapBnd": "0000000000000400",
	} {
		if fields[k] != want {
			s.t.Errorf("%s: coredns %s: %s, want %s", pod, k, fields[k], want)
		}
	}
	mountinfo, err := os.ReadFile(proc + "/mountinfo")
	if err != nil {
		s.t.Fatal(err)
	}
	rootRO := false
	for _, line := range strings.Split(string(mountinfo), "\n") {
		f := strings.Fields(line)
		if len(f) > 5 && f[4] == "/" {
			rootRO = strings.HasPrefix(f[5], "ro,") || f[5] == "ro"
		}
	}
	if !rootRO {
		s.t.Errorf("%s: the root file system of coredns is not read-only", pod)
	}
	// CoreDNS listens on :53, a dual-stack socket that the kernel lists
	// with the IPv6 ones.
	for _, proto := range []string{"udp", "tcp"} {
		v4, _ := os.ReadFile(proc + "/net/" + proto)
		v6, _ := os.ReadFile(proc + "/net/" + proto + "6")
		if !strings.Contains(string(v4)+string(v6), ":0035 ") {
			s.t.Errorf("%s: coredns does not listen on %s port 53:\n%s%s", pod, proto, v4, v6)
		}
	}
	buf := make([]byte, 64)
	n, err := unix.Getxattr(proc+"/root/coredns", filecap.Xattr, buf)
	if err != nil || string(buf[:n]) != string(filecap.Value(filecap.NetBindService)) {
		s.t.Errorf("%s: /coredns file capability %x (%v), want cap_net_bind_service=ep", pod, buf[:max(n, 0)], err)
	}
	if _, err := os.Stat(proc + "/root/var/run/secrets/kubernetes.io/serviceaccount/token"); err != nil {
		s.t.Errorf("%s: no ServiceAccount token in the container: %v", pod, err)
	}
	environ, _ := os.ReadFile(proc + "/environ")
	for _, v := range strings.Split(string(environ), "\x00") {
		if strings.HasPrefix(v, "KUBECONFIG=") {
			s.t.Errorf("%s: coredns has %s", pod, v)
		}
	}
	if strings.Join(argv, " ") != "/coredns -conf /etc/coredns/Corefile" {
		s.t.Errorf("%s: coredns runs as %q", pod, argv)
	}
}

// applyFreshInstall runs the docs' fresh install. The kube-dns Service's
// address, 10.96.0.10, may be held for a moment after kubeadm's Service is
// deleted (its IPAddress object goes after the Service), so a refused apply
// is retried for a while.
func (s *scenario) applyFreshInstall(dir string) {
	s.t.Helper()
	poll.Eventually(s.t, 30*time.Second, "the fresh install applied", func() (bool, string) {
		_, err := s.n.Kubectl(s.ctx, s.work, "apply", "--server-side", "-k", dir)
		if err != nil {
			s.t.Logf("fresh install: %v; retrying", err)
		}
		return err == nil, fmt.Sprint(err)
	})
}
