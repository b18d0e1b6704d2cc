package semaphore

import (
	"context"
	"errors"
	"time"
)

// errWouldWait is join's answer to a call that may not wait and cannot be granted at
// once; the caller turns it into its own error.
var errWouldWait = errors.New("would wait")

// join decides, under mu, whether a call that missed the lock-free path is granted
// at once, fails at once, or queues, in the order the contract gives: broken, too
// large, granted, would wait (mayWait false), queue full. When it queues it returns
// the node, the number of waiters ahead of it, and mu still held, so that the
// caller arranges its wake before anyone can settle it; otherwise mu is released.
func (s *Semaphore) join(n int64, mayWait bool) (w *waiter, ahead int, err error) {
	s.mu.Lock()
	for {
		st := s.state.Load()
		if st&flagBroken != 0 {
			s.mu.Unlock()
			return nil, 0, s.errBroken(n)
		}
		if capacity := s.capacity.Load(); n > capacity {
			s.rejected.Add(1)
			s.mu.Unlock()
			return nil, 0, s.errTooLarge(n, capacity)
		}
		if st&flagWaiting == 0 && unitsOf(st) >= n {
			if s.state.CompareAndSwap(st, st-n<<unitShift) {
				s.immediate++
				s.mu.Unlock()
				return nil, 0, nil
			}
			continue // a lock-free Release or Consume changed the word; look again
		}
		if !mayWait {
			s.mu.Unlock()
			return nil, 0, errWouldWait
		}
		if waiters := s.Waiters(); s.maxWaiters >= 0 && waiters >= s.maxWaiters {
			s.rejected.Add(1)
			s.mu.Unlock()
			return nil, 0, s.errQueueFull(n, waiters)
		}
		// Setting flagWaiting by a swap of the value just examined is what makes
		// a concurrent lock-free Release either fail its own swap or be seen here.
		if st&flagWaiting != 0 || s.state.CompareAndSwap(st, st|flagWaiting) {
			break
		}
	}
	w = waiterPool.Get().(*waiter)
	w.n.Store(n)
	ahead = s.Waiters()
	s.pushLocked(w)
	if s.diag != nil {
		s.diag.joinedLocked(w)
	}
	return w, ahead, nil
}

// acquireSlow is Acquire after its lock-free attempt: it checks n and the context,
// retries without the lock (once more after a yield), joins the wait list, and
// parks until the waiter is settled, unless the context can end, in which case
// waitContext selects on both.
func (s *Semaphore) acquireSlow(ctx context.Context, n int64) error {
	if n < 0 {
		s.panicf("Acquire(%d): negative units", n)
	}
	done := ctx.Done()
	if done != nil {
		select {
		case <-done:
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				s.timedOut.Add(1)
			} else {
				s.cancelled.Add(1)
			}
			return s.refused(n, s.errContext(ctx, n, waitReport{}))
		default:
		}
	}
	if s.acquireLockFree(n) || s.yieldThenAcquire(n) {
		return nil
	}
	w, ahead, err := s.join(n, true)
	if w == nil {
		return s.refused(n, err)
	}
	if done != nil {
		return s.waitContext(ctx, w, ahead)
	}
	// The plain wait, here rather than in a function of its own so that nothing
	// stands between the park and the caller.
	w.ch = onCond
	start := now()
	s.cond.Wait() // takes a ticket in list order, unlocks mu, parks
	outcome := w.n.Load()
	if outcome >= 0 {
		outcome = s.wokenOutOfTurn(w)
	}
	w.ch = nil
	waiterPool.Put(w)
	return s.waitEnded(outcome, n, start, ahead, ctx, 0)
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

// acquireTimeoutSlow is AcquireTimeout after its lock-free attempt.
func (s *Semaphore) acquireTimeoutSlow(d time.Duration, n int64) error {
	if n < 0 {
		s.panicf("AcquireTimeout(%d): negative units", n)
	}
	if s.acquireLockFree(n) || (d > 0 && s.yieldThenAcquire(n)) {
		return nil
	}
	w, ahead, err := s.join(n, d > 0)
	if w == nil {
		if err == errWouldWait {
			s.timedOut.Add(1)
			return s.refused(n, s.errTimeout(n, d, waitReport{}))
		}
		return s.refused(n, err)
	}
	return s.waitTimer(w, d, ahead)
}

// waitTimer parks w until it is settled or d passes, whichever comes first. It is
// called with mu held. The deadline is kept by the semaphore's deadline timer (see
// deadline.go), which settles w when it passes, so that whatever settles w, the
// waiter is woken through its WaitGroup and w is reachable from nowhere else.
func (s *Semaphore) waitTimer(w *waiter, d time.Duration, ahead int) error {
	n := w.n.Load()
	start := now()
	s.armLocked(w, start, d)
	w.park.Add(1)
	s.mu.Unlock()
	w.park.Wait()
	outcome := w.n.Load()
	waiterPool.Put(w)
	return s.waitEnded(outcome, n, start, ahead, nil, d)
}

// waitContext waits for w to be settled or for the context to end. It is called
// with mu held.
func (s *Semaphore) waitContext(ctx context.Context, w *waiter, ahead int) error {
	n := w.n.Load()
	ch := make(chan struct{})
	w.ch = ch
	s.mu.Unlock()
	start := now()
	var outcome int64
	select {
	case <-ch:
		outcome = w.n.Load()
	case <-ctx.Done():
		outcome = s.abandon(ctx, w, n)
	}
	w.ch = nil
	waiterPool.Put(w)
	return s.waitEnded(outcome, n, start, ahead, ctx, 0)
}

// abandon takes w out of the list after its context ended and returns the outcome
// the caller sees: cancelled, or timed out when the context's deadline passed.
func (s *Semaphore) abandon(ctx context.Context, w *waiter, n int64) int64 {
	gaveUp := settledCancelled
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		gaveUp = settledTimedOut
	}
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
	if outcome := w.n.Load(); outcome != settledGranted {
		return outcome
	}
	// Granted in a race with the cancellation. The caller sees its context
	// error, so the call must not keep the units: take the grant out of the
	// count and hand the units on as a Release would, which grants the waiters
	// behind if they now fit.
	s.mu.Lock()
	s.granted--
	s.mu.Unlock()
	s.Release(n)
	return gaveUp
}

// waitEnded records a finished wait and returns what the caller sees. start and
// the clock read here are the wait's only two clock reads: whatever else wants the
// wait's duration and outcome takes them from here. Grants were counted under mu
// when made; failures are counted here.
func (s *Semaphore) waitEnded(outcome, n int64, start time.Duration, ahead int, ctx context.Context, d time.Duration) error {
	waited := now() - start
	s.waitNanos.Add(int64(waited))
	if s.observer != nil {
		s.observeWait(n, outcome, waited, ahead)
	}
	if outcome == settledGranted {
		return nil
	}
	r := waitReport{queued: true, waited: waited, ahead: ahead}
	switch outcome {
	case settledTimedOut:
		s.timedOut.Add(1)
		if ctx == nil {
			return s.errTimeout(n, d, r)
		}
		return s.errContext(ctx, n, r)
	case settledCancelled:
		s.cancelled.Add(1)
		return s.errContext(ctx, n, r)
	case settledTooLarge:
		return s.errResized(n)
	default:
		return s.errBroken(n)
	}
}
