package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	_ "github.com/coredns/coredns/plugin/whoami" // the second server block of a failing reload
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"

	_ "github.com/coredns-mcs/coredns-mcs/plugin/multicluster"
)

// watchedResources are what the plugin watches.
var watchedResources = []string{"serviceimports", "endpointslices", "services", "clusterproperties"}

// apiServerWatches returns the API server's open WATCH requests on the
// plugin's resources, from its apiserver_longrunning_requests gauge.
func apiServerWatches(t *testing.T) int {
	t.Helper()
	body, err := kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("API server metrics: %v", err)
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_longrunning_requests{") || !strings.Contains(line, `verb="WATCH"`) {
			continue
		}
		for _, r := range watchedResources {
			if strings.Contains(line, `resource="`+r+`"`) {
				v, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
				if err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				n += int(v)
			}
		}
	}
	return n
}

// pluginGauges returns the plugin's gauges (objects, degraded) as the
// default registry, which the prometheus plugin serves, holds them.
func pluginGauges(t *testing.T) map[string]float64 {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "coredns_multicluster_objects" && f.GetName() != "coredns_multicluster_degraded" {
			continue
		}
		for _, m := range f.GetMetric() {
			name := f.GetName()
			for _, l := range m.GetLabel() {
				name += "," + l.GetName() + "=" + l.GetValue()
			}
			out[name] = m.GetGauge().GetValue()
		}
	}
	return out
}

// TestReloadsLeaveNothingBehind runs the plugin in this process and reloads
// it 100 times as the reload plugin does (caddy's Instance.Restart) against
// the real API server, every other time with a Corefile whose second server
// block cannot listen. Such an instance started its informers before it
// failed. After the reloads the API server holds as many watches of the
// plugin as before them, and the process as many goroutines; once the last
// instance stops, no watch is left and the gauges are back where they were.
func TestReloadsLeaveNothingBehind(t *testing.T) {
	saved := dnsserver.Directives
	dnsserver.Directives = append([]string{"multicluster"}, saved...)
	t.Cleanup(func() { dnsserver.Directives = saved })

	ns := namespace(t, "reload")
	createImport(t, newImport(ns, "web", "10.42.12.1"))
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := harness.FreePort(t)
	corefile := func(extra string) caddy.Input {
		return caddy.CaddyfileInput{ServerTypeName: "dns", Filepath: filepath.Join(t.TempDir(), "Corefile"), Contents: []byte(fmt.Sprintf(`.:%d {
    multicluster clusterset.local {
        kubeconfig %s
        namespaces %s
    }
}
%s`, port, cp.Kubeconfig, ns, extra))}
	}
	good := corefile("")
	failing := corefile(fmt.Sprintf(".:%d {\n    whoami\n}\n", busy.Addr().(*net.TCPAddr).Port))

	watches0, gauges0 := apiServerWatches(t), pluginGauges(t)
	inst, err := caddy.Start(good)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if inst != nil {
			inst.ShutdownCallbacks()
			inst.Stop()
		}
	}()
	s := &server{addr: fmt.Sprintf("127.0.0.1:%d", port)}
	expectAddresses(t, s, "web."+ns+".svc.clusterset.local.", dns.TypeA, propagation, "10.42.12.1")
	// Services (the plugin's own: no kubernetes plugin here),
	// EndpointSlices, ServiceImports.
	poll.Eventually(t, 10*time.Second, "the first instance's three watches", func() (bool, string) {
		n := apiServerWatches(t) - watches0
		return n == 3, fmt.Sprint(n)
	})
	watches1, goroutines1 := apiServerWatches(t), runtime.NumGoroutine()

	start, failed := time.Now(), 0
	for i := range 100 {
		input := good
		if i%2 == 0 {
			input = failing
		}
		next, err := inst.Restart(input)
		if err != nil {
			failed++
		}
		inst = next
	}
	t.Logf("100 reloads, %d of them failing, in %s", failed, time.Since(start).Round(time.Millisecond))
	if failed != 50 {
		t.Fatalf("%d reloads failed, want 50", failed)
	}
	expectAddresses(t, s, "web."+ns+".svc.clusterset.local.", dns.TypeA, propagation, "10.42.12.1")
	// Stopped watches leave the API server's gauge as their connections
	// close; goroutines of informers end as they return.
	poll.Eventually(t, 30*time.Second, "as many watches as before the reloads", func() (bool, string) {
		n := apiServerWatches(t)
		return n == watches1, fmt.Sprintf("%d watches, %d before", n, watches1)
	})
	poll.Eventually(t, 30*time.Second, "as many goroutines as before the reloads", func() (bool, string) {
		n := runtime.NumGoroutine()
		return n <= goroutines1, fmt.Sprintf("%d goroutines, %d before", n, goroutines1)
	})
	t.Logf("before the reloads: %d watches (%d of the plugin), %d goroutines; after: %d watches, %d goroutines",
		watches1, watches1-watches0, goroutines1, apiServerWatches(t), runtime.NumGoroutine())

	inst.ShutdownCallbacks()
	inst.Stop()
	inst = nil
	poll.Eventually(t, 30*time.Second, "no watch of the plugin once it stopped", func() (bool, string) {
		n := apiServerWatches(t)
		return n == watches0, fmt.Sprintf("%d watches, %d before it started", n, watches0)
	})
	for name, v := range pluginGauges(t) {
		if v != gauges0[name] {
			t.Errorf("%s = %v once every instance stopped, want %v", name, v, gauges0[name])
		}
	}
}
