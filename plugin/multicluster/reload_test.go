package multicluster

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	_ "github.com/coredns/coredns/plugin/whoami" // the second server block of a failing reload
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// fakeAPIServer answers what the plugin asks a kube-apiserver: discovery
// of the ServiceImport API (served or not), empty lists, and watches that
// stay open until the client goes. It counts the open watches and keeps the
// User-Agent of every request, and the Accept header asked of each path.
type fakeAPIServer struct {
	*httptest.Server
	crd     atomic.Bool // ServiceImport served at v1beta1
	quit    chan struct{}
	watches atomic.Int32
	mu      sync.Mutex
	agents  map[string]bool
	accepts map[string]string // path -> Accept
}

func newFakeAPIServer(t *testing.T) *fakeAPIServer {
	t.Helper()
	f := &fakeAPIServer{agents: map[string]bool{}, accepts: map[string]string{}, quit: make(chan struct{})}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	// Close waits for every request: end the watches a leak left open.
	t.Cleanup(func() { close(f.quit); f.Close() })
	return f
}

func (f *fakeAPIServer) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.agents[r.UserAgent()] = true
	f.accepts[r.URL.Path] = r.Header.Get("Accept")
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	// Path to the kind and apiVersion of what a list there returns.
	kinds := map[string][2]string{
		"/api/v1/services":                                   {"ServiceList", "v1"},
		"/apis/discovery.k8s.io/v1/endpointslices":           {"EndpointSliceList", "discovery.k8s.io/v1"},
		"/apis/multicluster.x-k8s.io/v1beta1/serviceimports": {"ServiceImportList", "multicluster.x-k8s.io/v1beta1"},
		"/apis/multicluster.x-k8s.io/v1beta1":                {"APIResourceList", "v1"},
	}
	kind, ok := kinds[r.URL.Path]
	if strings.HasPrefix(r.URL.Path, "/apis/multicluster.x-k8s.io/") && !f.crd.Load() {
		ok = false
	}
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
		return
	}
	switch {
	case kind[0] == "APIResourceList":
		fmt.Fprint(w, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"multicluster.x-k8s.io/v1beta1","resources":[{"name":"serviceimports","namespaced":true,"kind":"ServiceImport","verbs":["list","watch"]}]}`)
	case r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1":
		f.watches.Add(1)
		defer f.watches.Add(-1)
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-f.quit:
		}
	default:
		fmt.Fprintf(w, `{"kind":%q,"apiVersion":%q,"metadata":{"resourceVersion":"1"},"items":[]}`, kind[0], kind[1])
	}
}

func (f *fakeAPIServer) userAgents() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for a := range f.agents {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

func (f *fakeAPIServer) kubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := `apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: "` + f.URL + `"}}]
users: [{name: fake, user: {}}]
contexts: [{name: fake, context: {cluster: fake, user: fake}}]
current-context: fake
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// withDirective makes the Corefile directive multicluster known to the dns
// server type, as this distribution's generated directive list does.
func withDirective(t *testing.T) {
	t.Helper()
	saved := dnsserver.Directives
	dnsserver.Directives = append([]string{pluginName}, saved...)
	t.Cleanup(func() { dnsserver.Directives = saved })
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func corefile(port int, kubeconfig string, extra string) caddy.Input {
	return caddy.CaddyfileInput{ServerTypeName: "dns", Contents: []byte(fmt.Sprintf(`.:%d {
    multicluster clusterset.local {
        kubeconfig %s
    }
}
%s`, port, kubeconfig, extra))}
}

// TestReloadLeavesNothingBehind reloads a server in-process as CoreDNS
// does (caddy's Instance.Restart), with good Corefiles and with ones whose
// second server block cannot listen: such a new instance has started its
// watchers (OnStartup) when it fails, and caddy runs none of its shutdown
// callbacks. After every reload exactly one instance's watches are open;
// after all of them the goroutines and the gauges are where they were.
func TestReloadLeavesNothingBehind(t *testing.T) {
	withDirective(t)
	api := newFakeAPIServer(t)
	api.crd.Store(true)
	kubeconfig := api.kubeconfig(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := freePort(t)
	good := corefile(port, kubeconfig, "")
	failing := corefile(port, kubeconfig, fmt.Sprintf(".:%d {\n    whoami\n}\n", busy.Addr().(*net.TCPAddr).Port))
	gauges := map[string]float64{}
	for _, kind := range []string{"serviceimport", "endpointslice", "service"} {
		gauges[kind] = testutil.ToFloat64(objects.WithLabelValues(kind))
	}

	goroutines := runtime.NumGoroutine()
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
	// Services, EndpointSlices and ServiceImports: one watch each.
	const perInstance = 3
	waitFor(t, 5*time.Second, "the first instance's watches", func() bool { return api.watches.Load() == perInstance })

	failed := 0
	for i := range 20 {
		input := good
		if i%2 == 0 {
			input = failing
		}
		next, err := inst.Restart(input)
		if err != nil {
			failed++
		}
		inst = next
		waitFor(t, 5*time.Second, fmt.Sprintf("reload %d: one instance's watches", i), func() bool { return api.watches.Load() == perInstance })
	}
	if failed != 10 {
		t.Fatalf("%d reloads failed, want 10", failed)
	}
	inst.ShutdownCallbacks()
	inst.Stop()
	inst = nil
	waitFor(t, 5*time.Second, "no watch after the last instance stopped", func() bool { return api.watches.Load() == 0 })
	for kind, before := range gauges {
		if got := testutil.ToFloat64(objects.WithLabelValues(kind)); got != before {
			t.Errorf("objects{kind=%q} = %v after every instance stopped, want %v", kind, got, before)
		}
	}
	// client-go shares one transport per configuration across clients, and
	// keeps its idle keep-alive connections for 90 s: they belong to no
	// instance. Closing them from the server's side lets their goroutines
	// end; every other goroutine must have ended on its own.
	api.CloseClientConnections()
	waitFor(t, 10*time.Second, "the goroutines to end", func() bool { return runtime.NumGoroutine() <= goroutines })
}

// TestReloadClearsDegraded: started without the CRD, the plugin is
// degraded; the CRD is installed and the server reloaded: the new instance
// is healthy, and so is the gauge once the old instance is gone.
func TestReloadClearsDegraded(t *testing.T) {
	withDirective(t)
	api := newFakeAPIServer(t)
	input := corefile(freePort(t), api.kubeconfig(t), "")
	gauge := degradedGauge.WithLabelValues(reasonCRD)

	inst, err := caddy.Start(input)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { inst.ShutdownCallbacks(); inst.Stop() }()
	waitFor(t, 5*time.Second, "degraded{reason=crd} 1 without the CRD", func() bool { return testutil.ToFloat64(gauge) == 1 })

	api.crd.Store(true)
	if inst, err = inst.Restart(input); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(gauge); got != 0 {
		t.Errorf("degraded{reason=crd} = %v after a reload that healed, want 0", got)
	}
}

// TestUserAgent: the API server is told which distribution, version and
// plugin asks: main sets caddy.AppName and caddy.AppVersion from the
// version the build stamps.
func TestUserAgent(t *testing.T) {
	withDirective(t)
	name, version := caddy.AppName, caddy.AppVersion
	caddy.AppName, caddy.AppVersion = "coredns-mcs", "v9.9.9-test (CoreDNS-1.15.0)"
	t.Cleanup(func() { caddy.AppName, caddy.AppVersion = name, version })
	api := newFakeAPIServer(t)
	api.crd.Store(true)
	inst, err := caddy.Start(corefile(freePort(t), api.kubeconfig(t), ""))
	if err != nil {
		t.Fatal(err)
	}
	inst.ShutdownCallbacks()
	inst.Stop()
	want := fmt.Sprintf("coredns-mcs/v9.9.9-test (CoreDNS-1.15.0) multicluster git_commit: (%s/%s/%s)", runtime.GOOS, runtime.GOARCH, runtime.Version())
	if got := api.userAgents(); !slices.Equal(got, []string{want}) {
		t.Errorf("User-Agent %q, want only %q", got, want)
	}
	// Built-in kinds are asked for as protobuf (client-go's typed clients
	// do, clientConfig leaves it to them), ServiceImports as JSON.
	api.mu.Lock()
	defer api.mu.Unlock()
	for path, protobuf := range map[string]bool{"/apis/discovery.k8s.io/v1/endpointslices": true, "/apis/multicluster.x-k8s.io/v1beta1/serviceimports": false} {
		accept, asked := api.accepts[path]
		if !asked || strings.HasPrefix(accept, "application/vnd.kubernetes.protobuf") != protobuf {
			t.Errorf("%s asked with Accept %q (asked: %v); protobuf wanted: %v", path, accept, asked, protobuf)
		}
	}
}
