package semaphore

import (
	"sync"
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
//	  - queued: in the list; w.n >= 0 is the request. Only holders of mu read or write
//	    the links and w.n.
//	  - settled: some holder of mu (the settler) removed it from the list and wrote
//	    the outcome into w.n (a negative code). Settling happens exactly once per join.
//	  - wake: after unlocking mu, the settler wakes the waiter exactly once: it closes
//	    w.ch for a waiter that selects on a context, or calls w.park.Done for one that
//	    parks. The one exception is a waiter that settles itself on cancellation: it is
//	    not asleep, so nobody wakes it.
//
// The settler wakes waiters only after unlocking mu, so a woken waiter never
// contends with its waker, and waking is all it does: the releaser never runs waiter
// code. A woken waiter returns its node to the pool only when no other goroutine can
// still reach it: after its wake, and after its timer is known not to be running.
//
// Why a WaitGroup to park on: it is 16 bytes, costs nothing to reuse, and a goroutine
// blocked in Wait counts as durably blocked in a testing/synctest bubble, so code
// that waits on a Semaphore can be tested with synctest. A sync.Mutex would be
// smaller but is not durably blocking. The WaitGroup drops its bubble association
// each time its counter returns to zero, which is what makes pooling nodes safe.
// Timers and channels, which stay tied to the bubble that made them, are made per
// wait and never pooled.
//
// A waiter's outcome is written under mu and read by the waiter after its wake:
// WaitGroup.Done happens before the Wait it releases returns, and closing a channel
// happens before the receive that sees it closed.
type waiter struct {
	// n is the request while queued (>= 0). Once settled it holds the outcome, one
	// of the settled* codes (< 0); the waiter's goroutine keeps its own copy of n.
	n          int64
	next, prev *waiter
	sem        *Semaphore     // the semaphore whose list w joined; read by onTimer
	park       sync.WaitGroup // counter 1 while a parked waiter is queued
	ch         chan struct{}  // closed on wake for a waiter selecting on a context; else nil
	expire     func()         // w.onTimer, bound on a node's first timed wait so later ones allocate only the timer
	since      time.Duration  // when w joined (see now); set only with diagnostics on; guarded by mu
}

// Outcomes written into waiter.n when it is settled.
const (
	settledGranted int64 = -1 - iota
	settledBroken
	settledTooLarge
	settledTimedOut
	settledCancelled
)

func (w *waiter) queued() bool { return w.n >= 0 }

// epoch anchors wait-time measurements: time.Since(epoch) is a single monotonic
// clock read, where time.Now also reads the wall clock. Inside a synctest bubble
// time.Since follows the bubble's clock, and only differences are ever used.
var epoch = time.Now()

func now() time.Duration { return time.Since(epoch) }

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
func (s *Semaphore) pushLocked(w *waiter) {
	w.next, w.prev = nil, s.tail // next may still link a wake chain from the node's last use
	if s.tail == nil {
		s.head = w
	} else {
		s.tail.next = w
	}
	s.tail = w
	s.waiters.Add(1)
	s.queued++
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
	s.waiters.Add(-1)
	if s.head == nil {
		s.state.And(^int64(flagWaiting))
	}
}

// settleLocked removes w from the list with the given outcome and queues its wake.
func (s *Semaphore) settleLocked(w *waiter, outcome int64, woken *wakeList) {
	s.removeLocked(w)
	w.n = outcome
	woken.push(w)
}

// grantLocked grants waiters from the head while they fit. The units are taken
// before the waiter is unlinked, so that clearing flagWaiting on the last one
// cannot let a lock-free acquirer take them first.
func (s *Semaphore) grantLocked(woken *wakeList) {
	for w := s.head; w != nil; w = s.head {
		if unitsOf(s.state.Load()) < w.n {
			// Strict FIFO: the head does not fit, so nobody behind it is
			// granted either, however small. This is what keeps a large
			// request from starving.
			return
		}
		// Add, not CAS: with flagWaiting set only Release and Consume change
		// the units concurrently, and either order of ours and theirs is a
		// valid history.
		s.state.Add(-w.n << unitShift)
		s.settleLocked(w, settledGranted, woken)
	}
}

// leaveLocked settles w with a failure because it gave up, and grants the waiters
// behind it if its leaving lets them fit (it was the head).
func (s *Semaphore) leaveLocked(w *waiter, outcome int64, woken *wakeList) {
	s.removeLocked(w)
	w.n = outcome
	s.grantLocked(woken)
}
