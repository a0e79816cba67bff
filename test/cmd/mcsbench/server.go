package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/coredns-mcs/coredns-mcs/test/internal/corefiles"
	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/process"
	"github.com/miekg/dns"
)

// The two Corefiles differ only in the multicluster block, so that any
// difference in throughput is the plugin's. pprof is in both: it is not in
// the query path, and it lets the benchmark force a GC before reading memory
// and take CPU profiles.
//
// The multicluster block carries a fallback scope of 20 patterns, as an
// operator who keeps some teams' names local would write: its cost is part
// of the toll. It keeps every name the benchmark asks in scope.
const (
	corefileWithout = `.:{{.Port}} {
    ready 127.0.0.1:{{.ReadyPort}}
    pprof 127.0.0.1:{{.PprofPort}}
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig {{.Kubeconfig}}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
}
`
	// corefileAlone is the multicluster plugin alone (no fallback zone,
	// which needs the kubernetes plugin): the scale section measures its
	// own share of the heap with it.
	corefileAlone = `.:{{.Port}} {
    ready 127.0.0.1:{{.ReadyPort}}
    pprof 127.0.0.1:{{.PprofPort}}
    multicluster clusterset.local {
        kubeconfig {{.Kubeconfig}}
    }
}
`
	corefileWith = `.:{{.Port}} {
    ready 127.0.0.1:{{.ReadyPort}}
    pprof 127.0.0.1:{{.PprofPort}}
    multicluster clusterset.local {
        kubeconfig {{.Kubeconfig}}
        fallback cluster.local
        fallback_scope bench-*/* shop/* payments/* checkout/* search/* media-*/* edge-*/* */api-* */web-* */frontend !kube-system/* !*/internal-* !shop/audit !payments/ledger-* !team-*/secret-* !*-dev/* !*-test/* !infra/* !vault/* !*/debug
    }
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig {{.Kubeconfig}}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
}
`
)

// corefileShipped is corefileWith with the kubernetes stanza of the
// shipped Corefiles (manifests/corefile, manifests/standalone, the chart):
// its labels selector leaves out the objects labelled with a source cluster,
// which multicluster caches itself. The scale section measures it: what a
// ClusterSet costs the server as deployed.
var corefileShipped = corefiles.WithoutImported(corefileWith)

// The peers of the clusterset.local answers, on the same API server and
// queries:
//
//   - stock CoreDNS 1.15 (its own main package, built from this module's
//     graph), whose kubernetes plugin answers the clusterset zone itself
//     with its multicluster option (plugin/kubernetes in CoreDNS v1.15.0:
//     ServiceImports of multicluster.x-k8s.io/v1alpha1, A records from
//     spec.ips);
//   - the floor: the server without multicluster, with a template plugin
//     that answers each import's name with the address the benchmark gives
//     that import (importIP), computed from the number in the name. It reads
//     nothing from the API, so its cost per query is what any plugin that
//     builds such an answer costs at least.
const (
	corefileUpstream = `.:{{.Port}} {
    ready 127.0.0.1:{{.ReadyPort}}
    pprof 127.0.0.1:{{.PprofPort}}
    kubernetes cluster.local clusterset.local in-addr.arpa ip6.arpa {
        kubeconfig {{.Kubeconfig}}
        pods insecure
        multicluster clusterset.local
        fallthrough in-addr.arpa ip6.arpa
    }
}
`
	corefileTemplate = `.:{{.Port}} {
    ready 127.0.0.1:{{.ReadyPort}}
    pprof 127.0.0.1:{{.PprofPort}}
    template IN A clusterset.local {
        match ^imp-([0-9]+)\.bench-imports\.svc\.clusterset\.local\.$
        var i int(group(1))
        var a 128 + int(i / 65536) % 128
        var b int(i / 256) % 256
        var c i % 256
        answer "{{ .Name }} 5 IN A 10.{{ .Var.a }}.{{ .Var.b }}.{{ .Var.c }}"
    }
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig {{.Kubeconfig}}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
}
`
)

// server is one running coredns.
type server struct {
	name     string
	binary   string
	proc     *process.Process
	addr     string // DNS, UDP and TCP
	readyURL string
	pprofURL string
	// metricsURL is the prometheus plugin's, for Corefiles that have one.
	metricsURL string
	logPath    string
	// readyAfter is the time from the fork to the first /ready 200.
	readyAfter time.Duration
	// notReady is what /ready answered last, when it never answered 200.
	notReady string
	// settleEvery is how often settledMemory reads VmRSS.
	settleEvery time.Duration
}

type serverOptions struct {
	binary     string
	dir        string // for the Corefile and the log
	name       string
	corefile   string // one of the templates above
	kubeconfig string
	// cpus, when set, pins the server with taskset (e.g. "0").
	cpus string
	// readyTimeout bounds the wait for /ready.
	readyTimeout time.Duration
	// ports, when set, are the DNS, ready, pprof and metrics ports, for a
	// server started again where it was; else free ones.
	ports []int
	// env is added to the environment the server starts in.
	env []string
	// keepUnready returns a server that runs but is not ready in time,
	// with the error, instead of stopping it.
	keepUnready bool
	// settleEvery is how often settledMemory reads VmRSS; 0 means
	// settleInterval.
	settleEvery time.Duration
}

// settleInterval is how often settledMemory reads VmRSS by default.
const settleInterval = 500 * time.Millisecond

// startServer starts coredns and waits until /ready answers 200.
func startServer(ctx context.Context, o serverOptions) (*server, error) {
	ports := o.ports
	if ports == nil {
		var err error
		if ports, err = harness.FreePorts(4); err != nil {
			return nil, err
		}
	}
	// Plain replacement, not text/template: the template plugin's own
	// templates are Go templates too.
	corefile := strings.NewReplacer("{{.Port}}", strconv.Itoa(ports[0]), "{{.ReadyPort}}", strconv.Itoa(ports[1]),
		"{{.PprofPort}}", strconv.Itoa(ports[2]), "{{.MetricsPort}}", strconv.Itoa(ports[3]), "{{.Kubeconfig}}", o.kubeconfig).Replace(o.corefile)
	confPath := filepath.Join(o.dir, o.name+".Corefile")
	if err := os.WriteFile(confPath, []byte(corefile), 0o600); err != nil {
		return nil, err
	}
	logPath := filepath.Join(o.dir, o.name+".log")
	// Each start has a log of its own.
	if err := os.Remove(logPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}

	argv := []string{o.binary, "-conf", confPath}
	if o.cpus != "" {
		// taskset execs coredns in place, so the pid stays coredns's and
		// /proc/PID/status is the server's own.
		argv = append([]string{"taskset", "-c", o.cpus}, argv...)
	}
	spec := process.Spec{Name: "coredns " + o.name, Path: argv[0], Args: argv[1:], LogPath: logPath}
	if o.env != nil {
		spec.Env = append(os.Environ(), o.env...)
	}
	p, err := process.Start(spec)
	if err != nil {
		return nil, err
	}
	s := &server{
		name:        o.name,
		binary:      o.binary,
		proc:        p,
		addr:        "127.0.0.1:" + strconv.Itoa(ports[0]),
		readyURL:    "http://127.0.0.1:" + strconv.Itoa(ports[1]) + "/ready",
		pprofURL:    "http://127.0.0.1:" + strconv.Itoa(ports[2]) + "/debug/pprof",
		metricsURL:  "http://127.0.0.1:" + strconv.Itoa(ports[3]) + "/metrics",
		logPath:     logPath,
		settleEvery: o.settleEvery,
	}
	if s.settleEvery == 0 {
		s.settleEvery = settleInterval
	}
	if err := s.waitReady(ctx, o.readyTimeout); err != nil {
		if o.keepUnready && !s.proc.Exited() && ctx.Err() == nil {
			return s, err
		}
		_ = s.stop()
		return nil, err
	}
	return s, nil
}

// waitReady polls /ready every few milliseconds, so that the start-up time
// is measured to within that.
func (s *server) waitReady(ctx context.Context, timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	last := "no answer yet" // what /ready said last: the plugins not ready
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.readyURL, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				s.readyAfter = time.Since(s.proc.Started)
				return nil
			}
			last = fmt.Sprintf("%d %q", resp.StatusCode, strings.TrimSpace(string(body)))
		} else {
			last = err.Error()
		}
		if s.proc.Exited() {
			return fmt.Errorf("%s exited before it was ready (%v):\n%s", s.proc.Name, s.proc.Err(), process.LogTail(s.logPath, 20))
		}
		if time.Now().After(deadline) {
			s.notReady = last
			return fmt.Errorf("%s not ready after %s (/ready: %s):\n%s", s.proc.Name, timeout, last, process.LogTail(s.logPath, 20))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (s *server) stop() error { return s.proc.Stop(10 * time.Second) }

// rss reads VmRSS from /proc/PID/status, in bytes.
func (s *server) rss() (uint64, error) { return procRSS(s.proc.Pid) }

// procRSS reads VmRSS of process pid, in bytes.
func procRSS(pid int) (uint64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

// clockTick is the unit of utime and stime in /proc/PID/stat (USER_HZ,
// 100 on every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// cpuTime is the CPU time the server has used, user and system, over all
// its threads.
func (s *server) cpuTime() (time.Duration, error) { return procCPU(s.proc.Pid) }

// procCPU is the CPU time process pid has used, user and system.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces; the fields
	// counted from 3 (state) follow its closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * clockTick, nil
}

var heapAllocLine = regexp.MustCompile(`(?m)^# HeapAlloc = (\d+)$`)

// gcHeap runs a garbage collection in the server (the heap profile handler
// does that with gc=1) and returns the live heap right after it.
func (s *server) gcHeap(ctx context.Context) (uint64, error) {
	var body []byte
	var err error
	for range 3 {
		// pprof's server gives up writing after 5 s: the collection of a
		// heap of a gigabyte on a busy machine, and the profile of it, can
		// take longer. The next attempt finds the heap collected.
		if body, err = httpGet(ctx, s.pprofURL+"/heap?gc=1&debug=1", 30*time.Second); err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return 0, err
	}
	m := heapAllocLine.FindSubmatch(body)
	if m == nil {
		return 0, errors.New("no HeapAlloc in the heap profile")
	}
	return strconv.ParseUint(string(m[1]), 10, 64)
}

// settledMemory forces a GC, waits until VmRSS has stayed within 1% over
// six readings s.settleEvery apart (three seconds by default; at most
// maxWait), and returns that RSS and the live heap after a last GC.
func (s *server) settledMemory(ctx context.Context, maxWait time.Duration) (rss, heap uint64, err error) {
	if _, err := s.gcHeap(ctx); err != nil {
		return 0, 0, err
	}
	const window = 6 // samples, s.settleEvery apart
	var samples []uint64
	deadline := time.Now().Add(maxWait)
	for {
		v, err := s.rss()
		if err != nil {
			return 0, 0, err
		}
		samples = append(samples, v)
		if len(samples) >= window {
			last := samples[len(samples)-window:]
			lo, hi := last[0], last[0]
			for _, x := range last {
				lo, hi = min(lo, x), max(hi, x)
			}
			if float64(hi-lo) <= 0.01*float64(hi) || time.Now().After(deadline) {
				break
			}
		}
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(s.settleEvery):
		}
	}
	if heap, err = s.gcHeap(ctx); err != nil {
		return 0, 0, err
	}
	rss, err = s.rss()
	return rss, heap, err
}

// profile takes a CPU profile of the server for d and saves it to path.
func (s *server) profile(ctx context.Context, d time.Duration, path string) error {
	body, err := httpGet(ctx, fmt.Sprintf("%s/profile?seconds=%d", s.pprofURL, int(d.Seconds())), d+30*time.Second)
	if err != nil {
		return err
	}
	return os.WriteFile(path, body, 0o600)
}

// heapProfile saves the server's heap profile (live objects as of the last
// GC) to path.
func (s *server) heapProfile(ctx context.Context, path string) error {
	body, err := httpGet(ctx, s.pprofURL+"/heap", 30*time.Second)
	if err != nil {
		return err
	}
	return os.WriteFile(path, body, 0o600)
}

func httpGet(ctx context.Context, url string, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return body, nil
}

// dnsClient queries one server over a single UDP socket.
type dnsClient struct {
	client *dns.Client
	conn   *dns.Conn
}

func newDNSClient(addr string) (*dnsClient, error) {
	c := &dns.Client{Net: "udp", Timeout: 500 * time.Millisecond}
	conn, err := c.Dial(addr)
	if err != nil {
		return nil, err
	}
	return &dnsClient{client: c, conn: conn}, nil
}

func (c *dnsClient) close() { c.conn.Close() }

// a returns the rcode and the A records of name.
func (c *dnsClient) a(name string) (int, []string, error) {
	r, err := c.exchangeA(name)
	if err != nil {
		return 0, nil, err
	}
	var ips []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			ips = append(ips, a.A.String())
		}
	}
	return r.Rcode, ips, nil
}

func (c *dnsClient) exchangeA(name string) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	r, _, err := c.client.ExchangeWithConn(m, c.conn)
	return r, err
}

// answerOf describes a reply by what a client uses of it: the rcode, the
// AA bit and the answer records in presentation form.
func answerOf(r *dns.Msg) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s aa=%v", dns.RcodeToString[r.Rcode], r.Authoritative)
	for _, rr := range r.Answer {
		b.WriteString("; ")
		b.WriteString(strings.Join(strings.Fields(rr.String()), " "))
	}
	return b.String()
}
