package admission

import "time"

// State is where a permit is in its life.
type State uint8

const (
	// WaitingForAdmission: queued in Acquire or Readmit.
	WaitingForAdmission State = iota
	// WaitingForMemory: admitted, with at least one RequestMemory waiting past the
	// serialize limit.
	WaitingForMemory
	// Active: admitted and running, neither needing CPU nor marked otherwise.
	Active
	// ActiveNeedCPU: admitted and holding NeedCPU: it counts against the CPU
	// concurrency, so it blocks admission of others.
	ActiveNeedCPU
	// ActiveAwait: holding NeedCPU and Await: waiting for something other than CPU
	// (I/O, another service), so it no longer blocks admission.
	ActiveAwait
	// Inactive: parked; its resources may be reclaimed by eviction. Its CPU marks
	// do not count.
	Inactive
	// Evicted: was parked and evicted; it must be readmitted before use. Its CPU
	// marks do not count.
	Evicted
	// Aborted: failed admission (timed out, shed, cancelled) and was never admitted.
	Aborted
	// Released: Release was called. It is terminal: the permit holds nothing and
	// every later call on it fails with ErrReleased or does nothing.
	Released
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
	case Released:
		return "released"
	}
	return "unknown"
}

// A Permit is an admitted request's claim on the controller's resources: its base
// (one count and the memory it was admitted with) and whatever it consumes later.
// All methods are safe for concurrent use; Release returns everything and ends the
// permit.
type Permit struct {
	// Fixed at creation.
	c    *Controller
	op   string
	base Resources // what admission takes: {1, memory}; zero for Track permits

	// Guarded by c.mu.
	phase    State     // Active stands for the three active states; see stateLocked
	hasBase  bool      // the base resources are held now
	consumed Resources // held beyond the base, from Consume and RequestMemory
	needCPU  int       // nested NeedCPU marks; counted by c only while active (cpu.go)
	await    int       // nested Await marks; likewise
	killed   bool      // the kill limit already failed this permit once
	parked   *Parked   // while Inactive
	wait     *waiter   // its admission or readmission wait, while queued
	memWaits int       // its RequestMemory waits in c.memQueue; > 0 iff WaitingForMemory
	admitted time.Time // when it last took its base (see Controller.rtt)
}

// setPhaseLocked moves p to state s, keeping the controller's CPU counts in step:
// p's marks count only while it is Active or WaitingForMemory.
func (p *Permit) setPhaseLocked(s State) {
	n, a := p.cpuShareLocked()
	p.phase = s
	p.recountLocked(n, a)
}

// Op returns the operation name the permit was created with.
func (p *Permit) Op() string { return p.op }

// State returns the permit's current state.
func (p *Permit) State() State {
	p.c.lock()
	defer p.c.unlock()
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
// has consumed. It is zero after Release.
func (p *Permit) Consumed() Resources {
	p.c.lock()
	defer p.c.unlock()
	return p.heldLocked()
}

func (p *Permit) heldLocked() Resources {
	if p.hasBase {
		return p.base.Add(p.consumed)
	}
	return p.consumed
}

// ReleaseBase gives back the permit's base resources (its count and admission
// memory) while keeping what it consumed, for a request that is done with its
// admission slot but still holds memory. It is idempotent, and does nothing after
// Release.
func (p *Permit) ReleaseBase() {
	c := p.c
	c.lock()
	defer c.unlock()
	p.observeLocked()
	p.releaseBaseLocked()
	c.maybeAdmitLocked()
}

// observeLocked tells the controller how long p held its base, when it gives
// it back from active work (not parked, nor evicted): the usual round trip
// the deadline rule reads.
func (p *Permit) observeLocked() {
	if p.hasBase && p.parked == nil && p.phase != Evicted {
		p.c.observeRTTLocked(time.Since(p.admitted))
	}
}

func (p *Permit) releaseBaseLocked() {
	if p.hasBase {
		p.hasBase = false
		p.c.avail = p.c.avail.Add(p.base)
		p.c.held = p.c.held.Sub(p.base)
	}
}

// Release gives back everything the permit holds and ends it: a pending memory
// request or readmission fails with ErrReleased, a parked permit is unregistered
// (its value closed), and its CPU marks are dropped. Released is terminal: every
// later call on the permit fails with ErrReleased or does nothing. Release is
// idempotent and admits the waiters that now fit.
func (p *Permit) Release() {
	c := p.c
	c.lock()
	defer c.unlock()
	if p.releaseLocked() {
		c.maybeAdmitLocked()
	}
}

// releaseLocked ends p, and reports whether it was not already released.
func (p *Permit) releaseLocked() bool {
	c := p.c
	if p.phase == Released {
		return false
	}
	fail := func(w *waiter) error { return c.fail(nil, w.what(), ErrReleased.Error()+" while waiting", ErrReleased) }
	if w := p.wait; w != nil {
		c.settleLocked(w, fail(w))
	}
	c.failMemoryWaitsLocked(p, fail)
	if pk := p.parked; pk != nil {
		c.unparkLocked(pk)
		c.mu.after = append(c.mu.after, func() { c.closeValue(pk) })
	}
	if c.blessed == p {
		c.blessed = nil
	}
	p.observeLocked()
	p.setPhaseLocked(Released) // drops its CPU marks from the counts
	p.needCPU, p.await = 0, 0
	p.releaseBaseLocked()
	p.returnLocked(p.consumed)
	c.forgetLocked(p)
	return true
}
