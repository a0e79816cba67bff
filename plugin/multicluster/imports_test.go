package multicluster

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// badTime is a timestamp the API server's date-time check accepts and Go's
// RFC 3339 parser (meta/v1.Time) does not.
const badTime = "2026-01-01t00:00:00z"

// siJSON is a ServiceImport as the API server writes it, with a status of
// timestamps Go cannot parse, managedFields and fields the plugin does not
// know; spec is its spec's JSON.
func siJSON(version, ns, name, rv, spec string) string {
	return fmt.Sprintf(`{"apiVersion":"multicluster.x-k8s.io/%s","kind":"ServiceImport",`+
		`"metadata":{"name":%q,"namespace":%q,"resourceVersion":%q,"uid":"u-%s","generation":1,"creationTimestamp":"2026-01-01T00:00:00Z",`+
		`"labels":{"app":%q},"annotations":{"note":"x"},"managedFields":[{"manager":"ctl","operation":"Update","apiVersion":"multicluster.x-k8s.io/%s","time":"2026-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}]},`+
		`"spec":%s,"futureField":[1,2],`+
		`"status":{"clusters":[{"cluster":"east"}],"conditions":[{"type":"Ready","status":"True","lastTransitionTime":%q,"reason":"Imported","message":""}]}}`,
		version, name, ns, rv, name, name, version, spec, badTime)
}

// clusterSetIP is the spec of a ClusterSetIP import of ip, with a port and
// fields the plugin does not read.
func clusterSetIP(ip string) string {
	return fmt.Sprintf(`{"type":"ClusterSetIP","ips":[%q],"ports":[{"name":"http","protocol":"TCP","appProtocol":"http","port":80}],"sessionAffinity":"None","newSpecField":{"a":1}}`, ip)
}

const (
	// Specs the plugin reads a field of in a form it cannot decode (a
	// loosened CRD schema lets them through).
	portAsString = `{"type":"ClusterSetIP","ips":["10.42.0.9"],"ports":[{"name":"http","protocol":"TCP","port":"80"}]}`
	ipsNotAList  = `{"type":"ClusterSetIP","ips":"10.42.0.10","ports":[{"name":"http","protocol":"TCP","port":80}]}`
	// brokenMetadata is an object not even named in a form that decodes.
	brokenMetadata = `{"apiVersion":"multicluster.x-k8s.io/v1beta1","kind":"ServiceImport","metadata":{"name":["broken"],"namespace":"ns1","resourceVersion":"13"},"spec":{"type":"Headless"}}`
)

// fakeImportServer serves ServiceImports of one version as kube-apiserver
// does, in JSON: lists in pages of pageSize items whatever the limit (the
// continue token is the offset of the next page), and watches as a stream
// of the events sent to events.
type fakeImportServer struct {
	t        *testing.T
	version  string
	pageSize int
	events   chan string

	mu      sync.Mutex
	items   []string // JSON, in list order
	rv      int
	lists   []url.Values
	watches []url.Values
	// listBody, when set, is answered to a list instead: status code and body.
	listStatus int
	listBody   string
}

func newFakeImportServer(t *testing.T, version string, items ...string) (*fakeImportServer, *httptest.Server) {
	s := &fakeImportServer{t: t, version: version, pageSize: 2, events: make(chan string, 100), items: items, rv: 100}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

func (s *fakeImportServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if want := "/apis/" + mcsGroup + "/" + s.version + "/" + importResource; r.URL.Path != want || r.Method != http.MethodGet {
		s.t.Errorf("request %s %s; want GET %s", r.Method, r.URL.Path, want)
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	if q.Get("watch") == "true" {
		s.watch(w, r)
		return
	}
	s.mu.Lock()
	s.lists = append(s.lists, q)
	if s.listBody != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(s.listStatus)
		fmt.Fprint(w, s.listBody)
		s.mu.Unlock()
		return
	}
	from, _ := strconv.Atoi(q.Get("continue"))
	to := min(from+s.pageSize, len(s.items))
	page := s.items[from:to]
	next := ""
	if to < len(s.items) {
		next = strconv.Itoa(to)
	}
	body := fmt.Sprintf(`{"apiVersion":"multicluster.x-k8s.io/%s","kind":"ServiceImportList","metadata":{"resourceVersion":"%d","continue":%q},"items":[%s]}`,
		s.version, s.rv, next, strings.Join(page, ","))
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, body)
}

// watch streams the events sent to s.events until the client goes, or an
// ERROR event ends the stream, as kube-apiserver ends it after one.
func (s *fakeImportServer) watch(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.watches = append(s.watches, r.URL.Query())
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case e := <-s.events:
			fmt.Fprintln(w, e)
			w.(http.Flusher).Flush()
			if strings.HasPrefix(e, `{"type":"ERROR"`) {
				return
			}
		}
	}
}

// send streams an event of obj to the watch, and keeps obj in what lists
// answer under key.
func (s *fakeImportServer) send(typ, key, obj string) {
	s.mu.Lock()
	s.rv++
	s.setLocked(key, obj)
	s.mu.Unlock()
	s.events <- fmt.Sprintf(`{"type":%q,"object":%s}`, typ, obj)
}

// setLocked replaces the item whose JSON contains key, or appends obj.
func (s *fakeImportServer) setLocked(key, obj string) {
	for i, it := range s.items {
		if strings.Contains(it, key) {
			s.items[i] = obj
			return
		}
	}
	s.items = append(s.items, obj)
}

func (s *fakeImportServer) counts() (lists, watches int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.lists), len(s.watches)
}

// startRESTWatcher runs the plugin's watcher with discovery serving
// ServiceImports in version and the ServiceImports read from srv, as the
// server reads them (restImports). synced is closed once the informers have
// synced.
func startRESTWatcher(t *testing.T, srv *httptest.Server, version string) (m *Multicluster, w *watcher, synced chan struct{}) {
	t.Helper()
	kube := kubefake.NewClientset()
	kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*meta.APIResourceList{{
		GroupVersion: mcsGroup + "/" + version,
		APIResources: []meta.APIResource{{Name: importResource, Namespaced: true, Kind: "ServiceImport"}},
	}}
	imports, err := newRESTImports(clientConfig(&rest.Config{Host: srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	m, _ = newTestPlugin(t, nil, fakeLocal{})
	w = &watcher{kube: kube, imports: imports, sources: m.sources, retry: 10 * time.Millisecond,
		health: newHealth(func(d *degradation) { m.degraded.Store(d) })}
	synced = make(chan struct{})
	w.start(func() { m.synced.Store(true); close(synced) })
	m.watch = w
	t.Cleanup(w.stop)
	return m, w, synced
}

func waitSynced(t *testing.T, synced chan struct{}) {
	t.Helper()
	select {
	case <-synced:
	case <-time.After(20 * time.Second): // the reflector's backoff after failed lists
		t.Fatal("informers did not sync")
	}
}

// TestServiceImportFixturesFailTypedDecoding: the fixtures reproduce the
// failure this package's decoding avoids: the mcs-api type does not decode
// an import whose status has a lower-case timestamp, or a port as a string.
func TestServiceImportFixturesFailTypedDecoding(t *testing.T) {
	for _, in := range []string{siJSON("v1beta1", "ns1", "a", "1", clusterSetIP("10.42.0.1")), siJSON("v1beta1", "ns1", "p", "1", portAsString)} {
		if err := json.Unmarshal([]byte(in), &mcsv1beta1.ServiceImport{}); err == nil {
			t.Errorf("the mcs-api type decodes %s", in)
		}
	}
}

// TestImportObjectDecoding: an import decodes to the fields DNS reads
// whatever else it holds; one whose read fields do not decode keeps its
// name and why; one whose name does not decode is unusable.
func TestImportObjectDecoding(t *testing.T) {
	for _, tc := range []struct {
		name, in         string
		err, unusable    string
		ips              []string
		ports            int
		labels, trafficD string
	}{
		{name: "status Go cannot parse", in: siJSON("v1beta1", "ns1", "a", "7", clusterSetIP("10.42.0.1")), ips: []string{"10.42.0.1"}, ports: 1, labels: "a"},
		{name: "v1alpha1", in: siJSON("v1alpha1", "ns1", "a", "7", `{"type":"ClusterSetIP","ips":["10.42.0.1"],"trafficDistribution":"PreferClose"}`), ips: []string{"10.42.0.1"}, labels: "a", trafficD: "PreferClose"},
		{name: "port as a string", in: siJSON("v1beta1", "ns1", "a", "7", portAsString), err: "spec.ports.port"},
		{name: "ips not a list", in: siJSON("v1beta1", "ns1", "a", "7", ipsNotAList), err: "spec.ips"},
		{name: "port out of range", in: siJSON("v1beta1", "ns1", "a", "7", `{"type":"ClusterSetIP","ports":[{"port":4294967296}]}`), err: "spec.ports.port"},
		{name: "label not a string", in: `{"metadata":{"name":"a","namespace":"ns1","resourceVersion":"7","labels":{"x":1}}}`, err: "metadata.labels"},
		{name: "field names are case-sensitive", in: `{"metadata":{"name":"a","namespace":"ns1","resourceVersion":"7"},"spec":{"IPs":"x","Ports":5}}`},
		{name: "metadata not an object", in: `{"metadata":"a","spec":{}}`, unusable: "cannot unmarshal"},
		{name: "broken metadata", in: brokenMetadata, unusable: "cannot unmarshal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o importObject
			if err := json.Unmarshal([]byte(tc.in), &o); err != nil {
				t.Fatalf("decoding failed: %v", err)
			}
			switch {
			case tc.unusable != "":
				if o.unusable == nil || !strings.Contains(o.unusable.err.Error(), tc.unusable) {
					t.Fatalf("unusable %v; want one that says %q", o.unusable, tc.unusable)
				}
				return
			case o.unusable != nil:
				t.Fatalf("unusable: %v", o.unusable.err)
			}
			if o.Name != "a" || o.Namespace != "ns1" || o.ResourceVersion != "7" {
				t.Errorf("decoded %s/%s at %s; want ns1/a at 7", o.Namespace, o.Name, o.ResourceVersion)
			}
			if tc.err != "" {
				if o.err == nil || !strings.Contains(o.err.Error(), tc.err) {
					t.Fatalf("err %v; want one that names %q", o.err, tc.err)
				}
				if _, err := toImportSpec(&o); err != o.err {
					t.Errorf("conversion returned %v; want the decoding error", err)
				}
				return
			}
			if o.err != nil {
				t.Fatalf("err %v", o.err)
			}
			if fmt.Sprint(o.spec.ips) != fmt.Sprint(tc.ips) || len(o.spec.ports) != tc.ports || o.Labels["app"] != tc.labels || o.spec.trafficDistribution != tc.trafficD {
				t.Errorf("decoded %+v, labels %v", o.spec, o.Labels)
			}
			if tc.ports > 0 && (o.spec.ports[0] != portFields{name: "http", protocol: "TCP", port: 80}) {
				t.Errorf("port %+v", o.spec.ports[0])
			}
		})
	}
}

// TestRESTImportsSkipBadObjects runs the watcher against an API server that
// serves ServiceImports as JSON: a list whose pages hold objects that do not
// decode, then a watch that brings more. Each bad object is dropped alone,
// logged once per version and counted; the others are served; the list
// succeeds (the plugin syncs) and the watch goes on.
func TestRESTImportsSkipBadObjects(t *testing.T) {
	logs := captureLog(t)
	malformed := malformedTotal.WithLabelValues("serviceimport")
	before := testutil.ToFloat64(malformed)
	fake, srv := newFakeImportServer(t, "v1beta1",
		siJSON("v1beta1", "ns1", "a", "10", clusterSetIP("10.42.0.1")),
		siJSON("v1beta1", "ns1", "p", "11", portAsString),
		siJSON("v1beta1", "ns1", "q", "12", ipsNotAList),
		brokenMetadata,
		siJSON("v1beta1", "ns2", "b", "14", clusterSetIP("10.42.0.2")),
	)
	m, w, synced := startRESTWatcher(t, srv, "v1beta1")
	waitSynced(t, synced)

	for _, name := range []string{"ns1/a", "ns2/b"} {
		ns, n, _ := strings.Cut(name, "/")
		if m.index.lookup(ns, n) == nil {
			t.Errorf("%s is not served", name)
		}
	}
	for _, n := range []string{"p", "q"} {
		if m.index.lookup("ns1", n) != nil {
			t.Errorf("ns1/%s, which does not decode, is served", n)
		}
	}
	fake.mu.Lock()
	if len(fake.lists) != 3 || fake.lists[0].Get("limit") != "500" || fake.lists[1].Get("continue") != "2" || fake.lists[2].Get("continue") != "4" {
		t.Errorf("lists %v; want three pages of limit 500", fake.lists)
	}
	fake.mu.Unlock()
	if got := testutil.ToFloat64(malformed) - before; got != 3 {
		t.Errorf("malformed counter moved by %v; want 3 (p, q and the object without a name)", got)
	}
	for _, line := range []string{
		"Skipping ServiceImport ns1/p (resourceVersion 11): does not decode: json: cannot unmarshal string into Go struct field",
		"Skipping ServiceImport ns1/q (resourceVersion 12): does not decode",
		`Skipping a ServiceImport whose metadata does not decode`,
	} {
		if n := logs.count(line); n != 1 {
			t.Errorf("%q logged %d times; want once:\n%s", line, n, logs)
		}
	}
	if w.apiUnreachable() || m.degraded.Load() != nil {
		t.Errorf("unreachable %v, degraded %v", w.apiUnreachable(), m.degraded.Load())
	}

	// The watch: a's new version does not decode, which withdraws the
	// good one; an object without a name is skipped; c still arrives.
	waitFor(t, 10*time.Second, "the watch", func() bool { _, n := fake.counts(); return n == 1 })
	fake.send("MODIFIED", `"name":"a"`, siJSON("v1beta1", "ns1", "a", "20", portAsString))
	fake.send("ADDED", `"name":["c"]`, strings.Replace(brokenMetadata, `["broken"]`, `["c"]`, 1))
	fake.send("ADDED", `"name":"c"`, siJSON("v1beta1", "ns1", "c", "22", clusterSetIP("10.42.0.3")))
	waitFor(t, 10*time.Second, "ns1/c served", func() bool { return m.index.lookup("ns1", "c") != nil })
	if m.index.lookup("ns1", "a") != nil {
		t.Error("ns1/a is still served after its new version failed to decode")
	}
	// The same undecodable version again, then a bookmark.
	fake.send("MODIFIED", `"name":"a"`, siJSON("v1beta1", "ns1", "a", "20", portAsString))
	fake.events <- `{"type":"BOOKMARK","object":{"kind":"ServiceImport","apiVersion":"multicluster.x-k8s.io/v1beta1","metadata":{"resourceVersion":"23","creationTimestamp":null}}}`
	fake.send("ADDED", `"name":"d"`, siJSON("v1beta1", "ns1", "d", "24", clusterSetIP("10.42.0.4")))
	waitFor(t, 10*time.Second, "ns1/d served", func() bool { return m.index.lookup("ns1", "d") != nil })
	if got := testutil.ToFloat64(malformed) - before; got != 5 {
		t.Errorf("malformed counter moved by %v; want 5 (and a's version 20 and c's unnamed one)", got)
	}
	if n := logs.count("Skipping ServiceImport ns1/a (resourceVersion 20)"); n != 1 {
		t.Errorf("a's undecodable version logged %d times; want once:\n%s", n, logs)
	}
	if _, watches := fake.counts(); watches != 1 {
		t.Errorf("%d watches; want the first one going on", watches)
	}

	// The watch expires: the relist brings every object again, none of the
	// bad ones logged again.
	fake.events <- `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version","reason":"Expired","code":410}}`
	waitFor(t, 10*time.Second, "a relist and a new watch", func() bool { lists, watches := fake.counts(); return lists >= 6 && watches == 2 })
	if got := testutil.ToFloat64(malformed) - before; got != 5 {
		t.Errorf("after the relist the malformed counter moved by %v; want 5", got)
	}
	if n := logs.count("Skipping a ServiceImport whose metadata does not decode"); n != 2 {
		t.Errorf("the objects without a name logged %d times; want once each:\n%s", n, logs)
	}
	for _, name := range []string{"b", "c", "d"} {
		ns := "ns1"
		if name == "b" {
			ns = "ns2"
		}
		if m.index.lookup(ns, name) == nil {
			t.Errorf("%s/%s is not served after the relist", ns, name)
		}
	}
	if !strings.Contains(logs.String(), "Watch of ServiceImport objects expired (410 Gone)") {
		t.Errorf("the expiry was not logged:\n%s", logs)
	}
}

// TestRESTImportsV1alpha1: ServiceImports served only as v1alpha1 are read
// the same way.
func TestRESTImportsV1alpha1(t *testing.T) {
	_, srv := newFakeImportServer(t, "v1alpha1",
		siJSON("v1alpha1", "ns1", "p", "11", portAsString),
		siJSON("v1alpha1", "ns1", "a", "10", clusterSetIP("10.42.0.1")),
	)
	m, _, synced := startRESTWatcher(t, srv, "v1alpha1")
	waitSynced(t, synced)
	if m.index.lookup("ns1", "a") == nil || m.index.lookup("ns1", "p") != nil {
		t.Errorf("served a: %v, p: %v; want a only", m.index.lookup("ns1", "a") != nil, m.index.lookup("ns1", "p") != nil)
	}
}

// TestRESTImportsAnswers: the REST client passes on the API server's
// refusals as the clientset did (a Forbidden degrades the plugin), and a
// list answer that does not decode as a whole is logged as such, not as an
// unreachable API server; the plugin syncs once the answers decode.
func TestRESTImportsAnswers(t *testing.T) {
	logs := captureLog(t)
	fake, srv := newFakeImportServer(t, "v1beta1", siJSON("v1beta1", "ns1", "a", "10", clusterSetIP("10.42.0.1")))
	fake.listStatus, fake.listBody = http.StatusForbidden, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"serviceimports.multicluster.x-k8s.io is forbidden: User \"dns\" cannot list resource \"serviceimports\"","reason":"Forbidden","code":403}`
	m, w, synced := startRESTWatcher(t, srv, "v1beta1")
	waitFor(t, 10*time.Second, "degraded by RBAC", func() bool {
		d := m.degraded.Load()
		return d != nil && strings.Contains(d.text, "RBAC forbids list on serviceimports")
	})

	fake.mu.Lock()
	fake.listStatus, fake.listBody = http.StatusOK, `{"apiVersion":"multicluster.x-k8s.io/v1beta1","kind":"ServiceImportList","metadata":{"resourceVersion":"1"},"items":[{"metadata":`
	n := len(fake.lists)
	fake.mu.Unlock()
	waitFor(t, 10*time.Second, "lists of the truncated answer", func() bool { lists, _ := fake.counts(); return lists >= n+2 })
	if w.apiUnreachable() {
		t.Error("an answer that does not decode counts as an unreachable API server")
	}
	if s := logs.String(); strings.Contains(s, "Kubernetes API unreachable") || strings.Count(s, "the API server's answer could not be decoded: list of serviceimports:") != 1 {
		t.Errorf("want the undecodable answer logged once as such:\n%s", s)
	}

	fake.mu.Lock()
	fake.listBody = ""
	fake.mu.Unlock()
	waitSynced(t, synced)
	if m.index.lookup("ns1", "a") == nil || m.degraded.Load() != nil {
		t.Errorf("after the answers decode: a served %v, degraded %v", m.index.lookup("ns1", "a") != nil, m.degraded.Load())
	}
	if !strings.Contains(logs.String(), "Kubernetes API answers about serviceimports decode again") {
		t.Errorf("the recovery was not logged:\n%s", logs)
	}
}
