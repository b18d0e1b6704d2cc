package semaphore

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/fairsem/semaphore/internal/errs"
	"github.com/fairsem/semaphore/internal/list"
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
	state    atomic.Int64 // the packed word described below, at its constants
	capacity atomic.Int64 // total units; written only under mu (see Resize)

	mu        sync.Mutex
	waiting   list.List[waiter] // the wait list, oldest first, guarded by mu; see waitlist.go
	immediate uint64            // grants without waiting, apart from those still in the state word's counter; guarded by mu

	// x holds what only a semaphore that has been waited on, refused, broken or
	// drained needs. It is made once, under mu, by the first such call
	// (extraLocked), and never replaced, so that New makes one small object.
	x atomic.Pointer[extra]

	// Fixed after New.
	opts *config      // the options; a shared default when none were given; nil only in a zero Semaphore
	diag *diagnostics // holder tracking, leak detection, watchdog; nil: off
}

// The state word packs the units available now with a grant counter and three
// flags, so that each uncontended call is one atomic operation and takes no lock:
//
//	bits 63..18  units available, signed (negative after Consume or a shrinking Resize)
//	bits 17..3   grants made without the lock since the last fold (see foldLocked)
//	bit  2       flagDraining: a Drain waits, so every Release takes the lock
//	bit  1       flagHealthy: set by New, cleared by Break and never set again
//	bit  0       flagWaiting: the wait list is not empty
//
// Adding or subtracting units adds a multiple of 1<<unitShift, which leaves the low
// bits alone, so units and flags change together in one atomic operation. A zero
// Semaphore, made without New, has flagHealthy clear: every lock-free path refuses
// it as it refuses a broken one, and the slow paths, which tell the two apart by
// the break record, panic (isZero).
//
// Range. Capacities, requests, releases and Consume amounts are at most MaxUnits
// (M = 2^44-1), and the units field holds [-2^45, 2^45-1], which contains
// [-2M, 2M]. Let out = capacity - available (units held or consumed):
//   - an acquisition leaves available >= 0, so out <= capacity <= M;
//   - Consume refuses (panics) before available would go below -M, so out <= 2M;
//   - Resize leaves out unchanged; Release refuses before out would go below 0.
//
// So available stays in [-2M, M], and available + n for any n <= M stays in
// [-2M, 2M]: every check of the word (acquire.go's, release.go's) is made on a value
// that cannot have wrapped, and each one is made before the word changes (a
// compare-and-swap of the value checked).
//
// Over-release. A Release of n is correct only if n <= out, that is if available + n
// <= capacity. Release checks exactly that against the value its compare-and-swap
// installs, so a Release that would make more units available than the capacity is
// refused, whatever runs concurrently. The capacity is a second word, written only
// under mu, and read by the lock-free Release between its load and its swap of the
// state. Resize writes the two in the order that makes every mixed view stricter
// than either consistent one (a refusal then falls to releaseSlow, which decides
// under mu), and it bumps the grant counter: a Release that read a capacity a Resize
// changed before the swap can only succeed if the state word came back to the very
// value the Release loaded, counter included, which takes 32,767 further grants or
// resizes while that goroutine is stopped between two instructions.
//
// Memory ordering. sync/atomic operations are sequentially consistent, and nothing
// weaker is relied on:
//   - flagWaiting <=> the wait list is not empty, whenever mu is free. The flag is
//     set under mu, by a compare-and-swap against the exact value join examined, and
//     cleared under mu when the last waiter is removed (removeLocked).
//   - A lock-free grant (tryAcquire) is a compare-and-swap conditioned on
//     flagWaiting clear and flagHealthy set, so it never takes units past a waiter.
//   - A lock-free Release is a compare-and-swap conditioned on the flags reading
//     exactly flagHealthy. If join's swap setting flagWaiting came first, the
//     Release's swap fails and it takes mu to grant; if the Release came first,
//     join's swap fails and join looks again and sees the units. Either way no unit
//     lands unseen while someone waits (see join), and the same holds for Drain and
//     flagDraining.
//   - After any change under mu that could let the head fit (a release, a waiter
//     leaving, a resize), grantLocked runs before mu is released, so "units free,
//     head fits, head still waiting" never outlasts a critical section.
//   - grantLocked takes a waiter's units before unlinking it, so clearing
//     flagWaiting with the last waiter cannot let a lock-free acquirer in first.
//   - The grant counter is folded into Semaphore.immediate only under mu, so the
//     two add up exactly whenever mu is held (Stats holds it).
const (
	flagWaiting  = 1 << 0
	flagHealthy  = 1 << 1
	flagDraining = 1 << 2
	flagsAll     = flagWaiting | flagHealthy | flagDraining

	countShift = 3
	countOne   = 1 << countShift
	countMask  = (1<<15 - 1) << countShift // folded before it can carry into the units

	unitShift = 18
)

// MaxUnits is the largest capacity, request or Consume a Semaphore accepts: 2^44-1,
// about 17.6 TB when units are bytes. Debt from Consume is limited to MaxUnits too.
const MaxUnits = 1<<44 - 1

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

// Capacity returns the current capacity.
func (s *Semaphore) Capacity() int64 { return s.capacity.Load() }

// Available returns the number of units that could be acquired now, ignoring
// waiters. It is never negative: after Consume or a shrinking Resize it reports 0
// until enough units are released. It is 0 on a broken semaphore.
func (s *Semaphore) Available() int64 { return availableIn(s.state.Load()) }

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
			str += ": " + errs.Cause(b.cause)
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
