package semaphore

import (
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
// A Semaphore must be created with New: every method of a zero Semaphore that
// takes, returns or waits for units panics saying so (see the package
// documentation). All methods are safe for concurrent use.
type Semaphore struct {
	state    atomic.Int64 // the packed word described in acquire.go
	capacity atomic.Int64 // total units; written only under mu (see Resize)

	mu         sync.Mutex
	head, tail *waiter // the wait list, oldest first, guarded by mu; see waitlist.go
	immediate  uint64  // grants without waiting, apart from those still in the state word's counter; guarded by mu

	// x holds what only a semaphore that has been waited on, refused, broken or
	// drained needs. It is made once, under mu, by the first such call
	// (extraLocked), and never replaced, so that New makes one small object.
	x atomic.Pointer[extra]

	// Fixed after New.
	opts *config      // the options; a shared default when none were given; nil only in a zero Semaphore
	diag *diagnostics // holder tracking, leak detection, watchdog; nil: off
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
	cond           sync.Cond     // plain waiters park here; Wait and Signal only under mu (see waitlist.go)
	granted        uint64        // grants to waiters, counted when made; one handed on after a cancellation is taken back
	queued         uint64        // calls that joined the wait list
	drained        chan struct{} // closed when every unit is back; non-nil while a Drain waits
	drainers       int           // Drain calls waiting on drained
	deadlines      deadlineHeap  // the timed waiters in the list, earliest deadline first; see waitlist.go
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

// New returns a semaphore with the given capacity, all of it available.
// It panics if capacity is negative or larger than MaxUnits, or if an option is
// given an invalid value. Without options it allocates one small object.
func New(capacity int64, opts ...Option) *Semaphore {
	return new(Semaphore).init("New", capacity, opts)
}

// Init makes s, a zero Semaphore, what New returns, and returns s: for a type
// that keeps a Semaphore inside itself, so that the two are one allocation.
// Init must be called once, before any other method, and the Semaphore must not
// be copied after. It panics if s was already made (by New or Init) and for the
// values New panics for.
func (s *Semaphore) Init(capacity int64, opts ...Option) *Semaphore {
	if !s.isZero() {
		s.panicf("Init(%d): already made", capacity)
	}
	return s.init("Init", capacity, opts)
}

// init is New and Init, named op in its panics.
func (s *Semaphore) init(op string, capacity int64, opts []Option) *Semaphore {
	s.opts = &noOptions
	if len(opts) > 0 {
		s.opts = newConfig(opts)
	}
	if capacity < 0 || capacity > MaxUnits {
		s.panicf("%s(%d): capacity must be between 0 and %d", op, capacity, int64(MaxUnits))
	}
	if s.opts.badMaxWaiters {
		s.panicf("WithMaxWaiters(%d): the number of waiters must not be negative", s.opts.maxWaiters)
	}
	s.diag = s.newDiagnostics(s.opts.tracking)
	s.capacity.Store(capacity)
	s.state.Store(capacity<<unitShift | flagHealthy)
	return s
}

// isZero reports whether s is a zero Semaphore, made without New or Init: both
// set opts, which is fixed from then on.
func (s *Semaphore) isZero() bool { return s.opts == nil }

// Capacity returns the current capacity.
func (s *Semaphore) Capacity() int64 { return s.capacity.Load() }

// Available returns the number of units that could be acquired now, ignoring
// waiters. It is never negative: after Consume or a shrinking Resize it reports 0
// until enough units are released. It is 0 on a broken semaphore.
func (s *Semaphore) Available() int64 { return availableIn(s.state.Load()) }

// availableIn is Available for the state word st.
func availableIn(st int64) int64 {
	if st&flagHealthy == 0 || st < 0 {
		return 0
	}
	return unitsOf(st)
}

// Waiters returns the number of calls waiting now. A waiter that was cancelled or
// timed out is not counted from the moment it gives up.
func (s *Semaphore) Waiters() int {
	if x := s.x.Load(); x != nil {
		return int(x.waiters.Load())
	}
	return 0
}

// Name returns the name given with WithName, or "".
func (s *Semaphore) Name() string {
	if s.opts == nil {
		return ""
	}
	return s.opts.name
}

// String describes the semaphore for logs, for example
// `semaphore "db-conns" (3 of 10 units available, 0 waiting)`.
func (s *Semaphore) String() string {
	if s.isZero() {
		return "semaphore: zero Semaphore (create it with New)"
	}
	str := fmt.Sprintf("%s (%s, %d waiting)", s.label(), s.availability(), s.Waiters())
	if b := s.brokenState(); b != nil {
		str += ", broken"
		if b.cause != nil {
			str += ": " + b.cause.Error()
		}
	}
	return str
}

// brokenState returns what Break left, or nil while the semaphore is healthy.
func (s *Semaphore) brokenState() *breakState {
	if x := s.x.Load(); x != nil {
		return x.broken.Load()
	}
	return nil
}
