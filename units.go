package semaphore

import (
	"context"
	"sync/atomic"
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
// use.
type Units struct {
	sem *Semaphore
	n   atomic.Int64 // units owned now; moves only by CAS or Swap, so none is returned twice
}

// AcquireUnits is Acquire returning a Units that owns the n units. On failure it
// returns a nil *Units and the error Acquire would return.
func (s *Semaphore) AcquireUnits(ctx context.Context, n int64) (*Units, error) {
	if err := s.Acquire(ctx, n); err != nil {
		return nil, err
	}
	return s.newUnits(n), nil
}

// TryAcquireUnits is TryAcquire returning a Units that owns the n units, or nil and
// false.
func (s *Semaphore) TryAcquireUnits(n int64) (*Units, bool) {
	if !s.TryAcquire(n) {
		return nil, false
	}
	return s.newUnits(n), true
}

// ConsumeUnits is Consume returning a Units that owns the n units, so that the
// spent resource is given back by releasing it.
func (s *Semaphore) ConsumeUnits(n int64) *Units {
	s.Consume(n)
	return s.newUnits(n)
}

func (s *Semaphore) newUnits(n int64) *Units {
	u := &Units{sem: s}
	u.n.Store(n)
	return u
}

// Count returns the number of units u owns now; 0 for a nil *Units.
func (u *Units) Count() int64 {
	if u == nil {
		return 0
	}
	return u.n.Load()
}

// Semaphore returns the semaphore the units belong to.
func (u *Units) Semaphore() *Semaphore { return u.sem }

// Release returns every unit u owns to the semaphore. It is idempotent, safe to call
// from several goroutines at once (the units are returned exactly once), and does
// nothing on a nil *Units. Units returned to a broken semaphore are dropped.
func (u *Units) Release() {
	if u == nil {
		return
	}
	if n := u.n.Swap(0); n > 0 {
		u.sem.Release(n)
	}
}

// Return gives n of the units back to the semaphore and keeps the rest. If u owns
// fewer than n it returns an error matching ErrInsufficientUnits and changes
// nothing. It panics if n is negative.
func (u *Units) Return(n int64) error {
	if err := u.take("Return", n); err != nil {
		return err
	}
	u.sem.Release(n)
	return nil
}

// Split moves n of the units into a new Units of the same semaphore and returns it.
// If u owns fewer than n it returns an error matching ErrInsufficientUnits and
// changes nothing. It panics if n is negative.
func (u *Units) Split(n int64) (*Units, error) {
	if err := u.take("Split", n); err != nil {
		return nil, err
	}
	return u.sem.newUnits(n), nil
}

// take removes n units from u's ownership, or fails without change.
func (u *Units) take(op string, n int64) error {
	if n < 0 {
		u.sem.panicf("Units.%s(%d): negative units", op, n)
	}
	for {
		have := u.n.Load()
		if have < n {
			return u.sem.fail([]error{ErrInsufficientUnits}, "%s %s: the units hold only %d", op, units(n), have)
		}
		if u.n.CompareAndSwap(have, have-n) {
			return nil
		}
	}
}

// Adopt moves all of other's units into u; other ends with none. If other belongs
// to a different semaphore it returns an error matching ErrDifferentSemaphore and
// changes nothing. Adopting nil or u itself does nothing.
func (u *Units) Adopt(other *Units) error {
	if other == nil || other == u {
		return nil
	}
	if other.sem != u.sem {
		return u.sem.fail([]error{ErrDifferentSemaphore}, "Adopt %s of %s", units(other.Count()), other.sem.label())
	}
	u.n.Add(other.n.Swap(0))
	return nil
}

// Detach gives up ownership without returning the units: they stay taken from the
// semaphore, and whoever now accounts for them must Release them directly. It
// returns how many units u owned; u ends with none.
func (u *Units) Detach() int64 {
	return u.n.Swap(0)
}
