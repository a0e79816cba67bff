package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"
)

// cluster writes the benchmark's objects.
type cluster struct {
	kube    kubernetes.Interface
	mcs     mcsclient.Interface
	workers int
}

// parallel runs fn for every i in [from, to) on c.workers goroutines and
// returns the first error; the other workers stop soon after it.
func (c *cluster) parallel(ctx context.Context, from, to int, fn func(context.Context, int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := int64(from)
	var finished int64
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	for range c.workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(atomic.AddInt64(&next, 1) - 1)
				if i >= to {
					return
				}
				if err := retry(ctx, func() error { return fn(ctx, i) }); err != nil {
					once.Do(func() { firstErr = err; cancel() })
					return
				}
				// Large sets take minutes; show that they progress.
				if n := atomic.AddInt64(&finished, 1); n%10000 == 0 {
					status("  %d of %d done", n, to-from)
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// retry repeats fn a few times on errors an overloaded API server gives, so
// that a long object-creation phase does not fail on one hiccup.
func retry(ctx context.Context, fn func() error) error {
	var err error
	for attempt := range 5 {
		err = fn()
		if err == nil || !transient(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 200 * time.Millisecond):
		}
	}
	return err
}

func transient(err error) bool {
	var netErr net.Error
	return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || errors.As(err, &netErr)
}

func (c *cluster) namespace(ctx context.Context, name string) error {
	_, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: meta.ObjectMeta{Name: name}}, meta.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// objectName is the name of object i of a set; names are the same for
// Services and ServiceImports.
func objectName(prefix string, i int) string { return fmt.Sprintf("%s-%d", prefix, i) }

// importIP is a distinct IPv4 address per import index, in 10.128.0.0/9,
// which is outside the Service range, so answers cannot be mixed up.
func importIP(i int) string {
	return fmt.Sprintf("10.%d.%d.%d", 128+(i>>16)&127, (i>>8)&255, i&255)
}

// createServices creates Services prefix-from .. prefix-(to-1) in ns:
// ClusterIP Services, whose addresses the API server allocates, or headless
// ones (clusterIP None, no selector).
//
// Large sets are headless because the API server's allocator does not scale
// to them: since Kubernetes 1.33 it records each address as an IPAddress
// object, and after every allocation it counts all of them again for its
// metrics. Creation then slows as the set grows, to about 23 Services a
// second at 15,000 here, so 50,000 would take hours. A headless Service is
// the same object to the kubernetes plugin, with "None" for the address.
func (c *cluster) createServices(ctx context.Context, ns, prefix string, from, to int, headless bool) error {
	return c.parallel(ctx, from, to, func(ctx context.Context, i int) error {
		svc := &corev1.Service{
			ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: objectName(prefix, i)},
			Spec: corev1.ServiceSpec{
				Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}},
			},
		}
		if headless {
			svc.Spec.ClusterIP = corev1.ClusterIPNone
		}
		_, err := c.kube.CoreV1().Services(ns).Create(ctx, svc, meta.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil // a retried create that had gone through
		}
		return err
	})
}

func newImport(ns, name string, ips ...string) *mcsv1beta1.ServiceImport {
	return &mcsv1beta1.ServiceImport{
		ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name},
		Spec: mcsv1beta1.ServiceImportSpec{
			Type:  mcsv1beta1.ClusterSetIP,
			IPs:   ips,
			Ports: []mcsv1beta1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}},
		},
	}
}

// createImports creates ClusterSetIP ServiceImports prefix-from ..
// prefix-(to-1) in ns, import i with address importIP(i).
func (c *cluster) createImports(ctx context.Context, ns, prefix string, from, to int) error {
	return c.parallel(ctx, from, to, func(ctx context.Context, i int) error {
		_, err := c.mcs.MulticlusterV1beta1().ServiceImports(ns).Create(ctx, newImport(ns, objectName(prefix, i), importIP(i)), meta.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

// deleteAll deletes every Service and ServiceImport in the namespaces.
// (There is no controller-manager to empty a deleted namespace.)
func (c *cluster) deleteAll(ctx context.Context, namespaces ...string) error {
	for _, ns := range namespaces {
		svcs, err := c.kube.CoreV1().Services(ns).List(ctx, meta.ListOptions{})
		if err != nil {
			return err
		}
		err = c.parallel(ctx, 0, len(svcs.Items), func(ctx context.Context, i int) error {
			err := c.kube.CoreV1().Services(ns).Delete(ctx, svcs.Items[i].Name, meta.DeleteOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		})
		if err != nil {
			return err
		}
		err = c.mcs.MulticlusterV1beta1().ServiceImports(ns).DeleteCollection(ctx, meta.DeleteOptions{}, meta.ListOptions{})
		if err != nil {
			return err
		}
	}
	return nil
}
