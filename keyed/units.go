package keyed

import "sync/atomic"

// Units owns units of one key, and as many of the set's global semaphore, until
// it gives them back:
//
//	u, err := set.Acquire(ctx, user, 1)
//	if err != nil {
//		return err
//	}
//	defer u.Release()
//
// Release is idempotent and does nothing on a nil *Units, which is what a
// failed acquire returns, so an early Release and the deferred one are both
// safe. All methods are safe for concurrent use.
type Units struct {
	set      *Set   // fixed
	e        *entry // fixed; not to be used once released: the entry may serve another key
	key      string // fixed
	n        int64  // fixed
	released atomic.Bool
	shard    uint8 // fixed: the index of e's shard
}

// Release gives the units back to the global level, then to the key, and
// lets the key become inactive if nobody else uses it. It does so once, however
// many goroutines call it, and does nothing on a nil *Units. Units returned to a
// broken set are dropped, as the core drops them, and still counted for Drain.
func (u *Units) Release() {
	if u == nil || !u.released.CompareAndSwap(false, true) {
		return
	}
	s, e := u.set, u.e
	switch {
	case s.limit != nil:
		s.giveBack(e, u.n)
	case s.global != nil:
		s.global.Release(u.n)
		e.held.Add(-u.n)
	default:
		e.held.Add(-u.n)
	}
	e.sem.Release(u.n)
	s.leave(e, u.shard)
}

// Count returns the number of units u owns at each level: n until released, then
// 0; 0 for a nil *Units.
func (u *Units) Count() int64 {
	if u == nil || u.released.Load() {
		return 0
	}
	return u.n
}

// Key returns the key the units belong to; "" for a nil *Units.
func (u *Units) Key() string {
	if u == nil {
		return ""
	}
	return u.key
}
