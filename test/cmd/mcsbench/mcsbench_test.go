package main

import (
	"slices"
	"testing"
	"time"
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
