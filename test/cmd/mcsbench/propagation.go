package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/miekg/dns"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// propagation is the delay from an API write to the changed DNS answer.
type propagation struct {
	kind string // create, update or delete
	// delay runs from just before the write request is sent to the first
	// answer that shows the change.
	delay time.Duration
	// api is how long the write request itself took.
	api time.Duration
}

const (
	// pollEvery is how often the answer is polled while waiting.
	pollEvery = time.Millisecond
	// propagationTimeout bounds the wait for one change.
	propagationTimeout = 10 * time.Second
)

// measurePropagation cycles ServiceImports in ns through create, address
// change and delete until writes writes are measured, polling the server's
// answer for the clusterset name.
func measurePropagation(ctx context.Context, c *cluster, s *server, ns string, writes int) ([]propagation, error) {
	dc, err := newDNSClient(s.addr)
	if err != nil {
		return nil, err
	}
	defer dc.close()
	imports := c.mcs.MulticlusterV1beta1().ServiceImports(ns)

	var out []propagation
	measure := func(kind, name string, want func(rcode int, ips []string) bool, write func() error) error {
		if len(out) >= writes {
			return nil
		}
		// The poller starts before the write, so that a change the watch
		// delivers before the write's response is seen at once.
		seen := make(chan time.Duration, 1)
		pollCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		start := time.Now()
		go func() {
			next := start
			for pollCtx.Err() == nil && time.Since(start) < propagationTimeout {
				rcode, ips, err := dc.a(name)
				if err == nil && want(rcode, ips) {
					seen <- time.Since(start)
					return
				}
				next = next.Add(pollEvery)
				time.Sleep(time.Until(next))
			}
			close(seen)
		}()
		if err := write(); err != nil {
			return fmt.Errorf("%s %s: %w", kind, name, err)
		}
		api := time.Since(start)
		d, ok := <-seen
		if !ok {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%s of %s: no changed answer within %s", kind, name, propagationTimeout)
		}
		out = append(out, propagation{kind: kind, delay: d, api: api})
		return nil
	}

	for i := 0; len(out) < writes; i++ {
		name := objectName("prop", i)
		fqdn := name + "." + ns + ".svc.clusterset.local."
		first, second := importIP(2*i), importIP(2*i+1)
		var si *mcsv1beta1.ServiceImport
		err := measure("create", fqdn, hasAddress(first), func() (err error) {
			si, err = imports.Create(ctx, newImport(ns, name, first), meta.CreateOptions{})
			return err
		})
		if err != nil {
			return out, err
		}
		err = measure("update", fqdn, hasAddress(second), func() (err error) {
			si.Spec.IPs = []string{second}
			si, err = imports.Update(ctx, si, meta.UpdateOptions{})
			return err
		})
		if err != nil {
			return out, err
		}
		err = measure("delete", fqdn, func(rcode int, _ []string) bool { return rcode == dns.RcodeNameError }, func() error {
			return imports.Delete(ctx, name, meta.DeleteOptions{})
		})
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func hasAddress(ip string) func(int, []string) bool {
	return func(rcode int, ips []string) bool {
		return rcode == dns.RcodeSuccess && slices.Equal(ips, []string{ip})
	}
}
