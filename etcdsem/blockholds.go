package etcdsem

import "sync/atomic"

// A localHold is a caller's grant from a block-mode handle's blocks: units of
// the epoch's core semaphore, no key of its own.
type localHold struct {
	// fixed at the grant
	p   *blockPool
	ep  *epoch
	seq int64 // the handle's grant number: orders grants of one token

	n    atomic.Int64 // units held; 0 once released
	done atomic.Bool  // released (or given back by Close)
}

// Sequence returns the grant's number on its handle in block mode (from 1,
// increasing with every local grant), and 0 in plain mode. A block-mode
// holder's fencing token is the pair (Token, Sequence): Token is the highest
// block token its handle has held, which orders it after every holder of the
// units in any earlier block, and Sequence orders it after the earlier local
// holders of the same token. A resource that fences by comparing (Token,
// Sequence) pairs in that order rejects a stale holder of either mode.
func (u *Units) Sequence() int64 {
	if u.local == nil {
		return 0
	}
	return u.local.seq
}

// lost reports whether the hold's epoch was lost while it held units: units
// given back before were not lost (Release stays idempotent, Err nil).
func (h *localHold) lost() bool {
	if h.done.Load() {
		return false
	}
	select {
	case <-h.ep.lost:
		return true
	default:
		return false
	}
}

func (h *localHold) count() int64 {
	if h.done.Load() || h.lost() || h.p.closed.Load() {
		return 0
	}
	return h.n.Load()
}

func (h *localHold) err(u *Units) error {
	if !h.lost() {
		return nil
	}
	return errHold(u, "units", -1, h.ep.err)
}

// release gives the units back to the epoch's semaphore. Lost units are not
// given back (their block is gone): the call reports the loss, every time.
func (h *localHold) release(u *Units) error {
	if h.lost() {
		return errHold(u, "release", h.n.Load(), h.ep.err)
	}
	if h.p.closed.Load() || !h.done.CompareAndSwap(false, true) {
		return nil
	}
	h.give(h.n.Swap(0))
	h.ep.holds.Add(-1)
	return nil
}

// give returns n units to the epoch.
func (h *localHold) give(n int64) {
	h.ep.inUse.Add(-n)
	h.p.giveBack(h.ep, n)
}

// ret gives back m of the units and keeps the rest.
func (h *localHold) ret(u *Units, m int64) error {
	u.s.checkUnits("Units.Return", m)
	if h.lost() {
		return errHold(u, "return", m, h.ep.err)
	}
	if h.p.closed.Load() {
		return nil
	}
	for {
		held := h.n.Load()
		if h.done.Load() {
			held = 0
		}
		if m > held {
			return errInsufficient(u, m, held)
		}
		if m == held {
			return h.release(u)
		}
		if h.n.CompareAndSwap(held, held-m) {
			h.give(m)
			return nil
		}
	}
}
