package semaphore

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// The wait list is an intrusive doubly linked list of waiters, oldest first, guarded
// by Semaphore.mu. Doubly linked so that a waiter that gives up (timeout,
// cancellation) leaves from anywhere in O(1).
//
// A waiter's life, and who may touch it at each step:
//
//		pooled ──join──▶ queued ──settle──▶ settled ──wake──▶ back with its goroutine ──▶ pooled
//
//	  - queued: in the list; w.n >= 0 is the request. Only holders of mu write the
//	    links and w.n.
//	  - settled: some holder of mu (the settler) removed it from the list and stored
//	    the outcome into w.n (a negative code). Settling happens exactly once per join.
//	  - wake: the settler wakes the waiter exactly once, in one of three ways, by
//	    what the waiter parks on (w.ch says which):
//	      - onCond: a plain waiter (a context that cannot end) waits on the
//	        semaphore's one sync.Cond, and the settler calls Signal while it still
//	        holds mu (see below);
//	      - nil: a timed waiter, or a plain one that left the Cond, waits on its
//	        node's WaitGroup, and the settler calls Done after unlocking mu;
//	      - any other channel: a context waiter selects on it, and the settler
//	        closes it after unlocking mu.
//	    A context waiter that settles itself on cancellation or on its context's
//	    deadline is not asleep, so nobody wakes it. A timed waiter (AcquireTimeout)
//	    is settled on its deadline by the deadline timer's callback, which wakes it
//	    like any other settler.
//
// Waking after unlocking means a woken waiter never contends with its waker, and
// waking is all the settler does: it never runs waiter code. A woken waiter returns
// its node to the pool only after its wake, when no other goroutine can reach it:
// the deadline timer reaches timed waiters only through the semaphore's deadline
// heap, under mu, and a settled waiter has left it (see "The deadline timer" below).
//
// The Cond. A plain waiter calls s.cond.Wait with mu held, right after join pushed
// it: Wait takes a ticket, then unlocks mu (the Cond's Locker unlocks mu and its Lock
// does nothing) and parks. Tickets are therefore taken in list order, and Signal
// wakes the holder of the oldest ticket not yet woken. Grants and Break settle in
// list order, so each Signal wakes exactly the waiter just settled; the woken waiter
// reads its outcome atomically from w.n and does not take mu again. Signal must be
// called under mu: its fast path reads the Cond's two ticket counters one after the
// other, so a Signal racing a Wait and another Signal outside the lock can be lost
// (TestAcquire_PlainWaitersNeverMissAWakeup). Resize may settle a plain waiter out of
// list order; its Signal then wakes an older waiter that is still queued. That
// waiter, seeing w.n >= 0, passes the Signal on under mu and parks on its own
// WaitGroup from then on (wokenOutOfTurn), out of the ticket order, so no waiter is
// woken out of turn twice. Counting: every settle of a Cond waiter signals once and
// every Signal wakes one ticket; a waiter woken for another passes one Signal on,
// unless it was settled itself before it took mu, in which case the Signal its own
// settle made repays the one it took.
//
// Why a Cond and a WaitGroup to park on: a goroutine blocked in Cond.Wait or
// WaitGroup.Wait counts as durably blocked in a testing/synctest bubble, so code
// that waits on a Semaphore can be tested with synctest; a sync.Mutex is not. The
// Cond has no bubble of its own, and the WaitGroup drops its bubble association
// each time its counter returns to zero, which is what makes pooling nodes safe.
// Channels, which stay tied to the bubble that made them, are made per wait and
// never pooled; the deadline timer belongs to the semaphore and lives only while
// timed waiters wait (see "The deadline timer" below). The Cond serves all plain waiters of a
// semaphore, so a node stays 64 bytes.
//
// A waiter's outcome is stored under mu and loaded by the waiter after its wake:
// the Signal is made under mu after the store, WaitGroup.Done happens before the
// Wait it releases returns, and closing a channel happens before the receive that
// sees it closed. w.n is atomic because the Cond's Locker does not take mu on the
// waiter's side, so the race detector would not otherwise see the ordering.
type waiter struct {
	// n is the request while queued (>= 0). Once settled it holds the outcome as a
	// code (codeOf, < 0); the waiter's goroutine keeps its own copy of n.
	n          atomic.Int64
	next, prev *waiter
	park       sync.WaitGroup // counter 1 while a waiter parked on it is queued
	ch         chan struct{}  // onCond, nil (parks on park) or the context waiter's channel
	deadline   time.Duration  // a timed waiter's deadline, since epoch; guarded by mu
	slot       int            // index + 1 in extra.deadlines; 0: not a timed waiter in the list; guarded by mu
}

// onCond marks a waiter parked on its semaphore's Cond. It is never closed.
var onCond = make(chan struct{})

// condLocker is the Locker of Semaphore.cond: Wait is called with mu held and
// unlocks it; the waiter does not take mu again when it wakes.
type condLocker Semaphore

func (l *condLocker) Lock()   {}
func (l *condLocker) Unlock() { l.mu.Unlock() }

// A settled waiter's n holds its outcome as a negative code, so that one atomic
// word says both whether it is still queued and how it ended.
func codeOf(o Outcome) int64       { return -1 - int64(o) }
func outcomeOf(code int64) Outcome { return Outcome(-1 - code) }

func (w *waiter) queued() bool { return w.n.Load() >= 0 }

var waiterPool = sync.Pool{New: func() any { return new(waiter) }}

// wakeList collects settled waiters, linked through next, so that they are woken in
// FIFO order after mu is released.
type wakeList struct{ head, tail *waiter }

func (l *wakeList) push(w *waiter) {
	w.next = nil
	if l.tail == nil {
		l.head = w
	} else {
		l.tail.next = w
	}
	l.tail = w
}

func (l *wakeList) wake() {
	for w := l.head; w != nil; {
		next := w.next // w may be reused the moment it is woken
		w.wake()
		w = next
	}
}

func (w *waiter) wake() {
	if w.ch != nil {
		close(w.ch)
	} else {
		w.park.Done()
	}
}

// pushLocked appends w to the wait list; flagWaiting is already set.
func (s *Semaphore) pushLocked(x *extra, w *waiter) {
	w.next, w.prev = nil, s.tail // next may still link a wake chain from the node's last use
	if s.tail == nil {
		s.head = w
	} else {
		s.tail.next = w
	}
	s.tail = w
	x.waiters.Add(1)
	x.queued++
}

// removeLocked unlinks w and clears flagWaiting when the list becomes empty.
func (s *Semaphore) removeLocked(w *waiter) {
	if w.prev == nil {
		s.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		s.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.next, w.prev = nil, nil
	x := s.x.Load()
	x.waiters.Add(-1)
	if w.slot != 0 {
		x.deadlines.remove(w)
		if len(x.deadlines) == 0 {
			x.stopTimerLocked()
			if cap(x.deadlines) > 1024 {
				x.deadlines = nil // let a burst's array go
			}
		}
	}
	if s.diag != nil {
		s.diag.leftLocked(w, s.head == nil)
	}
	if s.head == nil {
		s.state.And(^int64(flagWaiting))
	}
}

// settleLocked removes w from the list with the given outcome and wakes it: at
// once if it waits on the Cond, or after mu is released through woken.
func (s *Semaphore) settleLocked(w *waiter, o Outcome, woken *wakeList) {
	s.removeLocked(w)
	if w.ch == onCond {
		// The store is the last touch of w: a waiter that is awake (woken for
		// another) may reuse w as soon as it loads the outcome.
		w.n.Store(codeOf(o))
		s.signalLocked()
		return
	}
	w.n.Store(codeOf(o))
	woken.push(w)
}

// signalLocked wakes the Cond waiter holding the oldest ticket not yet woken. It
// must be called with mu held (see "The Cond" above): a Signal made after mu is
// released can be lost, rarely enough that no test reliably sees the loss, so
// race-enabled builds check the lock instead.
func (s *Semaphore) signalLocked() {
	if checkLocks && s.mu.TryLock() {
		s.mu.Unlock()
		s.panicf("Cond signalled without holding the lock")
	}
	s.x.Load().cond.Signal()
}

// grantLocked grants waiters from the head while they fit. The units are taken
// before the waiter is unlinked, so that clearing flagWaiting on the last one
// cannot let a lock-free acquirer take them first.
func (s *Semaphore) grantLocked(woken *wakeList) {
	for w := s.head; w != nil; w = s.head {
		n := w.n.Load()
		if unitsOf(s.state.Load()) < n {
			// Strict FIFO: the head does not fit, so nobody behind it is
			// granted either, however small. This is what keeps a large
			// request from starving.
			return
		}
		// Add, not CAS: with flagWaiting set only Release and Consume change
		// the units concurrently, and either order of ours and theirs is a
		// valid history.
		s.state.Add(-n << unitShift)
		s.x.Load().granted++
		s.settleLocked(w, Granted, woken)
	}
}

// leaveLocked settles w with a failure because it gave up, and grants the waiters
// behind it if its leaving lets them fit (it was the head).
func (s *Semaphore) leaveLocked(w *waiter, o Outcome, woken *wakeList) {
	s.removeLocked(w)
	w.n.Store(codeOf(o))
	s.grantLocked(woken)
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
	x := s.x.Load()
	x.deadlines.push(w)
	s.coverLocked(x, w.deadline, now)
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
		w := x.deadlines[0]
		s.leaveLocked(w, TimedOut, &woken)
		woken.push(w)
	}
	if len(x.deadlines) > 0 {
		s.coverLocked(x, x.deadlines[0].deadline, now)
	}
	s.mu.Unlock()
	woken.wake()
}
