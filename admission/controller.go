package admission

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// A Controller admits requests under several limits at once: a number of
// concurrent permits (count), the memory they use, and how many of them may need
// the CPU; requests that cannot start wait in one strict FIFO queue, where they can
// still be dropped cheaply when the controller is overloaded. See the package
// documentation for the rules.
//
// All methods are safe for concurrent use. Callbacks (OnEvict) and Close on parked
// values run after the controller's lock is released, never under it.
type Controller struct {
	mu sync.Mutex

	name      string        // fixed after New
	logger    *slog.Logger  // nil: no automatic dumps
	dumpEvery time.Duration // least time between automatic dumps
	lastDump  time.Time

	limits         Resources // the configured limits
	avail          Resources // limits minus everything permits hold; may be negative
	cpuConcurrency int       // admission stops at this many permits needing CPU (>= 1)
	maxQueue       int       // admission queue bound; <= 0 unbounded
	serializeMult  float64   // serialize limit = serializeMult x limits.Memory; 0 off
	killMult       float64   // kill limit = killMult x limits.Memory; 0 off
	shedFactor     float64   // preemptive shedding; 0 off

	queue    *list.List // *waiter waiting for admission, oldest first
	memQueue *list.List // *waiter waiting in RequestMemory, oldest first
	inactive *list.List // *Parked, oldest first
	blessed  *Permit    // the one permit that may grow past the serialize limit

	permits  map[*Permit]struct{} // every permit not yet released
	needCPU  int                  // permits with NeedCPU held
	awaiting int                  // of those, permits with Await held too

	broken  error         // non-nil after Break: what every refused call wraps
	closed  bool          // Close was called
	drained chan struct{} // closed once closed and no permit is left

	stats Stats // counters; the gauges are filled in by Stats()

	// afterUnlock holds work that must not run under mu (user callbacks, Close on
	// parked values, logging); unlock runs it.
	afterUnlock []func()
}

// New returns a controller with the given name (used in errors and dumps) and
// limits. It panics if a limit is negative or an option has an invalid value.
func New(name string, limits Resources, opts ...Option) *Controller {
	c := &Controller{
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
	case c.serializeMult < 0 || c.killMult < 0 || c.shedFactor < 0:
		c.panicf("negative multiplier or factor (serialize %g, kill %g, shed %g)", c.serializeMult, c.killMult, c.shedFactor)
	}
	c.stats.Name = name
	return c
}

// unlock releases mu, then runs what was deferred while holding it.
func (c *Controller) unlock() {
	run := c.afterUnlock
	c.afterUnlock = nil
	c.mu.Unlock()
	for _, f := range run {
		f()
	}
}

// waiter is a request in the admission queue or the memory queue.
type waiter struct {
	p        *Permit
	memory   int64 // RequestMemory's amount; 0 for admission
	forMem   bool  // in memQueue rather than queue
	readmit  bool  // admission of an evicted permit
	noShed   bool
	arrived  time.Time
	deadline time.Time     // zero without one
	done     chan error    // the outcome, sent once by the settler: nil when admitted
	elem     *list.Element // position while queued; nil once settled
	ahead    int           // queue length when it joined
}

func (w *waiter) list(c *Controller) *list.List {
	if w.forMem {
		return c.memQueue
	}
	return c.queue
}

// settleLocked removes w from its queue and delivers the outcome.
func (c *Controller) settleLocked(w *waiter, err error) {
	w.list(c).Remove(w.elem)
	w.elem = nil
	w.p.wait = nil
	if err != nil {
		c.undoWaitLocked(w)
	}
	w.done <- err
}

// undoWaitLocked puts a permit whose wait failed back where it was: a memory
// waiter stays active, a readmission stays evicted, and a new permit is aborted
// and forgotten.
func (c *Controller) undoWaitLocked(w *waiter) {
	switch {
	case w.forMem:
		w.p.phase = Active
	case w.readmit:
		w.p.phase = Evicted
	default:
		w.p.phase = Aborted
		c.forgetLocked(w.p)
	}
}

// Acquire admits a request for operation op with a base cost of one count and the
// given memory, waiting in the admission queue if it cannot start at once (see the
// package documentation for when it can). It returns the admitted Permit, which the
// caller must Release.
//
// It fails at once with ErrQueueFull when the queue is at its bound, with ErrBroken
// or ErrClosed after Break or Close, and with ctx's error if ctx is already done. A
// queued request fails with ErrShed when preemptive shedding drops it, and with an
// error matching ctx.Err() (and ErrTimedOut for a deadline) when ctx ends; its
// leaving lets the requests behind it in if they now fit. Acquire panics if memory
// is negative.
func (c *Controller) Acquire(ctx context.Context, op string, memory int64, opts ...PermitOption) (*Permit, error) {
	if memory < 0 {
		c.panicf("Acquire(%q, %d): negative memory", op, memory)
	}
	p := &Permit{c: c, op: op, base: Resources{Count: 1, Memory: memory}}
	if err := c.admit(ctx, p, false, opts); err != nil {
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
// holds no base resources, and only accounts the memory consumed through it.
func (c *Controller) Track(op string) *Permit {
	p := &Permit{c: c, op: op, phase: Active}
	c.mu.Lock()
	c.permits[p] = struct{}{}
	c.stats.TotalPermits++
	c.unlock()
	return p
}

// admit runs p through admission: at once when allowed, else through the queue
// (the waiter, with opts applied, is made only then).
func (c *Controller) admit(ctx context.Context, p *Permit, readmit bool, opts []PermitOption) error {
	w := waiter{p: p, readmit: readmit}
	verb := "admit"
	if readmit {
		verb = "readmit"
	}
	c.mu.Lock()
	if err := c.refusalLocked(verb, p, p.base.Memory); err != nil {
		c.unlock()
		return err
	}
	if ctx.Err() != nil {
		c.unlock()
		return c.errContext(ctx, verb, &w, false)
	}
	if !w.readmit {
		c.permits[p] = struct{}{}
		c.stats.TotalPermits++
	}
	// At once, if nobody is queued and the conditions allow, evicting idle
	// permits when that is what it takes.
	for c.queue.Len() == 0 {
		b := c.admissionLocked(p.base)
		if b == admissible {
			c.admitLocked(p)
			c.stats.AdmittedImmediately++
			c.unlock()
			return nil
		}
		if !c.evictionHelpsLocked(b, p.base) {
			break
		}
		c.evictLocked(c.inactive.Front().Value.(*Parked), EvictedForAdmission)
	}
	if c.maxQueue > 0 && c.queue.Len() >= c.maxQueue {
		c.stats.Shed++
		err := c.fail(what(verb, p, p.base.Memory), []error{ErrQueueFull}, "wait queue full (%d queued; %s)", c.queue.Len(), c.usageLocked())
		c.dumpLocked("wait queue overload", p)
		if !w.readmit {
			c.forgetLocked(p)
		}
		c.unlock()
		return err
	}
	c.stats.QueuedForAdmission++
	switch c.admissionLocked(p.base) {
	case blockedByCount:
		c.stats.QueuedBecauseCount++
	case blockedByMemory:
		c.stats.QueuedBecauseMemory++
	case blockedByCPU:
		c.stats.QueuedBecauseCPU++
	}
	queued := &waiter{p: p, readmit: readmit}
	for _, o := range opts {
		o(queued)
	}
	c.enqueueLocked(ctx, queued, c.queue)
	p.phase = WaitingForAdmission
	c.unlock()
	return c.wait(ctx, verb, queued)
}

func (c *Controller) enqueueLocked(ctx context.Context, w *waiter, q *list.List) {
	w.arrived = time.Now()
	if dl, ok := ctx.Deadline(); ok {
		w.deadline = dl
	}
	w.done = make(chan error, 1)
	w.ahead = q.Len()
	w.elem = q.PushBack(w)
	w.p.wait = w
}

// wait blocks until w is settled or ctx ends.
func (c *Controller) wait(ctx context.Context, verb string, w *waiter) error {
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
	}
	c.mu.Lock()
	if w.elem != nil {
		err := c.errContext(ctx, verb, w, true)
		if errors.Is(err, ErrTimedOut) {
			c.stats.TimedOut++
			c.dumpLocked("timed out", w.p)
		}
		c.settleLocked(w, err)
		<-w.done
		c.maybeAdmitLocked() // if it was the head, the ones behind may fit now
		c.unlock()
		return err
	}
	c.unlock()
	if err := <-w.done; err != nil {
		return err
	}
	// Settled in our favour in a race with the context. The caller sees its
	// context error, so give back what was granted.
	err := c.errContext(ctx, verb, w, true)
	c.mu.Lock()
	switch {
	case w.forMem:
		w.p.returnLocked(Resources{Memory: w.memory})
	case w.readmit:
		w.p.releaseBaseLocked()
		w.p.phase = Evicted
	default:
		w.p.releaseLocked()
		w.p.phase = Aborted
	}
	c.maybeAdmitLocked()
	c.unlock()
	return err
}

// refusalLocked is the error for any new request after Break or Close.
func (c *Controller) refusalLocked(verb string, p *Permit, memory int64) error {
	switch {
	case c.broken != nil:
		return c.fail(what(verb, p, memory), []error{c.broken}, "broken")
	case c.closed:
		return c.fail(what(verb, p, memory), []error{ErrClosed}, "closed")
	}
	return nil
}

func (c *Controller) errContext(ctx context.Context, verb string, w *waiter, queued bool) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	causes, reason := []error{err}, "canceled"
	if errors.Is(err, context.DeadlineExceeded) {
		causes, reason = append(causes, ErrTimedOut), "timed out"
	}
	why := err.Error()
	if cause != nil && cause != err {
		causes = append(causes, cause)
		why += ": " + cause.Error()
	}
	memory := w.p.base.Memory
	if w.forMem {
		memory = w.memory
	}
	if !queued {
		return c.fail(what(verb, w.p, memory), causes, "%s before waiting: %s", reason, why)
	}
	return c.fail(what(verb, w.p, memory), causes, "%s after %v, queued behind %d (%s): %s",
		reason, time.Since(w.arrived).Round(time.Millisecond), w.ahead, c.usageLocked(), why)
}

// blocker says what, if anything, keeps a request from being admitted now.
type blocker uint8

const (
	admissible blocker = iota
	blockedByCount
	blockedByMemory
	blockedByCPU
)

func (c *Controller) usedLocked() Resources { return c.limits.Sub(c.avail) }

// limitOf returns mult x the memory limit, and whether that limit is on.
func (c *Controller) limitOf(mult float64) (int64, bool) {
	return int64(mult * float64(c.limits.Memory)), mult > 0
}

func (c *Controller) pastLimit(mult float64, used int64) bool {
	limit, on := c.limitOf(mult)
	return on && used > limit
}

// admissionLocked applies the admission rules, in order, to a request for base,
// ignoring the queue.
func (c *Controller) admissionLocked(base Resources) blocker {
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
	return blockedByMemory
}

// evictionHelpsLocked reports whether evicting parked permits could let a request
// for base in, given what holds it back: never for CPU, and for resources only if
// freeing every parked permit's base resources would be enough.
func (c *Controller) evictionHelpsLocked(b blocker, base Resources) bool {
	if b == blockedByCPU || c.inactive.Len() == 0 {
		return false
	}
	var parked Resources
	for e := c.inactive.Front(); e != nil; e = e.Next() {
		if p := e.Value.(*Parked).p; p.hasBase {
			parked = parked.Add(p.base)
		}
	}
	after := c.avail.Add(parked)
	used := c.limits.Memory - after.Memory
	if c.pastLimit(c.killMult, used) || c.pastLimit(c.serializeMult, used) {
		return false
	}
	return after.Covers(base) || after.Count == c.limits.Count
}

func (c *Controller) admitLocked(p *Permit) {
	c.avail = c.avail.Sub(p.base)
	p.hasBase = true
	p.phase = Active
	c.stats.Admitted++
}

// maybeAdmitLocked admits queued requests from the head while the rules allow,
// evicting idle permits when only resources hold the head back, then serves the
// memory queue. Every change that could let a request in ends with a call to it.
func (c *Controller) maybeAdmitLocked() {
	for c.queue.Len() > 0 {
		w := c.queue.Front().Value.(*waiter)
		b := c.admissionLocked(w.p.base)
		switch {
		case b == admissible && c.shouldShedLocked(w):
			c.stats.Shed++
			verb := "admit"
			if w.readmit {
				verb = "readmit"
			}
			c.settleLocked(w, c.fail(what(verb, w.p, w.p.base.Memory), []error{ErrShed},
				"shed at the head of the queue: %v of its %v left", time.Until(w.deadline).Round(time.Millisecond),
				w.deadline.Sub(w.arrived).Round(time.Millisecond)))
		case b == admissible:
			c.admitLocked(w.p)
			c.settleLocked(w, nil)
		case c.evictionHelpsLocked(b, w.p.base):
			c.evictLocked(c.inactive.Front().Value.(*Parked), EvictedForAdmission)
		default:
			c.grantMemoryLocked()
			return
		}
	}
	c.grantMemoryLocked()
}

func (c *Controller) shouldShedLocked(w *waiter) bool {
	if c.shedFactor <= 0 || w.noShed || w.deadline.IsZero() {
		return false
	}
	budget := w.deadline.Sub(w.arrived)
	return time.Until(w.deadline) <= time.Duration(c.shedFactor*float64(budget))
}

// forgetLocked drops a permit from the controller's books.
func (c *Controller) forgetLocked(p *Permit) {
	delete(c.permits, p)
	c.checkDrainedLocked()
}

// checkDrainedLocked lets Close return once it was called and no permit is left.
func (c *Controller) checkDrainedLocked() {
	if c.closed && len(c.permits) == 0 {
		select {
		case <-c.drained:
		default:
			close(c.drained)
		}
	}
}

// SetLimits changes the limits. Availability shifts by the difference and may go
// negative; permits keep what they hold. Raising a limit admits the waiters that
// now fit.
func (c *Controller) SetLimits(limits Resources) {
	if limits.Count < 0 || limits.Memory < 0 {
		c.panicf("SetLimits(%v): negative limits", limits)
	}
	c.mu.Lock()
	c.avail = c.avail.Add(limits.Sub(c.limits))
	c.limits = limits
	c.maybeAdmitLocked()
	c.unlock()
}

// SetCPUConcurrency changes how many permits may need CPU before admission stops.
// It panics if n < 1.
func (c *Controller) SetCPUConcurrency(n int) {
	if n < 1 {
		c.panicf("SetCPUConcurrency(%d): must be at least 1", n)
	}
	c.mu.Lock()
	c.cpuConcurrency = n
	c.maybeAdmitLocked()
	c.unlock()
}

// SetMaxQueueLength changes the queue bound for requests arriving from now on;
// n <= 0 removes it. Requests already queued stay.
func (c *Controller) SetMaxQueueLength(n int) {
	c.mu.Lock()
	c.maxQueue = n
	c.unlock()
}

// Break fails every queued request (admission and memory) with an error matching
// ErrBroken and err, and every later Acquire, Readmit and waiting RequestMemory the
// same way. Admitted permits keep working and are released as usual. Only the first
// Break counts.
func (c *Controller) Break(err error) {
	c.mu.Lock()
	if c.broken != nil {
		c.unlock()
		return
	}
	c.broken = ErrBroken
	if err != nil {
		c.broken = &opError{msg: "admission: broken: " + err.Error(), causes: []error{ErrBroken, err}}
	}
	c.failAllLocked(func(w *waiter) error {
		return c.fail(what("admit", w.p, w.p.base.Memory), []error{c.broken}, "broken")
	})
	c.unlock()
}

func (c *Controller) failAllLocked(reason func(*waiter) error) {
	for _, q := range []*list.List{c.queue, c.memQueue} {
		for q.Len() > 0 {
			w := q.Front().Value.(*waiter)
			c.settleLocked(w, reason(w))
		}
	}
}

// Close shuts the controller down: new requests fail with ErrClosed, queued ones
// fail the same way, parked permits are evicted (their values closed), and Close
// then waits until every permit has been released or ctx ends, whichever is first.
// It returns nil once everything is released, or an error matching ctx.Err() that
// says how many permits are still held.
func (c *Controller) Close(ctx context.Context) error {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		c.drained = make(chan struct{})
		c.failAllLocked(func(w *waiter) error {
			return c.fail(what("admit", w.p, w.p.base.Memory), []error{ErrClosed}, "closed while waiting")
		})
		for c.inactive.Len() > 0 {
			c.evictLocked(c.inactive.Front().Value.(*Parked), EvictedOnClose)
		}
		c.checkDrainedLocked()
	}
	drained := c.drained
	c.unlock()
	select {
	case <-drained:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		left := len(c.permits)
		c.unlock()
		return &opError{msg: fmt.Sprintf("%s: close: %d permits still held: %v", c.label(), left, ctx.Err()),
			causes: []error{ctx.Err()}}
	}
}
