package mcsctl

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

// statusTime passes the CRD's date-time format check and fails the RFC 3339
// parser of meta/v1.Time, which the mcs-api types decode a status with.
const statusTime = "2026-01-01t00:00:00z"

// serviceImport is a ServiceImport's JSON as the API server sends it; an
// empty status leaves it out.
func serviceImport(ns, name, spec, status string) string {
	s := fmt.Sprintf(`{"apiVersion":"multicluster.x-k8s.io/v1beta1","kind":"ServiceImport","metadata":{"name":%q,"namespace":%q,"resourceVersion":"7"},"spec":%s`, name, ns, spec)
	if status != "" {
		s += `,"status":` + status
	}
	return s + "}"
}

const (
	goodSpec = `{"type":"ClusterSetIP","ips":["10.42.0.1"],"ports":[{"name":"http","protocol":"TCP","port":80}]}`
	// poisonedStatus is the status test/e2e's TestImportStatusGoCannotDecode
	// writes.
	poisonedStatus = `{"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"` + statusTime + `","reason":"Imported","message":"imported"}]}`
)

// fakeAPIServer serves discovery of ServiceImports at v1beta1, empty lists of
// what explain reads besides, and imports in pages of pageSize.
func fakeAPIServer(t *testing.T, pageSize int, imports ...string) *rest.Config {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/apis/multicluster.x-k8s.io/v1beta1":
			fmt.Fprint(w, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"multicluster.x-k8s.io/v1beta1","resources":[{"name":"serviceimports","namespaced":true,"kind":"ServiceImport","verbs":["get","list","watch"]}]}`)
		case "/api/v1/services", "/api/v1/namespaces", "/apis/discovery.k8s.io/v1/endpointslices":
			fmt.Fprint(w, `{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`)
		case "/apis/multicluster.x-k8s.io/v1beta1/serviceimports":
			q := r.URL.Query()
			from, _ := strconv.Atoi(q.Get("continue"))
			n := pageSize
			if l, _ := strconv.Atoi(q.Get("limit")); l > 0 && l < n {
				n = l
			}
			to := min(from+n, len(imports))
			next := ""
			if to < len(imports) {
				next = strconv.Itoa(to)
			}
			fmt.Fprintf(w, `{"apiVersion":"multicluster.x-k8s.io/v1beta1","kind":"ServiceImportList","metadata":{"resourceVersion":"9","continue":%q},"items":[%s]}`, next, strings.Join(imports[from:to], ","))
		default:
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`, http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}
}

// TestReadAccessDecodesAsTheServer: an import the mcs-api types cannot
// decode, first in the list, does not fail the read-access check explain
// makes.
func TestReadAccessDecodesAsTheServer(t *testing.T) {
	cfg := fakeAPIServer(t, 2,
		serviceImport("a-first", "poisoned", goodSpec, poisonedStatus),
		serviceImport("shop", "cart", goodSpec, ""))
	if err := checkReadAccess(t.Context(), cfg); err != nil {
		t.Fatalf("checkReadAccess: %v", err)
	}
}

// TestImportReport: each import as the server reads it, across pages; the
// lines name the first few of each set and count the rest.
func TestImportReport(t *testing.T) {
	imports := []string{
		serviceImport("a-first", "poisoned", goodSpec, poisonedStatus),
		serviceImport("shop", "cart", goodSpec, ""),
		serviceImport("shop", "port-as-string", `{"type":"ClusterSetIP","ips":["10.42.0.9"],"ports":[{"name":"http","protocol":"TCP","port":"80"}]}`, ""),
		serviceImport("shop", "odd-type", `{"type":"Odd","ports":[]}`, ""),
		serviceImport("shop", "no-type", `{"ips":["10.42.0.3"],"ports":[{"name":"http","protocol":"TCP","port":80}]}`, ""),
		`{"apiVersion":"multicluster.x-k8s.io/v1beta1","kind":"ServiceImport","metadata":{"name":["broken"],"namespace":"shop"},"spec":{"type":"Headless"}}`,
	}
	for i := range 20 {
		imports = append(imports, serviceImport("bulk", fmt.Sprintf("odd-%02d", i), `{"type":"Odd"}`, ""))
	}
	r, err := readImports(t.Context(), fakeAPIServer(t, 4, imports...), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.total != len(imports) || r.version != "v1beta1" {
		t.Fatalf("read %d imports of %s, want %d of v1beta1", r.total, r.version, len(imports))
	}
	if r.skipped.Count != 23 || r.dropped.Count != 1 || r.untyped.Count != 1 {
		t.Errorf("skipped %d, dropped %d, untyped %d; want 23, 1, 1", r.skipped.Count, r.dropped.Count, r.untyped.Count)
	}
	if why := r.skippedByName["shop/port-as-string"]; !strings.Contains(why, "does not decode") {
		t.Errorf("shop/port-as-string skipped because %q", why)
	}
	c := &checker{}
	r.lines(c)
	want := []struct {
		status status
		text   string
	}{
		{fail, "23 of 26 ServiceImports are skipped by the server, which logs each; their names do not answer: (unnamed) (its metadata does not decode"},
		{warn, "1 ServiceImports are served without parts the server drops: shop/no-type (spec.type is empty; treated as ClusterSetIP)"},
		{warn, "1 ServiceImports hold fields the mcs-api Go types (v1beta1) cannot decode: the server does not read them and serves these imports, but a controller or tool built on those types fails to list their namespace: a-first/poisoned ("},
	}
	if len(c.lines) != len(want) {
		t.Fatalf("%d lines, want %d: %+v", len(c.lines), len(want), c.lines)
	}
	for i, w := range want {
		l := c.lines[i]
		t.Logf("%s %s", l.Status, l.Message)
		if l.Status != w.status || !strings.Contains(l.Message, w.text) {
			t.Errorf("line %d: %s %q, want %s with %q", i, l.Status, l.Message, w.status, w.text)
		}
	}
	skipped := c.lines[0].Message
	if !strings.Contains(skipped, "bulk/odd-03") || strings.Contains(skipped, "bulk/odd-04") || !strings.HasSuffix(skipped, " and 18 more") {
		t.Errorf("the skipped line names other than the first five, sorted, and counts the rest: %s", skipped)
	}
	if len(skipped) > 1000 {
		t.Errorf("a line of %d bytes", len(skipped))
	}
}

func TestSample(t *testing.T) {
	var names []string
	for i := 2000; i > 0; i-- {
		names = append(names, fmt.Sprintf("ns/import-%04d", i))
	}
	if got, want := few(names), "ns/import-0001, ns/import-0002, ns/import-0003, ns/import-0004, ns/import-0005 and 1995 more"; got != want {
		t.Errorf("few = %q, want %q", got, want)
	}
	if got := few([]string{"b", "a"}); got != "a, b" {
		t.Errorf("few = %q", got)
	}
	if got := clip(strings.Repeat("é", 100), 11); got != "ééééé..." {
		t.Errorf("clip = %q", got)
	}
}

// TestServiceOf: the import a name of the MCS DNS schema asks for, which
// explain looks up among those the server skips.
func TestServiceOf(t *testing.T) {
	for name, want := range map[string]string{
		"cart.shop.svc.clusterset.local.":            "shop/cart",
		"Cart.Shop.svc.clusterset.local.":            "shop/cart",
		"_http._tcp.cart.shop.svc.clusterset.local.": "shop/cart",
		"pod-1.east.db.shop.svc.cluster.local.":      "shop/db",
		"svc.shop.svc.clusterset.local.":             "shop/svc",
		"shop.svc.clusterset.local.":                 "",
		"example.com.":                               "",
	} {
		got, ok := serviceOf(name)
		if got != want || ok != (want != "") {
			t.Errorf("serviceOf(%s) = %q, %v; want %q", name, got, ok, want)
		}
	}
}

// TestPrintSkipped: explain's text ends with the imports the server skips,
// counted, the first few named.
func TestPrintSkipped(t *testing.T) {
	var s Sample
	for i := range 40 {
		s.add(fmt.Sprintf("bulk/odd-%02d (unknown spec.type \"Odd\")", i))
	}
	var out strings.Builder
	printResult(&out, Result{Question: "cart.shop.svc.clusterset.local.", Type: "A", AnsweredBy: "multicluster", Rcode: "NOERROR", SkippedImports: &s})
	want := `Note: 40 ServiceImports are skipped by the server, which logs each (kubectl mcs check): bulk/odd-00 (unknown spec.type "Odd"), bulk/odd-01 (unknown spec.type "Odd"), bulk/odd-02 (unknown spec.type "Odd"), bulk/odd-03 (unknown spec.type "Odd"), bulk/odd-04 (unknown spec.type "Odd") and 35 more`
	if !strings.Contains(out.String(), want+"\n") {
		t.Errorf("explain prints\n%s\nwant a line\n%s", out.String(), want)
	}
}
