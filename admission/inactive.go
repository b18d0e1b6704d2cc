package admission

import (
	"fmt"
	"io"
	"time"

	"github.com/fairsem/semaphore/internal/list"
)

// EvictReason says why a parked permit was evicted.
type EvictReason uint8

const (
	// EvictedForAdmission: a queued request needed the resources.
	EvictedForAdmission EvictReason = iota
	// EvictedByTTL: the permit stayed parked longer than its WithTTL.
	EvictedByTTL
	// EvictedExplicitly: EvictOne or EvictWhere.
	EvictedExplicitly
	// EvictedOnBreak: the controller was broken (Break, or Group.Remove).
	EvictedOnBreak
)

func (r EvictReason) String() string {
	switch r {
	case EvictedForAdmission:
		return "admission"
	case EvictedByTTL:
		return "ttl"
	case EvictedExplicitly:
		return "explicit"
	case EvictedOnBreak:
		return "break"
	}
	return "unknown"
}

// Parked is an idle permit registered with Park, together with the value (a
// reader, a cursor, a connection) that would be reused if the work resumes. The
// controller may evict it to free its resources for queued requests.
type Parked struct {
	// Fixed after Park.
	p        *Permit
	value    io.Closer
	onEvict  func(EvictReason)
	ttlAfter time.Duration // from WithTTL; 0: no TTL
	seq      uint64        // park order in its group, for evicting the oldest across members (0 outside a group)

	// Guarded by the controller's lock.

	link    list.Link[Parked] // its place in the inactive list while parked
	listed  bool              // in the inactive list
	ttl     *time.Timer
	evicted bool
	done    bool // resumed, evicted or released: Resume has nothing to give
}

// A ParkOption configures Park.
type ParkOption func(*Parked)

// WithTTL evicts the parked permit once it has been parked for d. A d of zero or
// less sets no TTL: the permit stays parked until it is resumed or evicted
// otherwise.
func WithTTL(d time.Duration) ParkOption {
	return func(pk *Parked) { pk.ttlAfter = d }
}

// OnEvict registers fn to be called, outside the controller's lock and after the
// value is closed, when the parked permit is evicted.
func OnEvict(fn func(EvictReason)) ParkOption {
	return func(pk *Parked) { pk.onEvict = fn }
}

// Park registers an admitted, idle permit as inactive, with the value its work
// would resume with. While parked its resources stay counted but may be reclaimed:
// when the head of the queue is held back by count or memory (not when only CPU
// holds it) and evicting parked permits could let it in, the oldest are evicted
// first: the value is closed, the base resources are released, and OnEvict is
// called. A parked permit loses any blessing past the serialize limit, every memory
// request it has pending fails with ErrEvicted, and its CPU marks stop counting
// against the CPU concurrency until it is resumed or readmitted.
//
// After Break (or Group.Remove) the permit is evicted at once, as Break evicts
// the permits parked before it: the returned Parked reports Evicted.
//
// Park fails, taking nothing (the caller keeps value), with ErrReleased after
// Release and with ErrEvicted when the permit is not active: already parked,
// evicted, or being readmitted. Resume the permit with Parked.Resume. Park panics
// if p belongs to another controller.
func (c *Controller) Park(p *Permit, value io.Closer, opts ...ParkOption) (*Parked, error) {
	c.made()
	if p.c != c {
		c.panicf("Park(%q): the permit belongs to controller %q", p.op, p.c.name)
	}
	pk := &Parked{p: p, value: value}
	for _, o := range opts {
		o(pk)
	}
	c.lock()
	defer c.unlock()
	switch p.phase {
	case Released:
		return nil, c.fail(nil, what("park", p, p.base.Memory), ErrReleased.Error(), ErrReleased)
	case Active, WaitingForMemory:
	default:
		return nil, c.fail(nil, what("park", p, p.base.Memory), fmt.Sprintf("%v: the permit is %s, not active", ErrEvicted, p.phase), ErrEvicted)
	}
	c.failMemoryWaitsLocked(p, func(w *waiter) error {
		return c.fail(nil, w.what(), ErrEvicted.Error()+": the permit was parked while waiting", ErrEvicted)
	})
	if c.blessed == p {
		c.blessed = nil
	}
	p.setPhaseLocked(Inactive) // its CPU marks stop counting
	p.parked = pk
	c.inactive.PushBack(&pk.link, pk)
	pk.listed = true
	if g := c.group; g != nil {
		g.seq++
		pk.seq = g.seq
	}
	if c.broken != nil {
		// Break evicted every parked permit, and Drain waits for them to be
		// released: one parked now is evicted the same way, or it could hold its
		// resources while nothing is admitted any more.
		c.evictLocked(pk, EvictedOnBreak)
	} else if pk.ttlAfter > 0 {
		pk.ttl = time.AfterFunc(pk.ttlAfter, func() { c.expire(pk) })
	}
	c.maybeAdmitLocked() // someone may be waiting for exactly these resources, or for CPU
	return pk, nil
}

// Resume takes the permit back from the inactive list: it returns the value and
// true, and the permit is Active again with its resources and its CPU marks
// counting again. If the permit was evicted or released it returns nil and false;
// an evicted permit must be readmitted (Readmit) before it is used again. Resume
// gives the value at most once.
func (pk *Parked) Resume() (io.Closer, bool) {
	c := pk.p.c
	c.lock()
	defer c.unlock()
	if pk.done {
		return nil, false
	}
	c.unparkLocked(pk)
	pk.p.setPhaseLocked(Active)
	c.takenLocked() // its marks count again: in a group, its member's head may stop claiming the pool
	return pk.value, true
}

// Evicted reports whether the parked permit was evicted.
func (pk *Parked) Evicted() bool {
	c := pk.p.c
	c.lock()
	defer c.unlock()
	return pk.evicted
}

// unparkLocked removes pk from the inactive list.
func (c *Controller) unparkLocked(pk *Parked) {
	if pk.listed {
		c.inactive.Remove(&pk.link)
		pk.listed = false
	}
	if pk.ttl != nil {
		pk.ttl.Stop()
	}
	pk.done = true
	pk.p.parked = nil
}

// evictLocked evicts a parked permit: its base resources go back to the pool now,
// and its value is closed and OnEvict called once the lock is released.
func (c *Controller) evictLocked(pk *Parked, reason EvictReason) {
	c.unparkLocked(pk)
	pk.evicted = true
	pk.p.setPhaseLocked(Evicted)
	pk.p.releaseBaseLocked()
	switch reason {
	case EvictedByTTL:
		c.stats.TimeEvictions++
	default:
		c.stats.PermitEvictions++
	}
	c.mu.after = append(c.mu.after, func() {
		c.closeValue(pk)
		if pk.onEvict != nil {
			pk.onEvict(reason)
		}
	})
}

func (c *Controller) closeValue(pk *Parked) {
	if pk.value == nil {
		return
	}
	if err := pk.value.Close(); err != nil && c.logger != nil {
		c.logger.Warn("admission: closing an evicted value failed", "controller", c.name, "op", pk.p.op, "error", err)
	}
}

// expire is the TTL timer's callback.
func (c *Controller) expire(pk *Parked) {
	c.lock()
	if !pk.done {
		c.evictLocked(pk, EvictedByTTL)
		c.maybeAdmitLocked()
	}
	c.unlock()
}

// EvictOne evicts the oldest parked permit and reports whether there was one.
func (c *Controller) EvictOne() bool {
	c.lock()
	defer c.unlock()
	if c.inactive.Len() == 0 {
		return false
	}
	c.evictLocked(c.inactive.Front(), EvictedExplicitly)
	c.maybeAdmitLocked()
	return true
}

// EvictWhere evicts every parked permit whose operation satisfies match, oldest
// first, and returns how many it evicted. match runs under the controller's lock
// and must not call back into the controller.
func (c *Controller) EvictWhere(match func(op string) bool) int {
	c.lock()
	defer c.unlock()
	n := 0
	for pk := c.inactive.Front(); pk != nil; {
		next := pk.link.Next()
		if match(pk.p.op) {
			c.evictLocked(pk, EvictedExplicitly)
			n++
		}
		pk = next
	}
	c.maybeAdmitLocked()
	return n
}
