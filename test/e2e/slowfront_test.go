package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	mcsfront "github.com/coredns-mcs/coredns-mcs/internal/front"
	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// slowFrontLookups is how many import lookups TestFrontSlowIsNeverNXDOMAIN
// asks through the front while both cores are busy.
const slowFrontLookups = 10000

// TestFrontSlowIsNeverNXDOMAIN asks 10,000 import names through the front
// that kubectl mcs front writes for CoreDNS 1.15.0 (which has forward's
// read_timeout), half in cluster.local and half in clusterset.local, while
// busy loops keep every core of the machine busy, and sees no NXDOMAIN: a
// slow coredns-mcs makes an import slow, never unknown. Then it hangs the
// standalone server (SIGSTOP) and measures what a forwarded name costs
// until the front's health checks mark it down.
//
// Busy cores rarely make the standalone server slower than a few tens of
// ms, so a second front reaches it through a relay that holds one reply in
// ten for slowReplyDelay, half the default read timeout, and 2,000 more
// lookups see no NXDOMAIN either. While the server hangs, cluster.local
// names answer the stand-in's NXDOMAIN, clusterset names its SERVFAIL,
// never NXDOMAIN.
//
// FRONT_READ_TIMEOUTS ("20ms 100ms 250ms") runs the same with each read
// timeout instead of the default, and judges only the default: the table
// of docs/platforms.md (Slow is not unknown) comes from such a run.
func TestFrontSlowIsNeverNXDOMAIN(t *testing.T) {
	bin, err := stockCoreDNS()
	if err != nil {
		t.Fatal(err)
	}
	candidates := []time.Duration{mcsfront.DefaultReadTimeout}
	if s := os.Getenv("FRONT_READ_TIMEOUTS"); s != "" {
		candidates = nil
		for _, f := range strings.Fields(s) {
			d, err := time.ParseDuration(f)
			if err != nil {
				t.Fatalf("FRONT_READ_TIMEOUTS: %v", err)
			}
			candidates = append(candidates, d)
		}
	}
	ns := namespace(t, "slowfront")
	importIP := "10.42.9.1"
	createImport(t, newImport(ns, "remote", importIP))
	upstream := startRecordingResolver(t)
	standalone := startStandalone(t, shippedStandaloneCorefile(t))

	relay := startSlowRelay(t, standalone.addr, 10, slowReplyDelay)

	var table strings.Builder
	fmt.Fprintf(&table, "read timeout | busy cores: lookups, NXDOMAIN, SERVFAIL, p50 / p99 / max ms | 1 reply in 10 %s late: lookups, NXDOMAIN, SERVFAIL | hung: a cluster.local name's max ms, slow for | hung: clusterset max ms\n", slowReplyDelay)
	for _, rt := range candidates {
		front := startShippedFront(t, shippedFront{version: "v1.15.0", platform: mcsfront.Kubeadm, readTimeout: rt}, bin, standalone.addr, upstream.addr)
		names := []string{"remote." + ns + ".svc.cluster.local.", "remote." + ns + ".svc.clusterset.local."}
		waitAnswers(t, front.addr, names, importIP)

		stopLoad := harness.BusyCores(t)
		busy := askUnderLoad(t, front.addr, names, importIP, slowFrontLookups)
		stopLoad()

		slowFront := startShippedFront(t, shippedFront{version: "v1.15.0", platform: mcsfront.Kubeadm, readTimeout: rt}, bin, relay.addr, upstream.addr)
		waitAnswers(t, slowFront.addr, names, importIP)
		slow := askUnderLoad(t, slowFront.addr, names, importIP, slowFrontLookups/5)

		hung := hangCost(t, front.addr, standalone, "example.com.svc.cluster.local.", names[1], rt)
		waitAnswers(t, front.addr, names, importIP)

		fmt.Fprintf(&table, "%s | %d, %d, %d, %.1f / %.1f / %.1f | %d, %d, %d | %.0f, %.1f s | %.0f\n",
			rt, busy.lookups, busy.nxdomain, busy.servfail, busy.pct(50), busy.pct(99), busy.pct(100),
			slow.lookups, slow.nxdomain, slow.servfail, hung.max, hung.slowFor.Seconds(), hung.clustersetMax)
		if rt != mcsfront.DefaultReadTimeout {
			continue
		}
		for what, s := range map[string]*loadStats{"on busy cores": busy, fmt.Sprintf("answering one query in ten %s late", slowReplyDelay): slow} {
			if s.nxdomain > 0 {
				t.Errorf("read timeout %s: %d of %d import lookups answered NXDOMAIN while coredns-mcs ran %s: %s", rt, s.nxdomain, s.lookups, what, strings.Join(s.examples, "; "))
			}
			if s.wrong > 0 {
				t.Errorf("read timeout %s: %d of %d import lookups answered something else while coredns-mcs ran %s: %s", rt, s.wrong, s.lookups, what, strings.Join(s.examples, "; "))
			}
			if s.lost > 0 {
				t.Errorf("read timeout %s: %d of %d import lookups had no answer in three tries of 5 s while coredns-mcs ran %s", rt, s.lost, s.lookups, what)
			}
		}
		// A hung server costs each forwarded name one read timeout until
		// the health checks mark it down; the front's own answer and the
		// round trips add a few ms, a busy machine a few more.
		if limit := float64(rt.Milliseconds()) + 200; hung.max > limit {
			t.Errorf("read timeout %s: a forwarded name took %.0f ms while coredns-mcs hung, more than %.0f", rt, hung.max, limit)
		}
	}
	t.Log("\n" + table.String())
}

// waitAnswers waits until every name answers ip through addr.
func waitAnswers(t *testing.T, addr string, names []string, ip string) {
	t.Helper()
	poll.Eventually(t, time.Minute, "the import through the front", func() (bool, string) {
		for _, name := range names {
			r, _, err := (&dns.Client{Net: "udp", Timeout: 2 * time.Second}).Exchange(new(dns.Msg).SetQuestion(name, dns.TypeA), addr)
			if err != nil {
				return false, fmt.Sprintf("%s: %v", name, err)
			}
			if got := answerIPs(r); !slices.Equal(got, []string{ip}) {
				return false, fmt.Sprintf("%s: %s %v", name, dns.RcodeToString[r.Rcode], got)
			}
		}
		return true, ""
	})
}

func answerIPs(r *dns.Msg) []string {
	var ips []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			ips = append(ips, a.A.String())
		}
	}
	return ips
}

// loadStats is what askUnderLoad saw.
type loadStats struct {
	lookups, nxdomain, servfail, wrong, lost, retries int
	ms                                                []float64
	examples                                          []string
}

func (s *loadStats) pct(p int) float64 {
	if len(s.ms) == 0 {
		return 0
	}
	slices.Sort(s.ms)
	return s.ms[min(len(s.ms)-1, len(s.ms)*p/100)]
}

// askUnderLoad asks the names in turn, n lookups in all, from four
// clients at once, each as dig does: 5 s a try, three tries.
func askUnderLoad(t *testing.T, addr string, names []string, ip string, n int) *loadStats {
	t.Helper()
	s := &loadStats{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan int)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &dns.Client{Net: "udp", Timeout: 5 * time.Second}
			for i := range next {
				name := names[i%len(names)]
				var r *dns.Msg
				var err error
				tries := 0
				began := time.Now()
				for tries < 3 {
					tries++
					r, _, err = c.Exchange(new(dns.Msg).SetQuestion(name, dns.TypeA), addr)
					var ne net.Error
					if err == nil || !errors.As(err, &ne) || !ne.Timeout() {
						break
					}
				}
				took := time.Since(began)
				mu.Lock()
				s.lookups++
				s.retries += tries - 1
				s.ms = append(s.ms, float64(took.Microseconds())/1000)
				example := func(what string) {
					if len(s.examples) < 5 {
						s.examples = append(s.examples, fmt.Sprintf("%s %s after %s", name, what, took.Round(time.Millisecond)))
					}
				}
				switch {
				case err != nil:
					s.lost++
					example(err.Error())
				case r.Rcode == dns.RcodeNameError:
					s.nxdomain++
					example("NXDOMAIN")
				case r.Rcode == dns.RcodeServerFailure:
					s.servfail++
				case !slices.Equal(answerIPs(r), []string{ip}):
					s.wrong++
					example(fmt.Sprintf("%s %v", dns.RcodeToString[r.Rcode], answerIPs(r)))
				}
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return s
}

// hangStats is what a hung standalone server cost a forwarded name.
type hangStats struct {
	max           float64       // ms, the slowest answer in cluster.local
	slowFor       time.Duration // from the hang to the last answer that waited a read timeout
	clustersetMax float64       // ms, the slowest answer in clusterset.local
}

// hangCost stops the standalone server and asks name (a cluster.local name
// the front forwards, which answers NXDOMAIN) one query after another for
// 4 s, and clusterset (an import's clusterset name) beside it, which must
// answer SERVFAIL, never NXDOMAIN; then it resumes the server.
func hangCost(t *testing.T, addr string, standalone *standaloneServer, name, clusterset string, readTimeout time.Duration) hangStats {
	t.Helper()
	if err := standalone.process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = standalone.process.Signal(syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)
	defer resume()
	var h hangStats
	c := &dns.Client{Net: "udp", Timeout: 5 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			began := time.Now()
			r, _, err := c.Exchange(new(dns.Msg).SetQuestion(clusterset, dns.TypeA), addr)
			took := time.Since(began)
			switch {
			case err != nil:
				t.Errorf("%s while coredns-mcs hung: %v", clusterset, err)
			case r.Rcode == dns.RcodeNameError:
				t.Errorf("%s while coredns-mcs hung: NXDOMAIN, an import told it does not exist", clusterset)
			case r.Rcode == dns.RcodeServerFailure:
			case r.Rcode == dns.RcodeSuccess && len(answerIPs(r)) > 0:
				// The front's cache still holds the import's address.
			default:
				t.Errorf("%s while coredns-mcs hung: %s %v, want SERVFAIL or the cached address", clusterset, dns.RcodeToString[r.Rcode], answerIPs(r))
			}
			h.clustersetMax = max(h.clustersetMax, float64(took.Microseconds())/1000)
		}
	}()
	defer wg.Wait()
	start := time.Now()
	for ctx.Err() == nil {
		began := time.Now()
		r, _, err := c.Exchange(new(dns.Msg).SetQuestion(name, dns.TypeA), addr)
		took := time.Since(began)
		if err != nil {
			t.Errorf("%s while coredns-mcs hung: %v", name, err)
			continue
		}
		if r.Rcode != dns.RcodeNameError {
			t.Errorf("%s while coredns-mcs hung: %s, want NXDOMAIN", name, dns.RcodeToString[r.Rcode])
		}
		h.max = max(h.max, float64(took.Microseconds())/1000)
		if took >= readTimeout {
			h.slowFor = time.Since(start)
		}
	}
	return h
}

// slowReplyDelay is how late startSlowRelay's slow replies are: half the
// default read timeout.
const slowReplyDelay = mcsfront.DefaultReadTimeout / 2

// A slowRelay stands between the front and the standalone server over UDP
// and holds one reply in every for delay: a standalone server that
// answers late now and then, as a starved one does.
type slowRelay struct {
	addr string
}

func startSlowRelay(t *testing.T, upstream string, every int, delay time.Duration) *slowRelay {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var mu sync.Mutex
	n := 0
	go func() {
		for {
			buf := make([]byte, 65535)
			size, from, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			mu.Lock()
			n++
			late := n%every == 0
			mu.Unlock()
			go func(query []byte) {
				up, err := net.Dial("udp", upstream)
				if err != nil {
					return
				}
				defer up.Close()
				_ = up.SetDeadline(time.Now().Add(5 * time.Second))
				if _, err := up.Write(query); err != nil {
					return
				}
				reply := make([]byte, 65535)
				size, err := up.Read(reply)
				if err != nil {
					return
				}
				if late {
					time.Sleep(delay) // the model: a reply this late
				}
				_, _ = conn.WriteTo(reply[:size], from)
			}(buf[:size])
		}
	}()
	return &slowRelay{addr: conn.LocalAddr().String()}
}
