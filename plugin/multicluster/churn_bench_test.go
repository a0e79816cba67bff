package multicluster

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// perSlice is how many endpoints the EndpointSlice controller puts in one
// slice by default (--max-endpoints-per-slice).
const perSlice = 100

// churnSlice returns slice i of a headless import of ns/db in cluster east,
// in generation gen: endpoint j of slice i has address 10.(i/256).(i%256).j+1
// and hostname db-i-j; generation gen moves one endpoint (j = gen%perSlice)
// to another address, as a rolling update replaces one pod at a time.
func churnSlice(i, gen int) *sliceSpec {
	eps := make([]discovery.Endpoint, perSlice)
	for j := range perSlice {
		third := j + 1
		if gen > 0 && j == gen%perSlice {
			third = 100 + (gen/perSlice)%150 + 1
		}
		eps[j] = ep(fmt.Sprintf("10.%d.%d.%d", i/256, i%256, third), fmt.Sprintf("db-%d-%d", i, j), nil)
	}
	s, _, err := newSliceSpec(&discovery.EndpointSlice{
		ObjectMeta:  meta.ObjectMeta{Namespace: "ns1", Name: fmt.Sprintf("db-%d", i), Labels: map[string]string{labelServiceName: "db", labelSourceCluster: "east"}},
		AddressType: discovery.AddressTypeIPv4,
		Endpoints:   eps,
	}, len(defaultZone))
	if err != nil {
		panic(err)
	}
	return s
}

// churnPlugin returns a plugin with one headless import of n endpoints, in
// slices of perSlice.
func churnPlugin(b testing.TB, n int) *Multicluster {
	m, _ := newTestPlugin(b, []importDef{{ns: "ns1", name: "db", typ: "Headless", ports: []portFields{{name: "pg", port: 5432}}}}, fakeLocal{})
	m.Next = discard{}
	for i := range n / perSlice {
		m.sources.setSlice(churnSlice(i, 0))
	}
	if got := m.index.lookup("ns1", "db").eps.n4; got != n {
		b.Fatalf("%d endpoints, want %d", got, n)
	}
	return m
}

// BenchmarkSliceUpdate is the cost of one EndpointSlice event of a headless
// import of 1k, 10k and 100k endpoints: the work of the informer's handler,
// from the converted slice to the published view and reverse map. The
// slices are converted before the clock starts, as the informer converts
// them before the handler runs.
func BenchmarkSliceUpdate(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("endpoints=%d", n), func(b *testing.B) {
			m := churnPlugin(b, n)
			slices := n / perSlice
			// Two generations of every slice, alternating: each update
			// changes one endpoint of one slice.
			gens := [2][]*sliceSpec{}
			for g := range gens {
				for i := range slices {
					gens[g] = append(gens[g], churnSlice(i, g+1))
				}
			}
			b.ReportAllocs()
			k := 0
			for b.Loop() {
				m.sources.setSlice(gens[(k/slices)%2][k%slices])
				k++
			}
		})
	}
}

// lookupLatencies times each of n ServeDNS calls of name, one after the
// other, while churn (if not nil) runs beside them.
func lookupLatencies(m *Multicluster, name string, n int) []time.Duration {
	r := new(dns.Msg)
	r.SetQuestion(name, dns.TypeA)
	w := &nullWriter{}
	ctx := context.Background()
	out := make([]time.Duration, n)
	for i := range out {
		start := time.Now()
		m.ServeDNS(ctx, w, r)
		out[i] = time.Since(start)
	}
	return out
}

// quantile returns the q-quantile of sorted durations.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// BenchmarkLookupDuringChurn times cluster.local lookups of a local Service
// (passed on, as nearly every query is) while a 10k endpoint headless import
// goes through a rolling update, one slice event every churnEvery, against
// the same lookups without it: the p99, p99.9 and maximum, and how many
// events ran meanwhile. Lookups and events run in parallel, as the informer
// and the server's goroutines do: it needs two CPUs.
func BenchmarkLookupDuringChurn(b *testing.B) {
	if runtime.GOMAXPROCS(0) < 2 {
		b.Skip("needs GOMAXPROCS >= 2: the lookups and the slice events run in parallel")
	}
	const lookups = 200_000
	const churnEvery = time.Millisecond
	for _, churn := range []bool{false, true} {
		b.Run(fmt.Sprintf("churn=%v", churn), func(b *testing.B) {
			m := churnPlugin(b, 10_000)
			// Converted beforehand, as the informer converts before the
			// handler runs: the events cost what the handler costs.
			var gens [2][]*sliceSpec
			for g := range gens {
				for i := range 10_000 / perSlice {
					gens[g] = append(gens[g], churnSlice(i, g+1))
				}
			}
			var events atomic.Int64
			for b.Loop() {
				stop := make(chan struct{})
				var wg sync.WaitGroup
				if churn {
					wg.Go(func() {
						tick := time.NewTicker(churnEvery)
						defer tick.Stop()
						for k := 0; ; k++ {
							select {
							case <-stop:
								return
							case <-tick.C:
							}
							m.sources.setSlice(gens[(k/len(gens[0]))%2][k%len(gens[0])])
							events.Add(1)
						}
					})
				}
				d := lookupLatencies(m, "web.ns1.svc.cluster.local.", lookups)
				close(stop)
				wg.Wait()
				slices.Sort(d)
				b.ReportMetric(float64(quantile(d, 0.99).Nanoseconds()), "p99-ns")
				b.ReportMetric(float64(quantile(d, 0.999).Nanoseconds()), "p99.9-ns")
				b.ReportMetric(float64(d[len(d)-1].Nanoseconds()), "max-ns")
			}
			b.ReportMetric(float64(events.Load())/float64(b.N), "slice-events/op")
		})
	}
}
