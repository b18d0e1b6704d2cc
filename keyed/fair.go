package keyed

import (
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/errs"
	"github.com/fairsem/semaphore/internal/list"
)

// A fairLimit is the limit of WithLimit: one number of units shared by every
// key, granted in the fair order the package documentation describes. Each
// active key reaches it through its flow (flow.go), which holds the key's part.
//
// # The state word
//
// state packs the units free now (capacity less the units granted; negative
// after a shrinking Resize) above one flag, set while any call waits:
//
//	state = free<<1 | flagContended
//
// Every grant takes its units with a compare-and-swap of the word that checks
// free >= n in the value it replaces, under mu or not, so the units granted
// never exceed the capacity at any interleaving. Releases add their units back
// with one atomic add.
//
// Without the flag a call takes its units without the lock (tryTake): nobody
// waits, so nobody is passed over. With it, every grant is made by
// dispatchLocked, under mu, which chooses who goes next. The two sides meet on
// the word:
//
//   - A call about to wait sets the flag under mu, with an atomic Or, and then
//     runs dispatchLocked itself, so units freed before the Or are seen by it.
//   - A release adds its units and reads the flag in the same atomic add: if it
//     was set, the releaser takes mu and runs dispatchLocked (release). A
//     release whose add came before the Or is seen by the Or's dispatch; one
//     whose add came after sees the flag. No freed unit is left unseen while
//     someone waits.
//   - A lock-free take whose compare-and-swap comes after the Or fails on the
//     flag, and the call goes to mu, where dispatchLocked decides.
//
// dispatchLocked clears the flag, under mu, only when nobody waits; Break sets
// it for good, so that every later call comes to mu and fails there.
type fairLimit struct {
	state atomic.Int64 // free<<1 | flagContended; see above
	label string       // names the limit in its errors; fixed

	mu sync.Mutex
	// Guarded by mu.
	capacity   int64           // the limit: free + units granted == capacity
	contending list.List[flow] // the keys with calls waiting, in no order that matters
	waiters    int             // calls waiting
	seq        uint64          // numbers waiters as they queue: the older first on a tie
	// vnow is the virtual time: the start tag of the latest grant made by
	// dispatchLocked, never moving back (see tag).
	vnow   uint64
	broken *brokenLimit // nil while healthy
}

// brokenLimit is what Break leaves in a fairLimit.
type brokenLimit struct {
	cause   string  // the cause's text, "" without one
	why     string  // "broken" or "broken: " + the cause's text
	matches []error // semaphore.ErrBroken and the cause
}

// flagContended is set in fairLimit.state while a call waits at the limit.
const flagContended = 1

// MaxWeight is the largest weight WithWeightFunc may give a key.
const MaxWeight = 1 << 16

// vscale is the virtual time of one unit granted to a key of weight 1: a grant
// of n units to a key of weight w advances the key's virtual time by
// n*vscale/w. Virtual times are compared by their signed difference, so they
// may wrap; keys waiting at once differ by far less than 2^63.
const vscale = MaxWeight

func newFairLimit(capacity int64, label string) *fairLimit {
	l := &fairLimit{capacity: capacity, label: label}
	l.state.Store(capacity << 1)
	return l
}

// limitSubject names the limit in its errors.
type limitSubject fairLimit

func (l *limitSubject) Label() string { return l.label }

// tryTake takes n units without the lock if nobody waits and they are free.
// Its swap fails once a waiter's Or has set the flag (see the state word).
func (l *fairLimit) tryTake(n int64) bool {
	for backoff := 1; ; backoff = min(2*backoff, maxBackoff) {
		st := l.state.Load()
		if st&flagContended != 0 || st>>1 < n {
			return false
		}
		if l.state.CompareAndSwap(st, st-n<<1) {
			return true
		}
		// Another core changed the word between our load and swap: stepping
		// aside, longer after each failure, lets it run a burst of takes and
		// releases with the word's cache line local, as the core's lock-free
		// acquire does.
		for range backoff {
			runtime.Gosched()
		}
	}
}

// takeFree is tryTake's first attempt, small enough to be inlined into a
// flow's Acquire: false when nobody waits and the units are free only if
// another core changed the word meanwhile, and then tryTake retries.
func (l *fairLimit) takeFree(n int64) bool {
	st := l.state.Load()
	return st&flagContended == 0 && st>>1 >= n && l.state.CompareAndSwap(st, st-n<<1)
}

// maxBackoff caps the scheduler yields after a failed swap.
const maxBackoff = 8

// takeLocked takes n units if they are free, whether or not anyone waits:
// dispatchLocked's grant, and a call's own before it queues. mu must be held.
func (l *fairLimit) takeLocked(n int64) bool {
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

// release returns n units. mu must not be held.
func (l *fairLimit) release(n int64) {
	if l.state.Add(n<<1)&flagContended != 0 {
		l.dispatch() // someone waits: the units go where dispatchLocked says (see the state word)
	}
}

// dispatch is dispatchLocked taking mu.
func (l *fairLimit) dispatch() {
	l.mu.Lock()
	l.dispatchLocked()
	l.mu.Unlock()
}

// dispatchLocked grants the free units in the fair order: each grant goes to
// the head of the line of the key that comes first (before), and moves the
// virtual time (see the package documentation), while its request fits in the
// free units. When it does not fit, nobody else is served: the units wait for
// it, so that a large request is not starved by small ones of keys that come
// after it. mu must be held.
//
// A waiter is granted whether or not its context has ended: the waiter decides,
// when it wakes, whether it keeps the grant (flow.kept), as the core's
// waiters do.
func (l *fairLimit) dispatchLocked() {
	for l.contending.Len() > 0 {
		f := l.contending.Front()
		for g := f.link.Next(); g != nil; g = g.link.Next() {
			if l.before(g, f) {
				f = g
			}
		}
		w := f.line.Front()
		if !l.takeLocked(w.n) {
			return // the flag stays set: releases come here
		}
		tag := l.tag(f)
		if int64(tag-l.vnow) > 0 {
			l.vnow = tag
		}
		f.vfinish = tag + f.charge(w.n)
		f.hold(w.n)
		f.settleLocked(w, semaphore.Granted)
	}
	if l.broken == nil {
		l.state.And(^int64(flagContended))
	}
}

// before reports whether key f, which has calls waiting, is served before key
// g: a key below its guarantee before one that is not; then the key with the
// earlier tag; then the one whose waiting call is older. mu must be held.
func (l *fairLimit) before(f, g *flow) bool {
	if uf, ug := f.held.Load() < f.guarantee, g.held.Load() < g.guarantee; uf != ug {
		return uf
	}
	if d := int64(l.tag(f) - l.tag(g)); d != 0 {
		return d < 0
	}
	return f.line.Front().seq < g.line.Front().seq
}

// tag is the virtual time at which f's next grant starts: the time at which
// its last grant ends, but no earlier than a limit's worth of units before the
// virtual time now. So a key served less than its share while its calls did
// not wait here (they waited at their key's own level behind its holders, or
// it asked for nothing) catches up by at most the limit's units, and one that
// was served more pays it back. mu must be held.
func (l *fairLimit) tag(f *flow) uint64 {
	floor := l.vnow - f.charge(l.capacity)
	if int64(f.vfinish-floor) > 0 {
		return f.vfinish
	}
	return floor
}

// resize sets the limit to capacity, at most semaphore.MaxUnits: see
// Set.Resize.
func (l *fairLimit) resize(capacity int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken != nil {
		return
	}
	l.state.Add((capacity - l.capacity) << 1)
	l.capacity = capacity
	l.settleEachLocked(func(w *waiter) (semaphore.Outcome, bool) {
		return semaphore.TooLarge, w.n > capacity
	})
	l.dispatchLocked()
}

// breakLimit fails every call waiting with semaphore.ErrBroken and cause, and
// every later one; only the first call counts.
func (l *fairLimit) breakLimit(cause error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken != nil {
		return
	}
	b := &brokenLimit{why: "broken", matches: []error{semaphore.ErrBroken}}
	if cause != nil {
		b.cause = cause.Error()
		b.why += ": " + b.cause
		b.matches = append(b.matches, cause)
	}
	l.broken = b
	l.state.Or(flagContended)
	l.settleEachLocked(func(*waiter) (semaphore.Outcome, bool) { return semaphore.Broken, true })
}

// settleEachLocked settles, with the outcome end gives, every waiting call for
// which end says so. mu must be held.
func (l *fairLimit) settleEachLocked(end func(*waiter) (semaphore.Outcome, bool)) {
	for f := l.contending.Front(); f != nil; {
		nextFlow := f.link.Next() // f leaves the list with its last waiter
		for w := f.line.Front(); w != nil; {
			next := w.link.Next()
			if o, ok := end(w); ok {
				f.settleLocked(w, o)
			}
			w = next
		}
		f = nextFlow
	}
}

// reading reads the limit: capacity, units held (counted in the state word),
// waiters and broken state, together under mu.
func (l *fairLimit) reading() semaphore.Reading {
	l.mu.Lock()
	defer l.mu.Unlock()
	free := l.state.Load() >> 1
	r := semaphore.Reading{
		Kind:     "keyed limit",
		Name:     l.label,
		Capacity: l.capacity,
		Held:     l.capacity - free,
		Waiters:  l.waiters,
		Unknown:  semaphore.AcquiredField | semaphore.QueuedField | semaphore.TimedOutField | semaphore.CancelledField | semaphore.RejectedField,
	}
	if l.broken != nil {
		r.Broken, r.Cause = true, l.broken.cause
	} else {
		r.Available = max(free, 0)
	}
	return r
}

// capacityNow returns the limit.
func (l *fairLimit) capacityNow() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.capacity
}

// fail makes the error of the acquire of n units that ended in o.
func (l *fairLimit) fail(n int64, o semaphore.Outcome, why string, matches ...error) error {
	return &errs.Error{Subject: (*limitSubject)(l), Op: "acquire", N: n, Why: why, Outcome: o, Matches: matches}
}

// limitOf says "the limit of 8 units".
func limitOf(capacity int64) string {
	return "the limit of " + errs.Count(capacity, "unit")
}

// tooLarge is the error of a request above the limit of capacity.
func (l *fairLimit) tooLarge(n, capacity int64) error {
	return l.fail(n, semaphore.TooLarge, "more than the limit of "+strconv.FormatInt(capacity, 10), semaphore.ErrTooLarge)
}
