package semaphore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// A Semaphore is a weighted, strictly FIFO counting semaphore with a
// timeout-aware wait list and a broken state.
//
// It holds a number of units (its capacity). Acquire takes n units, waiting in line
// when they are not available; Release gives them back and hands them, on the
// releasing goroutine, to the waiters at the head of the line that now fit. The line
// is strict FIFO: a request is granted at once only when its units are available and
// nobody is waiting, so a large request at the head is never starved by a stream of
// small ones behind it. Break fails every waiter and every later Acquire, and Drain
// then waits for the holders to give their units back: that is how a service shuts
// down whatever uses a resource that is going away.
//
// Most callers want AcquireUnits with a deferred Units.Release, or WithSemaphore,
// so that units are returned on every path. Acquire/Release work on plain counts
// for callers that keep track themselves. TryAcquire never waits; AcquireTimeout
// waits without needing a context; Consume accounts for units already spent.
//
// A Semaphore must be created with New; the zero value is not usable. All methods
// are safe for concurrent use.
type Semaphore struct {
	// Atomic: read without mu by the lock-free paths and the queries.
	state     atomic.Int64               // the packed word described in state.go
	capacity  atomic.Int64               // total units; written only under mu (see Resize)
	waiters   atomic.Int64               // length of the wait list; written only under mu
	broken    atomic.Pointer[breakState] // nil until Break; set once, under mu
	timedOut  atomic.Uint64              // calls that failed on a deadline
	cancelled atomic.Uint64              // waits whose context was cancelled
	rejected  atomic.Uint64              // calls refused: too large or queue full
	waitNanos atomic.Int64               // total time spent in the wait list

	mu sync.Mutex
	// Guarded by mu.
	head, tail *waiter       // the wait list, oldest first; see waitlist.go
	cond       sync.Cond     // plain waiters park here; Wait and Signal only under mu (see waitlist.go)
	immediate  uint64        // grants without waiting, apart from those still in the state word's counter
	granted    uint64        // grants to waiters, counted when made; one handed on after a cancellation is taken back
	queued     uint64        // calls that joined the wait list
	drained    chan struct{} // closed when every unit is back; non-nil while a Drain waits
	drainers   int           // Drain calls waiting on drained
	deadlines  deadlineHeap  // the timed waiters in the list, earliest deadline first; see deadline.go
	timer      *time.Timer   // the deadline timer; nil while deadlines is empty
	timerSet   bool          // timer is pending, and will fire at timerAt
	timerAt    time.Duration // since epoch

	onDeadlineFunc func() // s.onDeadline, bound once; guarded by mu

	// Fixed after New.
	name       string
	label      string       // names the semaphore in messages; see labelOf
	maxWaiters int          // from WithMaxWaiters; -1 means unbounded
	observer   Observer     // from WithObserver; nil: none
	diag       *diagnostics // holder tracking, leak detection, watchdog; nil: off
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
	s.cond.L = (*condLocker)(s)
	s.label = labelOf(s)
	if capacity < 0 || capacity > MaxUnits {
		s.panicf("New(%d): capacity must be between 0 and %d", capacity, int64(MaxUnits))
	}
	if c.badMaxWaiters {
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
// follows the same rule (it waits behind earlier waiters). When it finds too few
// units and nobody waiting, it first yields the processor once and looks again, so
// that a unit held for a moment is taken without parking; it never takes units
// while anyone waits. Acquire fails at once, without queuing and without holding
// anyone back, when ctx is already done (even if units are free); otherwise, in
// this order, when the semaphore is broken (ErrBroken), when n exceeds the
// capacity (ErrTooLarge), or when the wait list is full (ErrQueueFull).
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
	if ctx.Done() == nil && s.tryAcquire(n) {
		return nil
	}
	return s.acquireSlow(ctx, n)
}

// AcquireTimeout is Acquire with a deadline d from now and no context. On expiry it
// returns an error matching ErrTimedOut and context.DeadlineExceeded, and the waiter
// leaves the wait list at once, wherever it stands. If d <= 0 it never waits: it
// succeeds when the units can be granted at once, and otherwise fails like Acquire
// (ErrBroken, then ErrTooLarge) or, when it would have to wait, with the timeout
// error.
//
// Timed waiters share one deadline timer per semaphore, which lives while any of
// them waits: a call that has to wait allocates nothing while other timed waiters
// wait, which under steady load is nearly always, and otherwise one timer (the
// first on a semaphore also binds the timer's callback, once). It allocates
// nothing when it does not wait. AcquireTimeout panics if n is negative.
func (s *Semaphore) AcquireTimeout(d time.Duration, n int64) error {
	if s.tryAcquire(n) {
		return nil
	}
	return s.acquireTimeoutSlow(d, n)
}

// TryAcquire takes n units if they are available and nobody is waiting, and reports
// whether it did. It never waits for units and never jumps the queue: with waiters
// present it returns false even when n units are free. It returns false on a broken
// semaphore. It panics if n is negative.
func (s *Semaphore) TryAcquire(n int64) bool {
	return s.tryAcquire(n) || s.tryAcquireSlow(n)
}

func (s *Semaphore) tryAcquireSlow(n int64) bool {
	if n < 0 {
		s.panicf("TryAcquire(%d): negative units", n)
	}
	return s.acquireLockFree(n)
}

// Release returns n units and grants waiters, in FIFO order, as far as they fit.
// The grants happen directly on the caller's goroutine: Release never starts a
// goroutine, never blocks on a waiter and never runs waiter code; a granted waiter
// resumes on its own goroutine. When nobody waits (in Acquire or in Drain), Release
// takes no lock.
//
// Release panics if n is negative, or if it would make more units available than
// the capacity ("released more than held"). That check is exact, but it can only
// see the total: a caller that releases units another goroutine holds is not
// caught until the sum is wrong. Units, which release what they own exactly once,
// protect a caller from that. On a broken semaphore Release never panics for
// releasing too much; it counts the units returned, for Drain.
func (s *Semaphore) Release(n int64) {
	for {
		st := s.state.Load()
		// n <= out (capacity - available), as one unsigned comparison that also
		// sends a negative n to releaseSlow. See "Over-release" in state.go.
		if st&flagsAll != 0 || uint64(n) > uint64(s.capacity.Load()-st>>unitShift) {
			break
		}
		if s.state.CompareAndSwap(st, st+n<<unitShift) {
			return
		}
	}
	s.releaseSlow(n)
}

// releaseSlow finishes a Release that found a flag set or would release more than
// is out; it decides under mu, where the capacity is stable.
func (s *Semaphore) releaseSlow(n int64) {
	if n < 0 {
		s.panicf("Release(%d): negative units", n)
	}
	s.mu.Lock()
	capacity := s.capacity.Load()
	for {
		st := s.state.Load()
		out := capacity - unitsOf(st) // in [0, 2*MaxUnits]: no overflow
		add := n
		if n > out {
			if st&flagBroken == 0 {
				s.mu.Unlock()
				s.panicf("Release(%d): released more than held (%d out of a capacity of %d)",
					n, out, capacity)
			}
			add = out // after Break: count what comes back, never past the capacity
		}
		if s.state.CompareAndSwap(st, st+add<<unitShift) {
			break
		}
	}
	var woken wakeList
	s.grantLocked(&woken)
	s.notifyDrainLocked()
	s.mu.Unlock()
	woken.wake()
}

// Consume takes n units at once whether or not they are available: it never blocks,
// never queues and ignores waiters. Available units may go below zero; Available then
// reports 0 until enough units are released. Use it to account for resources already
// spent, such as memory that has been allocated. Give the units back with Release.
// On a broken semaphore Consume changes nothing visible, but the units count as out
// until released, so that Drain waits for them. It panics if n is negative or larger
// than MaxUnits, or if it would take the available units below -MaxUnits (a debt
// larger than MaxUnits); the panic changes nothing.
func (s *Semaphore) Consume(n int64) {
	if n < 0 {
		s.panicf("Consume(%d): negative units", n)
	}
	if n > MaxUnits {
		s.panicf("Consume(%d): more than %d units", n, int64(MaxUnits))
	}
	// Consume only lowers the count, so it can never let a waiter in and needs
	// neither the lock nor a look at the wait list.
	for {
		st := s.state.Load()
		// After Break the units are still counted, though Available shows 0:
		// the Release that gives them back must not end a Drain early.
		if unitsOf(st)-n < -MaxUnits {
			s.panicf("Consume(%d): units in debt would exceed %d (%d available)",
				n, int64(MaxUnits), unitsOf(st))
		}
		if s.state.CompareAndSwap(st, st-n<<unitShift) {
			return
		}
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
	old := s.capacity.Load()
	if delta := capacity - old; delta != 0 {
		// A lock-free Release loads the state, then the capacity. Shrinking
		// stores the capacity first, growing changes the units first, so a
		// Release that sees one old and one new value checks against less room
		// than there is and falls to releaseSlow, which waits for mu.
		if delta < 0 {
			s.capacity.Store(capacity)
		}
		// The counter bump makes the word differ from every value loaded before
		// this Resize (see "Over-release" in state.go); immediate is lowered to
		// keep their sum, the grant count, unchanged. A swap of the value checked,
		// not an Add: a lock-free grant may fill the counter after the check, and
		// the bump would then carry into the units.
		for {
			st := s.state.Load()
			if st&countMask == countMask {
				s.foldLocked()
				continue
			}
			if s.state.CompareAndSwap(st, st+delta<<unitShift+countOne) {
				break
			}
		}
		s.immediate--
		if delta > 0 {
			s.capacity.Store(capacity)
		}
	}
	var woken wakeList
	for w := s.head; w != nil; {
		next := w.next
		if w.n.Load() > capacity {
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
func (s *Semaphore) Available() int64 { return availableIn(s.state.Load()) }

// availableIn is Available for the state word st.
func availableIn(st int64) int64 {
	if st&flagBroken != 0 || st < 0 {
		return 0
	}
	return unitsOf(st)
}

// Waiters returns the number of calls waiting now. A waiter that was cancelled or
// timed out is not counted from the moment it gives up.
func (s *Semaphore) Waiters() int { return int(s.waiters.Load()) }

// Name returns the name given with WithName, or "".
func (s *Semaphore) Name() string { return s.name }

// String describes the semaphore for logs, for example
// `semaphore "db-conns" (3 of 10 units available, 0 waiting)`.
func (s *Semaphore) String() string {
	str := fmt.Sprintf("%s (%s, %d waiting)", s.label, s.availability(), s.Waiters())
	if b := s.broken.Load(); b != nil {
		str += ", broken"
		if b.cause != nil {
			str += ": " + b.cause.Error()
		}
	}
	return str
}
