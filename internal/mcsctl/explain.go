package mcsctl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/miekg/dns"
	kubeclient "k8s.io/client-go/kubernetes"
)

// question turns the arguments of explain into a query: NAME [TYPE], NAME
// an IP address for its PTR.
func question(args []string) (*dns.Msg, error) {
	if len(args) == 0 || len(args) > 2 {
		return nil, fmt.Errorf("%w: explain NAME [TYPE]", errUsage)
	}
	name, qtype := args[0], dns.TypeA
	if ip := net.ParseIP(name); ip != nil {
		rev, err := dns.ReverseAddr(ip.String())
		if err != nil {
			return nil, err
		}
		name, qtype = rev, dns.TypePTR
	}
	if len(args) == 2 {
		t, ok := dns.StringToType[strings.ToUpper(args[1])]
		if !ok {
			return nil, fmt.Errorf("%w: unknown type %q", errUsage, args[1])
		}
		qtype = t
	}
	if _, ok := dns.IsDomainName(name); !ok {
		return nil, fmt.Errorf("%q is not a domain name", name)
	}
	r := new(dns.Msg)
	r.SetQuestion(dns.Fqdn(name), qtype)
	return r, nil
}

func explain(ctx context.Context, o *options, args []string, stdout io.Writer) (int, error) {
	r, err := question(args)
	if err != nil {
		return 0, err
	}
	cfg, err := o.restConfig()
	if err != nil {
		return 0, err
	}
	if err := checkReadAccess(ctx, cfg); err != nil {
		return 0, err
	}
	kube, err := kubeclient.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	l := detectLayout(ctx, kube)
	o.resolve(l)
	var res Result
	var fr *FrontResult
	if l.standalone {
		// The name reaches coredns-mcs through the cluster's own DNS.
		var answer *dns.Msg
		if fr, answer, err = explainFront(ctx, kube, l, r, o.clientConfig()); err != nil {
			// The server's own decision is still worth showing.
			fr = &FrontResult{Steps: []string{fmt.Sprintf("the front's path is not shown: %v", err)}, Forwarded: true}
		}
		if !fr.Forwarded {
			q := r.Question[0]
			res = Result{Question: q.Name, Type: dns.TypeToString[q.Qtype]}
			if answer != nil {
				res.AnsweredBy = "front"
			}
			res.fill(answer)
		}
	}
	if fr == nil || fr.Forwarded {
		e, err := o.startFor(ctx, cfg, kube, r.Question[0].Name)
		if err != nil {
			return 0, err
		}
		defer e.Stop()
		res = e.Explain(r)
	}
	res.Front = fr
	if o.output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return 0, enc.Encode(res)
	}
	printResult(stdout, res)
	return 0, nil
}

func printResult(w io.Writer, res Result) {
	printAnswer(w, res)
	if s := res.SkippedImports; s != nil {
		fmt.Fprintf(w, "\nNote: %d ServiceImports are skipped by the server, which logs each (kubectl mcs check): %s\n", s.Count, s)
	}
	if res.Note != "" {
		fmt.Fprintf(w, "\nNote: %s\n", res.Note)
	}
}

func printAnswer(w io.Writer, res Result) {
	fmt.Fprintf(w, "%s %s\n", res.Question, res.Type)
	if f := res.Front; f != nil {
		if f.Block != "" {
			fmt.Fprintf(w, "  the cluster's DNS (front): server block %s of %s\n\n", f.Block, f.Corefile)
		} else {
			fmt.Fprintf(w, "  the cluster's DNS (front)\n\n")
		}
		for i, s := range f.Steps {
			fmt.Fprintf(w, "  %d. %s\n", i+1, s)
		}
		fmt.Fprintln(w)
		if !f.Forwarded {
			if res.AnsweredBy == "" {
				fmt.Fprintln(w, "It does not reach coredns-mcs; the front's other plugins answer it.")
				return
			}
			fmt.Fprintf(w, "Answer of the front's kubernetes plugin: %s\n", res.Rcode)
			printRecords(w, res)
			return
		}
		fmt.Fprintf(w, "  then coredns-mcs standalone: server block %s of %s\n\n", res.Block, res.Corefile)
	} else {
		fmt.Fprintf(w, "  server block %s of %s\n\n", res.Block, res.Corefile)
	}
	for i, s := range res.Steps {
		fmt.Fprintf(w, "  %d. %s\n", i+1, s)
	}
	fmt.Fprintln(w)
	if res.AnsweredBy == "" {
		fmt.Fprintln(w, "No answer from the cluster's DNS plugins.")
		return
	}
	fmt.Fprintf(w, "Answer of the %s plugin: %s\n", res.AnsweredBy, res.Rcode)
	printRecords(w, res)
}

func printRecords(w io.Writer, res Result) {
	section := func(name string, rrs []string) {
		if len(rrs) == 0 {
			return
		}
		fmt.Fprintf(w, "  ;; %s\n", name)
		for _, rr := range rrs {
			fmt.Fprintf(w, "  %s\n", rr)
		}
	}
	section("ANSWER", res.Answer)
	section("AUTHORITY", res.Authority)
	section("ADDITIONAL", res.Additional)
	if len(res.Answer)+len(res.Authority)+len(res.Additional) == 0 {
		fmt.Fprintln(w, "  (no records)")
	}
}
