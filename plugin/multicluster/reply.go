// Writing replies: answers with the zone's SOA when they are negative,
// SERVFAIL with an Extended DNS Error, and how many records a reply can
// take.

package multicluster

import (
	"context"
	"net"

	"github.com/coredns/coredns/plugin"
	corerequest "github.com/coredns/coredns/request"
	"github.com/miekg/dns"
)

// reply writes what d says to write, if anything, and reports whether it
// did.
func (m *Multicluster) reply(ctx context.Context, w dns.ResponseWriter, r *dns.Msg, d *decision) (handled bool, rcode int, err error) {
	switch d.reply {
	case replyAnswer:
		return m.write(w, r, d)
	case replyRefused:
		resp := new(dns.Msg)
		resp.SetRcode(r, dns.RcodeRefused)
		w.WriteMsg(resp)
		return true, dns.RcodeSuccess, nil
	case replyServfail:
		return m.servfail(w, r, d.degraded)
	case replyKubeNext:
		k := m.kube
		rcode, err := plugin.NextOrFailure(k.Name(), k.Next, ctx, w, r)
		return true, rcode, err
	case replyKubeNXDomain:
		state := corerequest.Request{W: w, Req: r}
		rcode, err := plugin.BackendError(ctx, m.kube, d.kubeZone, dns.RcodeNameError, state, nil, plugin.Options{})
		return true, rcode, err
	}
	return false, 0, nil
}

// minRecordLen is the fewest octets a record of an answer takes on the
// wire: an A record whose owner name is compressed to a pointer (2 + 10 + 4).
const minRecordLen = 16

// replyLimit is the most records of each section worth making for the reply
// to r: over UDP, one more than its buffer (udpSize) holds, so that the
// reply is still truncated, with TC, and the client asks again over TCP;
// over TCP, maxAnswerRecords (capAnswer).
func (m *Multicluster) replyLimit(w dns.ResponseWriter, r *dns.Msg) int {
	size, udp := m.udpSize(w, r)
	if !udp {
		return maxAnswerRecords
	}
	return min(size/minRecordLen+1, maxAnswerRecords)
}

// udpSize is the most octets the plugin's reply to r may take over UDP: the
// buffer the client advertises (RFC 6891; 512 without EDNS0), at most
// maxUDPSize. It reports false over TCP.
func (m *Multicluster) udpSize(w dns.ResponseWriter, r *dns.Msg) (int, bool) {
	if _, udp := w.RemoteAddr().(*net.UDPAddr); !udp {
		return 0, false
	}
	size := dns.MinMsgSize
	if opt := r.IsEdns0(); opt != nil {
		size = max(size, int(opt.UDPSize()))
	}
	return min(size, m.maxUDPSize), true
}

// fitUDP cuts resp, the plugin's reply to r, to maxUDPSize over UDP when
// the client advertises a larger buffer, setting TC when it cuts. The
// server cuts every reply to the buffer the request advertises (CoreDNS's
// ScrubWriter); lowering that buffer in r, as the bufsize plugin does, is
// not enough, since a plugin before this one may pass on a copy of the
// request (cache does). So the reply is cut here, with the OPT record the
// server would add, which then advertises the plugin's size.
func (m *Multicluster) fitUDP(w dns.ResponseWriter, r *dns.Msg, resp *dns.Msg) {
	if _, udp := w.RemoteAddr().(*net.UDPAddr); !udp {
		return
	}
	opt := r.IsEdns0()
	if opt == nil || int(opt.UDPSize()) <= m.maxUDPSize {
		// The client's buffer is the smaller: the server's own cut of
		// every reply to it is this one.
		return
	}
	opt.SetUDPSize(uint16(m.maxUDPSize)) // #nosec G115 -- at most 65535
	size := m.maxUDPSize
	state := corerequest.Request{W: w, Req: r}
	state.SizeAndDo(resp)
	resp.Truncate(size)
}

// servfail writes SERVFAIL for a clusterset name the plugin cannot answer:
// its caches have not synced, or it is degraded (degraded, nil when not).
// To a client that speaks EDNS0 it says why, in an Extended DNS Error (RFC
// 8914): Not Ready while unsynced, otherwise the cause of the degradation.
func (m *Multicluster) servfail(w dns.ResponseWriter, r *dns.Msg, degraded *degradation) (handled bool, rcode int, err error) {
	resp := new(dns.Msg)
	resp.SetRcode(r, dns.RcodeServerFailure)
	if opt := r.IsEdns0(); opt != nil {
		ede := &dns.EDNS0_EDE{InfoCode: dns.ExtendedErrorCodeNotReady, ExtraText: "multicluster caches not synced"}
		if degraded != nil {
			ede.InfoCode, ede.ExtraText = degraded.infoCode, degraded.text
		}
		resp.SetEdns0(opt.UDPSize(), opt.Do())
		o := resp.IsEdns0()
		o.Option = append(o.Option, ede)
	}
	w.WriteMsg(resp)
	// Written: the server must not write an answer of its own.
	return true, dns.RcodeSuccess, nil
}

// pendingTTL bounds the negative TTL (RFC 2308: the SOA's TTL and minimum,
// whichever is lower) of an answer about an import that has no address yet:
// controllers write a ServiceImport first and its spec.ips, or the derived
// Service, after, and a resolver must not cache that gap for the zone's
// whole TTL.
const pendingTTL = 1

// write sends d.a, with the SOA of d's zone, in the query's case, in the
// authority section of negative answers; an answer about an import without
// an address yet carries pendingTTL as the SOA's TTL and minimum.
func (m *Multicluster) write(w dns.ResponseWriter, r *dns.Msg, d *decision) (handled bool, rcode int, err error) {
	a := d.a
	resp := new(dns.Msg)
	resp.SetRcode(r, a.rcode)
	resp.Authoritative = true
	resp.Answer = a.answer
	resp.Extra = a.extra
	if len(a.answer) == 0 {
		ttl := m.ttl
		if a.pending {
			ttl = min(ttl, pendingTTL)
		}
		q := r.Question[0]
		resp.Ns = []dns.RR{soa(q.Name[len(q.Name)-len(d.zone):], m.serial(), ttl)}
	}
	m.fitUDP(w, r, resp)
	w.WriteMsg(resp)
	return true, dns.RcodeSuccess, nil
}
