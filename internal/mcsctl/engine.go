package mcsctl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/coredns-mcs/coredns-mcs/plugin/multicluster"
	"github.com/coredns/caddy/caddyfile"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/kubernetes"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/miekg/dns"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeclient "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Engine is one server block's multicluster and kubernetes plugins, run in
// this process with the user's credentials, chained as in the server.
type Engine struct {
	block    string // its keys, for messages
	corefile string // where the Corefile came from
	mc       *multicluster.Multicluster
	k        *kubernetes.Kubernetes // nil: the block has no kubernetes stanza
	stops    []func()
	// imports is the plugin's read of the ServiceImports, for the ones it
	// skips; nil when they could not be listed (importsErr says why).
	imports    *importReport
	importsErr error
}

// readAccess is what explain reads, as the plugins list and watch it.
var readAccess = []struct {
	what string
	list func(context.Context, kubeclient.Interface, *rest.Config) error
}{
	{"services", func(ctx context.Context, k kubeclient.Interface, _ *rest.Config) error {
		_, err := k.CoreV1().Services("").List(ctx, meta.ListOptions{Limit: 1})
		return err
	}},
	{"endpointslices.discovery.k8s.io", func(ctx context.Context, k kubeclient.Interface, _ *rest.Config) error {
		_, err := k.DiscoveryV1().EndpointSlices("").List(ctx, meta.ListOptions{Limit: 1})
		return err
	}},
	{"namespaces", func(ctx context.Context, k kubeclient.Interface, _ *rest.Config) error {
		_, err := k.CoreV1().Namespaces().List(ctx, meta.ListOptions{Limit: 1})
		return err
	}},
	// Through the plugin's own decoder, as its informers list them: a typed
	// client fails the whole page on one object it cannot decode.
	{"serviceimports.multicluster.x-k8s.io", func(ctx context.Context, _ kubeclient.Interface, cfg *rest.Config) error {
		l, err := multicluster.NewImportLister(cfg)
		if errors.Is(err, multicluster.ErrImportsNotServed) {
			return nil // no CRD: the plugin is degraded, which explain shows
		}
		if err != nil {
			return err
		}
		err = l.List(ctx, "", 1, func(multicluster.ImportObject) error { return errListed })
		if errors.Is(err, errListed) {
			return nil
		}
		return err
	}},
}

// errListed stops a list at its first object: listing is allowed.
var errListed = errors.New("listed")

// checkReadAccess lists each resource explain reads once, and names every
// one the user may not list.
func checkReadAccess(ctx context.Context, cfg *rest.Config) error {
	kube, err := kubeclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var denied []string
	for _, r := range readAccess {
		err := r.list(ctx, kube, cfg)
		switch {
		case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
			denied = append(denied, r.what)
		case err != nil:
			return fmt.Errorf("list %s: %w", r.what, err)
		}
	}
	if len(denied) > 0 {
		return fmt.Errorf("not allowed to list %s: explain reads what the plugins read, across all namespaces, and needs get, list and watch on them (the view ClusterRole does not cover serviceimports; see docs/kubectl-mcs.md)", strings.Join(denied, ", "))
	}
	return nil
}

// startEngine starts the plugins of block with the user's credentials, and
// waits for their caches.
func startEngine(ctx context.Context, cf *corefile, block caddyfile.ServerBlock, cfg *rest.Config, cc clientcmd.ClientConfig) (*Engine, error) {
	e := &Engine{block: strings.Join(block.Keys, " ")}
	c, line, ok := stanza(block, "multicluster")
	if !ok {
		return nil, fmt.Errorf("%s: the server block %s has no multicluster stanza", cf.source, e.block)
	}
	mc, err := multicluster.ParseStanza(c)
	if err != nil {
		return nil, fmt.Errorf("the multicluster stanza at line %d: %s", line, stanzaError(cf.source, err))
	}
	if _, _, ok := stanza(block, "kubernetes"); ok {
		k, stop, err := startKubernetes(ctx, cf, block, cc)
		if err != nil {
			return nil, err
		}
		e.stops = append(e.stops, stop)
		e.k = k
	}
	wait := 20 * time.Second
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d)
	}
	if err := mc.Start(cfg, e.k, wait); err != nil {
		e.Stop()
		return nil, err
	}
	e.stops = append(e.stops, mc.Stop)
	e.mc = mc
	return e, nil
}

// startKubernetes starts the kubernetes plugin of block with the user's
// credentials, its cache synced, and what follows it standing for the
// plugins after it (passedOn).
func startKubernetes(ctx context.Context, cf *corefile, block caddyfile.ServerBlock, cc clientcmd.ClientConfig) (*kubernetes.Kubernetes, func(), error) {
	c, line, ok := stanza(block, "kubernetes")
	if !ok {
		return nil, nil, fmt.Errorf("%s: the server block %s has no kubernetes stanza", cf.source, strings.Join(block.Keys, " "))
	}
	c.Next()
	k, err := kubernetes.ParseStanza(c)
	if err != nil {
		return nil, nil, fmt.Errorf("the kubernetes stanza at line %d: %s", line, stanzaError(cf.source, err))
	}
	k.ClientConfig = cc // the user's credentials, not the pod's
	onStart, onShut, err := k.InitKubeCache(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("the kubernetes plugin: %w", err)
	}
	if err := onStart(); err != nil {
		return nil, nil, fmt.Errorf("the kubernetes plugin: %w", err)
	}
	k.Next = passedOn{}
	return k, func() { _ = onShut() }, nil
}

// Stop stops the plugins.
func (e *Engine) Stop() {
	for i := len(e.stops) - 1; i >= 0; i-- {
		e.stops[i]()
	}
}

// passedOn stands for the plugins after kubernetes (forward, ...): reaching
// it means neither plugin answered.
type passedOn struct{}

func (passedOn) Name() string { return "next" }
func (passedOn) ServeDNS(context.Context, dns.ResponseWriter, *dns.Msg) (int, error) {
	return 0, errPassedOn
}

var errPassedOn = errors.New("passed on")

// Result is what explain prints.
type Result struct {
	Question string `json:"question"`
	Type     string `json:"type"`
	// Front is the path through the cluster's own DNS, in the standalone
	// layout.
	Front      *FrontResult `json:"front,omitempty"`
	Corefile   string       `json:"corefile"`
	Block      string       `json:"serverBlock"`
	Steps      []string     `json:"steps"`
	AnsweredBy string       `json:"answeredBy"` // multicluster, kubernetes, or "" (passed on)
	Rcode      string       `json:"rcode,omitempty"`
	Answer     []string     `json:"answer,omitempty"`
	Authority  []string     `json:"authority,omitempty"`
	Additional []string     `json:"additional,omitempty"`
	// SkippedImports are the ServiceImports the server skips, whatever
	// the name asked.
	SkippedImports *Sample `json:"skippedImports,omitempty"`
	// Note says what explain could not find out, if anything.
	Note string `json:"note,omitempty"`
}

func (e *Engine) Explain(r *dns.Msg) Result {
	q := r.Question[0]
	res := Result{Question: q.Name, Type: dns.TypeToString[q.Qtype], Corefile: e.corefile, Block: e.block}
	ex := e.mc.Explain(r)
	res.Steps = ex.Steps
	switch {
	case e.importsErr != nil:
		res.Note = fmt.Sprintf("the ServiceImports the server skips are not known: %v", e.importsErr)
	case e.imports != nil && e.imports.skipped.Count > 0:
		s := e.imports.skipped
		res.SkippedImports = &s
		if key, ok := serviceOf(q.Name); ok {
			if why, ok := e.imports.skippedByName[key]; ok {
				res.Steps = append(res.Steps, fmt.Sprintf("the ServiceImport %s exists, but the server skips it, and logs why: %s", key, why))
			}
		}
	}
	msg := ex.Answer
	if ex.Handled {
		res.AnsweredBy = "multicluster"
	} else if e.k != nil {
		rec := dnstest.NewRecorder(multicluster.OfflineWriter{})
		_, err := e.k.ServeDNS(context.Background(), rec, r)
		switch {
		case errors.Is(err, errPassedOn):
			res.Steps = append(res.Steps, kubernetesPassesOn(e.k, q.Name))
		case rec.Msg != nil:
			res.AnsweredBy = "kubernetes"
			msg = rec.Msg
			res.Steps = append(res.Steps, "the kubernetes plugin answers")
		default:
			res.Steps = append(res.Steps, fmt.Sprintf("the kubernetes plugin wrote nothing (%v)", err))
		}
	} else {
		res.Steps = append(res.Steps, "the block has no kubernetes plugin: the next plugin of the block answers")
	}
	res.fill(msg)
	return res
}

// fill sets the answer of res from msg, when a plugin answered.
func (res *Result) fill(msg *dns.Msg) {
	if res.AnsweredBy != "" && msg != nil {
		res.Rcode = dns.RcodeToString[msg.Rcode]
		for _, rr := range msg.Answer {
			res.Answer = append(res.Answer, rr.String())
		}
		for _, rr := range msg.Ns {
			res.Authority = append(res.Authority, rr.String())
		}
		for _, rr := range msg.Extra {
			if rr.Header().Rrtype == dns.TypeOPT {
				continue
			}
			res.Additional = append(res.Additional, rr.String())
		}
	}
}

// kubernetesPassesOn says why the kubernetes plugin k passed name on: it is
// not in its zones, or it is and the plugin falls through.
func kubernetesPassesOn(k *kubernetes.Kubernetes, name string) string {
	if plugin.Zones(k.Zones).Matches(name) == "" {
		return fmt.Sprintf("%s is not in the kubernetes plugin's zones (%s): neither plugin answers; the next plugin of the block (forward...) does", name, strings.Join(k.Zones, " "))
	}
	return fmt.Sprintf("the kubernetes plugin has no such name and falls through (fallthrough %s): neither plugin answers; the next plugin of the block (forward...) does", strings.Join(k.Fall.Zones, " "))
}

// Imports returns the imports the multicluster plugin serves.
func (e *Engine) Imports() []multicluster.Import { return e.mc.Imports() }

// Start reads the Corefile of the ConfigMap configMap (NAMESPACE/NAME) with
// the credentials of kubeconfig, and starts the plugins of the server block
// that serves name, as explain does.
func Start(ctx context.Context, kubeconfig, configMap, name string) (*Engine, error) {
	o := &options{kubeconfig: kubeconfig, configMap: configMap}
	return o.start(ctx, name)
}

func (o *options) start(ctx context.Context, name string) (*Engine, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	if err := checkReadAccess(ctx, cfg); err != nil {
		return nil, err
	}
	kube, err := kubeclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	o.resolve(detectLayout(ctx, kube))
	return o.startFor(ctx, cfg, kube, name)
}

// startFor starts the plugins of the server block of the Corefile that
// serves name; the options are resolved.
func (o *options) startFor(ctx context.Context, cfg *rest.Config, kube kubeclient.Interface, name string) (*Engine, error) {
	cf, err := loadCorefile(ctx, o, kube)
	if err != nil {
		return nil, err
	}
	block, _, ok := cf.blockFor(name)
	if !ok {
		return nil, fmt.Errorf("%s: no server block serves %s", cf.source, name)
	}
	e, err := startEngine(ctx, cf, block, cfg, o.clientConfig())
	if err != nil {
		return nil, err
	}
	e.corefile = cf.source
	e.imports, e.importsErr = readImports(ctx, cfg, e.mc.WatchedNamespaces())
	return e, nil
}

// serviceOf returns the NAMESPACE/SERVICE of a name of the MCS DNS schema
// (SERVICE.NAMESPACE.svc.ZONE and the names below it).
func serviceOf(name string) (string, bool) {
	labels := dns.SplitDomainName(strings.ToLower(name))
	for i := 2; i < len(labels); i++ {
		if labels[i] == "svc" {
			return labels[i-1] + "/" + labels[i-2], true
		}
	}
	return "", false
}
