package keyed

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/errs"
)

// A Set limits concurrency per key (a tenant, a user, a client address), and
// optionally in total: "at most 4 concurrent uploads per user, at most 256 in
// all". Each active key has its own strictly FIFO semaphore of the key's
// capacity; the total is a limit of the set's own (WithLimit), shared among
// keys by weight with guaranteed minimums, or a semaphore shared with other
// code (WithGlobal). Acquire takes n units of the key, then n units of the
// total, and returns a Units that gives both back exactly once.
//
// Most callers want Acquire with a deferred Units.Release. TryAcquire never
// waits; AcquireTimeout waits without needing a context. Resize changes the
// limit. Break then Drain shuts the set down.
//
// A Set must be created with New; the zero value panics. All methods are safe
// for concurrent use.
type Set struct {
	// Fixed after New.
	label       string // "keyed \"NAME\"" or "unnamed keyed 0x…", for messages; "" only in the zero value
	name        string
	capacity    int64                  // of every key that capacityOf does not override
	capacityOf  func(key string) int64 // nil: every key has capacity
	weightOf    func(key string) int64 // nil: every key has weight 1
	guaranteeOf func(key string) int64 // nil: no key has a guarantee
	global      *semaphore.Semaphore   // WithGlobal's; nil: none
	limit       *limit                 // WithLimit's; nil: none
	keyOpts     []semaphore.Option     // for each key's semaphore, the observer excepted
	observer    Observer               // nil: nothing is reported
	seed        maphash.Seed           // for shardOf

	// shards hold the active keys; see keys.go.
	shards [shardCount]shard

	// broken is nil while the set is healthy. After Break it is a semaphore broken
	// with Break's cause: calls made after Break fail on it, so that they fail as
	// the core fails them (a done context first, then broken). Set once.
	broken atomic.Pointer[semaphore.Semaphore]
	// active is the number of active keys, in all shards; changed under the
	// shard's write lock.
	active atomic.Int64
	// weights is the sum of the active keys' weights, with WithLimit; changed
	// under the shard's write lock.
	weights atomic.Int64
	// draining is the number of Drain calls waiting. A removal that leaves no key
	// active takes mu only when it is not 0: Drain adds to it before it reads
	// active, the removal subtracts from active before it reads draining, so one
	// of the two sees the other (see drainedLocked).
	draining atomic.Int32

	// mu guards the limit's lines and choice (limit.go) and drained. It is taken
	// after a shard's lock, never before one.
	mu sync.Mutex
	// drained is closed when no key is active any more; nil when no Drain waits.
	// Guarded by mu.
	drained chan struct{}

	// Counters, atomic: see Stats.
	timedOut, cancelled, rejected atomic.Uint64 // the successes are counted per shard
}

// New returns a set in which every key has the given capacity, unless
// WithCapacityFunc overrides it. A capacity of 0 admits only requests for 0
// units: with WithCapacityFunc, it makes an allow-list. A capacity above
// semaphore.MaxUnits, such as math.MaxInt64 meaning "no per-key limit", is taken
// as MaxUnits. New panics if capacity is negative, or if an option is nil or was
// given an invalid value.
func New(capacity int64, opts ...Option) *Set {
	c := config{maxWaiters: -1, limit: -1}
	for i, o := range opts {
		if o == nil {
			panic(fmt.Sprintf("keyed: New: option %d is nil", i))
		}
		o(&c)
	}
	s := &Set{
		name:        c.name,
		capacityOf:  c.capacityOf,
		weightOf:    c.weightOf,
		guaranteeOf: c.guaranteeOf,
		global:      c.global,
		observer:    c.observer,
		seed:        maphash.MakeSeed(),
	}
	s.label = errs.Label("keyed", c.name, s)
	if capacity < 0 {
		s.panicf("capacity %d: negative", capacity)
	}
	s.capacity = min(capacity, semaphore.MaxUnits)
	switch {
	case c.limit >= 0 && c.global != nil:
		s.panicf("WithLimit and WithGlobal together: the set has one global level")
	case c.limit < 0 && (c.weightOf != nil || c.guaranteeOf != nil):
		s.panicf("WithWeightFunc and WithGuaranteeFunc share a limit: they need WithLimit")
	case c.limit >= 0:
		s.limit = newLimit(min(c.limit, semaphore.MaxUnits))
	}
	if c.maxWaiters >= 0 {
		s.keyOpts = append(s.keyOpts, semaphore.WithMaxWaiters(c.maxWaiters))
	}
	return s
}

// Acquire takes n units of key, then n units of the set's limit (WithLimit) or
// of the global semaphore (WithGlobal) if there is one, blocking until both are
// granted, ctx is done, or the set is broken. The key's level is strictly FIFO
// among the key's calls; the limit serves keys in the fair order the package
// documentation describes, each key's calls in FIFO order; the global
// semaphore is FIFO among all keys. On success it returns a Units that owns
// the units at both levels; release it when done.
//
// It fails with an error matching ctx's error and cause (and
// semaphore.ErrTimedOut when its deadline passed); semaphore.ErrBroken and
// Break's cause once the set is broken; semaphore.ErrTooLarge when n exceeds
// the key's capacity, the limit or the global capacity; semaphore.ErrQueueFull
// when the key's wait list is full (WithMaxWaiters) or the global semaphore's
// is. It then holds nothing: units taken at the key level are given back before
// it returns, and it returns a nil *Units. A context done before the call is
// reported first, and a call granted at either level while its context is
// already done fails with the context's error and gives the units back, as the
// core's Acquire does. semaphore.OutcomeOf tells how the call ended. Acquire
// panics if n is negative.
func (s *Set) Acquire(ctx context.Context, key string, n int64) (*Units, error) {
	e, i, b := s.join(key, n)
	if b != nil {
		return nil, s.fail(key, n, nil, b.Acquire(ctx, n))
	}
	if err := e.sem.Acquire(ctx, n); err != nil {
		s.abandon(e, i, 0)
		return nil, s.fail(key, n, nil, err)
	}
	switch {
	case s.limit != nil:
		if err := s.take(ctx, false, 0, e, key, n); err != nil {
			s.abandon(e, i, n)
			return nil, err
		}
	case s.global != nil:
		if err := s.global.Acquire(ctx, n); err != nil {
			s.abandon(e, i, n)
			return nil, s.fail(key, n, s.global, err)
		}
	}
	return s.granted(e, i, key, n), nil
}

// AcquireTimeout is Acquire with a deadline d from now and no context: d bounds
// the wait at both levels together. On expiry it returns an error matching
// semaphore.ErrTimedOut and context.DeadlineExceeded. If d <= 0 it never waits:
// it succeeds only when both levels can grant at once. It fails otherwise as
// Acquire does, and panics if n is negative.
func (s *Set) AcquireTimeout(d time.Duration, key string, n int64) (*Units, error) {
	e, i, b := s.join(key, n)
	if b != nil {
		return nil, s.fail(key, n, nil, b.AcquireTimeout(d, n))
	}
	var start time.Time
	if (s.global != nil || s.limit != nil) && d > 0 {
		start = time.Now()
	}
	if err := e.sem.AcquireTimeout(d, n); err != nil {
		s.abandon(e, i, 0)
		return nil, s.fail(key, n, nil, err)
	}
	rest := d
	if d > 0 && (s.global != nil || s.limit != nil) {
		rest = d - time.Since(start)
	}
	switch {
	case s.limit != nil:
		if err := s.take(context.Background(), true, rest, e, key, n); err != nil {
			s.abandon(e, i, n)
			return nil, err
		}
	case s.global != nil:
		if err := s.global.AcquireTimeout(rest, n); err != nil {
			s.abandon(e, i, n)
			return nil, s.fail(key, n, s.global, err)
		}
	}
	return s.granted(e, i, key, n), nil
}

// TryAcquire takes n units of key and of the limit or global semaphore if both
// can be granted at once, and reports whether it did. It never waits and never
// jumps a queue: it fails when anyone waits at either level. On failure it
// holds nothing and returns nil and false; it fails on a broken set. It panics
// if n is negative.
func (s *Set) TryAcquire(key string, n int64) (*Units, bool) {
	e, i, b := s.join(key, n)
	if b != nil {
		return nil, false
	}
	if !e.sem.TryAcquire(n) {
		s.abandon(e, i, 0)
		return nil, false
	}
	switch {
	case s.limit != nil:
		// The flag is set while anyone waits at the limit, and for good after
		// Break: tryTake fails then.
		if !s.limit.tryTake(n) {
			s.abandon(e, i, n)
			return nil, false
		}
		s.grantedAt(e, n)
	case s.global != nil:
		if !s.global.TryAcquire(n) {
			s.abandon(e, i, n)
			return nil, false
		}
	}
	return s.granted(e, i, key, n), true
}

// granted turns a call on e, in shard i, that holds n units at both levels
// into Units.
func (s *Set) granted(e *entry, i uint8, key string, n int64) *Units {
	if s.limit == nil {
		e.held.Add(n) // the limit counts its grants where it makes them
	}
	e.waiting.Add(-1)
	s.shards[i].acquired.Add(1) // per shard: keys on other cores do not share the counter
	return &Units{set: s, e: e, key: key, n: n, shard: i}
}

// abandon ends a call on e, in shard i, that failed after joining: it gives
// back the n units it holds at the key level (0 when the key level failed) and
// drops its reference.
func (s *Set) abandon(e *entry, i uint8, n int64) {
	if n > 0 {
		e.sem.Release(n)
	}
	e.waiting.Add(-1)
	s.leave(e, i)
}

// errZeroSet is the panic of every method of a zero Set but String.
const errZeroSet = "keyed: zero Set: create it with keyed.New"

// panicf reports a programmer error: the message names the set and the value.
func (s *Set) panicf(format string, args ...any) {
	panic(s.label + ": " + fmt.Sprintf(format, args...))
}

// String describes the set for logs, for example `keyed "uploads" (3 keys
// active)`.
func (s *Set) String() string {
	if s.label == "" {
		return "keyed: zero Set (create it with keyed.New)"
	}
	return s.label + " (" + errs.Count(s.active.Load(), "key") + " active)"
}

// Name returns the name given with WithName, or "".
func (s *Set) Name() string { return s.name }

// Global returns the global semaphore given with WithGlobal, or nil.
func (s *Set) Global() *semaphore.Semaphore { return s.global }
