package keyed

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/errs"
	"github.com/fairsem/semaphore/internal/list"
)

// A flow is one active key's view of the fair limit: the second level as the
// key's calls see it (see level.go). It keeps semaphore.Interface for one key:
// its calls are served in FIFO order among themselves, and in the limit's fair
// order among other keys' calls.
type flow struct {
	limit *fairLimit // fixed

	// Set when the key becomes active, under its shard's mutex, while nothing
	// else reaches the flow; fixed while the key is active.
	weight    int64
	guarantee int64

	// held is the units granted to the key's calls and not given back, counted
	// only while the key has a guarantee (hold): the limit reads it only to
	// tell whether a key is below its guarantee (before), which a key without
	// one never is. 0 while the flow is idle. Atomic: changed without the lock
	// on the limit's fast paths, read by the limit's choice.
	held atomic.Int64
	// The key's calls waiting, and their units. Atomic: changed under
	// limit.mu, read without it (inFlight).
	waiting      atomic.Int32
	waitingUnits atomic.Int64

	// Guarded by limit.mu.
	line list.List[waiter] // the key's calls waiting, oldest first
	link list.Link[flow]   // in limit.contending while line is not empty
	// vfinish is the virtual time at which the key's last grant by
	// dispatchLocked ends: its start tag plus charge(n).
	vfinish uint64
	// fresh is set when the key becomes active and cleared when its first call
	// waits, which sets vfinish to the virtual time then: a key made active
	// anew owes nothing and is owed nothing.
	fresh bool
}

// A waiter is a call waiting at the limit.
type waiter struct {
	n     int64
	seq   uint64
	link  list.Link[waiter] // in its flow's line; guarded by limit.mu
	ready chan struct{}     // closed once settled
	// Set under limit.mu when settled, before ready is closed; read by the
	// waiter after ready is closed, or under limit.mu.
	settled bool
	outcome semaphore.Outcome // Granted, Broken or TooLarge (a shrinking Resize)
}

// activate readies f for a key that becomes active.
func (f *flow) activate(weight, guarantee int64) {
	f.weight, f.guarantee, f.fresh = weight, guarantee, true
}

// hold adds n, negative when units are given back, to what the key holds, if
// it has a guarantee (see held).
func (f *flow) hold(n int64) {
	if f.guarantee > 0 {
		f.held.Add(n)
	}
}

// charge is the virtual time n units take from the key.
func (f *flow) charge(n int64) uint64 {
	return uint64(n) * vscale / uint64(f.weight)
}

// TryAcquire takes n units of the limit if they are free and nobody waits.
func (f *flow) TryAcquire(n int64) bool {
	if !f.limit.tryTake(n) {
		return false
	}
	f.hold(n)
	return true
}

// Acquire takes n units of the limit, waiting in the fair order; it fails as
// semaphore.Interface says, and then holds nothing. A done context is reported
// first; units free while nobody waits are taken without the lock, and kept
// only if the context has not ended meanwhile.
func (f *flow) Acquire(ctx context.Context, n int64) error {
	done := ctx.Done()
	if done != nil && isClosed(done) {
		return f.failContext(ctx, n, 0, false)
	}
	if f.TryAcquire(n) {
		if f.kept(done, n, false) {
			return nil
		}
		return f.failContext(ctx, n, 0, false)
	}
	return f.acquire(ctx, false, 0, n)
}

// AcquireTimeout is Acquire with a timeout; d <= 0 never waits.
func (f *flow) AcquireTimeout(d time.Duration, n int64) error {
	if f.TryAcquire(n) {
		return nil
	}
	return f.acquire(context.Background(), true, d, n)
}

// Release gives back n units granted to the key's calls: once per grant, as
// Units.Release does.
func (f *flow) Release(n int64) {
	f.hold(-n)
	f.limit.release(n)
}

func (f *flow) inFlight() (int, int64) {
	return int(f.waiting.Load()), f.waitingUnits.Load()
}

// Resize, Break and Reading are the limit's, for the conformance suite.
func (f *flow) Resize(capacity int64)      { f.limit.resize(min(capacity, semaphore.MaxUnits)) }
func (f *flow) Break(err error)            { f.limit.breakLimit(err) }
func (f *flow) Reading() semaphore.Reading { return f.limit.reading() }

// acquire is Acquire and AcquireTimeout (timed, with d) after their lock-free
// attempt: it checks, in the core's order, a done context, broken, too large;
// takes the units if they are free and nobody waits; and otherwise queues and
// waits. Every grant passes through kept.
func (f *flow) acquire(ctx context.Context, timed bool, d time.Duration, n int64) error {
	l := f.limit
	done := ctx.Done()
	if done != nil && isClosed(done) {
		return f.failContext(ctx, n, 0, false)
	}
	l.mu.Lock()
	capacity := l.capacity
	switch {
	case l.broken != nil:
		b := l.broken
		l.mu.Unlock()
		return l.fail(n, semaphore.Broken, b.why, b.matches...)
	case n > capacity:
		l.mu.Unlock()
		return l.tooLarge(n, capacity)
	case l.contending.Len() == 0 && l.takeLocked(n):
		l.mu.Unlock()
		f.hold(n)
		if !f.kept(done, n, false) {
			return f.failContext(ctx, n, 0, false)
		}
		return nil
	case timed && d <= 0:
		l.mu.Unlock()
		return l.fail(n, semaphore.TimedOut, "not available at once and the timeout is "+d.String()+
			" ("+limitOf(capacity)+")", semaphore.ErrTimedOut, context.DeadlineExceeded)
	}
	w := &waiter{n: n, seq: l.seq, ready: make(chan struct{})}
	l.seq++
	l.waiters++
	f.waiting.Add(1)
	f.waitingUnits.Add(n)
	if f.fresh {
		f.vfinish, f.fresh = l.vnow, false
	}
	if f.line.Len() == 0 {
		l.contending.PushBack(&f.link, f)
	}
	f.line.PushBack(&w.link, w)
	l.state.Or(flagContended)
	l.dispatchLocked() // units freed before the Or (see the state word)
	l.mu.Unlock()

	start := time.Now()
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
	l.mu.Lock()
	if !w.settled {
		f.settleLocked(w, semaphore.Cancelled) // gone: nobody is woken, and it holds nothing
		l.dispatchLocked()                     // it may have been the head that held everyone up
		capacity = l.capacity
		l.mu.Unlock()
		if timed {
			return l.fail(n, semaphore.TimedOut, "timed out after "+errs.Round(time.Since(start)).String()+
				" waiting for "+limitOf(capacity), semaphore.ErrTimedOut, context.DeadlineExceeded)
		}
		return f.failContext(ctx, n, time.Since(start), true)
	}
	b := l.broken
	l.mu.Unlock()
	switch w.outcome {
	case semaphore.Granted:
		if !f.kept(done, n, true) {
			return f.failContext(ctx, n, time.Since(start), true)
		}
		return nil
	case semaphore.Broken:
		return l.fail(n, semaphore.Broken, b.why, b.matches...)
	default:
		return l.fail(n, semaphore.TooLarge, "more than the limit, which was reduced while waiting", semaphore.ErrTooLarge)
	}
}

// kept decides whether a call granted n units keeps them, and is the one place
// that decides it for every grant of the limit: taken without waiting, or made
// by dispatchLocked after waiting (charged). A call whose context is done once
// it holds the units gives them back, as the core's Acquire does, and fails
// with its context's error: a cancellation that came before the grant (a
// cancel, then the release that would grant the call) always wins. The units
// go to whoever is next, and the key is not charged for a grant it does not
// use. done is the context's Done channel; nil never ends.
func (f *flow) kept(done <-chan struct{}, n int64, charged bool) bool {
	if done == nil || !isClosed(done) {
		return true
	}
	l := f.limit
	f.hold(-n)
	if !charged {
		l.release(n)
		return false
	}
	l.mu.Lock()
	f.vfinish -= f.charge(n)
	l.state.Add(n << 1)
	l.dispatchLocked()
	l.mu.Unlock()
	return false
}

// settleLocked ends w's wait with o: w leaves its key's line, and the key the
// limit's contenders when w was its last waiter; w is woken unless it ended the
// wait itself (Cancelled). limit.mu must be held.
func (f *flow) settleLocked(w *waiter, o semaphore.Outcome) {
	l := f.limit
	f.line.Remove(&w.link)
	if f.line.Len() == 0 {
		l.contending.Remove(&f.link)
	}
	l.waiters--
	f.waiting.Add(-1)
	f.waitingUnits.Add(-w.n)
	w.settled, w.outcome = true, o
	if o != semaphore.Cancelled {
		close(w.ready)
	}
}

// failContext is the error of a call whose context ended: before it waited,
// or after waiting for waited (queued).
func (f *flow) failContext(ctx context.Context, n int64, waited time.Duration, queued bool) error {
	deadline, why, matches := errs.Context(ctx)
	o, what := semaphore.Cancelled, "canceled"
	if deadline {
		o, what = semaphore.TimedOut, "timed out"
		matches = append(matches, semaphore.ErrTimedOut)
	}
	if queued {
		what += " after " + errs.Round(waited).String() + " waiting for " + limitOf(f.limit.capacityNow())
	} else {
		what += " before waiting"
	}
	return f.limit.fail(n, o, what+": "+why, matches...)
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
