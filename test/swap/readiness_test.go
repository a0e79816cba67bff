//go:build linux

package swap

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// readyCheck is what a CoreDNS pod answered, asked directly the moment its
// endpoint turned ready in the kube-dns EndpointSlice: the moment
// kube-proxy starts sending it queries. A pod that did not answer is asked
// again every 100 ms, to measure how long it was ready without serving.
type readyCheck struct {
	pod, addr string
	udp, tcp  error
	// servedAfter is how long after the endpoint turned ready both UDP
	// and TCP answered (zero when they did at once; negative: never, within
	// 20 s).
	servedAfter time.Duration
}

func (c readyCheck) String() string {
	status := func(err error) string {
		if err == nil {
			return "answered"
		}
		return err.Error()
	}
	s := fmt.Sprintf("%s (%s): UDP %s, TCP %s", c.pod, c.addr, status(c.udp), status(c.tcp))
	switch {
	case c.servedAfter > 0:
		s += fmt.Sprintf("; both answered %s later", c.servedAfter.Round(time.Millisecond))
	case c.servedAfter < 0:
		s += "; still not answering 20s later"
	}
	return s
}

// readinessWatch asks each CoreDNS pod that becomes ready during a
// rollout, at once, for the local name over UDP and TCP, to see whether a
// pod is ever ready before it serves.
type readinessWatch struct {
	cancel context.CancelFunc
	done   chan struct{}
	asks   sync.WaitGroup
	mu     sync.Mutex
	checks []readyCheck
	err    error
}

func (s *scenario) watchReadiness() *readinessWatch {
	s.t.Helper()
	ctx, cancel := context.WithCancel(s.ctx)
	w := &readinessWatch{cancel: cancel, done: make(chan struct{})}
	slices := s.n.Client.DiscoveryV1().EndpointSlices("kube-system")
	selector := discoveryv1.LabelServiceName + "=kube-dns"
	list, err := slices.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		s.t.Fatal(err)
	}
	seen := map[string]bool{}
	readyEndpoints(list.Items, func(pod, _ string) { seen[pod] = true })
	watcher, err := slices.Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: list.ResourceVersion})
	if err != nil {
		s.t.Fatal(err)
	}
	go func() {
		defer close(w.done)
		defer watcher.Stop()
		for ev := range watcher.ResultChan() {
			if ev.Type == watch.Error {
				if ctx.Err() != nil {
					return // stopped
				}
				w.mu.Lock()
				w.err = fmt.Errorf("watch kube-dns EndpointSlices: %v", ev.Object)
				w.mu.Unlock()
				return
			}
			slice, ok := ev.Object.(*discoveryv1.EndpointSlice)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			readyEndpoints([]discoveryv1.EndpointSlice{*slice}, func(pod, addr string) {
				if seen[pod] {
					return
				}
				seen[pod] = true
				w.asks.Add(1)
				go func() {
					defer w.asks.Done()
					c := s.checkReadyPod(pod, addr)
					w.mu.Lock()
					w.checks = append(w.checks, c)
					w.mu.Unlock()
				}()
			})
		}
	}()
	return w
}

// checkReadyPod asks a pod that just turned ready, over UDP and TCP, and
// again every 100 ms until both answer (at most 20 s).
func (s *scenario) checkReadyPod(pod, addr string) readyCheck {
	ready := time.Now()
	c := readyCheck{pod: pod, addr: addr, udp: s.askPod(s.ctx, "udp", addr), tcp: s.askPod(s.ctx, "tcp", addr)}
	if c.udp == nil && c.tcp == nil {
		return c
	}
	ctx, cancel := context.WithDeadline(s.ctx, ready.Add(20*time.Second))
	defer cancel()
	c.servedAfter = -1
	if poll.Until(ctx, "pod "+pod+" answers", func() (bool, string) {
		return s.askPod(s.ctx, "udp", addr) == nil && s.askPod(s.ctx, "tcp", addr) == nil, ""
	}) == nil {
		c.servedAfter = time.Since(ready)
	}
	return c
}

// readyEndpoints calls f for each ready endpoint of slices, by pod name.
func readyEndpoints(slices []discoveryv1.EndpointSlice, f func(pod, addr string)) {
	for _, slice := range slices {
		for _, ep := range slice.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready || ep.TargetRef == nil || len(ep.Addresses) == 0 {
				continue
			}
			f(ep.TargetRef.Name, ep.Addresses[0])
		}
	}
}

// askPod asks the CoreDNS pod at addr for the local name, once, with a
// second to answer; nil means it answered NOERROR.
func (s *scenario) askPod(ctx context.Context, network, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := s.n.NetNS.DialContext(ctx, network, net.JoinHostPort(addr, "53"))
	if err != nil {
		return err
	}
	m := new(dns.Msg)
	m.SetQuestion(localName, dns.TypeA)
	r, err := harness.Exchange(ctx, conn, m)
	if err != nil {
		return err
	}
	if r.Rcode != dns.RcodeSuccess || len(r.Answer) == 0 {
		return fmt.Errorf("%s with %d answers", dns.RcodeToString[r.Rcode], len(r.Answer))
	}
	return nil
}

// stop waits until want pods have been checked (at most 15 s: their
// endpoints may turn ready in the slice a moment after rollout status
// returns), ends the watch and returns what the pods answered.
func (w *readinessWatch) stop(want int) ([]readyCheck, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_ = poll.Until(ctx, fmt.Sprintf("%d pods checked", want), func() (bool, string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.checks) >= want, ""
	}) // fewer are reported
	w.cancel()
	<-w.done
	w.asks.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.checks, w.err
}

func describeChecks(checks []readyCheck) string {
	var lines []string
	for _, c := range checks {
		lines = append(lines, c.String())
	}
	return strings.Join(lines, "; ")
}

// checkReadiness stops w and fails the test unless every pod that became
// ready in the rollout answered over UDP and TCP at that moment; for a pod
// that did not, it logs the pod's state and log.
func (s *scenario) checkReadiness(phase string, w *readinessWatch) {
	s.t.Helper()
	checks, err := w.stop(2)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Logf("%s: %d CoreDNS pods became ready, each asked directly at once: %s", phase, len(checks), describeChecks(checks))
	if len(checks) < 2 {
		s.t.Errorf("%s: saw %d CoreDNS pods become ready, want 2", phase, len(checks))
	}
	for _, c := range checks {
		if c.udp == nil && c.tcp == nil {
			continue
		}
		pod, err := s.n.Client.CoreV1().Pods("kube-system").Get(s.ctx, c.pod, metav1.GetOptions{})
		if err == nil && !startupProbeOn53(pod) {
			// kubeadm's pod template (rollout undo brings it back) has no
			// startup probe: CoreDNS's ready plugin can say 200 a moment
			// before the DNS listeners open. The shipped manifests add the
			// probe that prevents it; kubeadm's pods keep their own.
			s.t.Logf("%s: ready before it served, a pod of kubeadm's template (no startup probe on port 53): %s", phase, c)
			continue
		}
		s.t.Errorf("%s: ready before it served: %s", phase, c)
		if err == nil {
			s.t.Logf("%s: conditions %+v; container statuses %+v", c.pod, pod.Status.Conditions, pod.Status.ContainerStatuses)
		}
		logs, _ := s.n.Kubectl(s.ctx, s.work, "-n", "kube-system", "logs", "--timestamps", c.pod)
		s.t.Logf("%s log:\n%s", c.pod, logs)
	}
}

// startupProbeOn53 reports whether the pod's coredns container has the
// shipped manifests' startup probe, a TCP connect to port 53.
func startupProbeOn53(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.Containers {
		if p := c.StartupProbe; p != nil && p.TCPSocket != nil && p.TCPSocket.Port.IntValue() == 53 {
			return true
		}
	}
	return false
}
