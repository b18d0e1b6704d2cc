package keyed

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/errs"
)

// The limit of WithLimit: one number of units shared by every key, granted in
// the fair order the package documentation describes.
//
// # The state word
//
// limit.state packs the units free now (capacity minus units granted; negative
// after a shrinking Resize) above one flag, flagContended, set while any call
// waits at the limit:
//
//	state = free<<1 | flagContended
//
// Every grant takes its units with a compare-and-swap of the word that checks
// free >= n in the value it replaces, under Set.mu or not, so the units granted
// never exceed the capacity at any interleaving: there is no check in one place
// and a grant in another. Releases add their units back with one atomic add.
//
// Without the flag, a call takes its units lock-free (tryTake): nobody waits, so
// nobody is passed over. With it, every grant is made by dispatch, under Set.mu,
// which chooses who goes next. The two sides meet on the word:
//
//   - A call that is about to wait sets the flag under mu, with an atomic Or, and
//     then runs dispatch itself, so units freed before the Or are seen by that
//     dispatch.
//   - A release adds its units and reads the flag in the same atomic add: if the
//     flag was set, it takes mu and runs dispatch (giveBack). A release whose add
//     came before the Or is seen by the Or's dispatch; one whose add came after
//     sees the flag. No freed unit is left unseen while someone waits.
//   - A lock-free take whose compare-and-swap comes after the Or fails on the
//     flag, and the call goes to mu, where dispatch decides.
//
// dispatch clears the flag, under mu, only when nobody waits; after Break the
// flag stays set, so that every later call goes to mu and fails there.

// flagContended is set in limit.state while a call waits at the limit.
const flagContended = 1

// MaxWeight is the largest weight WithWeightFunc may give a key.
const MaxWeight = 1 << 16

// limit is the set's own global limit.
type limit struct {
	state atomic.Int64 // free<<1 | flagContended; see above

	// Guarded by Set.mu.
	capacity   int64    // the limit; free + granted == capacity
	contending []*entry // the keys with calls waiting at the limit, in no order
	seq        uint64   // numbers waiters as they queue: the older first on a tie
	// vnow is the virtual time: the start tag of the last grant made by
	// dispatch (see tag).
	vnow uint64
}

// vscale is the virtual time of one unit granted to a key of weight 1: a grant
// of n units to a key of weight w advances the key's virtual time by
// n*vscale/w. Virtual times are compared by their signed difference, so they
// may wrap; keys waiting at once differ by far less than 2^63.
const vscale = MaxWeight

// A share is a key's part in the limit.
type share struct {
	// Set when the key becomes active, under its shard's write lock; fixed while
	// it is active.
	weight    int64
	guarantee int64
	// granted counts the key's calls granted at the limit since it became
	// active (KeyStats.Acquired).
	// Atomic: read for Stats.
	granted atomic.Uint64
	// The key's calls waiting at the limit, oldest first. Guarded by Set.mu.
	head, tail *limitWaiter
	// vfinish is the virtual time at which the key's last grant by dispatch
	// ends: its start tag plus n*vscale/weight. Guarded by Set.mu.
	vfinish uint64
	// fresh is set when the key becomes active (under its shard's write lock,
	// while nobody else can reach the entry), and cleared under Set.mu when its
	// first call queues, which sets vfinish to the virtual time then: a key
	// made active anew, perhaps in an entry another key used, owes nothing.
	fresh bool
}

// A limitWaiter is a call waiting at the limit.
type limitWaiter struct {
	n          int64
	seq        uint64
	prev, next *limitWaiter    // in the key's line; guarded by Set.mu
	done       <-chan struct{} // Acquire's context's; nil for AcquireTimeout
	ready      chan struct{}   // closed once settled
	// Set under Set.mu when settled, before ready is closed; read by the waiter
	// after ready is closed, or under Set.mu.
	settled bool
	outcome semaphore.Outcome // Granted, Broken, TooLarge (a shrinking Resize) or Cancelled (found done by dispatch)
}

func newLimit(capacity int64) *limit {
	l := &limit{capacity: capacity}
	l.state.Store(capacity << 1)
	return l
}

// tryTake takes n units lock-free if nobody waits and they are free. Its swap
// fails once a waiter's Or has set the flag (see the state word, and takeSlow).
func (l *limit) tryTake(n int64) bool {
	for {
		st := l.state.Load()
		if st&flagContended != 0 || st>>1 < n {
			return false
		}
		if l.state.CompareAndSwap(st, st-n<<1) {
			return true
		}
	}
}

// takeLocked takes n units if they are free, whether or not anyone waits:
// dispatch's grant. Set.mu must be held.
func (l *limit) takeLocked(n int64) bool {
	for {
		st := l.state.Load()
		if st>>1 < n {
			return false
		}
		if l.state.CompareAndSwap(st, st-n<<1) {
			return true
		}
	}
}

// take takes n units of the limit for a call on e that holds its key's units,
// waiting in the fair order. ctx is Acquire's context; for AcquireTimeout
// (timed), it is context.Background and d is the timeout. It fails as Acquire
// documents, and then has taken nothing.
func (s *Set) take(ctx context.Context, timed bool, d time.Duration, e *entry, key string, n int64) error {
	if s.limit.tryTake(n) {
		return s.keep(ctx, e, key, n)
	}
	return s.takeSlow(ctx, timed, d, e, key, n)
}

// keep finishes a grant of n units that the call on e took without waiting. A
// call whose context is done once it holds them gives them back, as the core's
// Acquire does, and fails with its context's error: a cancellation that came
// before the grant always wins. Set.mu must not be held.
func (s *Set) keep(ctx context.Context, e *entry, key string, n int64) error {
	if done := ctx.Done(); done != nil && isClosed(done) {
		s.untake(n)
		return s.failContext(ctx, key, n, false, 0, 0)
	}
	s.grantedAt(e, n)
	return nil
}

// grantedAt counts n units granted at the limit to a call on e.
func (s *Set) grantedAt(e *entry, n int64) {
	e.held.Add(n)
	e.share.granted.Add(1)
}

// takeSlow is take when the units are not free or someone waits.
func (s *Set) takeSlow(ctx context.Context, timed bool, d time.Duration, e *entry, key string, n int64) error {
	l := s.limit
	if !timed && ctx.Err() != nil {
		return s.failContext(ctx, key, n, false, 0, 0)
	}
	s.mu.Lock()
	if b := s.broken.Load(); b != nil {
		s.mu.Unlock()
		return s.failBroken(b, key, n)
	}
	capacity := l.capacity
	if n > capacity {
		s.mu.Unlock()
		return s.failed(key, n, semaphore.TooLarge, "more than the limit of "+strconv.FormatInt(capacity, 10), semaphore.ErrTooLarge)
	}
	if l.tryTake(n) {
		s.mu.Unlock()
		return s.keep(ctx, e, key, n)
	}
	if timed && d <= 0 {
		s.mu.Unlock()
		return s.failed(key, n, semaphore.TimedOut, "not available at once and the timeout is "+d.String()+
			" (limit of "+errs.Count(capacity, "unit")+")", semaphore.ErrTimedOut, context.DeadlineExceeded)
	}
	w := &limitWaiter{n: n, seq: l.seq, ready: make(chan struct{})}
	if !timed {
		w.done = ctx.Done()
	}
	l.seq++
	sh := e.share
	if sh.fresh {
		sh.vfinish, sh.fresh = l.vnow, false
	}
	if sh.head == nil {
		sh.head = w
		l.contending = append(l.contending, e)
	} else {
		sh.tail.next, w.prev = w, sh.tail
	}
	sh.tail = w
	l.state.Or(flagContended)
	s.dispatchLocked() // units freed before the Or (see the state word)
	s.mu.Unlock()

	start := time.Now()
	done := ctx.Done()
	var expired <-chan time.Time
	if timed {
		timer := time.NewTimer(d)
		defer timer.Stop()
		expired = timer.C
	}
	select {
	case <-w.ready:
	case <-done:
	case <-expired:
	}
	s.mu.Lock()
	if !w.settled {
		s.dropLocked(e, w)
		capacity = l.capacity
		s.mu.Unlock()
		if timed {
			return s.failed(key, n, semaphore.TimedOut, "timed out after "+roundWait(time.Since(start)).String()+
				" waiting for the limit of "+errs.Count(capacity, "unit"), semaphore.ErrTimedOut, context.DeadlineExceeded)
		}
		return s.failContext(ctx, key, n, true, time.Since(start), capacity)
	}
	s.mu.Unlock()
	switch w.outcome {
	case semaphore.Granted:
		if !timed && ctx.Err() != nil {
			// Granted as the context ended: the caller sees its context's error,
			// as with x/sync, and the units go to whoever is next. The key was
			// charged for a grant it does not use: that is taken back too.
			s.mu.Lock()
			sh := e.share
			sh.vfinish -= uint64(n) * vscale / uint64(sh.weight)
			sh.granted.Add(^uint64(0))
			e.held.Add(-n)
			l.state.Add(n << 1)
			s.dispatchLocked()
			s.mu.Unlock()
			return s.failContext(ctx, key, n, true, time.Since(start), capacity)
		}
		return nil
	case semaphore.Broken:
		return s.failBroken(s.broken.Load(), key, n)
	case semaphore.Cancelled:
		return s.failContext(ctx, key, n, true, time.Since(start), capacity)
	default:
		return s.failed(key, n, semaphore.TooLarge, "more than the limit, which was reduced while waiting", semaphore.ErrTooLarge)
	}
}

// dropLocked takes the unsettled waiter w out of e's line, and lets the others
// go on: w may have been the head that held everyone up. Set.mu must be held.
func (s *Set) dropLocked(e *entry, w *limitWaiter) {
	sh := e.share
	sh.unlink(w)
	if sh.head == nil {
		s.limit.uncontend(e)
	}
	s.dispatchLocked()
}

// unlink takes w out of the key's line. Set.mu must be held.
func (sh *share) unlink(w *limitWaiter) {
	if w.prev == nil {
		sh.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		sh.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next = nil, nil
}

// uncontend takes e, which has nobody waiting at the limit any more, out of
// contending. Set.mu must be held.
func (l *limit) uncontend(e *entry) {
	for i, x := range l.contending {
		if x == e {
			last := len(l.contending) - 1
			l.contending[i] = l.contending[last]
			l.contending[last] = nil
			l.contending = l.contending[:last]
			return
		}
	}
}

// giveBack returns n units of the limit that a call on e held.
func (s *Set) giveBack(e *entry, n int64) {
	e.held.Add(-n)
	s.untake(n)
}

// untake returns n units to the limit. Set.mu must not be held.
func (s *Set) untake(n int64) {
	if s.limit.state.Add(n<<1)&flagContended != 0 {
		// Someone waits: the units go where dispatch says (see the state word).
		s.mu.Lock()
		s.dispatchLocked()
		s.mu.Unlock()
	}
}

// dispatchLocked grants the free units in the fair order: each grant goes to the
// head of the line of the key that comes first (before), and moves the virtual
// time (see the package documentation), while its request fits
// in the free units. When it does not fit, nobody else is served: the units
// wait for it, so that a large request is not starved by small ones of keys
// that come after it. Set.mu must be held.
func (s *Set) dispatchLocked() {
	l := s.limit
	for len(l.contending) > 0 {
		i := 0
		for j := 1; j < len(l.contending); j++ {
			if l.before(l.contending[j], l.contending[i]) {
				i = j
			}
		}
		e := l.contending[i]
		sh := e.share
		w := sh.head
		if w.done != nil && isClosed(w.done) {
			// Its context ended and it has not left yet: it gets nothing and
			// its key is not charged for units it would not use.
			if sh.unlink(w); sh.head == nil {
				l.uncontend(e)
			}
			w.settled, w.outcome = true, semaphore.Cancelled
			close(w.ready)
			continue
		}
		if !l.takeLocked(w.n) {
			return // the flag stays set: releases come here
		}
		if sh.unlink(w); sh.head == nil {
			l.uncontend(e)
		}
		l.vnow = l.tag(e)
		sh.vfinish = l.vnow + uint64(w.n)*vscale/uint64(sh.weight)
		s.grantedAt(e, w.n)
		w.settled, w.outcome = true, semaphore.Granted
		close(w.ready)
	}
	if s.broken.Load() == nil {
		l.state.And(^int64(flagContended))
	}
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// before reports whether key a, which has calls waiting at the limit, is served
// before key b: a key below its guarantee before one that is not; then the key
// with the earlier start tag; then the one whose waiting call is older.
// Set.mu must be held.
func (l *limit) before(a, b *entry) bool {
	if ua, ub := a.held.Load() < a.share.guarantee, b.held.Load() < b.share.guarantee; ua != ub {
		return ua
	}
	if d := int64(l.tag(a) - l.tag(b)); d != 0 {
		return d < 0
	}
	return a.share.head.seq < b.share.head.seq
}

// tag is the start tag of e's next grant: the virtual time at which its last
// grant ends, or the virtual time now if that is earlier, so that a key that
// waited for nothing meanwhile has no credit to spend. Set.mu must be held.
func (l *limit) tag(e *entry) uint64 {
	if int64(e.share.vfinish-l.vnow) > 0 {
		return e.share.vfinish
	}
	return l.vnow
}

// breakLimitLocked fails every call waiting at the limit with Broken, and
// leaves the flag set so that later calls come to mu and fail. Set.mu must be
// held.
func (s *Set) breakLimitLocked() {
	l := s.limit
	l.state.Or(flagContended)
	for _, e := range l.contending {
		for w := e.share.head; w != nil; w = w.next {
			w.settled, w.outcome = true, semaphore.Broken
			close(w.ready)
		}
		e.share.head, e.share.tail = nil, nil
	}
	clear(l.contending)
	l.contending = l.contending[:0]
}

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
	capacity = min(capacity, semaphore.MaxUnits)
	l := s.limit
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken.Load() != nil {
		return
	}
	l.state.Add((capacity - l.capacity) << 1)
	l.capacity = capacity
	for i := 0; i < len(l.contending); {
		e := l.contending[i]
		sh := e.share
		for w := sh.head; w != nil; {
			next := w.next
			if w.n > capacity {
				sh.unlink(w)
				w.settled, w.outcome = true, semaphore.TooLarge
				close(w.ready)
			}
			w = next
		}
		if sh.head == nil {
			l.uncontend(e) // moves the last key to i
			continue
		}
		i++
	}
	s.dispatchLocked()
}

// Limit returns the limit of WithLimit, as set by New or the last Resize, and
// true; 0 and false when the set has none.
func (s *Set) Limit() (int64, bool) {
	if s.limit == nil {
		return 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limit.capacity, true
}

// failContext is the error of a call whose context ended: before it waited at
// the limit, or after waiting for waited at the limit of capacity.
func (s *Set) failContext(ctx context.Context, key string, n int64, queued bool, waited time.Duration, capacity int64) error {
	deadline, why, matches := errs.Context(ctx)
	o, what := semaphore.Cancelled, "canceled"
	if deadline {
		o, what = semaphore.TimedOut, "timed out"
		matches = append(matches, semaphore.ErrTimedOut)
	}
	if queued {
		what += " after " + roundWait(waited).String() + " waiting for the limit of " + errs.Count(capacity, "unit")
	} else {
		what += " before waiting"
	}
	return s.failed(key, n, o, what+": "+why, matches...)
}

// failBroken is the error of a call failed by Break: the broken semaphore b's
// reason, and what it matches.
func (s *Set) failBroken(b *semaphore.Semaphore, key string, n int64) error {
	err := b.Err()
	return s.failed(key, n, semaphore.Broken, whyOf(err), err)
}

// roundWait keeps durations in messages readable, as the core does: 1.5s,
// 120ms, 35µs.
func roundWait(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	default:
		return d.Round(time.Microsecond)
	}
}
