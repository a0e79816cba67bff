package helmchart

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestMemoryRule: the memory rule of docs/deploy.md is the one the chart's
// values and the manifests say they are sized by, and the figures each
// quotes for its 170Mi limit follow from it.
func TestMemoryRule(t *testing.T) {
	read := func(path string) string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	num := func(s string) float64 {
		t.Helper()
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	deploy := read("../../docs/deploy.md")
	rule := regexp.MustCompile(`steady \(MiB\)  = (\d+)\s+\+ \(Services \+ ServiceImports\) / 1000 x ([\d.]+)\s+\+ endpoints in the EndpointSlices of imports / 1000 x ([\d.]+)[\s\S]*?limit\s+= ([\d.]+) x steady`).FindStringSubmatch(deploy)
	if rule == nil {
		t.Fatal("docs/deploy.md: no memory rule (steady (MiB) = ... limit = ... x steady)")
	}
	base, perObject, perEndpoint, factor := num(rule[1]), num(rule[2]), num(rule[3]), num(rule[4])
	t.Logf("rule: %v + %v per 1000 Services and imports + %v per 1000 endpoints; limit %v x steady", base, perObject, perEndpoint, factor)

	// What a 170Mi limit holds by the rule, rounded down: the steady MiB,
	// then thousands of objects or of endpoints.
	steady := math.Floor(170 / factor)
	objects := (steady - base) / perObject * 1000
	endpoints := (steady - base) / perEndpoint * 1000
	thousands := func(f float64) string { return fmt.Sprintf("%d,000", int(math.Floor(f/1000))) }

	values := strings.Join(strings.Fields(strings.ReplaceAll(read(chart+"/values.yaml"), "#", "")), " ")
	want := fmt.Sprintf("steady MiB = %v + (Services + ServiceImports) / 1000 x %v + endpoints of imports / 1000 x %v, limit %v x steady", base, perObject, perEndpoint, factor)
	if !strings.Contains(values, want) {
		t.Errorf("charts/coredns-mcs/values.yaml does not state the rule as docs/deploy.md has it: %q", want)
	}
	held := fmt.Sprintf("170Mi holds a steady %d MiB: about %s Services and imports", int(steady), thousands(objects))
	if !strings.Contains(values, held) {
		t.Errorf("charts/coredns-mcs/values.yaml: want %q", held)
	}
	for _, m := range []string{"../../manifests/install/deployment.yaml", "../../manifests/standalone/deployment.yaml"} {
		text := strings.Join(strings.Fields(strings.ReplaceAll(read(m), "#", "")), " ")
		want := fmt.Sprintf("a 170Mi limit holds a steady %d MiB (about %s Services and imports)", int(steady), thousands(objects))
		if !strings.Contains(text, want) {
			t.Errorf("%s: want %q", m, want)
		}
	}
	doc := strings.Join(strings.Fields(deploy), " ")
	want = fmt.Sprintf("a steady %d MiB, about %s Services and imports, or %s endpoints of imports", int(steady), thousands(objects), thousands(endpoints))
	if !strings.Contains(doc, want) {
		t.Errorf("docs/deploy.md: want %q", want)
	}
}
