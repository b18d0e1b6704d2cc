package keyed

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/fairsem/semaphore"
)

// A set is two levels joined through the core's contract. The first is the
// key's own semaphore (semaphore.New, one per active key). The second is
// shared by all keys: none, a global semaphore (WithGlobal), or the set's fair
// limit (WithLimit). A call takes its units at the key's level, then at the
// second; it gives them back in the other order.
//
// The seam between the two is level: the acquire subset of
// semaphore.Interface (try, acquire with a context, acquire with a timeout,
// release), as one key's calls see the second level, and what the level knows
// of the key's calls on their way through it. Each entry holds its key's view
// (entry.second), made with the entry, and the set's methods call it without
// asking what it is, but for the hot path's lock-free attempt and release
// (takeNow, giveBack, below):
//
//   - a global semaphore's view is the semaphore, with two counters of the
//     key's own: the calls that may wait there, and the key's units they hold
//     meanwhile (globalView). Every key's calls share the one semaphore, FIFO
//     among all of them.
//   - the fair limit's view is a flow (flow.go), one per entry, that carries
//     the key's weight, guarantee and line: the limit orders calls by key, so
//     the key is part of the request, and a flow is how the key reaches it
//     without the set passing it on every call. A flow keeps the whole of
//     semaphore.Interface: its Resize, Break and Reading are the limit's, so
//     that the conformance suite runs against one key's view.
//   - no second level is a nil view.
//
// Resize, Break and the readings are the set's business, not a call's, so
// they are not in the seam: the set reaches its limit or global semaphore
// directly for them.
type level interface {
	TryAcquire(n int64) bool
	Acquire(ctx context.Context, n int64) error
	AcquireTimeout(d time.Duration, n int64) error
	Release(n int64)

	// inFlight reads the key's calls that hold the key's units and may wait
	// at this level, and the units they hold: calls not yet holders.
	inFlight() (calls int, units int64)
}

var (
	_ level               = (*globalView)(nil)
	_ level               = (*flow)(nil)
	_ semaphore.Interface = (*flow)(nil)
)

// takeNow and giveBack are the hot path's way through the second level: the
// set's acquire and Units.Release call them for a view that is not nil, so
// that the lock-free code of either view is compiled into theirs rather than
// reached through the interface. Each does what the view's own methods do.

// takeNow takes n units of lv without waiting, for a call whose context never
// ends, and reports whether it did. False decides nothing: the call goes on to
// lv.Acquire.
func takeNow(lv level, n int64) bool {
	switch v := lv.(type) {
	case *flow:
		if v.limit.takeFree(n) {
			v.hold(n)
			return true
		}
	case *globalView:
		return v.sem.TryAcquire(n)
	}
	return false
}

// giveBack is lv.Release(n).
func giveBack(lv level, n int64) {
	switch v := lv.(type) {
	case *flow:
		v.hold(-n)
		v.limit.release(n)
	case *globalView:
		v.sem.Release(n)
	}
}

// A globalView is one key's view of the global semaphore of WithGlobal.
type globalView struct {
	sem *semaphore.Semaphore // fixed
	// Atomic: the key's calls past the lock-free attempt, and their units.
	waiting atomic.Int32
	pending atomic.Int64
}

func (v *globalView) TryAcquire(n int64) bool { return v.sem.TryAcquire(n) }

// Acquire is the semaphore's, as the semaphore's own does it: a context that
// cannot end tries without waiting first; one that can goes to the
// semaphore's Acquire, which checks it once the units are granted.
func (v *globalView) Acquire(ctx context.Context, n int64) error {
	if ctx.Done() == nil && v.sem.TryAcquire(n) {
		return nil
	}
	v.enter(n)
	defer v.exit(n)
	return v.sem.Acquire(ctx, n)
}

func (v *globalView) AcquireTimeout(d time.Duration, n int64) error {
	if v.sem.TryAcquire(n) {
		return nil
	}
	v.enter(n)
	defer v.exit(n)
	return v.sem.AcquireTimeout(d, n)
}

func (v *globalView) Release(n int64) { v.sem.Release(n) }

func (v *globalView) inFlight() (int, int64) {
	return int(v.waiting.Load()), v.pending.Load()
}

func (v *globalView) enter(n int64) {
	v.waiting.Add(1)
	v.pending.Add(n)
}

func (v *globalView) exit(n int64) {
	v.pending.Add(-n)
	v.waiting.Add(-1)
}
