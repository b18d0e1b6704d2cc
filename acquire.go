package semaphore

import (
	"context"
	"runtime"
	"time"
)

// The state word packs the units available now with a grant counter and three
// flags, so that each uncontended call is one atomic operation and takes no lock:
//
//	bits 63..18  units available, signed (negative after Consume or a shrinking Resize)
//	bits 17..3   grants made without the lock since the last fold (see foldLocked)
//	bit  2       flagDraining: a Drain waits, so every Release takes the lock
//	bit  1       flagHealthy: set by New, cleared by Break and never set again
//	bit  0       flagWaiting: the wait list is not empty
//
// Adding or subtracting units adds a multiple of 1<<unitShift, which leaves the low
// bits alone, so units and flags change together in one atomic operation. A zero
// Semaphore, made without New, has flagHealthy clear: every lock-free path refuses
// it as it refuses a broken one, and the slow paths, which tell the two apart by
// the break record, panic (isZero).
//
// Range. Capacities, requests, releases and Consume amounts are at most MaxUnits
// (M = 2^44-1), and the units field holds [-2^45, 2^45-1], which contains
// [-2M, 2M]. Let out = capacity - available (units held or consumed):
//   - an acquisition leaves available >= 0, so out <= capacity <= M;
//   - Consume refuses (panics) before available would go below -M, so out <= 2M;
//   - Resize leaves out unchanged; Release refuses before out would go below 0.
//
// So available stays in [-2M, M], and available + n for any n <= M stays in
// [-2M, 2M]: every check below is made on a value that cannot have wrapped, and
// each one is made before the word changes (a compare-and-swap of the value checked).
//
// Over-release. A Release of n is correct only if n <= out, that is if available + n
// <= capacity. Release checks exactly that against the value its compare-and-swap
// installs, so a Release that would make more units available than the capacity is
// refused, whatever runs concurrently. The capacity is a second word, written only
// under mu, and read by the lock-free Release between its load and its swap of the
// state. Resize writes the two in the order that makes every mixed view stricter
// than either consistent one (a refusal then falls to releaseSlow, which decides
// under mu), and it bumps the grant counter: a Release that read a capacity a Resize
// changed before the swap can only succeed if the state word came back to the very
// value the Release loaded, counter included, which takes 32,767 further grants or
// resizes while that goroutine is stopped between two instructions.
//
// Memory ordering. sync/atomic operations are sequentially consistent, and nothing
// weaker is relied on:
//   - flagWaiting <=> the wait list is not empty, whenever mu is free. The flag is
//     set under mu, by a compare-and-swap against the exact value join examined, and
//     cleared under mu when the last waiter is removed (removeLocked).
//   - A lock-free grant (tryAcquire) is a compare-and-swap conditioned on
//     flagWaiting clear and flagHealthy set, so it never takes units past a waiter.
//   - A lock-free Release is a compare-and-swap conditioned on the flags reading
//     exactly flagHealthy. If join's swap setting flagWaiting came first, the
//     Release's swap fails and it takes mu to grant; if the Release came first,
//     join's swap fails and join looks again and sees the units. Either way no unit
//     lands unseen while someone waits (see join), and the same holds for Drain and
//     flagDraining.
//   - After any change under mu that could let the head fit (a release, a waiter
//     leaving, a resize), grantLocked runs before mu is released, so "units free,
//     head fits, head still waiting" never outlasts a critical section.
//   - grantLocked takes a waiter's units before unlinking it, so clearing
//     flagWaiting with the last waiter cannot let a lock-free acquirer in first.
//   - The grant counter is folded into Semaphore.immediate only under mu, so the
//     two add up exactly whenever mu is held (Stats holds it).
const (
	flagWaiting  = 1 << 0
	flagHealthy  = 1 << 1
	flagDraining = 1 << 2
	flagsAll     = flagWaiting | flagHealthy | flagDraining

	countShift = 3
	countOne   = 1 << countShift
	countMask  = (1<<15 - 1) << countShift // folded before it can carry into the units

	unitShift = 18
)

// MaxUnits is the largest capacity, request or Consume a Semaphore accepts: 2^44-1,
// about 17.6 TB when units are bytes. Debt from Consume is limited to MaxUnits too.
const MaxUnits = 1<<44 - 1

// unitsOf returns the units field of a state word.
func unitsOf(st int64) int64 { return st >> unitShift }

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

// AcquireTimeout is Acquire with a deadline d from now instead of a context. It
// fails as Acquire does (ErrBroken, ErrTooLarge, ErrQueueFull, in that order, at
// once), and on expiry with an error matching ErrTimedOut and
// context.DeadlineExceeded. If d <= 0 it never waits: it fails with that error
// when it would have to. AcquireTimeout panics if n is negative.
func (s *Semaphore) AcquireTimeout(d time.Duration, n int64) error {
	if s.tryAcquire(n) {
		return nil
	}
	return s.acquireTimeoutSlow(d, n)
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

// acquireSlow is Acquire after its lock-free attempt: it checks n and the context,
// retries without the lock (once more after a yield), joins the wait list, and
// parks until the waiter is settled, unless the context can end, in which case
// waitContext selects on both. Every grant it obtains passes through kept.
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
			if done != nil {
				return s.waitContext(ctx, w, e)
			}
			// The plain wait, here rather than in a function of its own so that
			// nothing stands between the park and the caller. Its context cannot
			// end, so its grant is always kept.
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
	}
	e.ctx = ctx
	if e.outcome == Granted && done != nil && !s.kept(done, n, false) {
		e.outcome = contextOutcome(ctx)
	}
	return s.end(e)
}

// kept decides whether an Acquire granted its units keeps them, and is the one
// place that decides it for every grant an Acquire obtains: on the lock-free path,
// after the yield, at once in join, or after waiting (queued); a plain wait's
// context cannot end. A call whose context is done once it holds the units gives
// them back, as x/sync's Acquire does, and fails with its context's error: a
// cancellation that happened before the grant (a cancel, then the Release that
// granted the units) always wins, and one concurrent with the grant may. The
// units go back as by Release, so the waiters that now fit are granted in FIFO
// order and nothing is lost; the grant is taken out of Stats.Acquired, which
// counts the calls that returned nil. done is the context's Done channel; a call
// whose context cannot end (nil) never asks.
func (s *Semaphore) kept(done <-chan struct{}, n int64, queued bool) bool {
	select {
	case <-done:
	default:
		return true
	}
	s.mu.Lock()
	if queued {
		s.x.Load().granted--
	} else {
		// The grant may still be in the state word's counter, not yet folded:
		// the sum of the two, which Stats reads under mu, is what must drop,
		// and it does, modulo 2^64, whichever of the two holds it.
		s.immediate--
	}
	s.mu.Unlock()
	s.Release(n)
	return false
}

// acquireTimeoutSlow is AcquireTimeout after its lock-free attempt.
func (s *Semaphore) acquireTimeoutSlow(d time.Duration, n int64) error {
	s.checkUse("AcquireTimeout", n)
	if s.acquireLockFree(n) || (d > 0 && s.yieldThenAcquire(n)) {
		return nil
	}
	w, e := s.join(n, d > 0)
	e.d = d
	if w == nil {
		return s.end(e)
	}
	return s.waitTimer(w, e)
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

// wokenOutOfTurn handles a plain waiter woken by a Signal meant for a waiter behind
// it, which a Resize settled out of list order. Unless it was settled itself in the
// meantime, it passes the Signal on and parks on its own WaitGroup until settled,
// out of the Cond's ticket order for good. See "The Cond" in waitlist.go.
func (s *Semaphore) wokenOutOfTurn(w *waiter) int64 {
	s.mu.Lock()
	if w.queued() {
		w.ch = nil
		w.park.Add(1)
		s.signalLocked()
		s.mu.Unlock()
		w.park.Wait()
	} else {
		s.mu.Unlock()
	}
	return w.n.Load()
}

// waitTimer parks w until it is settled or e.d passes, whichever comes first. It is
// called with mu held. The deadline is kept by the semaphore's deadline timer (see
// waitlist.go), which settles w when it passes, so that whatever settles w, the
// waiter is woken through its WaitGroup and w is reachable from nowhere else.
func (s *Semaphore) waitTimer(w *waiter, e ending) error {
	start := now()
	s.armLocked(w, start, e.d)
	w.park.Add(1)
	s.mu.Unlock()
	w.park.Wait()
	e.outcome, e.waited = outcomeOf(w.n.Load()), now()-start
	waiterPool.Put(w)
	return s.end(e)
}

// waitContext waits for w to be settled or for the context to end. It is called
// with mu held. When both happened, select picks either case; each ends in kept's
// answer (abandon finds w granted, or the grant is checked against the context).
func (s *Semaphore) waitContext(ctx context.Context, w *waiter, e ending) error {
	ch := make(chan struct{})
	w.ch = ch
	s.mu.Unlock()
	start := now()
	select {
	case <-ch:
		e.outcome = outcomeOf(w.n.Load())
	case <-ctx.Done():
		e.outcome = s.abandon(ctx, w)
	}
	if e.outcome == Granted && !s.kept(ctx.Done(), e.n, true) {
		e.outcome = contextOutcome(ctx)
	}
	e.waited, e.ctx = now()-start, ctx
	w.ch = nil
	waiterPool.Put(w)
	return s.end(e)
}

// abandon takes w out of the list after its context ended and returns how the
// call ended: Cancelled, or TimedOut when the context's deadline passed, if w was
// still queued; otherwise the outcome it was settled with, which the caller
// checks like any other grant (kept).
func (s *Semaphore) abandon(ctx context.Context, w *waiter) Outcome {
	gaveUp := contextOutcome(ctx)
	s.mu.Lock()
	if w.queued() {
		var woken wakeList
		s.leaveLocked(w, gaveUp, &woken)
		s.mu.Unlock()
		woken.wake()
		return gaveUp
	}
	s.mu.Unlock()
	// Settled concurrently with the cancellation; the settler closes ch right
	// after releasing mu, and w must not be reused before it has.
	<-w.ch
	return outcomeOf(w.n.Load())
}

// contextOutcome is how a call ends when its context ended first.
func contextOutcome(ctx context.Context) Outcome {
	if ctx.Err() == context.DeadlineExceeded {
		return TimedOut
	}
	return Cancelled
}

// epoch anchors wait-time measurements: time.Since(epoch) is a single monotonic
// clock read, where time.Now also reads the wall clock. Inside a synctest bubble
// time.Since follows the bubble's clock, and only differences are ever used.
var epoch = time.Now()

func now() time.Duration { return time.Since(epoch) }
