package etcdsem

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fairsem/semaphore/internal/errs"
	"github.com/fairsem/semaphore/semdebug"
)

// A Semaphore is a semdebug.Source: semdebug.Register(s) shows it on the debug
// page, from this handle's mirror (no RPC): the capacity, the units granted
// and the keys waiting across the fleet, one holder group per handle (in
// block mode, a handle's blocks), and in block mode this handle's own callers.

// Kind says what s is: "etcd semaphore", or "etcd semaphore, blocks of N".
func (s *Semaphore) Kind() string {
	if s.blocks != nil {
		return "etcd semaphore, blocks of " + strconv.FormatInt(s.blocks.size, 10)
	}
	return "etcd semaphore"
}

// handleView is one handle of the fleet as the mirror shows it: its keys.
type handleView struct {
	lease         int64
	client        string
	keys, waiting int   // keys granted (blocks, in block mode), keys waiting
	held, awaited int64 // their units
	oldest        time.Time
}

// fleetHandlesLocked groups the mirror's live keys by handle (lease), in order of
// each handle's oldest key. s.mu is held.
func (s *Semaphore) fleetHandlesLocked() []*handleView {
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
	return out
}

// Snapshot reads the semaphore from this handle's mirror, for the debug page.
// Across the fleet only keys are known (in block mode, blocks): the callers a
// handle serves from its blocks are counted in Details for this handle only.
// Counters of calls are known in block mode, for this handle's callers.
func (s *Semaphore) Snapshot() semdebug.Snapshot {
	s.mu.Lock()
	snap := semdebug.Snapshot{Capacity: s.q.capacity, Broken: s.q.broken, Cause: s.q.reason}
	now := time.Now()
	for _, k := range s.q.keys {
		switch k.state {
		case keyGranted, keyUnknown:
			snap.InUse = addSat(snap.InUse, k.n)
			if !k.created.IsZero() {
				snap.OldestHolder = max(snap.OldestHolder, now.Sub(k.created))
			}
		case keyWaiting:
			snap.Waiters++
			w := semdebug.Waiter{Units: k.n}
			if !k.created.IsZero() {
				w.Waited = now.Sub(k.created)
			}
			snap.WaitList = append(snap.WaitList, w)
		}
	}
	if len(snap.WaitList) > 0 {
		snap.HeadWait = snap.WaitList[0].Waited
	}
	snap.Available = max(snap.Capacity-snap.InUse, 0)
	handles := s.fleetHandlesLocked()
	s.mu.Unlock()

	for _, h := range handles {
		if h.keys == 0 {
			continue
		}
		g := semdebug.Holder{Site: "lease " + strconv.FormatInt(h.lease, 16), Label: h.client, Holders: h.keys, Units: h.held}
		if !h.oldest.IsZero() {
			g.Age = now.Sub(h.oldest)
		}
		snap.Holders = append(snap.Holders, g)
	}
	snap.Unknown = semdebug.QueuedField | semdebug.TimedOutField | semdebug.CancelledField | semdebug.RejectedField | semdebug.ShedField
	snap.Details = append(snap.Details, semdebug.Detail{Name: "handles (processes)", Value: strconv.Itoa(len(handles))})
	for _, h := range handles {
		snap.Details = append(snap.Details, semdebug.Detail{Name: "handle " + strconv.Quote(h.client), Value: h.describe(s.blocks != nil)})
	}
	if p := s.blocks; p != nil {
		snap.Acquired = p.granted.Load()
		snap.Details = append(snap.Details, semdebug.Detail{Name: "this handle's callers", Value: p.describe()})
	} else {
		snap.Unknown |= semdebug.AcquiredField
	}
	return snap
}

// describe says what the handle holds and waits for.
func (h *handleView) describe(blocks bool) string {
	noun := "key"
	if blocks {
		noun = "block"
	}
	out := countOf(h.keys, noun) + " of " + unitCount(h.held)
	if h.waiting > 0 {
		out += ", " + countOf(h.waiting, noun) + " of " + unitCount(h.awaited) + " waiting in etcd"
	}
	return out + ", lease " + strconv.FormatInt(h.lease, 16)
}

// describe says what the pool's callers hold and wait for.
func (p *blockPool) describe() string {
	ep := p.ep.Load()
	p.mu.Lock()
	defer p.mu.Unlock()
	waiters := 0
	for _, w := range p.queue {
		if !w.reclaim {
			waiters++
		}
	}
	out := fmt.Sprintf("%s holding %s, %s waiting for %s, %s free in %s of %s",
		countOf(int(ep.holds.Load()), "holder"), unitCount(ep.inUse.Load()),
		countOf(waiters, "caller"), unitCount(p.waitUnits),
		unitCount(ep.local.Available()), countOf(len(p.ledger.blocks), "block"), unitCount(p.ledger.local()))
	if p.requested > 0 {
		out += ", asking etcd for a block of " + unitCount(p.requested)
	}
	return out
}

func countOf(n int, noun string) string { return errs.Count(int64(n), noun) }

func unitCount(n int64) string { return errs.Count(n, "unit") }

// Diagnostics is the debug page's dump of s: the fleet's handles, then this
// handle's callers in block mode, at most maxLines handles (maxLines <= 0: all).
func (s *Semaphore) Diagnostics(maxLines int) string {
	s.mu.Lock()
	handles := s.fleetHandlesLocked()
	capacity, broken, reason := s.q.capacity, s.q.broken, s.q.reason
	s.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "etcdsem %q: capacity %d", s.name, capacity)
	if broken {
		fmt.Fprintf(&b, ", broken: %s", reason)
	}
	b.WriteString("\n")
	shown := slices.Clone(handles)
	if maxLines > 0 && len(shown) > maxLines {
		shown = shown[:maxLines]
	}
	for _, h := range shown {
		fmt.Fprintf(&b, "handle %q: %s\n", h.client, h.describe(s.blocks != nil))
	}
	if len(shown) < len(handles) {
		fmt.Fprintf(&b, "... %d more handles\n", len(handles)-len(shown))
	}
	if s.blocks != nil {
		fmt.Fprintf(&b, "this handle's callers: %s\n", s.blocks.describe())
	}
	return b.String()
}
