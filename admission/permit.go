package admission

import (
	"context"
	"sync"
)

// State is where a permit is in its life.
type State uint8

const (
	// WaitingForAdmission: queued in Acquire or Readmit.
	WaitingForAdmission State = iota
	// WaitingForMemory: admitted, and queued in RequestMemory past the serialize limit.
	WaitingForMemory
	// Active: admitted and running, neither needing CPU nor marked otherwise.
	Active
	// ActiveNeedCPU: admitted and holding NeedCPU: it counts against the CPU
	// concurrency, so it blocks admission of others.
	ActiveNeedCPU
	// ActiveAwait: holding NeedCPU and Await: waiting for something other than CPU
	// (I/O, another service), so it no longer blocks admission.
	ActiveAwait
	// Inactive: parked; its resources may be reclaimed by eviction.
	Inactive
	// Evicted: was parked and evicted; it must be readmitted before use.
	Evicted
	// Aborted: failed admission (timed out, shed, cancelled) and was never admitted.
	Aborted
)

func (s State) String() string {
	switch s {
	case WaitingForAdmission:
		return "waiting_for_admission"
	case WaitingForMemory:
		return "waiting_for_memory"
	case Active:
		return "active"
	case ActiveNeedCPU:
		return "active/need_cpu"
	case ActiveAwait:
		return "active/await"
	case Inactive:
		return "inactive"
	case Evicted:
		return "evicted"
	case Aborted:
		return "aborted"
	}
	return "unknown"
}

// A Permit is an admitted request's claim on the controller's resources: its base
// (one count and the memory it was admitted with) and whatever it consumes later.
// All methods are safe for concurrent use; Release returns everything.
type Permit struct {
	c    *Controller
	op   string
	base Resources // what admission takes: {1, memory}; zero for Track permits

	// Guarded by c.mu.
	phase    State     // Active stands for the three active states; see State
	hasBase  bool      // the base resources are held now
	consumed Resources // held beyond the base, from Consume and RequestMemory
	needCPU  int       // nested NeedCPU holds
	await    int       // nested Await holds
	killed   bool      // the kill limit already failed this permit once
	parked   *Parked   // while Inactive
	wait     *waiter   // while queued
	released bool
}

// Op returns the operation name the permit was created with.
func (p *Permit) Op() string { return p.op }

// State returns the permit's current state.
func (p *Permit) State() State {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	return p.stateLocked()
}

func (p *Permit) stateLocked() State {
	if p.phase != Active || p.needCPU == 0 {
		return p.phase
	}
	if p.await > 0 {
		return ActiveAwait
	}
	return ActiveNeedCPU
}

// Consumed returns what the permit holds now: its base while admitted, plus what it
// has consumed.
func (p *Permit) Consumed() Resources {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	return p.heldLocked()
}

func (p *Permit) heldLocked() Resources {
	if p.hasBase {
		return p.base.Add(p.consumed)
	}
	return p.consumed
}

// NeedCPU marks the permit as needing CPU to make progress, until the returned
// function is called (once; later calls do nothing). While marked (and not
// awaiting) it counts against the CPU concurrency, so admission of others waits for
// it. Marks nest.
func (p *Permit) NeedCPU() (release func()) {
	c := p.c
	c.mu.Lock()
	p.needCPU++
	if p.needCPU == 1 {
		c.needCPU++
		if p.await > 0 {
			c.awaiting++
		}
	}
	c.unlock()
	return p.once(func() {
		p.needCPU--
		if p.needCPU == 0 {
			c.needCPU--
			if p.await > 0 {
				c.awaiting--
			}
		}
	})
}

// Await marks a permit that needs CPU as waiting for something else (I/O, a remote
// call), until the returned function is called (once). An awaiting permit does not
// count against the CPU concurrency, so others may be admitted meanwhile. Marks nest;
// Await counts only while the permit needs CPU.
func (p *Permit) Await() (release func()) {
	c := p.c
	c.mu.Lock()
	p.await++
	if p.await == 1 && p.needCPU > 0 {
		c.awaiting++
	}
	c.maybeAdmitLocked()
	c.unlock()
	return p.once(func() {
		p.await--
		if p.await == 0 && p.needCPU > 0 {
			c.awaiting--
		}
	})
}

// once wraps an update made under the lock into an idempotent release function
// that re-runs admission afterwards.
func (p *Permit) once(update func()) func() {
	var o sync.Once
	return func() {
		o.Do(func() {
			p.c.mu.Lock()
			if !p.released { // Release already dropped the marks
				update()
			}
			p.c.maybeAdmitLocked()
			p.c.unlock()
		})
	}
}

// Consume accounts resources the permit has already taken, such as memory it has
// allocated. It never blocks. It fails with ErrMemoryLimit, taking nothing, when
// the memory would pass the kill limit (counted in Stats.Killed once per permit),
// and with ErrEvicted when the permit is parked or evicted. Give the resources back
// with Return, or with Release. It panics on negative amounts.
func (p *Permit) Consume(r Resources) error {
	if r.Count < 0 || r.Memory < 0 {
		p.c.panicf("Permit(%q).Consume(%v): negative resources", p.op, r)
	}
	c := p.c
	c.mu.Lock()
	if err := p.usableLocked("consume", r.Memory); err != nil {
		c.unlock()
		return err
	}
	if err := p.killCheckLocked("consume", r.Memory); err != nil {
		c.unlock()
		return err
	}
	p.takeLocked(r)
	c.unlock()
	return nil
}

func (p *Permit) usableLocked(verb string, memory int64) error {
	if p.phase == Inactive || p.phase == Evicted {
		return p.c.fail(what(verb, p, memory), []error{ErrEvicted}, "the permit is %s", p.phase)
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
	return c.fail(what(verb, p, memory), []error{ErrMemoryLimit}, "would pass the kill limit (%s in use of %s)",
		formatBytes(used), formatBytes(limit))
}

func (p *Permit) takeLocked(r Resources) {
	p.c.avail = p.c.avail.Sub(r)
	p.consumed = p.consumed.Add(r)
}

// Return gives back resources taken with Consume or RequestMemory, and admits
// waiters that now fit. It panics when r exceeds what the permit consumed: that is
// a bookkeeping error that would otherwise create resources out of nothing.
func (p *Permit) Return(r Resources) {
	c := p.c
	c.mu.Lock()
	if r.Count < 0 || r.Memory < 0 || !p.consumed.Covers(r) {
		c.mu.Unlock()
		c.panicf("Permit(%q).Return(%v): returned more than consumed (%v)", p.op, r, p.consumed)
	}
	p.returnLocked(r)
	c.maybeAdmitLocked()
	c.unlock()
}

func (p *Permit) returnLocked(r Resources) {
	p.c.avail = p.c.avail.Add(r)
	p.consumed = p.consumed.Sub(r)
}

// RequestMemory takes n bytes of memory for the permit. Below the serialize limit
// it is granted at once. Past it only one permit, the "blessed" one (the first to
// cross the limit), may keep growing; the others wait in FIFO order until memory use
// drops below the limit or the blessed permit is released or parked. It fails with
// ErrMemoryLimit past the kill limit, with ErrEvicted for a parked or evicted permit
// (and for a waiting request whose permit is parked), with ErrBroken or ErrClosed,
// and with ctx's error when ctx ends while waiting. It panics if n is negative.
func (p *Permit) RequestMemory(ctx context.Context, n int64) error {
	if n < 0 {
		p.c.panicf("Permit(%q).RequestMemory(%d): negative memory", p.op, n)
	}
	c := p.c
	c.mu.Lock()
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
		c.unlock()
		return nil
	}
	if err := c.refusalLocked("request memory", p, n); err != nil {
		c.unlock()
		return err
	}
	w := &waiter{p: p, memory: n, forMem: true}
	c.stats.QueuedForMemory++
	c.enqueueLocked(ctx, w, c.memQueue)
	p.phase = WaitingForMemory
	c.unlock()
	return c.wait(ctx, "request memory", w)
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
// limit allows.
func (c *Controller) grantMemoryLocked() {
	if limit, on := c.limitOf(c.serializeMult); !on || c.usedLocked().Memory < limit {
		c.blessed = nil // below the limit no permit is blessed
	}
	for c.memQueue.Len() > 0 {
		w := c.memQueue.Front().Value.(*waiter)
		if err := w.p.killCheckLocked("request memory", w.memory); err != nil {
			c.settleLocked(w, err)
			continue
		}
		if !c.memoryGrantableLocked(w.p, w.memory) {
			return
		}
		w.p.takeLocked(Resources{Memory: w.memory})
		w.p.phase = Active
		c.settleLocked(w, nil)
	}
}

// ReleaseBase gives back the permit's base resources (its count and admission
// memory) while keeping what it consumed, for a request that is done with its
// admission slot but still holds memory. It is idempotent.
func (p *Permit) ReleaseBase() {
	c := p.c
	c.mu.Lock()
	p.releaseBaseLocked()
	c.maybeAdmitLocked()
	c.unlock()
}

func (p *Permit) releaseBaseLocked() {
	if p.hasBase {
		p.hasBase = false
		p.c.avail = p.c.avail.Add(p.base)
	}
}

// Release gives back everything the permit holds and ends it: a pending memory
// request fails, a parked permit is unregistered (its value closed), and its CPU
// marks are dropped. It is idempotent and admits the waiters that now fit.
func (p *Permit) Release() {
	c := p.c
	c.mu.Lock()
	p.releaseLocked()
	c.maybeAdmitLocked()
	c.unlock()
}

func (p *Permit) releaseLocked() {
	c := p.c
	if p.released {
		return
	}
	p.released = true
	if w := p.wait; w != nil {
		c.settleLocked(w, c.fail(what("wait", p, w.memory), []error{ErrEvicted}, "the permit was released"))
	}
	if pk := p.parked; pk != nil {
		c.unparkLocked(pk)
		c.afterUnlock = append(c.afterUnlock, func() { c.closeValue(pk) })
	}
	if c.blessed == p {
		c.blessed = nil
	}
	if p.needCPU > 0 {
		c.needCPU--
		if p.await > 0 {
			c.awaiting--
		}
		p.needCPU, p.await = 0, 0
	}
	p.releaseBaseLocked()
	p.returnLocked(p.consumed)
	c.forgetLocked(p)
}

// Readmit sends an evicted permit through admission again, as Acquire does, to get
// its base resources back. It returns nil at once for a permit that is not
// evicted.
func (p *Permit) Readmit(ctx context.Context, opts ...PermitOption) error {
	c := p.c
	c.mu.Lock()
	evicted := p.phase == Evicted && !p.released
	c.unlock()
	if !evicted {
		return nil
	}
	return c.admit(ctx, p, true, opts)
}
