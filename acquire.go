package semaphore

import (
	"context"
	"runtime"
	"strconv"
	"time"

	"github.com/fairsem/semaphore/internal/errs"
)

// An acquire, from the call to the answer its caller sees, in the order it runs:
// the lock-free attempt (tryAcquire, acquireLockFree, yieldThenAcquire), the
// decision under the lock (join), the wait if the call queued and the check of
// every grant against the caller's context (waitlist.go: waitContext, kept), and
// the end (end, below), which counts the call, tells the observer and makes its
// error, from the parts every error of the module is made of (internal/errs).
// The state word these paths read and swap is described in semaphore.go, at its
// constants; AcquireTimeout's timed waits are in deadline.go.

// unitsOf returns the units field of a state word (see semaphore.go).
func unitsOf(st int64) int64 { return st >> unitShift }

// availableIn is Available for the state word st.
func availableIn(st int64) int64 {
	if st&flagHealthy == 0 || st < 0 {
		return 0
	}
	return unitsOf(st)
}

// Acquire takes n units, blocking until they are granted, ctx is done, or the
// semaphore is broken. It returns nil once the units are held; the caller gives
// them back with Release(n). It fails holding no units, checking in this order:
//   - ctx is already done: an error matching ctx.Err() and context.Cause(ctx),
//     and ErrTimedOut when its deadline passed, even when n units are free;
//   - the semaphore is broken: ErrBroken and the error given to Break;
//   - n is larger than the capacity: ErrTooLarge, at once;
//   - the wait list holds WithMaxWaiters callers: ErrQueueFull, at once;
//
// and, once queued, with ctx's error when ctx ends first (also when it ends just
// before the units are granted: they go on to the waiters behind), ErrBroken when
// Break is called, and ErrTooLarge when a Resize leaves n above the capacity.
// Acquire panics if n is negative.
func (s *Semaphore) Acquire(ctx context.Context, n int64) error {
	if ctx.Done() == nil && s.tryAcquire(n) {
		return nil
	}
	return s.acquireSlow(ctx, n)
}

// TryAcquire takes n units if they are available and nobody is waiting, and
// reports whether it did. It never waits and never jumps the queue. It returns
// false on a broken semaphore and panics if n is negative.
func (s *Semaphore) TryAcquire(n int64) bool {
	return s.tryAcquire(n) || s.tryAcquireSlow(n)
}

// tryAcquire is the single lock-free attempt of every acquire form, small enough to
// be inlined into them. False means "take the slow path", which decides for good.
func (s *Semaphore) tryAcquire(n int64) bool {
	st := s.state.Load()
	return st&(flagWaiting|flagHealthy) == flagHealthy && st&countMask != countMask &&
		n >= 0 && st>>unitShift >= n &&
		s.state.CompareAndSwap(st, st-n<<unitShift+countOne)
}

// checkUse panics for the programmer errors every acquire form checks first: a zero
// Semaphore, and a negative request.
func (s *Semaphore) checkUse(op string, n int64) {
	if s.isZero() {
		panic(errZeroValue)
	}
	if n < 0 {
		s.panicf("%s(%d): negative units", op, n)
	}
}

// isZero reports whether s is a zero Semaphore, made without New or Init: both set
// opts, which is fixed from then on.
func (s *Semaphore) isZero() bool { return s.opts == nil }

func (s *Semaphore) tryAcquireSlow(n int64) bool {
	s.checkUse("TryAcquire", n)
	return s.acquireLockFree(n)
}

// acquireLockFree retries the lock-free grant while other goroutines change the
// word, and folds the grant counter when it is full. It reports false as soon as
// the units are not available, someone waits, or the semaphore is broken.
func (s *Semaphore) acquireLockFree(n int64) bool {
	backoff := 1
	for {
		st := s.state.Load()
		if st&(flagWaiting|flagHealthy) != flagHealthy || st>>unitShift < n {
			return false
		}
		if st&countMask == countMask {
			s.fold() // once every 32,767 lock-free grants
			continue
		}
		if s.state.CompareAndSwap(st, st-n<<unitShift+countOne) {
			return true
		}
		// Another goroutine changed the word between our load and swap: the
		// cache line is contended. Stepping aside, longer after each failure,
		// lets the others run a burst of acquire/release pairs with the line
		// local, and lets holders release before this call gives up and queues
		// (once one call queues, every later one queues behind it).
		for range backoff {
			runtime.Gosched()
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// maxBackoff caps the number of scheduler yields after a failed swap.
const maxBackoff = 8

// yieldThenAcquire gives the holders one chance to release before a call that found
// too few units queues: unless someone waits or the semaphore is broken, it yields
// the processor once and retries the lock-free grant. A unit held for a few
// nanoseconds is then usually caught without a park and a wake-up, which cost far
// more than the yield (BENCHMARKS.md: "Yielding once before queueing"); a unit held
// longer costs the caller one yield before it queues. FIFO is untouched: the call
// is not in the list while it yields, and a lock-free grant is refused while
// anyone is. TryAcquire and AcquireTimeout(d <= 0) never yield: they do not wait.
func (s *Semaphore) yieldThenAcquire(n int64) bool {
	if s.state.Load()&(flagWaiting|flagHealthy) != flagHealthy {
		return false
	}
	runtime.Gosched()
	return s.acquireLockFree(n)
}

// fold moves the state word's grant counter into s.immediate.
func (s *Semaphore) fold() {
	s.mu.Lock()
	s.foldLocked()
	s.mu.Unlock()
}

// foldLocked empties the state word's grant counter into s.immediate. Only holders
// of mu fold, so the sum of the two is exact whenever mu is held.
func (s *Semaphore) foldLocked() {
	for {
		st := s.state.Load()
		if s.state.CompareAndSwap(st, st&^countMask) {
			s.immediate += uint64(st&countMask) >> countShift
			return
		}
	}
}

// acquireSlow is Acquire after its lock-free attempt, in the order of its
// contract: it checks n and the context, retries without the lock (once more
// after a yield), decides under the lock (join), waits if it queued, has every
// grant checked against the context (kept), and ends (end), which counts the call
// and makes its error.
func (s *Semaphore) acquireSlow(ctx context.Context, n int64) error {
	s.checkUse("Acquire", n)
	done := ctx.Done()
	if done != nil {
		select {
		case <-done:
			return s.end(ending{outcome: contextOutcome(ctx), n: n, ctx: ctx})
		default:
		}
	}
	e := ending{outcome: Granted, n: n}
	if !s.acquireLockFree(n) && !s.yieldThenAcquire(n) {
		var w *waiter
		if w, e = s.join(n, true); w != nil {
			if done == nil {
				// The plain wait, here rather than in a function of its own so
				// that nothing stands between the park and the caller. Its
				// context cannot end, so its grant is always kept.
				w.ch = onCond
				start := now()
				s.x.Load().cond.Wait() // takes a ticket in list order, unlocks mu, parks
				code := w.n.Load()
				if code >= 0 {
					code = s.wokenOutOfTurn(w)
				}
				w.ch = nil
				waiterPool.Put(w)
				e.outcome, e.waited = outcomeOf(code), now()-start
				return s.end(e)
			}
			e = s.waitContext(ctx, w, e)
		}
	}
	e.ctx = ctx
	if e.outcome == Granted && done != nil && !s.kept(done, n, e.queued) {
		e.outcome = contextOutcome(ctx)
	}
	return s.end(e)
}

// join decides, under mu, whether a call that missed the lock-free path is granted
// at once, fails at once, or queues, in the order the contract gives: broken, too
// large, granted, would wait (mayWait false: TimedOut), queue full. When it queues
// it returns the node, with mu still held so that the caller arranges its wake
// before anyone can settle it, and e describes the queued call. Otherwise it
// releases mu and returns a nil node and how the call ended (Granted: at once).
func (s *Semaphore) join(n int64, mayWait bool) (w *waiter, e ending) {
	e.n = n
	s.mu.Lock()
	x := s.extraLocked()
	for {
		st := s.state.Load()
		if st&flagHealthy == 0 {
			s.mu.Unlock()
			e.outcome = Broken
			return nil, e
		}
		if capacity := s.capacity.Load(); n > capacity {
			s.mu.Unlock()
			e.outcome, e.limit = TooLarge, capacity
			return nil, e
		}
		if st&flagWaiting == 0 && unitsOf(st) >= n {
			if s.state.CompareAndSwap(st, st-n<<unitShift) {
				s.immediate++
				s.mu.Unlock()
				e.outcome = Granted
				return nil, e
			}
			continue // a lock-free Release or Consume changed the word; look again
		}
		if !mayWait {
			s.mu.Unlock()
			e.outcome = TimedOut
			return nil, e
		}
		if waiters := x.waiters.Load(); s.opts.maxWaiters >= 0 && waiters >= int64(s.opts.maxWaiters) {
			s.mu.Unlock()
			e.outcome, e.limit = QueueFull, waiters
			return nil, e
		}
		// Setting flagWaiting by a swap of the value just examined is what makes
		// a concurrent lock-free Release either fail its own swap or be seen here.
		if st&flagWaiting != 0 || s.state.CompareAndSwap(st, st|flagWaiting) {
			break
		}
	}
	w = waiterPool.Get().(*waiter)
	w.n.Store(n)
	e.queued, e.ahead = true, int(x.waiters.Load())
	s.pushLocked(x, w)
	if s.diag != nil {
		s.diag.joinedLocked(w)
	}
	return w, e
}

// How a call ends. Every Acquire, AcquireTimeout, AcquireUnits and WithSemaphore
// call that is not granted on its lock-free path ends in exactly one Outcome,
// decided once, where the call ends: by join when it is granted or refused without
// queuing, by whoever settles its waiter (a grant, Break, Resize, the deadline
// timer) or by the waiter itself when its context ends. Then end, and nothing
// else, counts it in Stats, tells the observer and builds the caller's error, so
// the three cannot disagree.

// An ending describes how one call ended: everything end needs, gathered by the
// code that decided it.
type ending struct {
	outcome Outcome
	n       int64           // units asked for
	queued  bool            // the call joined the wait list
	waited  time.Duration   // time in the wait list, from the wait's two clock reads
	ahead   int             // waiters ahead of the call when it joined
	limit   int64           // TooLarge at the call: the capacity; QueueFull: the waiters
	ctx     context.Context // Acquire's context; nil for AcquireTimeout
	d       time.Duration   // AcquireTimeout's timeout
}

// end records how a call ended and returns what its caller sees: nil for Granted,
// otherwise the error of that outcome. A call granted without waiting (Granted,
// not queued) is counted where it was granted and reported to nobody.
func (s *Semaphore) end(e ending) error {
	if e.outcome == Granted && !e.queued {
		return nil
	}
	x := s.extra()
	switch e.outcome {
	case TimedOut:
		x.timedOut.Add(1)
	case Cancelled:
		x.cancelled.Add(1)
	case TooLarge, QueueFull:
		x.rejected.Add(1)
	}
	if e.queued {
		x.waitNanos.Add(int64(e.waited))
	}
	if o := s.opts.observer; o != nil {
		o.WaitEnded(s, WaitEvent{Units: e.n, Outcome: e.outcome, Queued: e.queued, Waited: e.waited, Ahead: e.ahead})
	}
	r := waitReport{queued: e.queued, waited: e.waited, ahead: e.ahead}
	switch e.outcome {
	case Granted:
		return nil
	case TimedOut:
		if e.ctx == nil {
			return s.errTimeout(e.n, e.d, r)
		}
		return s.errContext(e.ctx, TimedOut, e.n, r)
	case Cancelled:
		return s.errContext(e.ctx, Cancelled, e.n, r)
	case TooLarge:
		if e.queued {
			return s.errResized(e.n)
		}
		return s.errTooLarge(e.n, e.limit)
	case QueueFull:
		return s.errQueueFull(e.n, e.limit)
	default:
		return s.errBroken(e.n)
	}
}

// fail makes the error of the acquire of n units that ended in o.
func (s *Semaphore) fail(n int64, o Outcome, why string, matches ...error) error {
	return &errs.Error{Subject: (*subject)(s), Op: "acquire", N: n, Why: why, Outcome: o, Matches: matches}
}

func (s *Semaphore) errTooLarge(n, capacity int64) error {
	return s.fail(n, TooLarge, "more than the capacity of "+strconv.FormatInt(capacity, 10), ErrTooLarge)
}

// errResized is the failure of a waiter refused by a shrinking Resize. It names no
// capacity: the one that refused it is gone, and the capacity now may be another.
func (s *Semaphore) errResized(n int64) error {
	return s.fail(n, TooLarge, "more than the capacity, which was reduced while waiting", ErrTooLarge)
}

func (s *Semaphore) errQueueFull(n, waiters int64) error {
	return s.fail(n, QueueFull, "wait queue full ("+errs.Count(waiters, "waiter")+")", ErrQueueFull)
}

// errBroken is the failure of an acquire after Break; its parts were made by Break.
func (s *Semaphore) errBroken(n int64) error {
	b := s.x.Load().broken.Load()
	return s.fail(n, Broken, b.why, b.matches...)
}

// waitReport describes how a failed call waited, for its error message.
type waitReport struct {
	queued bool // the call joined the wait list
	waited time.Duration
	ahead  int // waiters in the list when the call joined it
}

func (r waitReport) String() string {
	return "after " + errs.Round(r.waited).String() + ", queued behind " + errs.Count(int64(r.ahead), "waiter")
}

// errContext is Acquire's failure when ctx ended first, in o (TimedOut when its
// deadline passed, else Cancelled). It matches ctx.Err() and context.Cause(ctx),
// and ErrTimedOut when TimedOut.
func (s *Semaphore) errContext(ctx context.Context, o Outcome, n int64, r waitReport) error {
	_, why, matches := errs.Context(ctx)
	what := "canceled"
	if o == TimedOut {
		what = "timed out"
		matches = append(matches, ErrTimedOut)
	}
	if r.queued {
		what += " " + r.String() + " (" + s.availability() + ")"
	} else {
		what += " before waiting"
	}
	return s.fail(n, o, what+": "+why, matches...)
}

// availability is "3 of 10 units available", read under mu so that the two numbers
// go together (Resize changes both). mu must not be held.
func (s *Semaphore) availability() string {
	s.mu.Lock()
	st, capacity := s.state.Load(), s.capacity.Load()
	s.mu.Unlock()
	unit := " units"
	if capacity == 1 {
		unit = " unit"
	}
	return strconv.FormatInt(availableIn(st), 10) + " of " + strconv.FormatInt(capacity, 10) + unit + " available"
}
