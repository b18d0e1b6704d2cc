package keyed

import (
	"context"
	"fmt"
	"hash/maphash"
	"math"
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
// Most callers want Acquire with a deferred Units.Release; AcquireInto does
// the same into a Units the caller keeps, and allocates nothing. TryAcquire
// never waits; AcquireTimeout waits without needing a context. Resize changes
// the limit. Break then Drain shuts the set down.
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
	limit       *fairLimit             // WithLimit's; nil: none
	secondWhy   string                 // what the set's errors say before a reason the second level gave
	keyOpts     []semaphore.Option     // for each key's semaphore, the observer excepted
	observer    Observer               // nil: nothing is reported
	seed        maphash.Seed

	// shards hold the active keys; see keys.go.
	shards [shardCount]shard

	// broken is nil while the set is healthy. After Break it is a semaphore broken
	// with Break's cause: calls made after Break fail on it, so that they fail as
	// the core fails them (a done context first, then broken). Set once.
	broken atomic.Pointer[semaphore.Semaphore]
	// draining is the number of Drain calls waiting. A removal that leaves its
	// shard with no key active takes mu only when it is not 0: Drain adds to it
	// before it reads the shards, the removal subtracts from its shard's count
	// before it reads draining, so one of the two sees the other (see
	// drainedLocked).
	draining atomic.Int32

	mu sync.Mutex
	// drained is closed when no key is active any more; nil when no Drain waits.
	// Guarded by mu.
	drained chan struct{}
}

// NoKeyLimit is the capacity of a key that has no limit of its own: a set made
// with New(NoKeyLimit, WithLimit(n)) limits its keys only together, sharing n
// fairly among those that want more.
const NoKeyLimit int64 = math.MaxInt64

// New returns a set in which every key has the given capacity, unless
// WithCapacityFunc overrides it. A capacity of 0 admits only requests for 0
// units: with WithCapacityFunc, it makes an allow-list. NoKeyLimit, or any
// capacity above semaphore.MaxUnits, means no per-key limit (it is taken as
// MaxUnits). New panics if capacity is negative, or if an option is nil or was
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
		s.limit = newFairLimit(min(c.limit, semaphore.MaxUnits), "limit of "+s.label)
	case c.global != nil:
		s.secondWhy = errs.Label("global semaphore", c.global.Name(), c.global) + ": "
	}
	if c.maxWaiters >= 0 {
		s.keyOpts = append(s.keyOpts, semaphore.WithMaxWaiters(c.maxWaiters))
	}
	for i := range s.shards {
		s.shards[i].table.Store(emptyTable)
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
	e, err := s.acquire(ctx, key, n)
	if err != nil {
		return nil, err
	}
	return &Units{n: n + 1, set: s, e: e, key: key}, nil
}

// AcquireInto is Acquire into a Units the caller provides, which it fills on
// success, so that the call allocates nothing: u may live on the caller's
// stack or in a request's own struct, and be used again once released.
//
//	var u keyed.Units
//	if err := uploads.AcquireInto(ctx, &u, user, 1); err != nil {
//		return err
//	}
//	defer u.Release()
//
// It fails as Acquire does, and then leaves u as it was. It panics if u is nil
// or still holds units, and if n is negative. No other goroutine may use u
// during the call.
func (s *Set) AcquireInto(ctx context.Context, u *Units, key string, n int64) error {
	if u == nil {
		s.panicf("AcquireInto %d units for key %q: nil *Units", n, key)
	}
	if u.n != 0 {
		s.panicf("AcquireInto %d units for key %q: the Units still holds %d units of key %q", n, key, u.n-1, u.key)
	}
	e, err := s.acquire(ctx, key, n)
	if err != nil {
		return err
	}
	u.set, u.e, u.key, u.n = s, e, key, n+1
	return nil
}

// acquire is Acquire and AcquireInto: on success the call holds n units of key
// at both levels and a reference to its entry, which it returns.
func (s *Set) acquire(ctx context.Context, key string, n int64) (*entry, error) {
	e, sh, b := s.join(key, n)
	if b != nil {
		return nil, s.refused(key, n, b.Acquire(ctx, n), true)
	}
	if err := e.sem.Acquire(ctx, n); err != nil {
		s.leave(e)
		return nil, s.fail(sh, key, n, "", err)
	}
	if lv := e.second; lv != nil && (ctx.Done() != nil || !takeNow(lv, n)) {
		if err := lv.Acquire(ctx, n); err != nil {
			return nil, s.abandon(e, sh, key, n, err)
		}
	}
	atomic.AddUint64(&e.acquired, 1)
	return e, nil
}

// AcquireTimeout is Acquire with a deadline d from now and no context: d bounds
// the wait at both levels together. On expiry it returns an error matching
// semaphore.ErrTimedOut and context.DeadlineExceeded. If d <= 0 it never waits:
// it succeeds only when both levels can grant at once. It fails otherwise as
// Acquire does, and panics if n is negative.
func (s *Set) AcquireTimeout(d time.Duration, key string, n int64) (*Units, error) {
	e, sh, b := s.join(key, n)
	if b != nil {
		return nil, s.refused(key, n, b.AcquireTimeout(d, n), true)
	}
	var start time.Time
	if !e.sem.TryAcquire(n) {
		if e.second != nil && d > 0 {
			start = time.Now()
		}
		if err := e.sem.AcquireTimeout(d, n); err != nil {
			s.leave(e)
			return nil, s.fail(sh, key, n, "", err)
		}
	}
	if lv := e.second; lv != nil {
		rest := d
		if !start.IsZero() {
			rest -= time.Since(start)
		}
		if err := lv.AcquireTimeout(rest, n); err != nil {
			return nil, s.abandon(e, sh, key, n, err)
		}
	}
	atomic.AddUint64(&e.acquired, 1)
	return &Units{n: n + 1, set: s, e: e, key: key}, nil
}

// TryAcquire takes n units of key and of the limit or global semaphore if both
// can be granted at once, and reports whether it did. It never waits and never
// jumps a queue: it fails when anyone waits at either level. On failure it
// holds nothing and returns nil and false; it fails on a broken set. It panics
// if n is negative.
func (s *Set) TryAcquire(key string, n int64) (*Units, bool) {
	e, _, b := s.join(key, n)
	if b != nil {
		return nil, false
	}
	if !e.sem.TryAcquire(n) {
		s.leave(e)
		return nil, false
	}
	if lv := e.second; lv != nil && !lv.TryAcquire(n) {
		e.sem.Release(n)
		s.leave(e)
		return nil, false
	}
	atomic.AddUint64(&e.acquired, 1)
	return &Units{n: n + 1, set: s, e: e, key: key}, true
}

// abandon ends a call on e that holds n units of the key and that the second
// level refused with err: it gives the key's units back, drops its reference
// and makes its error.
func (s *Set) abandon(e *entry, sh *shard, key string, n int64, err error) error {
	e.sem.Release(n)
	s.leave(e)
	return s.fail(sh, key, n, s.secondWhy, err)
}

// misuse panics for a zero set or a negative request: the programmer errors
// every acquire checks first (join).
func (s *Set) misuse(key string, n int64) {
	if s.label == "" {
		panic(errZeroSet)
	}
	s.panicf("acquire %d units for key %q: negative", n, key)
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
	return s.label + " (" + errs.Count(s.activeKeys(), "key") + " active)"
}

// activeKeys counts the keys active now, in all shards.
func (s *Set) activeKeys() int64 {
	var n int64
	for i := range s.shards {
		n += s.shards[i].active.Load()
	}
	return n
}

// Name returns the name given with WithName, or "".
func (s *Set) Name() string { return s.name }

// Global returns the global semaphore given with WithGlobal, or nil.
func (s *Set) Global() *semaphore.Semaphore { return s.global }

// Resize sets the limit of WithLimit to capacity: the hard limit on the units
// held by all keys together. Units held are never taken back: after a
// shrinking Resize, no call is granted until the units held are below the new
// limit. Calls waiting for more units than the new limit fail with an error
// matching semaphore.ErrTooLarge, as the core's Resize fails them. A capacity
// above semaphore.MaxUnits is taken as MaxUnits. Resize does nothing on a
// broken set. It panics if capacity is negative or the set has no limit of its
// own (WithLimit).
//
// Resize makes a Set something that adjusts its capacity at run time, such as
// an adaptive limit, can drive.
func (s *Set) Resize(capacity int64) {
	if s.label == "" {
		panic(errZeroSet)
	}
	if s.limit == nil {
		s.panicf("Resize(%d): the set has no limit of its own (WithLimit)", capacity)
	}
	if capacity < 0 {
		s.panicf("Resize(%d): negative", capacity)
	}
	s.limit.resize(min(capacity, semaphore.MaxUnits))
}

// Limit returns the limit of WithLimit, as set by New or the last Resize, and
// true; 0 and false when the set has none.
func (s *Set) Limit() (int64, bool) {
	if s.limit == nil {
		return 0, false
	}
	return s.limit.capacityNow(), true
}
