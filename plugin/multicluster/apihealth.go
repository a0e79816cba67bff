// The plugin's health as the API server shows it: whether each resource's
// last call got an answer (api_unreachable), and the degraded reasons (a
// missing CRD or RBAC rule) that make clusterset zones answer SERVFAIL until
// an administrator fixes them.

package multicluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/miekg/dns"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Reasons the plugin can be degraded, the reason label of degradedGauge.
const (
	reasonCRD         = "crd"
	reasonImportRBAC  = "rbac_serviceimports"
	reasonSliceRBAC   = "rbac_endpointslices"
	reasonServiceRBAC = "rbac_services"
)

// reach records whether the last call about resource got an answer from the
// API server: any answer, an error status included, says that it is
// reachable; an error without a status (a connection refused, reset or
// timed out) that it is not. An answer that could not be decoded
// (undecodableError) was an answer all the same: it is logged as such, once
// until a call about resource succeeds, and is not unreachability. A call
// cancelled because the watcher stops says nothing.
func (w *watcher) reach(resource string, err error) {
	if err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return
	}
	undecodable := isUndecodable(err)
	down := isUnreachable(err)
	w.unreachableMu.Lock()
	defer w.unreachableMu.Unlock()
	if undecodable && !w.undecodable[resource] {
		if w.undecodable == nil {
			w.undecodable = map[string]bool{}
		}
		w.undecodable[resource] = true
		log.Warningf("Kubernetes API answered, but %v; retrying", err)
	} else if err == nil && w.undecodable[resource] {
		delete(w.undecodable, resource)
		log.Infof("Kubernetes API answers about %s decode again", resource)
	}
	if w.unreachable[resource] == down {
		return
	}
	if down {
		if w.unreachable == nil {
			w.unreachable = map[string]bool{}
		}
		if len(w.unreachable) == 0 {
			log.Warningf("Kubernetes API unreachable, serving what the cache holds: %v", err)
		}
		w.unreachable[resource] = true
		return
	}
	delete(w.unreachable, resource)
	if len(w.unreachable) == 0 {
		log.Infof("Kubernetes API reachable again")
	}
}

// isUnreachable reports whether err is a call that got no answer from the
// API server: an error without a status, and not an answer that could not
// be decoded.
func isUnreachable(err error) bool {
	var status apierrors.APIStatus
	return err != nil && !isUndecodable(err) && !errors.As(err, &status)
}

// apiUnreachable reports whether some resource's last call got no answer.
func (w *watcher) apiUnreachable() bool {
	w.unreachableMu.Lock()
	defer w.unreachableMu.Unlock()
	return len(w.unreachable) > 0
}

// guard reports list and watch failures that no retry will fix (a missing
// RBAC rule or CRD) as a degraded reason, and clears it on success.
func (w *watcher) guard(reason, resource string) func(error) {
	return func(err error) {
		w.reach(resource, err)
		switch {
		case err == nil, isUndecodable(err):
			// An answer that did not decode was an answer all the
			// same: the call was allowed.
			w.health.clear(reason)
			if reason == reasonImportRBAC {
				// A CRD deleted and installed again while watching.
				w.health.clear(reasonCRD)
			}
		case apierrors.IsForbidden(err):
			w.health.set(reason, fmt.Sprintf("not allowed to list and watch %s: grant the ClusterRole in manifests/rbac (%v)", resource, err),
				dns.ExtendedErrorCodeOther, "RBAC forbids "+forbiddenVerb(err)+" on "+resource)
		case apierrors.IsNotFound(err) && reason == reasonImportRBAC:
			w.health.set(reasonCRD, errCRDMissing.Error(), dns.ExtendedErrorCodeOther, "ServiceImport CRD not installed")
			// The version watched may be gone while another is served.
			select {
			case w.rediscover <- struct{}{}:
			default:
			}
		}
	}
}

// health tracks why the plugin is degraded. Each reason is logged when it
// appears and when it clears, not on every retry.
type health struct {
	mu      sync.Mutex
	reasons map[string]degradation
	publish func(*degradation) // sets the plugin's degraded state
}

func newHealth(publish func(*degradation)) *health {
	return &health{reasons: map[string]degradation{}, publish: publish}
}

// set records reason, with the log message and the Extended DNS Error
// (info code, short text) that SERVFAIL answers carry while it lasts.
func (h *health) set(reason, msg string, infoCode uint16, text string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.reasons[reason]; !ok {
		log.Errorf("Degraded, clusterset zones answer SERVFAIL until this is fixed: %s", msg)
		degradedReasons.update(h, reason, true)
	}
	h.reasons[reason] = degradation{message: msg, infoCode: infoCode, text: text}
	h.publishLocked()
}

func (h *health) clear(reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.reasons[reason]; !ok {
		return
	}
	delete(h.reasons, reason)
	degradedReasons.update(h, reason, false)
	log.Infof("Recovered: %s", reason)
	h.publishLocked()
}

// publishLocked publishes every message, and the Extended DNS Error of the
// first reason in name order, so that it does not change from query to
// query.
func (h *health) publishLocked() {
	if len(h.reasons) == 0 {
		h.publish(nil)
		return
	}
	reasons := slices.Sorted(maps.Keys(h.reasons))
	msgs := make([]string, 0, len(reasons))
	for _, r := range reasons {
		msgs = append(msgs, h.reasons[r].message)
	}
	slices.Sort(msgs)
	d := h.reasons[reasons[0]]
	d.message = strings.Join(msgs, "; ")
	h.publish(&d)
}

// forbiddenVerb is the verb a Forbidden error from the API server names
// ("... cannot watch resource ..."), or "list and watch".
func forbiddenVerb(err error) string {
	if m := forbiddenVerbRE.FindStringSubmatch(err.Error()); m != nil {
		return m[1]
	}
	return "list and watch"
}

var forbiddenVerbRE = regexp.MustCompile(`cannot (\w+) resource`)
