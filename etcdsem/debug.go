package etcdsem

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/errs"
)

// A Semaphore reads itself in the core's plain values (Reading) and dumps
// itself for a human (Diagnostics), so semdebug.Register(s) shows it on the
// debug page, from this handle's mirror: the capacity, the units granted and
// the keys waiting across the fleet, one holder group per handle (in block
// mode, a handle's blocks), and in block mode this handle's own callers. Each
// reading also reads the block-mode handles' reports (one Get, bounded by
// reportReadTimeout): every process's callers as of its last report, about 3s
// behind at most; "-" where no report is known.

// kind says what s is: "etcd semaphore", or "etcd semaphore, blocks of N".
func (s *Semaphore) kind() string {
	if s.pool != nil {
		return "etcd semaphore, blocks of " + strconv.FormatInt(s.pool.size, 10)
	}
	return "etcd semaphore"
}

// handleView is one handle of the fleet as the mirror shows it: its keys,
// and its report.
type handleView struct {
	lease         int64
	client        string
	keys, waiting int   // keys granted (blocks, in block mode), keys waiting
	held, awaited int64 // their units
	oldest        time.Time
	report        *Report // nil if unknown
}

// reportReadTimeout bounds the debug page's read of the reports.
const reportReadTimeout = time.Second

// pageReports reads the reports for the debug page; nil if the read failed.
func (s *Semaphore) pageReports() []Report {
	ctx, cancel := context.WithTimeout(s.sess.ctx, reportReadTimeout)
	defer cancel()
	rs, _, err := s.readReports(ctx)
	if err != nil {
		return nil
	}
	return rs
}

// fleetHandlesLocked groups the mirror's live keys by handle (lease), in order of
// each handle's oldest key, then adds the handles with a report and no key.
// s.mu is held.
func (s *Semaphore) fleetHandlesLocked(reports []Report) []*handleView {
	by := map[int64]*handleView{}
	var out []*handleView
	for _, k := range s.q.keys {
		if k.state == keyDead {
			continue
		}
		h := by[k.lease]
		if h == nil {
			h = &handleView{lease: k.lease, client: k.client, oldest: k.created}
			by[k.lease] = h
			out = append(out, h)
		}
		if k.state == keyWaiting {
			h.waiting++
			h.awaited = addSat(h.awaited, k.n)
		} else {
			h.keys++
			h.held = addSat(h.held, k.n)
		}
	}
	for i, r := range reports {
		h := by[r.Lease]
		if h == nil {
			h = &handleView{lease: r.Lease, client: r.Client}
			by[r.Lease] = h
			out = append(out, h)
		}
		h.report = &reports[i]
	}
	return out
}

// Reading reads the semaphore from this handle's mirror and the handles'
// reports, for a debug page or a metrics exporter. Across the fleet the keys
// are known (in block mode, blocks): Held counts the units of the keys granted
// (or whose grant is not yet known), Waiters and the wait list the keys
// waiting, one holder group per handle, labelled with its client name. The
// callers a block-mode handle serves from its blocks, as of its last report,
// are in Details. Counters of calls are known in block mode, for this
// handle's callers (Acquired); the others are unknown.
func (s *Semaphore) Reading() semaphore.Reading {
	reports := s.pageReports()
	s.mu.Lock()
	r := semaphore.Reading{Kind: s.kind(), Name: s.name, Capacity: s.q.capacity, Broken: s.q.broken, Cause: s.q.reason}
	now := time.Now()
	for _, k := range s.q.keys {
		switch k.state {
		case keyGranted, keyUnknown:
			r.Held = addSat(r.Held, k.n)
			if !k.created.IsZero() {
				r.OldestHolder = max(r.OldestHolder, now.Sub(k.created))
			}
		case keyWaiting:
			r.Waiters++
			w := semaphore.WaitingCall{Units: k.n}
			if !k.created.IsZero() {
				w.Waited = now.Sub(k.created)
			}
			r.Waiting = append(r.Waiting, w)
		}
	}
	if len(r.Waiting) > 0 {
		r.HeadWait = r.Waiting[0].Waited
	}
	if !r.Broken {
		r.Available = max(r.Capacity-r.Held, 0)
	}
	handles := s.fleetHandlesLocked(reports)
	s.mu.Unlock()

	for _, h := range handles {
		if h.keys == 0 {
			continue
		}
		g := semaphore.HolderGroup{Site: "lease " + strconv.FormatInt(h.lease, 16), Label: h.client, Holders: h.keys, Units: h.held}
		if !h.oldest.IsZero() {
			g.Age = now.Sub(h.oldest)
		}
		r.Holders = append(r.Holders, g)
	}
	r.Unknown = semaphore.QueuedField | semaphore.TimedOutField | semaphore.CancelledField | semaphore.RejectedField | semaphore.ShedField
	r.Details = append(r.Details, semaphore.Detail{Name: "handles (processes)", Value: strconv.Itoa(len(handles))})
	r.Details = append(r.Details, semaphore.Detail{Name: "callers of the handles' blocks, as reported", Value: fleetCallers(reports, len(handles))})
	for _, h := range handles {
		r.Details = append(r.Details, semaphore.Detail{Name: "handle " + strconv.Quote(h.client), Value: h.describe(s.pool != nil)})
	}
	if p := s.pool; p != nil {
		r.Acquired = p.granted.Load()
		r.Details = append(r.Details, semaphore.Detail{Name: "this handle's callers", Value: p.describe()})
	} else {
		r.Unknown |= semaphore.AcquiredField
	}
	return r
}

// describe says what the handle holds and waits for: its keys are blocks if
// this handle is in block mode or it reports.
func (h *handleView) describe(blocks bool) string {
	noun := "key"
	if blocks || h.report != nil {
		noun = "block"
	}
	out := countOf(h.keys, noun) + " of " + unitCount(h.held)
	if h.waiting > 0 {
		out += ", " + countOf(h.waiting, noun) + " of " + unitCount(h.awaited) + " waiting in etcd"
	}
	out += ", lease " + strconv.FormatInt(h.lease, 16) + "; callers of its blocks: "
	if r := h.report; r != nil {
		return out + r.describe() + ", reported " + r.Age.Round(time.Millisecond).String() + " ago"
	}
	return out + "-"
}

// describe says what the report's callers hold and wait for.
func (r *Report) describe() string {
	return fmt.Sprintf("%s holding %s, %s waiting for %s, in blocks of %s",
		countOf(r.Holders, "caller"), unitCount(r.Held), countOf(r.Waiters, "caller"), unitCount(r.Awaited), unitCount(r.Blocks))
}

// fleetCallers sums the reports of the handles: "-" if none could be read
// although there are handles.
func fleetCallers(reports []Report, handles int) string {
	if reports == nil && handles > 0 {
		return "-"
	}
	var sum Report
	for _, r := range reports {
		sum.Holders += r.Holders
		sum.Held = addSat(sum.Held, r.Held)
		sum.Waiters += r.Waiters
		sum.Awaited = addSat(sum.Awaited, r.Awaited)
		sum.Blocks = addSat(sum.Blocks, r.Blocks)
	}
	return sum.describe() + ", from " + countOf(len(reports), "report")
}

// describe says what the pool's callers hold and wait for.
func (p *blockPool) describe() string {
	c := p.callers()
	p.ledger.mu.Lock()
	free, blocks, requested := p.usageLocked().free(), len(p.ledger.blocks), p.ledger.requested
	p.ledger.mu.Unlock()
	out := fmt.Sprintf("%s holding %s, %s waiting for %s, %s free in %s of %s",
		countOf(c.holders, "holder"), unitCount(c.held), countOf(c.waiters, "caller"), unitCount(c.awaited),
		unitCount(free), countOf(blocks, "block"), unitCount(c.blocks))
	if requested > 0 {
		out += ", asking etcd for a block of " + unitCount(requested)
	}
	return out
}

func countOf(n int, noun string) string { return errs.Count(int64(n), noun) }

func unitCount(n int64) string { return errs.Count(n, "unit") }

// Diagnostics is the debug page's dump of s: the fleet's handles with their
// reported callers, then this handle's callers in block mode, at most
// maxLines handles (maxLines <= 0: all). It reads the reports as Reading does.
func (s *Semaphore) Diagnostics(maxLines int) string {
	reports := s.pageReports()
	s.mu.Lock()
	handles := s.fleetHandlesLocked(reports)
	capacity, broken, reason := s.q.capacity, s.q.broken, s.q.reason
	s.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "etcdsem %q: capacity %d", s.name, capacity)
	if broken {
		fmt.Fprintf(&b, ", broken: %q", reason)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "callers of the handles' blocks, as reported: %s\n", fleetCallers(reports, len(handles)))
	shown := slices.Clone(handles)
	if maxLines > 0 && len(shown) > maxLines {
		shown = shown[:maxLines]
	}
	for _, h := range shown {
		fmt.Fprintf(&b, "handle %q: %s\n", h.client, h.describe(s.pool != nil))
	}
	if len(shown) < len(handles) {
		fmt.Fprintf(&b, "... %d more handles\n", len(handles)-len(shown))
	}
	if s.pool != nil {
		fmt.Fprintf(&b, "this handle's callers: %s\n", s.pool.describe())
	}
	return b.String()
}
