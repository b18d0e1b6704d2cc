package etcdsem

import (
	"context"
	"sync/atomic"
)

// A localHold holds block mode's Units: units of an epoch's core semaphore,
// granted from the handle's blocks, with no key of their own. Its methods are
// the Units methods of the same purpose (see holding).
type localHold struct {
	// fixed at the grant
	p  *blockPool
	ep *epoch

	n    atomic.Int64 // units held; 0 once released
	done atomic.Bool  // released (or given back by Close)
}

// isLost reports whether the hold's epoch was lost while it held units:
// units given back before were not lost (Release stays idempotent, Err nil).
func (h *localHold) isLost() bool {
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

func (h *localHold) lost() <-chan struct{} { return h.ep.lost }

func (h *localHold) count() int64 {
	if h.done.Load() || h.isLost() || h.p.closed.Load() {
		return 0
	}
	return h.n.Load()
}

func (h *localHold) lossCause() error {
	if !h.isLost() {
		return nil
	}
	return h.ep.err
}

// release gives the units back to the epoch's core. Lost units are not given
// back (their block is gone): the call reports the loss, every time.
func (h *localHold) release(_ context.Context, u *Units) error {
	if h.isLost() {
		return errHold(u, "release", h.n.Load(), h.ep.err)
	}
	if h.p.closed.Load() || !h.done.CompareAndSwap(false, true) {
		return nil
	}
	h.give(h.n.Swap(0))
	h.ep.holds.Add(-1)
	return nil
}

// give returns n units to the epoch's core, which grants the callers waiting
// that now fit, and wakes the manager if it gives units back as they come:
// the fleet is contended, or the epoch grants nobody more.
func (h *localHold) give(n int64) {
	h.ep.inUse.Add(-n)
	h.ep.local.Release(n)
	if h.p.contended.Load() || !h.ep.grants() {
		h.p.signal()
	}
}

// giveBack gives back m of the units and keeps the rest.
func (h *localHold) giveBack(ctx context.Context, u *Units, m int64) error {
	if h.isLost() {
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
			return h.release(ctx, u)
		}
		if h.n.CompareAndSwap(held, held-m) {
			h.give(m)
			return nil
		}
	}
}
