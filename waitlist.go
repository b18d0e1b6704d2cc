package semaphore

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairsem/semaphore/internal/list"
)

// The wait list is an intrusive doubly linked list of waiters (internal/list),
// oldest first, guarded by Semaphore.mu. Doubly linked so that a waiter that gives
// up (timeout, cancellation) leaves from anywhere in O(1).
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
// semaphore, and a timed waiter's deadline is kept in the deadline heap, so a node
// stays 64 bytes.
//
// A waiter's outcome is stored under mu and loaded by the waiter after its wake:
// the Signal is made under mu after the store, WaitGroup.Done happens before the
// Wait it releases returns, and closing a channel happens before the receive that
// sees it closed. w.n is atomic because the Cond's Locker does not take mu on the
// waiter's side, so the race detector would not otherwise see the ordering.
type waiter struct {
	// n is the request while queued (>= 0). Once settled it holds the outcome as a
	// code (codeOf, < 0); the waiter's goroutine keeps its own copy of n.
	n    atomic.Int64
	link list.Link[waiter] // its place in the wait list, or, settled, in a wakeList; guarded by mu, then by the settler
	park sync.WaitGroup    // counter 1 while a waiter parked on it is queued
	ch   chan struct{}     // onCond, nil (parks on park) or the context waiter's channel
	slot int               // index + 1 in extra.deadlines; 0: not a timed waiter in the list; guarded by mu
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

// wakeList collects settled waiters, through the links that held them in the wait
// list, so that they are woken in FIFO order after mu is released.
type wakeList struct{ list.List[waiter] }

func (l *wakeList) push(w *waiter) { l.PushBack(&w.link, w) }

func (l *wakeList) wake() {
	for w := l.Front(); w != nil; {
		next := w.link.Next() // w may be reused the moment it is woken
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
	s.waiting.PushBack(&w.link, w) // the link may still hold a wake chain from the node's last use
	x.waiters.Add(1)
	x.queued++
}

// removeLocked unlinks w and clears flagWaiting when the list becomes empty.
func (s *Semaphore) removeLocked(w *waiter) {
	s.waiting.Remove(&w.link)
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
	empty := s.waiting.Len() == 0
	if s.diag != nil {
		s.diag.leftLocked(w, empty)
	}
	if empty {
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
	for w := s.waiting.Front(); w != nil; w = s.waiting.Front() {
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

// extra is the part of a Semaphore made on first need.
type extra struct {
	// Atomic: read without mu by the queries and by end.
	waiters   atomic.Int64               // length of the wait list; written only under mu
	broken    atomic.Pointer[breakState] // nil until Break; set once, under mu
	timedOut  atomic.Uint64              // calls that failed on a deadline
	cancelled atomic.Uint64              // calls whose context was cancelled
	rejected  atomic.Uint64              // calls refused: too large or queue full
	waitNanos atomic.Int64               // total time spent in the wait list

	// Guarded by mu.
	cond           sync.Cond     // plain waiters park here; Wait and Signal only under mu (see "The Cond" above)
	granted        uint64        // grants to waiters, counted when made; one handed on after a cancellation is taken back
	queued         uint64        // calls that joined the wait list
	drained        chan struct{} // closed when every unit is back; non-nil while a Drain waits
	drainers       int           // Drain calls waiting on drained
	deadlines      deadlineHeap  // the timed waiters in the list, earliest deadline first; see deadline.go
	timer          *time.Timer   // the deadline timer; nil while deadlines is empty
	timerSet       bool          // timer is pending, and will fire at timerAt
	timerAt        time.Duration // since epoch
	onDeadlineFunc func()        // s.onDeadline, bound once
}

// extraLocked returns s.x, making it on first use. mu must be held.
func (s *Semaphore) extraLocked() *extra {
	x := s.x.Load()
	if x == nil {
		x = &extra{}
		x.cond.L = (*condLocker)(s)
		s.x.Store(x)
	}
	return x
}

// extra returns s.x, making it on first use. mu must not be held.
func (s *Semaphore) extra() *extra {
	if x := s.x.Load(); x != nil {
		return x
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.extraLocked()
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

// wokenOutOfTurn handles a plain waiter woken by a Signal meant for a waiter behind
// it, which a Resize settled out of list order. Unless it was settled itself in the
// meantime, it passes the Signal on and parks on its own WaitGroup until settled,
// out of the Cond's ticket order for good. See "The Cond" above.
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

// waitContext waits for w to be settled or for the context to end, and returns e
// with how the wait ended. It is called with mu held. When both happened, select
// picks either case; a grant found either way goes to kept, as every grant of an
// Acquire does (see acquireSlow).
func (s *Semaphore) waitContext(ctx context.Context, w *waiter, e ending) ending {
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
	e.waited = now() - start
	w.ch = nil
	waiterPool.Put(w)
	return e
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
