package semaphore

import (
	"math"
	"time"
)

// The deadline timer. Timed waiters (AcquireTimeout) do not arm a timer each: a
// semaphore keeps its timed waiters in a heap by deadline, under mu, and one timer
// set for the earliest deadline that no pending timer already covers. A timed wait
// then costs a heap push and a removal under the lock instead of starting and
// stopping a runtime timer, and allocates nothing while a timer is pending, which
// under steady load is nearly always.
//
// Timers are only ever started and left to fire: never stopped or reset. A timer
// made in a testing/synctest bubble may be stopped or reset only from inside that
// bubble, and the goroutine that grants a timed waiter (and so would stop its
// timer) can be any goroutine. A timer that is no longer needed fires once and
// finds nothing to do.
//
// The bookkeeping, all guarded by mu:
//   - deadlines holds exactly the timed waiters still in the list: join pushes a
//     timed waiter, and removeLocked, through which every waiter leaves, removes it.
//   - timerSet and timerAt: a pending timer will fire at timerAt. Timers pending for
//     later times may exist too; they are not counted on.
//   - Every timed waiter's deadline is covered: timerSet and timerAt <= its
//     deadline. armLocked starts a timer when a new deadline is not covered, and
//     onDeadline, once it has settled the waiters due, starts one for the earliest
//     remaining deadline unless it is covered.
//   - When the heap empties, timerSet is cleared, so that the next timed waiter
//     starts a timer of its own rather than counting on one that may never fire
//     (a bubble's timer does not fire once its bubble has ended).

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

// coverLocked starts a timer for deadline unless a pending one fires by then.
func (s *Semaphore) coverLocked(deadline, now time.Duration) {
	if s.timerSet && s.timerAt <= deadline {
		return
	}
	if s.onDeadlineFunc == nil {
		s.onDeadlineFunc = s.onDeadline
	}
	time.AfterFunc(deadline-now, s.onDeadlineFunc)
	s.timerSet, s.timerAt = true, deadline
}

// onDeadline is the deadline timer's callback: it fails every timed waiter whose
// deadline has passed, with ErrTimedOut, and grants the waiters behind them that
// now fit.
func (s *Semaphore) onDeadline() {
	s.mu.Lock()
	now := now()
	if s.timerSet && s.timerAt <= now {
		s.timerSet = false // the timer counted on has fired: this one, or an earlier one
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
