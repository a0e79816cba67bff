// Big answers: cutting an answer to what one DNS message over TCP carries,
// keeping the records of each SRV target together, so that no reply ever
// needs the TC bit over TCP.

package multicluster

import (
	"github.com/miekg/dns"
)

// Big answers. A headless import with thousands of endpoints has more
// addresses than a DNS message holds: 65,535 octets over TCP (RFC 1035,
// 4.2.2), far fewer over UDP. The plugin answers a subset (the Multicluster
// DNS specification lets a headless service answer a subset of its
// endpoints), so that a TCP answer always fits and needs no TC bit; over
// UDP the server then truncates it to the client's buffer and sets TC, and
// the client asks again over TCP.
const (
	// maxAnswerRecords caps the answer section: 2,000 AAAA records take
	// 56,000 octets once their owner names are compressed (2 + 10 + 16 each),
	// which leaves room for the header, the question, the first owner name
	// in full and an OPT record. A and AAAA answers are capped at the same
	// count, taking the endpoints in the same order (cluster, slice, host
	// name, address), so both families answer the same clusters' endpoints,
	// and for endpoints with host names the same ones.
	maxAnswerRecords = 2000
	// maxAnswerSize is what a capped answer may take on the wire: a TCP
	// message, less room for an OPT record with an Extended DNS Error.
	maxAnswerSize = dns.MaxMsgSize - 512
	// uncheckedRecords is the count of records below which no answer can
	// exceed maxAnswerSize (each record, compressed, takes at most 2 + 10 +
	// 6 + 255 octets), so that no length is computed for small answers.
	uncheckedRecords = 200
)

// capAnswer returns a, or a's first records when a would not fit a TCP
// message: at most maxAnswerRecords, cut so that the records of one SRV
// target stay together, and the additional records of the targets kept. It
// reports whether it cut.
func capAnswer(r *dns.Msg, a answer) (answer, bool) {
	if len(a.answer)+len(a.extra) <= uncheckedRecords {
		return a, false
	}
	if len(a.answer) <= maxAnswerRecords && fits(r, a) {
		return a, false
	}
	owners := extraOwners(a)
	cuts := cutPoints(a.answer, true)
	if len(cuts) < 2 || cuts[1] > maxAnswerRecords || !fits(r, keepAnswers(a, owners, cuts[1])) {
		// One target's records alone are too many (a ClusterSetIP import
		// of thousands of ports): cut inside them.
		cuts = cutPoints(a.answer, false)
	}
	k := len(cuts) - 1 // keep a.answer[:cuts[k]]
	for k > 0 && cuts[k] > maxAnswerRecords {
		k--
	}
	capped := func(k int) answer { return keepAnswers(a, owners, cuts[k]) }
	if n := msgLen(r, capped(k)); n > maxAnswerSize {
		// Long SRV targets: the largest cut that fits.
		k = largestFit(k, n, func(i int) int { return msgLen(r, capped(i)) })
	}
	return capped(k), true
}

// largestFit returns the largest i below hi whose size is at most
// maxAnswerSize, given that size(0) fits and size(hi), sizeHi, does not.
// Records past an answer's first targets are much of a size, so a probe
// goes where the measured ends put the limit; a probe that did not halve the
// range is followed by one that does: never twice a binary search's probes.
func largestFit(hi, sizeHi int, size func(int) int) int {
	lo, sizeLo, halve, next := 0, 0, false, 0
	for hi-lo > 1 {
		i := lo + (hi-lo)/2
		switch {
		case next > lo && next < hi:
			i = next
		case !halve && lo > 0:
			i = lo + int(int64(hi-lo)*int64(maxAnswerSize-sizeLo)/int64(sizeHi-sizeLo))
			i = min(max(i, lo+1), hi-1)
		}
		width, interpolated := hi-lo, i != lo+(hi-lo)/2 && i != next
		next = 0
		if n := size(i); n <= maxAnswerSize {
			lo, sizeLo = i, n
			if interpolated {
				next = i + 1
			}
		} else {
			hi, sizeHi = i, n
		}
		halve = !halve && hi-lo > width/2
	}
	return lo
}

// cutPoints are the lengths answer may be cut to: every one, except, when
// whole is set, inside a run of SRV records of one target.
func cutPoints(answer []dns.RR, whole bool) []int {
	cuts := []int{0}
	for i := 1; i <= len(answer); i++ {
		if whole && i < len(answer) && sameTarget(answer[i-1], answer[i]) {
			continue
		}
		cuts = append(cuts, i)
	}
	return cuts
}

func sameTarget(a, b dns.RR) bool {
	sa, ok1 := a.(*dns.SRV)
	sb, ok2 := b.(*dns.SRV)
	return ok1 && ok2 && sa.Target == sb.Target
}

// extraOwners returns, for each additional record of a, the index of the
// first SRV record whose target it is an address of (len(a.answer) if
// none): found once, however many cuts are tried.
func extraOwners(a answer) []int {
	if len(a.extra) == 0 {
		return nil
	}
	first := make(map[string]int)
	for i, rr := range a.answer {
		if s, ok := rr.(*dns.SRV); ok {
			if _, seen := first[s.Target]; !seen {
				first[s.Target] = i
			}
		}
	}
	owners := make([]int, len(a.extra))
	for i, rr := range a.extra {
		j, ok := first[rr.Header().Name]
		if !ok {
			j = len(a.answer)
		}
		owners[i] = j
	}
	return owners
}

// keepAnswers is a with its first n answer records, and the additional
// records of the SRV targets among them (owners: extraOwners).
func keepAnswers(a answer, owners []int, n int) answer {
	out := a
	out.answer = a.answer[:n:n]
	if len(a.extra) == 0 {
		return out
	}
	out.extra = make([]dns.RR, 0, min(len(a.extra), 2*n))
	for i, rr := range a.extra {
		if owners[i] < n {
			out.extra = append(out.extra, rr)
		}
	}
	return out
}

// fits reports whether a, as the reply to r, takes at most maxAnswerSize
// octets with its names compressed.
func fits(r *dns.Msg, a answer) bool { return msgLen(r, a) <= maxAnswerSize }

// msgLen returns the length of a as the reply to r: uncompressed when that
// fits (no map of names to build), else with its names compressed.
func msgLen(r *dns.Msg, a answer) int {
	m := &dns.Msg{Question: r.Question, Answer: a.answer, Extra: a.extra}
	if n := m.Len(); n <= maxAnswerSize {
		return n
	}
	m.Compress = true
	return m.Len()
}
