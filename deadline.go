package semaphore

import (
	"context"
	"math"
	"time"
)

// AcquireTimeout, and the deadline timer that ends its waits.

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

// acquireTimeoutSlow is AcquireTimeout after its lock-free attempt.
func (s *Semaphore) acquireTimeoutSlow(d time.Duration, n int64) error {
	s.checkUse("AcquireTimeout", n)
	if s.acquireLockFree(n) || (d > 0 && s.yieldThenAcquire(n)) {
		return nil
	}
	w, e := s.join(n, d > 0)
	e.d = d
	if w != nil {
		e = s.waitTimer(w, e)
	}
	return s.end(e)
}

// waitTimer parks w until it is settled or e.d passes, whichever comes first, and
// returns e with how the wait ended. It is called with mu held. The deadline is
// kept by the semaphore's deadline timer (below), which settles w when it passes,
// so that whatever settles w, the waiter is woken through its WaitGroup and w is
// reachable from nowhere else.
func (s *Semaphore) waitTimer(w *waiter, e ending) ending {
	start := now()
	s.armLocked(w, start, e.d)
	w.park.Add(1)
	s.mu.Unlock()
	w.park.Wait()
	e.outcome, e.waited = outcomeOf(w.n.Load()), now()-start
	waiterPool.Put(w)
	return e
}

// errTimeout is AcquireTimeout's failure. It matches context.DeadlineExceeded too,
// so callers that treat both acquire forms alike need one check.
func (s *Semaphore) errTimeout(n int64, d time.Duration, r waitReport) error {
	why := "not available at once and the timeout is " + d.String()
	if r.queued {
		why = "timed out " + r.String()
	}
	return s.fail(n, TimedOut, why+" ("+s.availability()+")", ErrTimedOut, context.DeadlineExceeded)
}

// The deadline timer. Timed waiters (AcquireTimeout) do not arm a timer each: a
// semaphore keeps its timed waiters in a heap by deadline, under mu, and one timer
// set for the earliest deadline that the timer does not already cover. A timed wait
// then costs a heap push and a removal under the lock instead of starting and
// stopping a runtime timer, and allocates nothing while the timer is pending, which
// under steady load is nearly always.
//
// The timer lives while the heap is not empty: it is started when the first timed
// waiter joins, moved earlier (Reset) when an earlier deadline joins, and stopped
// and dropped when the last timed waiter leaves, so that no timer outlives the waits
// it serves: a timer left to fire would keep the semaphore reachable until then,
// and waits that come one at a time would pile up one pending timer each.
// Stopping and resetting stay within one testing/synctest bubble, as the runtime
// requires: a semaphore is not shared between a bubble and the outside, so every
// goroutine that waits on it, grants it or leaves it while the heap is not empty
// is in the bubble the timer was made in. A timer of another bubble, or of the
// outside, would be one made before the heap last emptied, and that one was stopped
// then; so it does not fire into a later bubble (reading the real clock against the
// bubble's deadlines), and one made in an ended bubble, which never fires, is never
// counted on. The one exception is a callback that had already started, waiting for
// mu, when its timer was stopped: it runs late and settles what is due by its
// clock, which is right unless the semaphore moved to another clock meanwhile.
//
// The bookkeeping, all guarded by mu:
//   - deadlines holds exactly the timed waiters still in the list: join pushes a
//     timed waiter, and removeLocked, through which every waiter leaves, removes it.
//   - timer is nil while the heap is empty. timerSet and timerAt: timer is pending
//     and will fire at timerAt.
//   - Every timed waiter's deadline is covered: timerSet and timerAt <= its
//     deadline. armLocked resets the timer when a new deadline is not covered, and
//     onDeadline, once it has settled the waiters due, resets it for the earliest
//     remaining deadline unless it is covered.

// deadlineHeap is a binary min-heap of timed waiters by deadline. A waiter's slot
// is its index + 1, and 0 when it is not in the heap. The deadline is kept in the
// heap, not in the node, which plain and context waiters share.
type deadlineHeap []timedWaiter

// timedWaiter is a timed waiter and its deadline, since epoch.
type timedWaiter struct {
	deadline time.Duration
	w        *waiter
}

func (h *deadlineHeap) push(w *waiter, deadline time.Duration) {
	*h = append(*h, timedWaiter{deadline, w})
	w.slot = len(*h)
	h.up(len(*h) - 1)
}

func (h *deadlineHeap) remove(w *waiter) {
	i, last := w.slot-1, len(*h)-1
	if i != last {
		h.swap(i, last)
	}
	(*h)[last] = timedWaiter{}
	*h = (*h)[:last]
	w.slot = 0
	if i != last {
		h.down(i)
		h.up(i)
	}
}

func (h deadlineHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].w.slot, h[j].w.slot = i+1, j+1
}

func (h deadlineHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if h[parent].deadline <= h[i].deadline {
			return
		}
		h.swap(i, parent)
		i = parent
	}
}

func (h deadlineHeap) down(i int) {
	for {
		least, l := i, 2*i+1
		if l < len(h) && h[l].deadline < h[least].deadline {
			least = l
		}
		if r := l + 1; r < len(h) && h[r].deadline < h[least].deadline {
			least = r
		}
		if least == i {
			return
		}
		h.swap(i, least)
		i = least
	}
}

// armLocked gives w, which has just joined the list, its deadline d after now and
// makes sure a timer will fire by then.
func (s *Semaphore) armLocked(w *waiter, now, d time.Duration) {
	deadline := now + d
	if deadline < now { // d > 0 here: the sum wrapped
		deadline = math.MaxInt64
	}
	x := s.x.Load()
	x.deadlines.push(w, deadline)
	s.coverLocked(x, deadline, now)
}

// coverLocked makes the timer fire by deadline, unless it is pending for then or
// earlier already.
func (s *Semaphore) coverLocked(x *extra, deadline, now time.Duration) {
	if x.timerSet && x.timerAt <= deadline {
		return
	}
	if x.timer == nil {
		if x.onDeadlineFunc == nil {
			x.onDeadlineFunc = s.onDeadline
		}
		x.timer = time.AfterFunc(deadline-now, x.onDeadlineFunc)
	} else {
		x.timer.Reset(deadline - now)
	}
	x.timerSet, x.timerAt = true, deadline
}

// stopTimerLocked stops and drops the timer once the heap is empty. A callback
// already started still runs (see above).
func (x *extra) stopTimerLocked() {
	if x.timer != nil {
		x.timer.Stop()
		x.timer = nil
	}
	x.timerSet = false
}

// onDeadline is the deadline timer's callback: it fails every timed waiter whose
// deadline has passed, with ErrTimedOut, and grants the waiters behind them that
// now fit.
func (s *Semaphore) onDeadline() {
	s.mu.Lock()
	x, now := s.x.Load(), now()
	if x.timerSet && x.timerAt <= now {
		x.timerSet = false // the timer has fired
	}
	var woken wakeList
	for len(x.deadlines) > 0 && x.deadlines[0].deadline <= now {
		w := x.deadlines[0].w
		s.leaveLocked(w, TimedOut, &woken)
		woken.push(w)
	}
	if len(x.deadlines) > 0 {
		s.coverLocked(x, x.deadlines[0].deadline, now)
	}
	s.mu.Unlock()
	woken.wake()
}
