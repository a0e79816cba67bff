// Package outage asks a cluster DNS in front of coredns-mcs standalone what
// pods ask, at a steady rate, and compares each answer with the same
// question asked of the cluster DNS alone: for the tests and the benchmark
// that take the standalone server away (docs/platforms.md, "Never worse
// than the cluster DNS alone").
package outage

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// Kind is a kind of lookup a pod makes through the cluster DNS.
type Kind string

const (
	// External is a name outside the cluster through a pod's search path
	// (ndots:5, namespace NS): NAME.NS.svc.cluster.local,
	// NAME.svc.cluster.local, NAME.cluster.local, then NAME, one after the
	// other as a stub resolver walks them, until one answers.
	External Kind = "external (search path)"
	// Local is a local Service's name and its ClusterIP's PTR.
	Local Kind = "local"
	// Import is an import-only name under cluster.local, which needs the
	// standalone server: NXDOMAIN is allowed while it is away, SERVFAIL and
	// time-outs never.
	Import Kind = "import"
)

// Kinds lists every kind, in the order of the table.
var Kinds = []Kind{External, Local, Import}

// Result is one lookup through the front and, but for imports, the same
// through the cluster DNS alone.
type Result struct {
	Kind        Kind
	Front       time.Duration
	Alone       time.Duration // 0 for imports
	Failure     string        // empty: none
	NXDOMAIN    bool          // an import answered NXDOMAIN
	Answered    bool          // an import answered its address
	Description string
}

// Config says whom to ask what.
type Config struct {
	// Front and Alone are the addresses (IP:port) of the cluster DNS with
	// the configuration that forwards to coredns-mcs, and without it.
	Front, Alone string
	// Namespace is the pods' namespace, for the search path.
	Namespace string
	// Local is a local Service's name, PTR the reverse name of its
	// ClusterIP.
	Local, PTR string
	// Import is an import-only name under cluster.local, ImportAddress its
	// address.
	Import, ImportAddress string
	// Every is the interval between the starts of two rounds of lookups
	// (one of each kind); default 20ms.
	Every time.Duration
}

// Timed is a result and when its round began, since the start of Run.
type Timed struct {
	Result
	Began time.Duration
}

// Run starts a round of lookups (one of each kind) every cfg.Every for d,
// as many pods do: a client that waits for each answer before its next
// question would ask less while answers are slow, and hide them. Each
// question is asked once, with a 5 s time-out, as a stub resolver does.
func Run(cfg Config, d time.Duration) []Timed {
	every := cfg.Every
	if every == 0 {
		every = 20 * time.Millisecond
	}
	var (
		mu      sync.Mutex
		results []Timed
		running sync.WaitGroup
	)
	start := time.Now()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for i := 0; time.Since(start) < d; i++ {
		began := time.Since(start)
		host := fmt.Sprintf("x%d-%d.example.org.", start.UnixNano()%1e6, i)
		running.Go(func() {
			round := []Result{
				searchWalk(cfg, host),
				compare(cfg, Local, cfg.Local, dns.TypeA),
				compare(cfg, Local, cfg.PTR, dns.TypePTR),
				importLookup(cfg),
			}
			mu.Lock()
			defer mu.Unlock()
			for _, r := range round {
				results = append(results, Timed{r, began})
			}
		})
		<-tick.C
	}
	running.Wait()
	return results
}

// exchange asks addr once over UDP.
func exchange(addr, name string, qtype uint16) (*dns.Msg, time.Duration, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.RecursionDesired = true
	c := dns.Client{Net: "udp", Timeout: 5 * time.Second}
	start := time.Now()
	r, _, err := c.Exchange(m, addr)
	return r, time.Since(start), err
}

// answerOf is a comparable form of an answer: its rcode and records
// without TTLs, sorted.
func answerOf(r *dns.Msg) string {
	var rrs []string
	for _, rr := range r.Answer {
		c := dns.Copy(rr)
		c.Header().Ttl = 0
		rrs = append(rrs, c.String())
	}
	sort.Strings(rrs)
	return dns.RcodeToString[r.Rcode] + " " + strings.Join(rrs, " | ")
}

// searchWalk resolves host as a pod of cfg.Namespace with ndots:5 does,
// through the front and through the cluster DNS alone.
func searchWalk(cfg Config, host string) Result {
	names := []string{host + cfg.Namespace + ".svc.cluster.local.", host + "svc.cluster.local.", host + "cluster.local.", host}
	res := Result{Kind: External, Description: host}
	walk := func(addr string) (string, time.Duration, string) {
		var total time.Duration
		for _, n := range names {
			r, took, err := exchange(addr, n, dns.TypeA)
			total += took
			if err != nil {
				return "", total, fmt.Sprintf("%s: %v", n, err)
			}
			if r.Rcode == dns.RcodeServerFailure {
				return "", total, n + ": SERVFAIL"
			}
			if r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0 {
				return n + " " + answerOf(r), total, ""
			}
		}
		return "no answer", total, ""
	}
	got, frontTook, failure := walk(cfg.Front)
	want, aloneTook, aloneFailure := walk(cfg.Alone)
	res.Front, res.Alone = frontTook, aloneTook
	switch {
	case failure != "":
		res.Failure = failure
	case aloneFailure != "":
		res.Failure = "alone: " + aloneFailure
	case got != want:
		res.Failure = fmt.Sprintf("answered %q, alone %q", got, want)
	}
	return res
}

// compare asks the front and the cluster DNS alone the same question; they
// must answer alike.
func compare(cfg Config, kind Kind, name string, qtype uint16) Result {
	res := Result{Kind: kind, Description: name + " " + dns.TypeToString[qtype]}
	r, took, err := exchange(cfg.Front, name, qtype)
	res.Front = took
	a, aloneTook, aloneErr := exchange(cfg.Alone, name, qtype)
	res.Alone = aloneTook
	switch {
	case err != nil:
		res.Failure = err.Error()
	case aloneErr != nil:
		res.Failure = "alone: " + aloneErr.Error()
	case answerOf(r) != answerOf(a):
		res.Failure = fmt.Sprintf("answered %q, alone %q", answerOf(r), answerOf(a))
	}
	return res
}

// importLookup asks the front for the import-only name.
func importLookup(cfg Config) Result {
	res := Result{Kind: Import, Description: cfg.Import}
	r, took, err := exchange(cfg.Front, cfg.Import, dns.TypeA)
	res.Front = took
	switch {
	case err != nil:
		res.Failure = err.Error()
	case r.Rcode == dns.RcodeNameError:
		res.NXDOMAIN = true
	case r.Rcode == dns.RcodeSuccess && len(r.Answer) == 1 && strings.HasSuffix(r.Answer[0].String(), "\t"+cfg.ImportAddress):
		res.Answered = true
	default:
		res.Failure = "answered " + answerOf(r)
	}
	return res
}

// Phase is the lookups of one state of the standalone server.
type Phase struct {
	Name    string
	Results []Result
}

// Phases makes one phase of timed results, or two when split > 0: those
// whose round began before split, named first, and the rest.
func Phases(name string, timed []Timed, split time.Duration, first string) []Phase {
	all, early, later := Phase{Name: name}, Phase{Name: first}, Phase{Name: name}
	for _, r := range timed {
		all.Results = append(all.Results, r.Result)
		if r.Began < split {
			early.Results = append(early.Results, r.Result)
		} else {
			later.Results = append(later.Results, r.Result)
		}
	}
	if split > 0 {
		return []Phase{early, later}
	}
	return []Phase{all}
}

// Count counts the results of kind that f holds for.
func (p Phase) Count(kind Kind, f func(Result) bool) int {
	n := 0
	for _, r := range p.Results {
		if r.Kind == kind && f(r) {
			n++
		}
	}
	return n
}

// Table is the phases as a Markdown table: per phase and kind, the
// lookups, failures, imports answered NXDOMAIN, and the latency through
// the front, through the cluster DNS alone, and the difference (p50 /
// p99).
func Table(phases []Phase) string {
	var b strings.Builder
	b.WriteString("| phase | lookup | n | failures | NXDOMAIN | front p50 / p99 | alone p50 / p99 | added p50 / p99 |\n|---|---|---|---|---|---|---|---|\n")
	for _, p := range phases {
		for _, kind := range Kinds {
			var front, alone []time.Duration
			failures, nx := 0, 0
			for _, r := range p.Results {
				if r.Kind != kind {
					continue
				}
				front = append(front, r.Front)
				if r.Alone > 0 {
					alone = append(alone, r.Alone)
				}
				if r.Failure != "" {
					failures++
				}
				if r.NXDOMAIN {
					nx++
				}
			}
			fp50, fp99 := Quantiles(front)
			aloneCol, added, nxCol := "n/a", "n/a", "n/a"
			if len(alone) > 0 {
				ap50, ap99 := Quantiles(alone)
				aloneCol = ms(ap50) + " / " + ms(ap99)
				added = ms(fp50-ap50) + " / " + ms(fp99-ap99)
			}
			if kind == Import {
				nxCol = fmt.Sprint(nx)
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %d | %s | %s / %s | %s | %s |\n", p.Name, kind, len(front), failures, nxCol, ms(fp50), ms(fp99), aloneCol, added)
		}
	}
	return b.String()
}

// Quantiles returns the median and the 99th percentile of d.
func Quantiles(d []time.Duration) (p50, p99 time.Duration) {
	if len(d) == 0 {
		return 0, 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)/2], s[(len(s)-1)*99/100]
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000)
}
