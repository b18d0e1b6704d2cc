package admission

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/errs"
	"github.com/fairsem/semaphore/internal/list"
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
	limits         Resources     // the configured limits
	avail          Resources     // limits minus everything permits hold; may be negative
	held           Resources     // everything permits hold: their base resources and what they consumed; may exceed limits
	cpuConcurrency int           // admission stops at this many counted CPU marks (>= 1)
	maxQueue       int           // admission queue bound; <= 0 unbounded
	serializeMult  float64       // serialize limit = serializeMult x limits.Memory; 0 off
	killMult       float64       // kill limit = killMult x limits.Memory; 0 off
	shedFactor     float64       // preemptive shedding; 0 off
	noDeadlineShed bool          // WithoutDeadlineShedding
	rtt            time.Duration // usual time a permit holds its count, from admission to Release or ReleaseBase, parked ones aside; 0 unknown

	queue    list.List[waiter] // of kind admitting or readmitting, oldest first
	memQueue list.List[waiter] // of kind requestingMemory, oldest first
	inactive list.List[Parked] // oldest first
	blessed  *Permit           // the one permit that may grow past the serialize limit

	permits  map[*Permit]struct{} // every permit not yet released (or aborted)
	needCPU  int                  // active permits holding NeedCPU (see Permit.cpuShareLocked)
	awaiting int                  // of those, permits holding Await too

	broken  *brokenState  // non-nil after Break
	drained chan struct{} // non-nil while a Drain waits; closed once no permit is left

	stats Stats // counters; the gauges are filled in by Stats()

	// Guarded by mu; used only in a group.
	shares  int64 // its weight in the group's split; 0 once removed
	removed bool  // Group.Remove was called: it leaves the group once no permit is left
	dropped bool  // removed and left the group
}

// lock is a controller's mutex with the work deferred until it is released. The
// members of a group share one, so that a decision that reads several members
// (borrowing from the shared pool) is made and acted on in one hold.
type lock struct {
	sync.Mutex
	// after holds work that must not run under the lock (user callbacks, closing
	// parked values, logging); unlock runs it.
	after []func()
}

// New returns a controller with the given limits; name it with WithName (the
// name is used in errors, dumps and metrics). It panics if a limit is negative or
// an option has an invalid value.
//
// A Controller must be created with New (or Group.Add): a zero Controller panics
// at its first use, with a message that says so.
func New(limits Resources, opts ...Option) *Controller {
	c := &Controller{
		mu:             new(lock),
		dumpEvery:      30 * time.Second,
		limits:         limits,
		avail:          limits,
		cpuConcurrency: 1,
		permits:        map[*Permit]struct{}{},
	}
	for _, o := range opts {
		o.applyController(c)
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
	c.stats.Name = c.name
	return c
}

// made panics for a zero Controller: it has no lock and no limits to apply.
// Every exported method checks it first, most through lock.
func (c *Controller) made() {
	if c.mu == nil {
		panic("admission: zero Controller: create it with admission.New or Group.Add")
	}
}

// lock takes the controller's lock (its group's, in a group).
func (c *Controller) lock() {
	c.made()
	c.mu.Lock()
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

// brokenState is what Break leaves behind, shared by every call it fails.
type brokenState struct {
	why     string  // "broken" or "broken: " + the cause's text, quoted
	matches []error // semaphore.ErrBroken and the cause
}

// refusalLocked is the error for any new request after Break. It builds a
// message only when it refuses.
func (c *Controller) refusalLocked(w *waiter) error {
	if c.broken != nil {
		return c.errBrokenLocked(w)
	}
	return nil
}

// errBrokenLocked is the failure of w's request on a broken controller.
func (c *Controller) errBrokenLocked(w *waiter) error {
	return c.fail(semaphore.Broken, w.what(), c.broken.why, c.broken.matches...)
}

// forgetLocked drops a permit from the controller's books.
func (c *Controller) forgetLocked(p *Permit) {
	delete(c.permits, p)
	c.checkDrainedLocked()
}

// checkDrainedLocked, once no permit is left, ends the waiting Drain calls and
// lets a removed member leave its group.
func (c *Controller) checkDrainedLocked() {
	if len(c.permits) > 0 {
		return
	}
	if c.drained != nil {
		close(c.drained)
		c.drained = nil
	}
	if c.removed && !c.dropped {
		c.dropped = true
		c.group.dropLocked(c)
	}
}

// Break shuts admission down: every queued request (admission, readmission and
// memory) fails with an error matching semaphore.ErrBroken and err, and so does
// every later Acquire, Readmit and RequestMemory that would wait; parked permits
// are evicted (their values closed, OnEvict called with EvictedOnBreak), and so
// is a permit parked later, at once; Track returns permits that are already
// released. Admitted permits keep working and are released as usual: Drain waits
// for them. Only the first Break counts; later calls do nothing.
func (c *Controller) Break(err error) {
	c.lock()
	defer c.unlock()
	c.breakLocked(err)
}

// Err returns nil until Break, and then an error matching semaphore.ErrBroken and
// the error passed to Break, as a semaphore's Err does.
func (c *Controller) Err() error {
	c.lock()
	defer c.unlock()
	if c.broken == nil {
		return nil
	}
	return &errs.Error{Subject: (*subject)(c), Why: c.broken.why, Matches: c.broken.matches}
}

func (c *Controller) breakLocked(err error) {
	if c.broken != nil {
		return
	}
	c.broken = &brokenState{why: semaphore.ErrBroken.Error(), matches: []error{semaphore.ErrBroken}}
	if err != nil {
		c.broken.why += ": " + errs.Cause(err)
		c.broken.matches = append(c.broken.matches, err)
	}
	for _, q := range []*list.List[waiter]{&c.queue, &c.memQueue} {
		for q.Len() > 0 {
			w := q.Front()
			c.settleLocked(w, c.errBrokenLocked(w))
		}
	}
	for c.inactive.Len() > 0 {
		c.evictLocked(c.inactive.Front(), EvictedOnBreak)
	}
	c.checkDrainedLocked()
	// In a group, a failed head may have held the pool against others, and the
	// evictions gave memory back to it.
	c.maybeAdmitLocked()
}

// Drain waits until every permit is released (no permit admitted, waiting or
// tracked is left), and returns nil then, at once if none is left. If ctx ends
// first it returns an error that matches ctx.Err() and context.Cause(ctx) (and
// semaphore.ErrTimedOut for a deadline) and says how many permits are still held;
// the permits keep what they hold.
//
// Drain does not stop admission: on a working controller new requests may keep it
// from returning. The shutdown sequence is Break, then Drain: from then on permits
// are only released, so when Drain returns nil nothing is held and nothing ever
// will be again.
func (c *Controller) Drain(ctx context.Context) error {
	c.lock()
	if len(c.permits) == 0 {
		c.unlock()
		return nil
	}
	if c.drained == nil {
		c.drained = make(chan struct{})
	}
	drained := c.drained
	c.unlock()
	select {
	case <-drained:
		return nil
	case <-ctx.Done():
	}
	c.lock()
	defer c.unlock()
	select {
	case <-drained:
		return nil // drained meanwhile
	default:
	}
	deadline, why, matches := errs.Context(ctx)
	if deadline {
		matches = append(matches, semaphore.ErrTimedOut)
	}
	return c.fail(nil, "drain", errs.Count(int64(len(c.permits)), "permit")+" still held: "+why, matches...)
}
