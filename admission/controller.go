package admission

import (
	"container/list"
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"
)

// A Controller admits requests under several limits at once: a number of
// concurrent permits (count), the memory they use, and how many of them may need
// the CPU; requests that cannot start wait in one strict FIFO queue, where they can
// still be dropped cheaply when the controller is overloaded. See the package
// documentation for the rules.
//
// All methods are safe for concurrent use. Every decision and the action it guards
// happen in one hold of the controller's lock; callbacks (OnEvict), closing parked
// values and logging run after it is released, never under it.
type Controller struct {
	// The lock; its own, or its group's, shared by every member (see group.go).
	// Set before the controller is visible to anyone, fixed from then on.
	mu *lock

	// Fixed after New (group after Group.Add).
	group     *Group // nil outside a group
	name      string
	logger    *slog.Logger  // nil: no automatic dumps
	dumpEvery time.Duration // least time between automatic dumps

	// Guarded by mu.
	lastDump       time.Time
	limits         Resources // the configured limits
	avail          Resources // limits minus everything permits hold; may be negative
	cpuConcurrency int       // admission stops at this many counted CPU marks (>= 1)
	maxQueue       int       // admission queue bound; <= 0 unbounded
	serializeMult  float64   // serialize limit = serializeMult x limits.Memory; 0 off
	killMult       float64   // kill limit = killMult x limits.Memory; 0 off
	shedFactor     float64   // preemptive shedding; 0 off

	queue    *list.List // *waiter of kind admitting or readmitting, oldest first
	memQueue *list.List // *waiter of kind requestingMemory, oldest first
	inactive *list.List // *Parked, oldest first
	blessed  *Permit    // the one permit that may grow past the serialize limit

	permits  map[*Permit]struct{} // every permit not yet released (or aborted)
	needCPU  int                  // active permits holding NeedCPU (see Permit.cpuShareLocked)
	awaiting int                  // of those, permits holding Await too

	broken  error         // non-nil after Break: what every refused call wraps
	closed  bool          // Close was called
	drained chan struct{} // closed once closed and no permit is left

	stats Stats // counters; the gauges are filled in by Stats()

	// Guarded by mu; used only in a group.
	shares  int64 // its weight in the group's split; 0 once removed
	removed bool  // Group.Remove was called: it leaves the group once drained
}

// lock is a controller's mutex with the work deferred until it is released. The
// members of a group share one, so that a decision that reads several members
// (borrowing from the shared pool) is made and acted on in one hold.
type lock struct {
	sync.Mutex
	// after holds work that must not run under the lock (user callbacks, Close on
	// parked values, logging); unlock runs it.
	after []func()
}

// New returns a controller with the given name (used in errors and dumps) and
// limits. It panics if a limit is negative or an option has an invalid value.
func New(name string, limits Resources, opts ...Option) *Controller {
	c := &Controller{
		mu:             new(lock),
		name:           name,
		dumpEvery:      30 * time.Second,
		limits:         limits,
		avail:          limits,
		cpuConcurrency: 1,
		queue:          list.New(),
		memQueue:       list.New(),
		inactive:       list.New(),
		permits:        map[*Permit]struct{}{},
	}
	for _, o := range opts {
		o(c)
	}
	switch {
	case limits.Count < 0 || limits.Memory < 0:
		c.panicf("New: negative limits %v", limits)
	case c.cpuConcurrency < 1:
		c.panicf("WithCPUConcurrency(%d): must be at least 1", c.cpuConcurrency)
	case !finite(c.serializeMult) || !finite(c.killMult) || !finite(c.shedFactor):
		c.panicf("multipliers and factors must be finite and not negative (serialize %g, kill %g, shed %g)",
			c.serializeMult, c.killMult, c.shedFactor)
	}
	c.stats.Name = name
	return c
}

// finite reports whether f is a number, not negative and not infinite: NaN or an
// infinity would turn a limit into nonsense when converted to bytes or a duration.
func finite(f float64) bool { return f >= 0 && !math.IsInf(f, 1) }

// unlock releases mu, then runs what was deferred while holding it.
func (c *Controller) unlock() { c.mu.unlock() }

// unlock releases l, then runs what was deferred while holding it (by any
// controller sharing l).
func (l *lock) unlock() {
	run := l.after
	l.after = nil
	l.Unlock()
	for _, f := range run {
		f()
	}
}

// refusalLocked is the error for any new request after Break or Close. It builds
// a message only when it refuses.
func (c *Controller) refusalLocked(w *waiter) error {
	switch {
	case c.broken != nil:
		return c.errorf(w.what(), "%w", c.broken)
	case c.closed:
		return c.errorf(w.what(), "%w", ErrClosed)
	}
	return nil
}

// forgetLocked drops a permit from the controller's books.
func (c *Controller) forgetLocked(p *Permit) {
	delete(c.permits, p)
	c.checkDrainedLocked()
}

// checkDrainedLocked lets Close return once it was called and no permit is left.
func (c *Controller) checkDrainedLocked() {
	if c.closed && len(c.permits) == 0 {
		if c.removed {
			c.group.dropLocked(c)
		}
		select {
		case <-c.drained:
		default:
			close(c.drained)
		}
	}
}

// Break fails every queued request (admission, readmission and memory) with an
// error matching ErrBroken and err, and every later Acquire, Readmit and waiting
// RequestMemory the same way. Admitted permits keep working and are released as
// usual. Only the first Break counts.
func (c *Controller) Break(err error) {
	c.mu.Lock()
	defer c.unlock()
	if c.broken != nil {
		return
	}
	c.broken = ErrBroken
	if err != nil {
		c.broken = fmt.Errorf("%w: %w", ErrBroken, err)
	}
	c.failAllLocked(func(w *waiter) error { return c.errorf(w.what(), "%w", c.broken) })
	c.maybeAdmitLocked() // in a group, a failed head may have held the pool against others
}

func (c *Controller) failAllLocked(reason func(*waiter) error) {
	for _, q := range []*list.List{c.queue, c.memQueue} {
		for q.Len() > 0 {
			w := q.Front().Value.(*waiter)
			c.settleLocked(w, reason(w))
		}
	}
}

// closeLocked refuses new requests, fails queued ones and evicts parked permits,
// once.
func (c *Controller) closeLocked() {
	if c.closed {
		return
	}
	c.closed = true
	c.drained = make(chan struct{})
	c.failAllLocked(func(w *waiter) error { return c.errorf(w.what(), "%w while waiting", ErrClosed) })
	for c.inactive.Len() > 0 {
		c.evictLocked(c.inactive.Front().Value.(*Parked), EvictedOnClose)
	}
	c.checkDrainedLocked()
	c.maybeAdmitLocked() // in a group, what the evictions gave back to the pool
}

// Close shuts the controller down: new requests fail with ErrClosed, queued ones
// fail the same way, parked permits are evicted (their values closed), and Close
// then waits until every permit has been released or ctx ends, whichever is first.
// It returns nil once everything is released, or an error matching ctx.Err() that
// says how many permits are still held.
func (c *Controller) Close(ctx context.Context) error {
	c.mu.Lock()
	c.closeLocked()
	drained := c.drained
	c.unlock()
	select {
	case <-drained:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		defer c.unlock()
		return fmt.Errorf("admission %q: close: %d permits still held: %w", c.name, len(c.permits), ctx.Err())
	}
}
