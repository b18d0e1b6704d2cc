package keyed

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/errs"
)

// A Set limits concurrency per key (a tenant, a user, a client address), and
// optionally in total: "at most 4 concurrent uploads per user, at most 256 in
// all". Each active key has its own strictly FIFO semaphore of the key's
// capacity; a global semaphore given with WithGlobal is shared by all keys.
// Acquire takes n units of the key, then n units of the global semaphore, and
// returns a Units that gives both back exactly once.
//
// Most callers want Acquire with a deferred Units.Release. TryAcquire never
// waits; AcquireTimeout waits without needing a context. Break then Drain shuts
// the set down.
//
// A Set must be created with New; the zero value panics. All methods are safe
// for concurrent use.
type Set struct {
	// Fixed after New.
	label      string // "keyed \"NAME\"" or "unnamed keyed 0x…", for messages; "" only in the zero value
	name       string
	capacity   int64                  // of every key that capacityOf does not override
	capacityOf func(key string) int64 // nil: every key has capacity
	global     *semaphore.Semaphore   // nil: no global limit
	keyOpts    []semaphore.Option     // for each key's semaphore, the observer excepted
	observer   Observer               // nil: nothing is reported

	mu sync.Mutex
	// entries holds exactly the active keys: those with calls in progress or Units
	// not yet released (entry.refs > 0). An entry leaves it, under mu, in the same
	// hold that drops its last reference, so a caller that finds an entry under mu
	// always finds a live one. Guarded by mu.
	entries map[string]*entry
	// peak is the most entries the map has held since it was last rebuilt. Go
	// maps do not shrink, so the map is rebuilt when it falls to a small fraction
	// of its peak (see remove). Guarded by mu.
	peak int
	// free keeps up to maxFree idle entries, with their semaphores, for keys that
	// become active: a stream of short-lived keys then allocates nothing per key.
	// Guarded by mu.
	free []*entry
	// broken is nil while the set is healthy. After Break it is a semaphore broken
	// with Break's cause: calls made after Break fail on it, so that they fail as
	// the core fails them (a done context first, then broken). Guarded by mu.
	broken *semaphore.Semaphore
	// drained is closed when entries becomes empty; nil when no Drain waits.
	// Guarded by mu.
	drained chan struct{}

	// Counters, atomic: see Stats.
	acquired, timedOut, cancelled, rejected atomic.Uint64
}

// An entry is one active key: its semaphore and who uses it.
type entry struct {
	set *Set                 // fixed
	sem *semaphore.Semaphore // fixed: the key's limit, idle and healthy whenever refs is 0
	// key is set, under set.mu, when the entry enters the map; calls read it
	// while they hold a reference, which they took under set.mu after it was set.
	key string
	// refs counts the calls in progress on the key and its Units not yet
	// released; the entry is in set.entries exactly while refs > 0. Guarded by
	// set.mu.
	refs int
	// held is the units held by the key's Units (at both levels); waiting is the
	// calls in progress, granted neither level or only the key's. Atomic: they
	// change outside set.mu and are read for Stats and Diagnostics.
	held    atomic.Int64
	waiting atomic.Int64
}

const (
	// maxFree bounds the idle entries kept for reuse.
	maxFree = 64
	// rebuildAbove is the peak below which the map is never rebuilt: a map this
	// small costs little even when empty.
	rebuildAbove = 1024
)

// New returns a set in which every key has the given capacity, unless
// WithCapacityFunc overrides it. A capacity of 0 admits only requests for 0
// units: with WithCapacityFunc, it makes an allow-list. A capacity above
// semaphore.MaxUnits, such as math.MaxInt64 meaning "no per-key limit", is taken
// as MaxUnits. New panics if capacity is negative, or if an option is nil or was
// given an invalid value.
func New(capacity int64, opts ...Option) *Set {
	c := config{maxWaiters: -1}
	for i, o := range opts {
		if o == nil {
			panic(fmt.Sprintf("keyed: New: option %d is nil", i))
		}
		o(&c)
	}
	s := &Set{
		name:       c.name,
		capacity:   capacity,
		capacityOf: c.capacityOf,
		global:     c.global,
		observer:   c.observer,
		entries:    make(map[string]*entry),
	}
	s.label = errs.Label("keyed", c.name, s)
	if capacity < 0 {
		s.panicf("capacity %d: negative", capacity)
	}
	s.capacity = min(capacity, semaphore.MaxUnits)
	if c.maxWaiters >= 0 {
		s.keyOpts = append(s.keyOpts, semaphore.WithMaxWaiters(c.maxWaiters))
	}
	return s
}

// Acquire takes n units of key, then n units of the global semaphore if there
// is one, blocking until both are granted, ctx is done, or the set is broken.
// Each level is strictly FIFO: the key's semaphore among the key's callers, the
// global one among all keys'. On success it returns a Units that owns the units
// at both levels; release it when done.
//
// It fails as a semaphore's Acquire does (an error matching ctx's error, and
// semaphore.ErrTimedOut for a deadline; semaphore.ErrBroken; semaphore.ErrTooLarge
// when n exceeds the key's or the global capacity; semaphore.ErrQueueFull), at
// either level, and then holds nothing: units taken at the key level are given
// back before it returns. It returns a nil *Units on failure. Acquire panics if n
// is negative.
func (s *Set) Acquire(ctx context.Context, key string, n int64) (*Units, error) {
	e, b := s.join(key, n)
	if b != nil {
		return nil, s.fail(key, n, nil, b.Acquire(ctx, n))
	}
	if err := e.sem.Acquire(ctx, n); err != nil {
		s.abandon(e, 0)
		return nil, s.fail(key, n, nil, err)
	}
	if s.global != nil {
		if err := s.global.Acquire(ctx, n); err != nil {
			s.abandon(e, n)
			return nil, s.fail(key, n, s.global, err)
		}
	}
	return s.granted(e, key, n), nil
}

// AcquireTimeout is Acquire with a deadline d from now and no context: d bounds
// the wait at both levels together. On expiry it returns an error matching
// semaphore.ErrTimedOut and context.DeadlineExceeded. If d <= 0 it never waits:
// it succeeds only when both levels can grant at once.
func (s *Set) AcquireTimeout(d time.Duration, key string, n int64) (*Units, error) {
	e, b := s.join(key, n)
	if b != nil {
		return nil, s.fail(key, n, nil, b.AcquireTimeout(d, n))
	}
	var start time.Time
	if s.global != nil && d > 0 {
		start = time.Now()
	}
	if err := e.sem.AcquireTimeout(d, n); err != nil {
		s.abandon(e, 0)
		return nil, s.fail(key, n, nil, err)
	}
	if s.global != nil {
		rest := d
		if d > 0 {
			rest = d - time.Since(start)
		}
		if err := s.global.AcquireTimeout(rest, n); err != nil {
			s.abandon(e, n)
			return nil, s.fail(key, n, s.global, err)
		}
	}
	return s.granted(e, key, n), nil
}

// TryAcquire takes n units of key and of the global semaphore if both can be
// granted at once, and reports whether it did. It never waits and never jumps a
// queue: it fails when anyone waits at either level. On failure it holds
// nothing and returns nil and false; it fails on a broken set. It panics if n is
// negative.
func (s *Set) TryAcquire(key string, n int64) (*Units, bool) {
	e, b := s.join(key, n)
	if b != nil {
		return nil, false
	}
	if !e.sem.TryAcquire(n) {
		s.abandon(e, 0)
		return nil, false
	}
	if s.global != nil && !s.global.TryAcquire(n) {
		s.abandon(e, n)
		return nil, false
	}
	return s.granted(e, key, n), true
}

// join takes a reference to key's entry, creating it if the key is not active,
// for a call asking for n units. On a broken set it takes nothing and returns the
// semaphore that fails such calls.
func (s *Set) join(key string, n int64) (*entry, *semaphore.Semaphore) {
	if s.label == "" {
		panic(errZeroSet)
	}
	if n < 0 {
		s.panicf("acquire %d units for key %q: negative", n, key)
	}
	s.mu.Lock()
	if s.broken != nil {
		b := s.broken
		s.mu.Unlock()
		return nil, b
	}
	e := s.entries[key]
	if e == nil && s.capacityOf != nil {
		// The function is the caller's: run it without the lock, then look again,
		// since another call may have made the key active meanwhile.
		s.mu.Unlock()
		capacity := s.capacityFor(key)
		s.mu.Lock()
		if s.broken != nil {
			b := s.broken
			s.mu.Unlock()
			return nil, b
		}
		if e = s.entries[key]; e == nil {
			e = s.activate(key, capacity)
		}
	} else if e == nil {
		e = s.activate(key, s.capacity)
	}
	e.refs++
	e.waiting.Add(1)
	s.mu.Unlock()
	return e, nil
}

// activate makes key active with the given capacity, reusing an idle entry when
// one is kept. mu must be held.
func (s *Set) activate(key string, capacity int64) *entry {
	var e *entry
	if k := len(s.free); k > 0 {
		e = s.free[k-1]
		s.free[k-1] = nil
		s.free = s.free[:k-1]
		if e.sem.Capacity() != capacity {
			e.sem.Resize(capacity) // idle: no holder, no waiter to fail
		}
	} else {
		e = &entry{set: s}
		opts := s.keyOpts
		if s.observer != nil {
			opts = append(opts[:len(opts):len(opts)], semaphore.WithObserver(e))
		}
		e.sem = semaphore.New(capacity, opts...)
	}
	e.key = key
	s.entries[key] = e
	if len(s.entries) > s.peak {
		s.peak = len(s.entries)
	}
	return e
}

// capacityFor is key's capacity, from the function given with WithCapacityFunc.
func (s *Set) capacityFor(key string) int64 {
	if s.capacityOf == nil {
		return s.capacity
	}
	c := s.capacityOf(key)
	if c < 0 {
		s.panicf("capacity %d for key %q: negative", c, key)
	}
	return min(c, semaphore.MaxUnits)
}

// granted turns a call that holds n units at both levels into Units.
func (s *Set) granted(e *entry, key string, n int64) *Units {
	e.held.Add(n)
	e.waiting.Add(-1)
	s.acquired.Add(1)
	return &Units{set: s, e: e, key: key, n: n}
}

// abandon ends a call that failed after joining: it gives back the n units it
// holds at the key level (0 when the key level failed) and drops its reference.
func (s *Set) abandon(e *entry, n int64) {
	if n > 0 {
		e.sem.Release(n)
	}
	e.waiting.Add(-1)
	s.leave(e)
}

// leave drops one reference to e, and makes the key inactive with the last one.
func (s *Set) leave(e *entry) {
	s.mu.Lock()
	if e.refs--; e.refs == 0 {
		s.remove(e)
	}
	s.mu.Unlock()
}

// remove takes e, which has no reference left, out of the map; it keeps it for
// reuse when its semaphore is idle and healthy. mu must be held.
func (s *Set) remove(e *entry) {
	delete(s.entries, e.key)
	if s.broken == nil && len(s.free) < maxFree && e.sem.Waiters() == 0 && e.sem.Available() == e.sem.Capacity() {
		e.key = ""
		s.free = append(s.free, e)
	}
	// Go maps never give back the memory of deleted entries: rebuild the map
	// when it is down to an eighth of its peak. The copy costs at most an eighth
	// of the deletions since the last rebuild, so O(1) per deletion amortized.
	if k := len(s.entries); s.peak > rebuildAbove && k <= s.peak/8 {
		m := make(map[string]*entry, k)
		for key, e := range s.entries {
			m[key] = e
		}
		s.entries, s.peak = m, k
	}
	if len(s.entries) == 0 && s.drained != nil {
		close(s.drained)
		s.drained = nil
	}
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
	s.mu.Lock()
	k := len(s.entries)
	s.mu.Unlock()
	return s.label + " (" + errs.Count(int64(k), "key") + " active)"
}

// Name returns the name given with WithName, or "".
func (s *Set) Name() string { return s.name }

// Global returns the global semaphore given with WithGlobal, or nil.
func (s *Set) Global() *semaphore.Semaphore { return s.global }
