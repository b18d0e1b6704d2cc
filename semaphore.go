package semaphore

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// The state word packs the units available now with a grant counter and two flags,
// so that each uncontended call is a single atomic operation and takes no lock:
//
//	bits 63..18  available units, signed (negative after Consume or a shrinking Resize)
//	bits 17..2   grants made by the lock-free path since the last fold (see foldLocked)
//	bit  1       flagBroken: Break was called; never cleared
//	bit  0       flagWaiting: the wait list is not empty
//
// Adding or subtracting units adds a multiple of 1<<unitShift, which leaves the low
// bits alone, so a plain atomic Add is safe alongside the flags and the counter.
// Keeping the counter in the same word is what lets the fast path count its grants
// for Stats without a second atomic operation on a contended cache line.
const (
	flagWaiting = 1 << 0
	flagBroken  = 1 << 1

	countShift = 2
	countOne   = 1 << countShift
	countMask  = (1<<16 - 1) << countShift // the counter is folded before it can carry

	unitShift = 18

	// MaxUnits is the largest capacity, request, release or debt a Semaphore holds:
	// 2^45-1, about 35 TB when units are bytes.
	MaxUnits = 1<<(63-unitShift) - 1
)

// A Semaphore is a weighted, strictly FIFO counting semaphore with a
// timeout-aware wait list and a broken state.
//
// It holds a number of units (its capacity). Acquire takes n units, waiting in line
// when they are not available; Release gives them back and hands them, on the
// releasing goroutine, to the waiters at the head of the line that now fit. The line
// is strict FIFO: a request is granted at once only when its units are available and
// nobody is waiting, so a large request at the head is never starved by a stream of
// small ones behind it. Break fails every waiter and every later Acquire, which is
// how a service shuts down whatever waits on a resource that is going away.
//
// Most callers want AcquireUnits with a deferred Units.Release, or WithSemaphore,
// so that units are returned on every path. Acquire/Release work on plain counts
// for callers that keep track themselves. TryAcquire never waits; AcquireTimeout
// waits without needing a context; Consume accounts for units already spent.
//
// A Semaphore must be created with New. All methods are safe for concurrent use.
type Semaphore struct {
	// state is the packed word described above. Fast paths CAS or Add it without
	// the lock only while flagWaiting and flagBroken are clear; the flags change
	// only under mu.
	state atomic.Int64
	// capacity is the total number of units. Written only under mu; read without
	// it by Release's overflow check, which re-checks under mu before panicking.
	capacity atomic.Int64

	mu sync.Mutex // guards the wait list, the flags and every waiter's links and outcome

	// immediate counts grants made without queuing, apart from those still in the
	// state word's counter. Guarded by mu.
	immediate uint64

	head, tail *waiter      // the wait list, oldest first; see waitlist.go
	waiters    atomic.Int64 // length of the wait list; written under mu

	broken atomic.Pointer[breakState] // non-nil once broken; see broken.go

	name       string // from WithName; fixed after New
	maxWaiters int    // from WithMaxWaiters; -1 means unbounded; fixed after New

	observer Observer     // from WithObserver; nil: none; fixed after New
	diag     *diagnostics // holder tracking, leak detection, watchdog; nil: off; fixed after New

	queued uint64 // calls that joined the wait list; guarded by mu

	// Counters for Stats; all monotonic.
	granted, timedOut, cancelled, rejected atomic.Uint64
	waitNanos                              atomic.Int64 // total time spent in the wait list
}

// New returns a semaphore with the given capacity, all of it available.
// It panics if capacity is negative or larger than MaxUnits, or if an option is
// given an invalid value.
func New(capacity int64, opts ...Option) *Semaphore {
	c := config{maxWaiters: -1}
	for _, o := range opts {
		o(&c)
	}
	s := &Semaphore{name: c.name, maxWaiters: c.maxWaiters, observer: c.observer}
	if capacity < 0 || capacity > MaxUnits {
		s.panicf("New(%d): capacity must be between 0 and %d", capacity, int64(MaxUnits))
	}
	if c.maxWaiters < -1 {
		s.panicf("WithMaxWaiters(%d): the number of waiters must not be negative", c.maxWaiters)
	}
	s.diag = s.newDiagnostics(c.tracking)
	s.capacity.Store(capacity)
	s.state.Store(capacity << unitShift)
	return s
}

// Acquire takes n units, blocking until they are granted, ctx is done, or the
// semaphore is broken. It returns nil once the units are held; the caller must give
// them back with Release(n).
//
// The call is granted at once only if n units are available and nobody is waiting;
// otherwise it joins the tail of the wait list and is granted in arrival order. n = 0
// follows the same rule (it waits behind earlier waiters). Acquire fails at once,
// without queuing and without holding anyone back, when ctx is already done (even if
// units are free), when n exceeds the capacity (ErrTooLarge), when the semaphore is
// broken (ErrBroken), or when the wait list is full (ErrQueueFull).
//
// If ctx ends while waiting, the call leaves the wait list at once and returns an
// error that matches ctx.Err() and context.Cause(ctx), and ErrTimedOut if the
// deadline passed. A failed call leaves the semaphore as if it had never been made:
// it holds no units, and if its leaving lets the waiters behind it fit, they are
// granted at once. This holds even when the grant and the cancellation race: the
// units are handed on, never lost.
//
// Acquire panics if n is negative.
func (s *Semaphore) Acquire(ctx context.Context, n int64) error {
	if ctx.Done() == nil && s.tryOnce(n) {
		return nil
	}
	return s.acquire(ctx, n)
}

// acquire is Acquire beyond the single lock-free attempt.
func (s *Semaphore) acquire(ctx context.Context, n int64) error {
	if n < 0 {
		s.panicf("Acquire(%d): negative units", n)
	}
	done := ctx.Done()
	if done != nil {
		select {
		case <-done:
			err := s.errContext(ctx, n, nil)
			if s.observer != nil {
				s.observeRefusal(n, err)
			}
			return err
		default:
		}
	}
	if s.tryFast(n) {
		return nil
	}
	return s.acquireSlow(ctx, done, n, 0, false)
}

// AcquireTimeout is Acquire with a deadline d from now and no context. On expiry it
// returns an error matching ErrTimedOut and context.DeadlineExceeded, and the waiter
// leaves the wait list at once, wherever it stands. If d <= 0 it does not wait: it
// succeeds when TryAcquire would and otherwise returns the timeout error.
//
// It costs at most one allocation (the timer) when it has to wait, and none when it
// does not. AcquireTimeout panics if n is negative.
func (s *Semaphore) AcquireTimeout(d time.Duration, n int64) error {
	if n < 0 {
		s.panicf("AcquireTimeout(%d): negative units", n)
	}
	if s.tryFast(n) {
		return nil
	}
	return s.acquireSlow(context.Background(), nil, n, d, true)
}

// TryAcquire takes n units if they are available and nobody is waiting, and reports
// whether it did. It never waits for units and never jumps the queue: with waiters
// present it returns false even when n units are free. (When other goroutines keep
// changing the count at the same moment it may yield the processor between
// attempts.) It returns false on a broken semaphore. It panics if n is negative.
func (s *Semaphore) TryAcquire(n int64) bool {
	return s.tryOnce(n) || s.tryAcquire(n)
}

func (s *Semaphore) tryAcquire(n int64) bool {
	if n < 0 {
		s.panicf("TryAcquire(%d): negative units", n)
	}
	return s.tryFast(n)
}

// tryOnce is a single lock-free grant attempt, small enough to be inlined into the
// callers' fast paths. False means "take the general path", which decides for good.
func (s *Semaphore) tryOnce(n int64) bool {
	st := s.state.Load()
	return st&(flagWaiting|flagBroken) == 0 && st&countMask != countMask &&
		n >= 0 && st>>unitShift >= n &&
		s.state.CompareAndSwap(st, st-n<<unitShift+countOne)
}

// tryFast is the lock-free grant: a CAS on the state word, allowed only while
// nobody waits and the semaphore is not broken, retried while others change it.
func (s *Semaphore) tryFast(n int64) bool {
	backoff := 1
	for {
		st := s.state.Load()
		if st&(flagWaiting|flagBroken) != 0 || st>>unitShift < n {
			return false
		}
		if st&countMask == countMask {
			s.fold() // once every 65535 lock-free grants
			continue
		}
		if s.state.CompareAndSwap(st, st-n<<unitShift+countOne) {
			return true
		}
		// Another goroutine changed the word between our load and CAS: the
		// cache line is contended. Stepping aside, longer after each failure,
		// lets the other run a burst of acquire/release pairs with the line
		// local instead of both paying a transfer per operation.
		for range backoff {
			runtime.Gosched()
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// maxBackoff caps the number of scheduler yields after a failed CAS.
const maxBackoff = 8

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

// Release returns n units and grants waiters, in FIFO order, as far as they fit.
// The grants happen directly on the caller's goroutine: Release never starts a
// goroutine, never blocks on a waiter and never runs waiter code; a granted waiter
// resumes on its own goroutine. When nobody waits, Release takes no lock.
//
// Release panics if n is negative or if it would make more units available than the
// capacity ("released more than held"). On a broken semaphore it does nothing.
func (s *Semaphore) Release(n int64) {
	// Add first, then look at the flags in the result: if flagWaiting was set
	// before our Add, the result shows it and we grant under the lock; if it was
	// set after, the waiter's CAS in join failed on our change and it saw our units.
	// (A negative or oversized n skips the Add; releaseSlow panics on it.)
	if uint64(n) <= MaxUnits {
		st := s.state.Add(n << unitShift)
		if st&(flagWaiting|flagBroken) == 0 && st>>unitShift <= s.capacity.Load() {
			return
		}
	}
	s.releaseSlow(n)
}

// releaseSlow finishes a Release that found waiters, a broken semaphore or more
// units than the capacity, or rejects an n that was never added.
func (s *Semaphore) releaseSlow(n int64) {
	if n < 0 {
		s.panicf("Release(%d): negative units", n)
	}
	if n > MaxUnits {
		s.panicf("Release(%d): released more than held (capacity %d)", n, s.capacity.Load())
	}
	if s.state.Load()&flagBroken != 0 {
		return // broken is never cleared, so seeing it now is as good as in our Add
	}
	s.mu.Lock()
	// Under mu the capacity is stable, and for a correct program the units
	// available never exceed it at any instant, whatever else runs concurrently.
	// So a check that fails here is a real over-release, never a race with Resize.
	if now := s.state.Load(); now&flagBroken == 0 && now>>unitShift > s.capacity.Load() {
		s.state.Add(-n << unitShift)
		capacity := s.capacity.Load()
		s.mu.Unlock()
		s.panicf("Release(%d): released more than held (%d units would be available, capacity %d)",
			n, now>>unitShift, capacity)
	}
	var woken wakeList
	s.grantLocked(&woken)
	s.mu.Unlock()
	woken.wake()
}

// Consume takes n units at once whether or not they are available: it never blocks,
// never queues and ignores waiters. Available units may go below zero; Available then
// reports 0 until enough units are released. Use it to account for resources already
// spent, such as memory that has been allocated. Give the units back with Release.
// Consume does nothing on a broken semaphore and panics if n is negative or if the
// debt would exceed MaxUnits.
func (s *Semaphore) Consume(n int64) {
	if n < 0 {
		s.panicf("Consume(%d): negative units", n)
	}
	if n > MaxUnits {
		s.panicf("Consume(%d): more than %d units", n, int64(MaxUnits))
	}
	if s.state.Load()&flagBroken != 0 {
		return
	}
	// Consume only lowers the count, so it can never let a waiter in and needs
	// neither the lock nor a look at the wait list.
	if st := s.state.Add(-n << unitShift); st>>unitShift < -MaxUnits {
		s.state.Add(n << unitShift)
		s.panicf("Consume(%d): units in debt would exceed %d", n, int64(MaxUnits))
	}
}

// Resize sets the capacity. Units held stay held: growing makes the new units
// available and grants the waiters that now fit; shrinking below what is held leaves
// Available at 0 until enough units are released (holders are never revoked). Waiters
// asking for more than the new capacity fail with ErrTooLarge, in FIFO order, and the
// waiters behind them are granted if they fit. Resize does nothing on a broken
// semaphore and panics if capacity is negative or larger than MaxUnits.
func (s *Semaphore) Resize(capacity int64) {
	if capacity < 0 || capacity > MaxUnits {
		s.panicf("Resize(%d): capacity must be between 0 and %d", capacity, int64(MaxUnits))
	}
	s.mu.Lock()
	if s.state.Load()&flagBroken != 0 {
		s.mu.Unlock()
		return
	}
	delta := capacity - s.capacity.Load()
	s.capacity.Store(capacity)
	s.state.Add(delta << unitShift)
	var woken wakeList
	for w := s.head; w != nil; {
		next := w.next
		if w.n > capacity {
			s.rejected.Add(1)
			s.settleLocked(w, settledTooLarge, &woken)
		}
		w = next
	}
	s.grantLocked(&woken)
	s.mu.Unlock()
	woken.wake()
}

// Capacity returns the current capacity.
func (s *Semaphore) Capacity() int64 { return s.capacity.Load() }

// Available returns the number of units that could be acquired now, ignoring
// waiters. It is never negative: after Consume or a shrinking Resize it reports 0
// until enough units are released. It is 0 on a broken semaphore.
func (s *Semaphore) Available() int64 {
	st := s.state.Load()
	if st&flagBroken != 0 || st < 0 {
		return 0
	}
	return st >> unitShift
}

// Waiters returns the number of calls waiting now. A waiter that was cancelled or
// timed out is not counted from the moment it gives up.
func (s *Semaphore) Waiters() int { return int(s.waiters.Load()) }

// Name returns the name given with WithName, or "".
func (s *Semaphore) Name() string { return s.name }

// Stats is a snapshot of a semaphore's state and counters. The counters only grow.
type Stats struct {
	Name      string
	Capacity  int64
	Available int64 // as Available: never negative
	Waiters   int
	Broken    bool

	Acquired            uint64        // successful acquisitions, waited for or not (TryAcquire included)
	AcquiredImmediately uint64        // of those, granted without waiting
	Queued              uint64        // calls that joined the wait list
	TimedOut            uint64        // waits that reached their deadline
	Cancelled           uint64        // waits whose context was cancelled
	Rejected            uint64        // calls refused: queue full or larger than the capacity
	WaitTime            time.Duration // total time spent in the wait list by all waiters
}

// Stats returns a snapshot of the semaphore's state and counters. The fields are
// read one at a time, so under concurrent use they may be from slightly different
// instants.
func (s *Semaphore) Stats() Stats {
	s.mu.Lock()
	immediate := s.immediate + uint64(s.state.Load()&countMask)>>countShift
	queued := s.queued
	s.mu.Unlock()
	return Stats{
		Name:                s.name,
		Capacity:            s.Capacity(),
		Available:           s.Available(),
		Waiters:             s.Waiters(),
		Broken:              s.broken.Load() != nil,
		Acquired:            immediate + s.granted.Load(),
		AcquiredImmediately: immediate,
		Queued:              queued,
		TimedOut:            s.timedOut.Load(),
		Cancelled:           s.cancelled.Load(),
		Rejected:            s.rejected.Load(),
		WaitTime:            time.Duration(s.waitNanos.Load()),
	}
}

// String describes the semaphore for logs, for example
// `semaphore "db-conns" (3 of 10 units available, 0 waiting)`.
func (s *Semaphore) String() string {
	str := fmt.Sprintf("%s (%s, %d waiting)", s.label(), s.availability(), s.Waiters())
	if b := s.broken.Load(); b != nil {
		str += ", broken"
		if b.cause != nil {
			str += ": " + b.cause.Error()
		}
	}
	return str
}
