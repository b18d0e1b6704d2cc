package etcdsem

// fleetView is the mirror as a block pool reads it: the capacity and the
// broken state, and every handle's demand.
type fleetView struct {
	rev           int64 // the revision it shows
	capacity      int64
	broken        bool
	reason        string
	held          int64   // units granted to every handle (unknown keys count)
	othersWaiting bool    // another handle has a waiting key
	mineWaiting   bool    // this handle has a waiting key on its current lease
	otherHead     string  // the first waiting key, if another handle's
	mineHead      bool    // the first waiting key is this handle's
	others        []int64 // each other handle's demand: units held and waited for
}

// fleetView reads the mirror: the fleet as this handle sees it now. This
// handle's keys are those on its session's current lease.
func (h *handle) fleetView() fleetView {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := fleetView{rev: h.q.rev, capacity: h.q.capacity, broken: h.q.broken, reason: h.q.reason}
	mine := int64(-1)
	if l := h.sess.current(); l != nil {
		mine = int64(l.id)
	}
	demand := make(map[int64]int64)
	for _, k := range h.q.keys {
		if k.state == keyDead {
			continue
		}
		if k.state != keyWaiting {
			v.held = addSat(v.held, k.n)
		}
		if k.state == keyWaiting && !v.mineWaiting && !v.othersWaiting {
			if k.lease == mine {
				v.mineHead = true
			} else {
				v.otherHead = k.key
			}
		}
		if k.lease == mine {
			v.mineWaiting = v.mineWaiting || k.state == keyWaiting
			continue
		}
		if k.state == keyWaiting {
			v.othersWaiting = true
		}
		demand[k.lease] = addSat(demand[k.lease], k.n)
	}
	for _, d := range demand {
		v.others = append(v.others, d)
	}
	return v
}

// seen is what the callers' path reads of the mirror, at one revision.
type seen struct {
	rev      int64
	capacity int64
	broken   *string // the reason while broken; nil if not
}

// observe publishes what the callers' path reads of the mirror, unless a
// later revision's view is published already: a caller's view, read before
// the manager's, may reach here after it, and must not undo a Break.
func (p *blockPool) observe(v fleetView) {
	n := &seen{rev: v.rev, capacity: v.capacity}
	if v.broken {
		reason := v.reason
		n.broken = &reason
	}
	for {
		old := p.seen.Load()
		if old != nil && old.rev > n.rev || p.seen.CompareAndSwap(old, n) {
			return
		}
	}
}
