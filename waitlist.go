package semaphore

import (
	"context"
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
// Memory ordering. Go's sync/atomic operations are sequentially consistent, and
// the argument below relies on nothing weaker:
//
//   - flagWaiting is set only under mu, by a CAS against the exact state the joiner
//     examined. A lock-free Release adds its units first and looks at the flags in
//     the value its Add returned: if its Add came first, the joiner's CAS fails and
//     the joiner re-reads and sees the units; if the CAS came first, the Release
//     sees the flag and takes mu to grant. Either way no unit lands unseen while
//     someone waits. A lock-free grant (tryOnce, tryFast) is a CAS conditioned on
//     the flag being clear, so it can never take units past a waiter.
//   - After any change under mu that could let the head fit (a release, a waiter
//     leaving, a resize), grantLocked runs before mu is released, so "units free,
//     head fits, head still waiting" never outlasts a critical section: no lost
//     wakeup, and a waiter that leaves the head lets the ones behind it in.
//   - grantLocked takes a waiter's units before unlinking it, so clearing
//     flagWaiting with the last waiter cannot let a lock-free acquirer in first.
//   - The grant counter in the state word is folded into Semaphore.immediate only
//     under mu, so the two add up exactly whenever mu is held (Stats holds it).
//   - A waiter's outcome is written under mu and read by the waiter after its wake:
//     WaitGroup.Done happens before the Wait it releases returns, and closing a
//     channel happens before the receive that sees it closed.
type waiter struct {
	// n is the request while queued (>= 0). Once settled it holds the outcome, one
	// of the settled* codes (< 0); the waiter's goroutine keeps its own copy of n.
	n          int64
	next, prev *waiter
	sem        *Semaphore     // the semaphore whose list w joined; read by onTimer
	park       sync.WaitGroup // counter 1 while a parked waiter is queued
	ch         chan struct{}  // closed on wake for a waiter selecting on a context; else nil
	expire     func()         // w.onTimer, bound on a node's first timed wait so later ones allocate only the timer
	since      time.Duration  // when w joined (since epoch); set only with diagnostics on; guarded by mu
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
		if s.state.Load()>>unitShift < w.n {
			// Strict FIFO: the head does not fit, so nobody behind it is
			// granted either, however small. This is what keeps a large
			// request from starving.
			return
		}
		// Add, not CAS: with flagWaiting set only Release and Consume change
		// the state concurrently, and either order of ours and theirs is a
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

// onTimer is the AcquireTimeout deadline. It runs on the timer's goroutine, so it
// may find w already settled (granted, broken, resized away), in which case it does
// nothing; the waiter then does not reuse w, because this function may still be
// reading it.
func (w *waiter) onTimer() {
	s := w.sem
	s.mu.Lock()
	if !w.queued() {
		s.mu.Unlock()
		return
	}
	var woken wakeList
	s.leaveLocked(w, settledTimedOut, &woken)
	s.mu.Unlock()
	woken.wake()
	w.park.Done() // the last touch of w: from here the waiter owns it again
}

// join decides, under mu, whether a call that missed the fast path is granted at
// once, fails at once, or queues. When it queues it returns the node and the number
// of waiters ahead of it; ch, if not nil, is the channel to close on wake.
func (s *Semaphore) join(n int64, ch chan struct{}) (w *waiter, ahead int, err error) {
	s.mu.Lock()
	for {
		st := s.state.Load()
		if st&flagBroken != 0 {
			s.mu.Unlock()
			return nil, 0, s.errBroken(n)
		}
		if capacity := s.capacity.Load(); n > capacity {
			s.mu.Unlock()
			return nil, 0, s.errTooLarge(n, capacity)
		}
		if st&flagWaiting == 0 && st>>unitShift >= n {
			if s.state.CompareAndSwap(st, st-n<<unitShift) {
				s.immediate++
				s.mu.Unlock()
				return nil, 0, nil
			}
			continue // a lock-free Release or Consume changed the count; look again
		}
		if waiters := s.Waiters(); s.maxWaiters >= 0 && waiters >= s.maxWaiters {
			s.mu.Unlock()
			return nil, 0, s.errQueueFull(n, waiters)
		}
		if st&flagWaiting != 0 || s.state.CompareAndSwap(st, st|flagWaiting) {
			break
		}
	}
	w = waiterPool.Get().(*waiter)
	w.n, w.sem, w.ch = n, s, ch
	w.next, w.prev = nil, s.tail // next may still link a wake chain from the node's last use
	if ch == nil {
		w.park.Add(1)
	}
	ahead = s.Waiters()
	if s.tail == nil {
		s.head = w
	} else {
		s.tail.next = w
	}
	s.tail = w
	s.waiters.Add(1)
	s.queued++
	if s.diag != nil {
		s.diag.joinedLocked(w)
	}
	s.mu.Unlock()
	return w, ahead, nil
}

// acquireSlow is every Acquire form once the lock-free attempt failed. With done ==
// nil and !timed it parks until settled; with timed it parks with a timer for d;
// otherwise it selects on the context and its own wake channel.
func (s *Semaphore) acquireSlow(ctx context.Context, done <-chan struct{}, n int64, d time.Duration, timed bool) error {
	if timed && d <= 0 {
		err := s.errTimeout(n, d, nil)
		if s.observer != nil {
			s.observeRefusal(n, err)
		}
		return err
	}
	var ch chan struct{}
	if done != nil {
		ch = make(chan struct{})
	}
	w, ahead, err := s.join(n, ch)
	if w == nil {
		if err != nil && s.observer != nil {
			s.observeRefusal(n, err)
		}
		return err
	}
	start := w.since // taken by join when diagnostics need the waiter's age
	if s.diag == nil {
		start = time.Since(epoch)
	}
	var outcome int64
	reuse := true
	switch {
	case done != nil:
		outcome = s.waitContext(w, done, n)
	case timed:
		if w.expire == nil {
			w.expire = w.onTimer
		}
		t := time.AfterFunc(d, w.expire)
		w.park.Wait()
		outcome = w.n
		// If the timer fired but did not settle w, onTimer may still be reading
		// w: leave the node untouched to the garbage collector.
		reuse = outcome == settledTimedOut || t.Stop()
	default:
		w.park.Wait()
		outcome = w.n
	}
	if reuse {
		w.sem, w.ch = nil, nil // a pooled node keeps no semaphore alive
		waiterPool.Put(w)
	}
	waited := time.Since(epoch) - start
	s.waitNanos.Add(int64(waited))
	if s.observer != nil {
		s.observeWait(ctx, n, outcome, waited, ahead)
	}
	switch outcome {
	case settledGranted:
		s.granted.Add(1)
		return nil
	case settledTimedOut:
		s.timedOut.Add(1)
		return s.errTimeout(n, d, &waitReport{waited: waited, ahead: ahead})
	case settledCancelled:
		s.cancelled.Add(1)
		return s.errContext(ctx, n, &waitReport{waited: waited, ahead: ahead})
	case settledTooLarge:
		return s.errResized(n)
	default:
		return s.errBroken(n)
	}
}

// waitContext waits for w to be settled or for the context to end, and returns the
// outcome.
func (s *Semaphore) waitContext(w *waiter, done <-chan struct{}, n int64) int64 {
	select {
	case <-w.ch:
		return w.n
	case <-done:
	}
	s.mu.Lock()
	if w.queued() {
		var woken wakeList
		s.leaveLocked(w, settledCancelled, &woken)
		s.mu.Unlock()
		woken.wake()
		return settledCancelled
	}
	s.mu.Unlock()
	// Settled concurrently with the cancellation; the settler closes ch right
	// after releasing mu, and w must not be reused before it has.
	<-w.ch
	if w.n != settledGranted {
		return w.n
	}
	// Granted in a race with the cancellation. The caller sees its context
	// error, so the call must not keep the units: hand them on as a Release
	// would, which grants the waiters behind if they now fit.
	s.Release(n)
	return settledCancelled
}
