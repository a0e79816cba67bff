package multicluster

import (
	"net"
	"slices"
	"testing"
)

func TestIndexPut(t *testing.T) {
	web := serviceKey{namespace: "ns1", name: "web"}
	api := serviceKey{namespace: "ns1", name: "api"}
	db := serviceKey{namespace: "ns2", name: "db"}
	addr := func(k serviceKey, ips ...string) *view {
		v := &view{key: k}
		for _, ip := range ips {
			v.ipv4 = append(v.ipv4, net.ParseIP(ip).To4())
		}
		return v
	}
	derived := func(k serviceKey, name string, owned ...string) *view {
		v := addr(k)
		v.derived = name
		if owned != nil {
			v.owned = &owned
		}
		return v
	}
	dropping := func(k serviceKey, n int32) *view {
		v := addr(k, "10.9.0.1")
		v.dropped = n
		return v
	}
	// Each step puts a view in place of the one published before, then
	// checks the whole index.
	steps := []struct {
		name       string
		key        serviceKey
		v          *view // nil: removed
		services   []serviceKey
		namespaces []string // those with imports, of ns1 and ns2
		reverse    int
		derivedBy  map[string][]serviceKey // by local Service of ns1
		dropped    int64
	}{
		{name: "first", key: web, v: addr(web, "10.42.0.1"),
			services: []serviceKey{web}, namespaces: []string{"ns1"}, reverse: 1},
		{name: "new addresses", key: web, v: addr(web, "10.42.0.2", "10.42.0.3"),
			services: []serviceKey{web}, namespaces: []string{"ns1"}, reverse: 2},
		{name: "a derived Service", key: api, v: derived(api, "api-local"),
			services: []serviceKey{api, web}, namespaces: []string{"ns1"}, reverse: 2,
			derivedBy: map[string][]serviceKey{"api-local": {api}}},
		{name: "another namespace", key: db, v: dropping(db, 5),
			services: []serviceKey{api, web, db}, namespaces: []string{"ns1", "ns2"}, reverse: 3,
			derivedBy: map[string][]serviceKey{"api-local": {api}}, dropped: 5},
		{name: "fewer dropped", key: db, v: dropping(db, 2),
			services: []serviceKey{api, web, db}, namespaces: []string{"ns1", "ns2"}, reverse: 3,
			derivedBy: map[string][]serviceKey{"api-local": {api}}, dropped: 2},
		{name: "derived Service renamed, another's owned", key: api, v: derived(api, "api-2", "api-aws"),
			services: []serviceKey{api, web, db}, namespaces: []string{"ns1", "ns2"}, reverse: 3,
			derivedBy: map[string][]serviceKey{"api-2": {api}, "api-aws": {api}}, dropped: 2},
		{name: "only another's owned", key: api, v: derived(api, "", "api-aws"),
			services: []serviceKey{api, web, db}, namespaces: []string{"ns1", "ns2"}, reverse: 3,
			derivedBy: map[string][]serviceKey{"api-aws": {api}}, dropped: 2},
		{name: "the other namespace's only import goes", key: db,
			services: []serviceKey{api, web}, namespaces: []string{"ns1"}, reverse: 2,
			derivedBy: map[string][]serviceKey{"api-aws": {api}}},
		{name: "one of two imports goes", key: web,
			services: []serviceKey{api}, namespaces: []string{"ns1"},
			derivedBy: map[string][]serviceKey{"api-aws": {api}}},
		{name: "the last goes", key: api},
	}
	x := newIndex()
	for _, s := range steps {
		x.put(s.key, x.lookup(s.key.namespace, s.key.name), s.v)
		if got := x.lookup(s.key.namespace, s.key.name); got != s.v {
			t.Errorf("%s: lookup(%s) = %p, want the view put, %p", s.name, s.key, got, s.v)
		}
		var keys []serviceKey
		for _, v := range x.snapshot() {
			keys = append(keys, v.key)
		}
		if !slices.Equal(keys, s.services) || x.len() != len(s.services) {
			t.Errorf("%s: snapshot %v, len %d; want %v", s.name, keys, x.len(), s.services)
		}
		for _, ns := range []string{"ns1", "ns2"} {
			if got, want := x.hasNamespace(ns), slices.Contains(s.namespaces, ns); got != want {
				t.Errorf("%s: hasNamespace(%s) = %v, want %v", s.name, ns, got, want)
			}
		}
		if n := x.reverseLen(); n != s.reverse {
			t.Errorf("%s: %d addresses in the reverse map, want %d", s.name, n, s.reverse)
		}
		for _, name := range []string{"api-local", "api-2", "api-aws"} {
			if got, want := x.derivedImports(serviceKey{namespace: "ns1", name: name}), s.derivedBy[name]; !slices.Equal(got, want) {
				t.Errorf("%s: derivedImports(ns1/%s) = %v, want %v", s.name, name, got, want)
			}
		}
		if got := x.hasDerived(); got != (len(s.derivedBy) > 0) {
			t.Errorf("%s: hasDerived() = %v, want %v", s.name, got, len(s.derivedBy) > 0)
		}
		if d := x.dropped.Load(); d != s.dropped {
			t.Errorf("%s: %d addresses counted dropped, want %d", s.name, d, s.dropped)
		}
	}
}

// TestIndexPutMovesSerial: a change published after the serial was handed
// out moves it; putting the view already published is no change.
func TestIndexPutMovesSerial(t *testing.T) {
	key := serviceKey{namespace: "ns1", name: "web"}
	v := &view{key: key, ipv4: []net.IP{net.ParseIP("10.42.0.1").To4()}}
	tests := []struct {
		name  string
		old   *view
		v     *view
		moved bool
	}{
		{"added", nil, v, true},
		{"the same view again", v, v, false},
		{"removed", v, nil, true},
		{"nothing removed again", nil, nil, false},
	}
	now := int64(1_700_000_000)
	x := newIndex()
	x.serial.now = func() int64 { return now }
	x.serial.start()
	for _, tc := range tests {
		before := x.serial.Load()
		now += 10
		x.put(key, tc.old, tc.v)
		if moved := x.serial.Load() != before; moved != tc.moved {
			t.Errorf("%s: the serial moved %v, want %v", tc.name, moved, tc.moved)
		}
	}
}
