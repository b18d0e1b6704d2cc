package semaphore

import (
	"math"
	"time"
)

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
// is its index + 1, and 0 when it is not in the heap.
type deadlineHeap []*waiter

func (h *deadlineHeap) push(w *waiter) {
	*h = append(*h, w)
	w.slot = len(*h)
	h.up(len(*h) - 1)
}

func (h *deadlineHeap) remove(w *waiter) {
	i, last := w.slot-1, len(*h)-1
	if i != last {
		h.swap(i, last)
	}
	(*h)[last] = nil
	*h = (*h)[:last]
	w.slot = 0
	if i != last {
		h.down(i)
		h.up(i)
	}
}

func (h deadlineHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].slot, h[j].slot = i+1, j+1
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
	w.deadline = now + d
	if w.deadline < now { // d > 0 here: the sum wrapped
		w.deadline = math.MaxInt64
	}
	s.deadlines.push(w)
	s.coverLocked(w.deadline, now)
}

// coverLocked makes the timer fire by deadline, unless it is pending for then or
// earlier already.
func (s *Semaphore) coverLocked(deadline, now time.Duration) {
	if s.timerSet && s.timerAt <= deadline {
		return
	}
	if s.timer == nil {
		if s.onDeadlineFunc == nil {
			s.onDeadlineFunc = s.onDeadline
		}
		s.timer = time.AfterFunc(deadline-now, s.onDeadlineFunc)
	} else {
		s.timer.Reset(deadline - now)
	}
	s.timerSet, s.timerAt = true, deadline
}

// stopTimerLocked stops and drops the timer once the heap is empty. A callback
// already started still runs (see above).
func (s *Semaphore) stopTimerLocked() {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.timerSet = false
}

// onDeadline is the deadline timer's callback: it fails every timed waiter whose
// deadline has passed, with ErrTimedOut, and grants the waiters behind them that
// now fit.
func (s *Semaphore) onDeadline() {
	s.mu.Lock()
	now := now()
	if s.timerSet && s.timerAt <= now {
		s.timerSet = false // the timer has fired
	}
	var woken wakeList
	for len(s.deadlines) > 0 && s.deadlines[0].deadline <= now {
		w := s.deadlines[0]
		s.leaveLocked(w, settledTimedOut, &woken)
		woken.push(w)
	}
	if len(s.deadlines) > 0 {
		s.coverLocked(s.deadlines[0].deadline, now)
	}
	s.mu.Unlock()
	woken.wake()
}
