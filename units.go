package semaphore

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/fairsem/semaphore/internal/errs"
)

// Units owns units of a semaphore until it gives them back. Go has no destructors,
// so the idiom is
//
//	u, err := sem.AcquireUnits(ctx, n)
//	if err != nil {
//		return err
//	}
//	defer u.Release()
//
// Release is idempotent, so an early Release on one path and the deferred one on
// every path are both safe, and a failed acquire returns a nil *Units whose Release
// does nothing: the "released after a failed acquire" bug cannot happen. Units can be
// split, partly returned, merged and detached; all methods are safe for concurrent
// use. On a semaphore with holder tracking each Units is recorded for Diagnostics,
// and with WithLeakDetection one that is dropped while holding units is reported.
type Units struct {
	// n is the number of units owned now, read and changed only with the atomic
	// functions: by CAS or Swap, so that no unit is returned twice. A plain int64
	// (first, for 64-bit alignment everywhere) rather than an atomic.Int64 so that
	// the constructors can build a Units in one literal and stay inlinable; a *Units
	// that does not escape its caller then needs no allocation.
	n   int64
	sem *Semaphore
	h   *holder // the tracking record, with holder tracking on; else nil; fixed
}

// AcquireUnits is Acquire returning a Units that owns the n units. On failure it
// returns a nil *Units and the error Acquire would return.
func (s *Semaphore) AcquireUnits(ctx context.Context, n int64) (*Units, error) {
	return s.acquireUnits(ctx, &Units{n: n, sem: s})
}

// acquireUnits is Acquire for AcquireUnits: it returns u once its units are taken,
// or, with holder tracking on, a tracked Units in its place. Building u in the
// inlined caller lets an untracked Units that does not escape live on the stack;
// a tracked one lives on the heap, where weak pointers and cleanups can see it.
func (s *Semaphore) acquireUnits(ctx context.Context, u *Units) (*Units, error) {
	if ctx.Done() != nil || !s.tryAcquire(u.n) {
		if err := s.acquireSlow(ctx, u.n); err != nil {
			return nil, err
		}
	}
	if s.diag != nil {
		return s.trackedUnits(ctx, u.n, 2), nil
	}
	return u, nil
}

// TryAcquireUnits is TryAcquire returning a Units that owns the n units, or nil and
// false.
func (s *Semaphore) TryAcquireUnits(n int64) (*Units, bool) {
	return s.tryAcquireUnits(&Units{n: n, sem: s})
}

// tryAcquireUnits is TryAcquire for TryAcquireUnits, as acquireUnits is Acquire.
func (s *Semaphore) tryAcquireUnits(u *Units) (*Units, bool) {
	if !s.tryAcquire(u.n) && !s.tryAcquireSlow(u.n) {
		return nil, false
	}
	if s.diag != nil {
		return s.trackedUnits(context.Background(), u.n, 2), true
	}
	return u, true
}

// ConsumeUnits is Consume returning a Units that owns the n units, so that the
// spent resource is given back by releasing it.
func (s *Semaphore) ConsumeUnits(n int64) *Units {
	return s.consumeUnits(&Units{n: n, sem: s})
}

// consumeUnits is Consume for ConsumeUnits, as acquireUnits is Acquire.
func (s *Semaphore) consumeUnits(u *Units) *Units {
	s.Consume(u.n)
	if s.diag != nil {
		return s.trackedUnits(context.Background(), u.n, 2)
	}
	return u
}

// Count returns the number of units u owns now; 0 for a nil *Units.
func (u *Units) Count() int64 {
	if u == nil {
		return 0
	}
	return atomic.LoadInt64(&u.n)
}

// Semaphore returns the semaphore the units belong to; nil for a nil *Units.
func (u *Units) Semaphore() *Semaphore {
	if u == nil {
		return nil
	}
	return u.sem
}

// Release returns every unit u owns to the semaphore. It is idempotent, safe to call
// from several goroutines at once (the units are returned exactly once), and does
// nothing on a nil *Units. After Break the units are still counted, for Drain.
func (u *Units) Release() {
	if u == nil {
		return
	}
	if n := atomic.SwapInt64(&u.n, 0); n > 0 {
		u.sem.Release(n)
	}
}

// Return gives n of the units back to the semaphore and keeps the rest. If u owns
// fewer than n it returns an error matching ErrInsufficientUnits and changes
// nothing. It panics if n is negative or u is nil.
func (u *Units) Return(n int64) error {
	if err := u.take("Return", n); err != nil {
		return err
	}
	u.sem.Release(n)
	return nil
}

// Split moves n of the units into a new Units of the same semaphore and returns it.
// If u owns fewer than n it returns an error matching ErrInsufficientUnits and
// changes nothing. It panics if n is negative or u is nil.
func (u *Units) Split(n int64) (*Units, error) {
	if err := u.take("Split", n); err != nil {
		return nil, err
	}
	if u.h != nil {
		return u.h.split(n), nil
	}
	return &Units{n: n, sem: u.sem}, nil
}

// take removes n units from u's ownership, or fails without change.
func (u *Units) take(op string, n int64) error {
	if u == nil {
		panic(fmt.Sprintf("semaphore: Units.%s(%d) on a nil *Units", op, n))
	}
	if n < 0 {
		u.sem.panicf("Units.%s(%d): negative units", op, n)
	}
	for {
		have := atomic.LoadInt64(&u.n)
		if have < n {
			return &errs.Error{Subject: (*subject)(u.sem), Op: op, N: n,
				Why: "the units hold only " + strconv.FormatInt(have, 10), Matches: []error{ErrInsufficientUnits}}
		}
		if atomic.CompareAndSwapInt64(&u.n, have, have-n) {
			return nil
		}
	}
}

// Adopt moves all of other's units into u; other ends with none. If other belongs
// to a different semaphore it returns an error matching ErrDifferentSemaphore and
// changes nothing. Adopting nil or u itself does nothing. It panics if u is nil
// and other is not: the units would have no owner.
func (u *Units) Adopt(other *Units) error {
	if other == nil || other == u {
		return nil
	}
	if u == nil {
		panic(fmt.Sprintf("semaphore: Units.Adopt(%d units) into a nil *Units", other.Count()))
	}
	if other.sem != u.sem {
		return u.sem.failure("Adopt "+errs.Count(other.Count(), "unit")+" of "+other.sem.label(), ErrDifferentSemaphore)
	}
	atomic.AddInt64(&u.n, atomic.SwapInt64(&other.n, 0))
	return nil
}

// Detach gives up ownership without returning the units: they stay taken from the
// semaphore, and whoever now accounts for them must Release them directly. It
// returns how many units u owned; u ends with none. Detach of a nil *Units returns 0.
func (u *Units) Detach() int64 {
	if u == nil {
		return 0
	}
	return atomic.SwapInt64(&u.n, 0)
}
