package admission

import (
	"context"
	"fmt"
)

// Consume accounts resources the permit has already taken, such as memory it has
// allocated. It never blocks. It fails, taking nothing, with ErrMemoryLimit when
// the memory would pass the kill limit (counted in Stats.Killed once per permit),
// with ErrEvicted when the permit is parked, evicted or being readmitted, and with
// ErrReleased after Release. Give the resources back with Return, or with Release.
// It panics on negative amounts.
func (p *Permit) Consume(r Resources) error {
	if r.Count < 0 || r.Memory < 0 {
		p.c.panicf("Permit(%q).Consume(%v): negative resources", p.op, r)
	}
	c := p.c
	c.lock()
	defer c.unlock()
	if err := p.usableLocked("consume", r.Memory); err != nil {
		return err
	}
	if err := p.killCheckLocked("consume", r.Memory); err != nil {
		return err
	}
	p.takeLocked(r)
	c.takenLocked()
	return nil
}

// usableLocked fails a request for more resources by a permit that may not take
// any: released, parked, evicted, or waiting to be readmitted.
func (p *Permit) usableLocked(verb string, memory int64) error {
	switch p.phase {
	case Released:
		return p.c.fail(nil, what(verb, p, memory), ErrReleased.Error(), ErrReleased)
	case Inactive, Evicted, WaitingForAdmission:
		return p.c.fail(nil, what(verb, p, memory), fmt.Sprintf("%v: the permit is %s", ErrEvicted, p.phase), ErrEvicted)
	}
	return nil
}

// killCheckLocked fails a request for memory that would pass the kill limit.
func (p *Permit) killCheckLocked(verb string, memory int64) error {
	c := p.c
	limit, on := c.limitOf(c.killMult)
	used := c.usedLocked().Memory
	if !on || memory == 0 || used+memory <= limit {
		return nil
	}
	if !p.killed {
		p.killed = true
		c.stats.Killed++
	}
	c.dumpLocked("kill limit reached", p)
	return c.fail(nil, what(verb, p, memory), fmt.Sprintf("%v (%s in use of %s)",
		ErrMemoryLimit, formatBytes(used), formatBytes(limit)), ErrMemoryLimit)
}

func (p *Permit) takeLocked(r Resources) {
	p.c.avail = p.c.avail.Sub(r)
	p.c.held = p.c.held.Add(r)
	p.consumed = p.consumed.Add(r)
}

// Return gives back resources taken with Consume or RequestMemory, and admits
// waiters that now fit. After Release it does nothing: Release gave everything
// back. It panics when r is negative or exceeds what the permit consumed: that is a
// bookkeeping error that would otherwise create resources out of nothing.
func (p *Permit) Return(r Resources) {
	if r.Count < 0 || r.Memory < 0 {
		p.c.panicf("Permit(%q).Return(%v): negative resources", p.op, r)
	}
	c := p.c
	c.lock()
	if p.phase == Released {
		c.unlock()
		return
	}
	if !p.consumed.Covers(r) {
		consumed := p.consumed
		c.unlock()
		c.panicf("Permit(%q).Return(%v): returned more than consumed (%v)", p.op, r, consumed)
	}
	defer c.unlock()
	p.returnLocked(r)
	c.maybeAdmitLocked()
}

func (p *Permit) returnLocked(r Resources) {
	p.c.avail = p.c.avail.Add(r)
	p.c.held = p.c.held.Sub(r)
	p.consumed = p.consumed.Sub(r)
}

// RequestMemory takes n bytes of memory for the permit. Below the serialize limit
// it is granted at once. Past it only one permit, the "blessed" one (the first to
// cross the limit), may keep growing; the others wait in FIFO order until memory use
// drops below the limit or the blessed permit is released or parked. A permit may
// have several requests waiting at once; Park and Release fail all of them.
//
// It fails, taking nothing, with ErrMemoryLimit past the kill limit, with
// ErrEvicted for a permit that is parked, evicted or being readmitted (and for a
// waiting request whose permit is parked), with ErrReleased after Release (and for
// a waiting request whose permit is released), with semaphore.ErrBroken when it
// would wait after Break, and with ctx's error when ctx ends while waiting
// (giving back a grant that raced it). It panics if n is negative.
func (p *Permit) RequestMemory(ctx context.Context, n int64) error {
	if n < 0 {
		p.c.panicf("Permit(%q).RequestMemory(%d): negative memory", p.op, n)
	}
	c := p.c
	c.lock()
	if err := p.usableLocked("request memory", n); err != nil {
		c.unlock()
		return err
	}
	if err := p.killCheckLocked("request memory", n); err != nil {
		c.unlock()
		return err
	}
	if (c.memQueue.Len() == 0 || c.blessed == p) && c.memoryGrantableLocked(p, n) {
		p.takeLocked(Resources{Memory: n})
		c.takenLocked()
		c.unlock()
		return nil
	}
	w := &waiter{p: p, kind: requestingMemory, memory: n}
	if err := c.refusalLocked(w); err != nil {
		c.unlock()
		return err
	}
	c.stats.QueuedForMemory++
	c.enqueueLocked(ctx, w)
	c.unlock()
	return c.wait(ctx, w)
}

// memoryGrantableLocked decides a memory request by the serialize limit, blessing
// the permit that crosses it.
func (c *Controller) memoryGrantableLocked(p *Permit, n int64) bool {
	limit, on := c.limitOf(c.serializeMult)
	used := c.usedLocked().Memory
	switch {
	case !on:
		return true
	case used < limit:
		if used+n >= limit {
			c.blessed = p // the request that crosses the limit is blessed
		}
		return true
	case c.blessed == nil || c.blessed == p:
		c.blessed = p
		return true
	}
	return false
}

// grantMemoryLocked serves the memory queue in FIFO order as far as the serialize
// limit allows, and reports whether it granted anything. Every waiter in it belongs to an admitted, unparked permit: Park
// and Release fail a permit's memory waiters before it leaves that state.
func (c *Controller) grantMemoryLocked() (granted bool) {
	if limit, on := c.limitOf(c.serializeMult); !on || c.usedLocked().Memory < limit {
		c.blessed = nil // below the limit no permit is blessed
	}
	for c.memQueue.Len() > 0 {
		w := c.memQueue.Front()
		if err := w.p.killCheckLocked("request memory", w.memory); err != nil {
			c.settleLocked(w, err)
			continue
		}
		if !c.memoryGrantableLocked(w.p, w.memory) {
			return granted
		}
		w.p.takeLocked(Resources{Memory: w.memory})
		c.settleLocked(w, nil)
		granted = true
	}
	return granted
}

// failMemoryWaitsLocked fails every memory request p has waiting, with err built
// for each.
func (c *Controller) failMemoryWaitsLocked(p *Permit, reason func(*waiter) error) {
	for w := c.memQueue.Front(); w != nil && p.memWaits > 0; {
		next := w.link.Next()
		if w.p == p {
			c.settleLocked(w, reason(w))
		}
		w = next
	}
}
