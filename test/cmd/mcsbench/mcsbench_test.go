package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coredns-mcs/coredns-mcs/test/internal/corefiles"
	"github.com/coredns-mcs/coredns-mcs/test/internal/process"
)

const dnsperfOutput = `DNS Performance Testing Tool
Version 2.10.0

[Status] Command line: dnsperf -s 127.0.0.1 -p 1053 -d local.queries -l 5 -t 2
[Status] Testing complete (time limit)

Statistics:

  Queries sent:         146512
  Queries completed:    146500 (99.99%)
  Queries lost:         12 (0.01%)

  Response codes:       NOERROR 146400 (99.93%), NXDOMAIN 100 (0.07%)
  Average packet size:  request 52, response 120
  Run time (s):         5.000123
  Queries per second:   29299.279

  Average Latency (s):  0.003359 (min 0.000035, max 0.016108)
`

func TestParseDNSPerf(t *testing.T) {
	r, err := parseDNSPerf(dnsperfOutput)
	if err != nil {
		t.Fatal(err)
	}
	want := perfResult{qps: 29299.279, sent: 146512, completed: 146500, lost: 12, noerror: 146400}
	if r != want {
		t.Errorf("got %+v, want %+v", r, want)
	}
	if _, err := parseDNSPerf("Error: socket: Connection refused"); err == nil {
		t.Error("output without statistics parsed without error")
	}
}

func TestStatistics(t *testing.T) {
	if m := median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("median odd = %v", m)
	}
	if m := median([]float64{4, 1, 2, 3}); m != 2.5 {
		t.Errorf("median even = %v", m)
	}
	var ds []time.Duration
	for i := 1; i <= 200; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	if p := percentile(ds, 50); p != 100*time.Millisecond {
		t.Errorf("p50 = %v", p)
	}
	if p := percentile(ds, 99); p != 198*time.Millisecond {
		t.Errorf("p99 = %v", p)
	}
	c := comparison{qa: []float64{100, 200}, qb: []float64{90, 200}}
	if r := c.sumRatio(); r != 290.0/300 {
		t.Errorf("sum ratio = %v", r)
	}
	if r := c.medianRatio(); r != 0.95 {
		t.Errorf("median ratio = %v", r)
	}
}

func TestGoBenchParse(t *testing.T) {
	g := goBench{lines: []string{
		"pkg: github.com/coredns/coredns/plugin/kubernetes",
		"BenchmarkServices-2   	 1000000	      1200 ns/op	     320 B/op	       5 allocs/op",
		"BenchmarkServices-2   	 1000000	      1000 ns/op	     320 B/op	       5 allocs/op",
		"BenchmarkServices-2   	 1000000	      1100 ns/op	     320 B/op	       5 allocs/op",
		"BenchmarkServicesHeadless-2   	 1000000	      900 ns/op",
	}}
	if v, ok := g.nsPerOp("BenchmarkServices"); !ok || v != 1100 {
		t.Errorf("BenchmarkServices = %v, %v; want the median 1100", v, ok)
	}
	if _, ok := g.nsPerOp("BenchmarkController"); ok {
		t.Error("a benchmark that did not run was found")
	}
}

func TestImportIPDistinct(t *testing.T) {
	seen := map[string]int{}
	for i := range 200000 {
		ip := importIP(i)
		if j, dup := seen[ip]; dup {
			t.Fatalf("importIP(%d) = importIP(%d) = %s", i, j, ip)
		}
		seen[ip] = i
	}
}

func TestStackGrowthCallers(t *testing.T) {
	peek := `File: coredns
Type: cpu
Showing nodes accounting for 9.94s, 100% of 9.94s total
----------------------------------------------------------+-------------
      flat  flat%   sum%        cum   cum%   calls calls% + context 	 	 
----------------------------------------------------------+-------------
                                             0.56s 56.00% |   github.com/miekg/dns.UnpackDomainName
                                             0.44s 44.00% |   github.com/coredns-mcs/coredns-mcs/plugin/multicluster.reserveStack
         0     0%     0%         1s 10.10%                | runtime.newstack
                                             0.83s 83.00% |   runtime.copystack
                                             0.15s 15.00% |   runtime.funcMaxSPDelta
----------------------------------------------------------+-------------
`
	got := stackGrowthCallers(peek)
	want := []string{"github.com/miekg/dns.UnpackDomainName 56.00%", "github.com/coredns-mcs/coredns-mcs/plugin/multicluster.reserveStack 44.00%"}
	if !slices.Equal(got, want) {
		t.Errorf("stackGrowthCallers = %q, want %q", got, want)
	}
	if got := stackGrowthCallers("no profile here"); got != nil {
		t.Errorf("stackGrowthCallers of nothing = %q, want nil", got)
	}
}

func TestSummaryVerdicts(t *testing.T) {
	const mib = 1 << 20
	r := &results{cfg: config{n: 1000, mid: 10000, big: 50000, rounds: 1, round: time.Second}}
	r.propagation = []propagation{{delay: 3 * time.Millisecond}, {delay: 5 * time.Millisecond}}
	r.memory = []memRow{
		{with: false, size: 0, rss: 60 * mib, heap: 4 * mib},
		{with: true, size: 0, rss: 61 * mib, heap: 4 * mib},
		{with: false, size: 10000, rss: 80 * mib, heap: 13 * mib},
		{with: true, size: 10000, rss: 90 * mib, heap: 21 * mib}, // 8 MiB more for 10,000 imports: under 9 MiB per 10,000 Services
		{with: false, size: 50000, rss: 180 * mib, heap: 47 * mib},
		{with: true, size: 50000, rss: 260 * mib, heap: 95 * mib, startup: 40 * time.Second}, // 48 MiB more: over 43
	}
	md := r.markdown()
	for _, want := range []string{
		"p99 < 200 ms: met",
		"< 30 s: **missed**",
		"0 to 10000: kubernetes plugin per 1000 Services; multicluster's extra per 1000 ServiceImports (VmRSS / live heap) | 2048 KiB / 922 KiB; 922 KiB / 819 KiB | live heap per 1000 imports <= per 1000 Services: met",
		"0 to 50000: kubernetes plugin per 1000 Services; multicluster's extra per 1000 ServiceImports (VmRSS / live heap) | 2458 KiB / 881 KiB; 1618 KiB / 983 KiB | live heap per 1000 imports <= per 1000 Services: **missed**",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
}

func TestGoBenchMetrics(t *testing.T) {
	g := goBench{lines: []string{
		"BenchmarkLookupDuringChurn/churn=true-2      	       9	 189721486 ns/op	   6998981 max-ns	       320.0 p99-ns	     47619 p99.9-ns	       171.9 slice-events/op",
		"BenchmarkLookupDuringChurn/churn=true-2      	       9	 189721486 ns/op	   6998981 max-ns	       340.0 p99-ns	     47619 p99.9-ns	       171.9 slice-events/op",
		"BenchmarkLookupDuringChurn/churn=true-2      	       9	 189721486 ns/op	   6998981 max-ns	       360.0 p99-ns	     47619 p99.9-ns	       171.9 slice-events/op",
		"BenchmarkSliceUpdate/endpoints=1000-2         	   59396	     28707 ns/op	    1255 B/op	       8 allocs/op",
	}}
	for _, tc := range []struct {
		name, unit string
		want       float64
	}{
		{"BenchmarkLookupDuringChurn/churn=true", "p99-ns", 340},
		{"BenchmarkLookupDuringChurn/churn=true", "slice-events/op", 171.9},
		{"BenchmarkSliceUpdate/endpoints=1000", "ns/op", 28707},
		{"BenchmarkSliceUpdate/endpoints=1000", "allocs/op", 8},
	} {
		if got, ok := g.metricOf(tc.name, tc.unit); !ok || got != tc.want {
			t.Errorf("%s %s = %v %v, want %v", tc.name, tc.unit, got, ok, tc.want)
		}
	}
	if _, ok := g.metricOf("BenchmarkSliceUpdate/endpoints=10000", "ns/op"); ok {
		t.Errorf("a benchmark that did not run has a value")
	}
}

// The scale section measures the shipped kubernetes stanza: its labels line
// must be the one manifests/corefile, manifests/standalone and the chart's
// values ship, inside the kubernetes block of corefileShipped.
func TestCorefileShipped(t *testing.T) {
	_, kube, ok := strings.Cut(corefileShipped, "    kubernetes cluster.local")
	if !ok || !strings.Contains(kube, "        "+corefiles.KubernetesLabels+"\n") || strings.Count(corefileShipped, corefiles.KubernetesLabels) != 1 {
		t.Errorf("corefileShipped has no %q in its kubernetes block:\n%s", corefiles.KubernetesLabels, corefileShipped)
	}
	if strings.Replace(corefileShipped, "        "+corefiles.KubernetesLabels+"\n", "", 1) != corefileWith {
		t.Errorf("corefileShipped differs from corefileWith by more than the labels line:\n%s", corefileShipped)
	}
	for _, f := range []string{"manifests/corefile/configmap.yaml", "manifests/standalone/configmap.yaml", "charts/coredns-mcs/values.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "..", f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), corefiles.KubernetesLabels) {
			t.Errorf("%s does not ship %q", f, corefiles.KubernetesLabels)
		}
	}
}

// The relist rounds under a memory limit take it from docs/deploy.md's
// rule: its constants here must be the document's.
func TestMemoryRuleOfDocs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(string(b)), " ")
	for _, want := range []string{
		fmt.Sprintf("steady (MiB) = %v + (Services + ServiceImports) / 1000 x %v + endpoints in the EndpointSlices of imports / 1000 x %v ", ruleBaseMiB, rulePerThousandObjects, rulePerThousandEndpoints),
		fmt.Sprintf("limit = %v x steady", ruleLimitFactor),
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/deploy.md does not say %q", want)
		}
	}
	// 100,000 + 5,000 imports, 100,200 Services, 1,000,000 endpoints.
	if got, want := float64(ruleSteady(205200, 1000000))/(1<<20), 75+205.2*1.4+1000*0.3; math.Abs(got-want) > 0.01 {
		t.Errorf("ruleSteady = %.2f MiB, want %.2f", got, want)
	}
	if got, want := float64(ruleLimit(205200, 1000000))/(1<<20), 1.3*(75+205.2*1.4+1000*0.3); math.Abs(got-want) > 0.01 {
		t.Errorf("ruleLimit = %.2f MiB, want %.2f", got, want)
	}
}

// TestWaitReadyReportsWhatReadySaid: a server whose /ready never answers 200
// is reported with what it answered last (the ready plugin names the
// plugins not ready), in the error and in the server's notReady.
func TestWaitReadyReportsWhatReadySaid(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "kubernetes")
	}))
	defer srv.Close()
	dir := t.TempDir()
	p, err := process.Start(process.Spec{Name: "sleeper", Path: "sleep", Args: []string{"60"}, LogPath: filepath.Join(dir, "sleeper.log")})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Stop(5 * time.Second) }()
	s := &server{proc: p, readyURL: srv.URL + "/ready", logPath: filepath.Join(dir, "sleeper.log")}
	err = s.waitReady(context.Background(), 300*time.Millisecond)
	const want = `503 "kubernetes"`
	if err == nil || !strings.Contains(err.Error(), "/ready: "+want) || s.notReady != want {
		t.Fatalf("waitReady: %v, notReady %q; want both to say %s", err, s.notReady, want)
	}
}

// TestHostileWireRows: the lines of benchmarks that report metrics of their
// own (b.ReportMetric, printed between ns/op and B/op) are read, and the
// wire table shows the reply and the amplification before and after.
func TestHostileWireRows(t *testing.T) {
	h := &hostileResult{base: "6e3606c", baseCommit: "6e3606c",
		prev: goBench{lines: []string{
			"BenchmarkHostileWire/headless_SRV_1000_endpoints/udp_edns65535-2       	     272	   4444617 ns/op	      1000 amplification	     65017 reply-octets	 1682162 B/op	    1437 allocs/op",
		}},
		after: goBench{lines: []string{
			"BenchmarkHostileWire/headless_SRV_1000_endpoints/udp_edns65535-2       	   15762	     73347 ns/op	        18.74 amplification	      1218 reply-octets	   31352 B/op	     123 allocs/op",
			"BenchmarkHostileQuery/headless_A_3000_endpoints/udp-2                    	  279802	      4145 ns/op	    6376 B/op	       6 allocs/op",
		}},
	}
	names, ns, bytes := h.after.medians()
	if len(names) != 2 || ns[names[0]] != 73347 || bytes[names[0]] != 31352 || bytes[names[1]] != 6376 {
		t.Fatalf("medians: %v %v %v", names, ns, bytes)
	}
	var b strings.Builder
	h.write(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) })
	want := "| `HostileWire/headless_SRV_1000_endpoints/udp_edns65535` | 65017 octets | 1000x | 1218 octets | 19x |"
	if !strings.Contains(b.String(), want) {
		t.Errorf("the section lacks %q:\n%s", want, b.String())
	}
}
