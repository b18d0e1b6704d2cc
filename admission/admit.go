package admission

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/shed"
)

// Acquire admits a request for operation op with a base cost of one count and the
// given memory, waiting in the admission queue if it cannot start at once (see the
// package documentation for when it can). It returns the admitted Permit, which the
// caller must Release.
//
// It fails at once with semaphore.ErrQueueFull when the queue is at its bound,
// with semaphore.ErrBroken (and Break's cause) after Break, and with ctx's error if
// ctx is already done. A queued request fails with semaphore.ErrShed (which matches
// semaphore.ErrQueueFull too) when preemptive shedding drops it, and with an
// error matching ctx.Err() (and semaphore.ErrTimedOut for a deadline) when ctx
// ends; its leaving lets the requests behind it in if they now fit. A failed
// Acquire holds nothing, also when its grant raced its context. Acquire panics if
// memory is negative.
func (c *Controller) Acquire(ctx context.Context, op string, memory int64, opts ...PermitOption) (*Permit, error) {
	c.made()
	if memory < 0 {
		c.panicf("Acquire(%q, %d): negative memory", op, memory)
	}
	p := &Permit{c: c, op: op, base: Resources{Count: 1, Memory: memory}}
	c.lock()
	if err := c.enter(ctx, p, admitting, opts); err != nil {
		return nil, err
	}
	return p, nil
}

// Do admits a request as Acquire does, runs fn with the permit, and releases the
// permit on every path, including a panic in fn. fn is not called when admission
// fails.
func (c *Controller) Do(ctx context.Context, op string, memory int64, fn func(context.Context, *Permit) error, opts ...PermitOption) error {
	p, err := c.Acquire(ctx, op, memory, opts...)
	if err != nil {
		return err
	}
	defer p.Release()
	return fn(ctx, p)
}

// Track returns a tracking-only permit for operation op: it skips admission and
// holds no base resources, and only accounts the memory consumed through it. After
// Break (or Group.Remove) the controller tracks nothing new: Track returns a permit
// that is already released, on which Consume and RequestMemory fail with
// ErrReleased and take nothing.
func (c *Controller) Track(op string) *Permit {
	p := &Permit{c: c, op: op, phase: Active}
	c.lock()
	if c.broken != nil {
		// Drain may have returned (and a removed member left its group): a permit
		// registered now would hold memory nobody waits for or accounts.
		p.phase = Released
		c.unlock()
		return p
	}
	c.permits[p] = struct{}{}
	c.stats.TotalPermits++
	c.unlock()
	return p
}

// Readmit sends an evicted permit through admission again, as Acquire does, to get
// its base resources back; it fails the same ways Acquire does, and the permit then
// stays evicted. It returns nil at once for a permit that is active or parked (not
// evicted), fails with ErrReleased after Release, and fails with ErrEvicted when
// another Readmit of the same permit is already waiting: exactly one call takes the
// base. A readmission whose grant races its context's end is kept (Readmit returns
// nil), because other goroutines may already be using the active permit.
func (p *Permit) Readmit(ctx context.Context, opts ...PermitOption) error {
	c := p.c
	c.lock()
	switch p.phase {
	case Evicted:
		return c.enter(ctx, p, readmitting, opts)
	case Released:
		defer c.unlock()
		return c.fail(nil, what("readmit", p, p.base.Memory), ErrReleased.Error(), ErrReleased)
	case WaitingForAdmission:
		defer c.unlock()
		return c.fail(nil, what("readmit", p, p.base.Memory), ErrEvicted.Error()+": already being readmitted by another call", ErrEvicted)
	}
	c.unlock()
	return nil
}

// enter runs p through admission: at once when allowed, else through the queue
// (the waiter, with opts applied, is made only then). It is called with mu held,
// so that whatever the caller checked still holds, and returns without it.
func (c *Controller) enter(ctx context.Context, p *Permit, kind waitKind, opts []PermitOption) error {
	// Describes the request for errors; copied to the heap only if it queues, so
	// that the path that admits at once allocates nothing but the permit.
	w := waiter{p: p, kind: kind, memory: p.base.Memory}
	if err := c.refusalLocked(&w); err != nil {
		c.unlock()
		return err
	}
	if ctx.Err() != nil {
		err := c.contextErrLocked(ctx, &w)
		c.unlock()
		return err
	}
	if kind == admitting {
		c.permits[p] = struct{}{}
		c.stats.TotalPermits++
	}
	// At once, if nobody is queued and the conditions allow, evicting idle
	// permits when that is what it takes.
	for c.queue.Len() == 0 {
		b := c.admissionLocked(p.base, newcomer)
		if b == admissible {
			c.admitLocked(p)
			c.stats.AcquiredImmediately++
			c.unlock()
			return nil
		}
		if c.evictionHelpsLocked(b, p.base, newcomer) {
			c.evictLocked(c.inactive.Front(), EvictedForAdmission)
			continue
		}
		if c.group == nil || !c.group.evictBorrowersLocked(c, p.base, newcomer) {
			break
		}
	}
	if c.maxQueue > 0 && c.queue.Len() >= c.maxQueue {
		c.stats.Rejected++
		err := c.fail(semaphore.QueueFull, w.what(), fmt.Sprintf("%v (%d queued; %s)", semaphore.ErrQueueFull, c.queue.Len(), c.usageLocked()),
			semaphore.ErrQueueFull)
		c.dumpLocked("wait queue overload", p)
		if kind == admitting {
			p.setPhaseLocked(Aborted)
			c.forgetLocked(p)
		}
		c.unlock()
		return err
	}
	queued := &waiter{p: p, kind: kind, memory: w.memory}
	for _, o := range opts {
		o(queued)
	}
	queued.budget = shed.BudgetOf(ctx)
	if why := c.refuseLocked(queued); why != "" {
		c.stats.Shed++
		err := c.fail(semaphore.Shed, w.what(), "shed at once: "+why, semaphore.ErrShed)
		if kind == admitting {
			p.setPhaseLocked(Aborted)
			c.forgetLocked(p)
		}
		c.unlock()
		return err
	}
	c.stats.QueuedForAdmission++
	switch c.admissionLocked(p.base, newcomer) {
	case blockedByCount:
		c.stats.QueuedBecauseCount++
	case blockedByMemory:
		c.stats.QueuedBecauseMemory++
	case blockedByCPU:
		c.stats.QueuedBecauseCPU++
	}
	c.enqueueLocked(ctx, queued)
	c.unlock()
	return c.wait(ctx, queued)
}

// blocker says what, if anything, keeps a request from being admitted now.
type blocker uint8

const (
	admissible blocker = iota
	blockedByCount
	blockedByMemory
	blockedByCPU
	// blockedByShare: only the controller's own memory holds it back; in a group
	// the shared pool may lend the rest (borrow.go). admissionLocked never returns
	// it.
	blockedByShare
)

// newcomer is the arrival order of a request that has not queued: after every
// queued one.
const newcomer = math.MaxUint64

// admissionLocked applies the admission rules, in order, to a request for base
// that arrived at seq (its waiter's seq, or newcomer), ignoring its own queue. In
// a group a request that does not fit the controller's memory may borrow the rest
// from the shared pool (borrow.go).
func (c *Controller) admissionLocked(base Resources, seq uint64) blocker {
	b := c.rulesLocked(base)
	if b != blockedByShare {
		return b
	}
	if c.group != nil && c.group.lendsLocked(c, c.avail, base.Memory, seq) {
		return admissible
	}
	return blockedByMemory
}

// rulesLocked is admissionLocked without the shared pool.
func (c *Controller) rulesLocked(base Resources) blocker {
	used := c.usedLocked().Memory
	if c.pastLimit(c.killMult, used) || c.pastLimit(c.serializeMult, used) {
		return blockedByMemory
	}
	if c.needCPU-c.awaiting >= c.cpuConcurrency {
		return blockedByCPU
	}
	// Always admit one: with no count in use, nothing else can free memory, so a
	// request that does not fit would otherwise wait forever.
	if c.avail.Covers(base) || c.avail.Count == c.limits.Count {
		return admissible
	}
	if c.avail.Count < base.Count {
		return blockedByCount
	}
	return blockedByShare
}

// evictionHelpsLocked reports whether evicting parked permits could let a request
// for base in, given what holds it back: never for CPU, and for resources only if
// freeing every parked permit's base resources would be enough. (Parked permits'
// CPU marks never count, so eviction could not help CPU anyway.)
func (c *Controller) evictionHelpsLocked(b blocker, base Resources, seq uint64) bool {
	if b == blockedByCPU || c.inactive.Len() == 0 {
		return false
	}
	var parked Resources
	for pk := c.inactive.Front(); pk != nil; pk = pk.link.Next() {
		if p := pk.p; p.hasBase {
			parked = parked.Add(p.base)
		}
	}
	after := c.avail.Add(parked)
	used := c.limits.Memory - after.Memory
	if c.pastLimit(c.killMult, used) || c.pastLimit(c.serializeMult, used) {
		return false
	}
	if after.Covers(base) || after.Count == c.limits.Count {
		return true
	}
	return after.Count >= base.Count && c.group != nil && c.group.lendsLocked(c, after, base.Memory, seq)
}

// admitLocked gives p its base resources and makes it active; its CPU marks, if
// it is a readmitted permit that kept some, count again.
func (c *Controller) admitLocked(p *Permit) {
	c.avail = c.avail.Sub(p.base)
	c.held = c.held.Add(p.base)
	p.hasBase = true
	p.admitted = time.Now()
	p.setPhaseLocked(Active)
	c.stats.Acquired++
}

// maybeAdmitLocked admits queued requests from the head while the rules allow,
// evicting idle permits when only resources hold the head back, then serves the
// memory queue. Every change that could let a request in ends with a call to it.
// In a group it does so for every member: memory given back to the shared pool
// may let another member's waiters in.
func (c *Controller) maybeAdmitLocked() {
	if c.group != nil {
		c.group.maybeAdmitLocked()
		return
	}
	c.admitQueueLocked()
}

// admitQueueLocked is maybeAdmitLocked for this controller's queues alone. It
// reports whether it settled any waiter of the admission queue or granted memory.
func (c *Controller) admitQueueLocked() (settled bool) {
	for c.queue.Len() > 0 {
		w := c.queue.Front()
		b := c.admissionLocked(w.p.base, w.seq)
		shedWhy := ""
		if b == admissible {
			shedWhy = c.shouldShedLocked(w)
		}
		switch {
		case b == admissible && shedWhy != "":
			c.stats.Shed++
			c.settleLocked(w, c.fail(semaphore.Shed, w.what(), semaphore.ErrShed.Error()+" at the head of the queue: "+shedWhy,
				semaphore.ErrShed))
			settled = true
		case b == admissible:
			c.admitLocked(w.p)
			c.settleLocked(w, nil)
			settled = true
		case c.evictionHelpsLocked(b, w.p.base, w.seq):
			c.evictLocked(c.inactive.Front(), EvictedForAdmission)
		case c.group != nil && c.group.evictBorrowersLocked(c, w.p.base, w.seq):
			// Other members' parked borrowers were evicted: the head now borrows.
		default:
			return c.grantMemoryLocked() || settled
		}
	}
	return c.grantMemoryLocked() || settled
}

// shouldShedLocked says why w, at the head and about to be admitted, is shed
// instead, or "": by WithShedFactor, or by the deadline rule when too little
// of its deadline is left for the usual round trip.
func (c *Controller) shouldShedLocked(w *waiter) string {
	if w.noShed {
		return ""
	}
	// A deadline already passed is the caller's own: its wait ends timed out.
	if dl := w.budget.Deadline; !c.noDeadlineShed && c.rtt > 0 && !dl.IsZero() {
		if left := time.Until(dl); left > 0 && left < c.rtt {
			return fmt.Sprintf("%v left before its deadline, less than the usual round trip %v",
				left.Round(time.Microsecond), c.rtt.Round(time.Microsecond))
		}
	}
	if c.shedFactor <= 0 || w.deadline.IsZero() {
		return ""
	}
	budget := w.deadline.Sub(w.arrived)
	// In floating point: converting a large factor's product back to a Duration
	// would overflow.
	if left := time.Until(w.deadline); float64(left) <= c.shedFactor*float64(budget) {
		return fmt.Sprintf("%v of its %v left", left.Round(time.Millisecond), budget.Round(time.Millisecond))
	}
	return ""
}

// refuseLocked applies the deadline rule (package semaphore/internal/shed,
// shared by the module's doors) to w, which would have to queue: it returns
// why w is refused at once, or "". The expected wait is counted in requests,
// a lower bound when memory or the CPU holds the queue: one count each for
// the requests queued ahead and w, less the counts free or held by parked
// permits (which an eviction frees), at the limit's count per usual round
// trip.
func (c *Controller) refuseLocked(w *waiter) string {
	if c.noDeadlineShed || w.noShed || !w.budget.Known() {
		return ""
	}
	free := max(c.avail.Count, 0)
	for pk := c.inactive.Front(); pk != nil; pk = pk.link.Next() {
		if pk.p.hasBase {
			free++
		}
	}
	r := shed.Readings{Limit: c.limits.Count, Available: free, Ahead: int64(c.queue.Len()), RTT: c.rtt}
	cfg := shed.DefaultConfig()
	return cfg.Decide(time.Now(), shed.Default, w.p.base.Count, w.budget, r).Refuse
}

// observeRTTLocked folds one permit's holding time into c.rtt, a smoothed
// mean with weight 1/8 for the newest.
func (c *Controller) observeRTTLocked(d time.Duration) {
	d = max(d, 1)
	if c.rtt == 0 {
		c.rtt = d
		return
	}
	c.rtt = max(c.rtt+(d-c.rtt)/8, 1)
}
