package keyed

import "sync/atomic"

// Units owns units of one key, and as many of the set's second level (its
// limit or global semaphore), until it gives them back:
//
//	u, err := set.Acquire(ctx, user, 1)
//	if err != nil {
//		return err
//	}
//	defer u.Release()
//
// Release is idempotent and does nothing on a nil *Units, which is what a
// failed acquire returns, so an early Release and the deferred one are both
// safe. A zero Units holds nothing; AcquireInto fills one the caller provides,
// and may fill it again once it is released. All methods are safe for
// concurrent use, AcquireInto excepted.
type Units struct {
	// n is the units owned plus one while they are owned, and 0 before and
	// after: Release swaps it to 0, so that the units go back once. A plain
	// int64 read and swapped with the atomic functions, written plainly by
	// AcquireInto, which owns u while it runs.
	n   int64
	set *Set
	e   *entry // the key's entry; not used once released (it may serve another key by then)
	key string
}

// Release gives the units back to the second level, then to the key, and
// lets the key become inactive if nobody else uses it. It does so once, however
// many goroutines call it, and does nothing on a nil or zero *Units. Units
// returned to a broken set are dropped, as the core drops them, and still
// counted for Drain.
func (u *Units) Release() {
	if u == nil {
		return
	}
	v := atomic.SwapInt64(&u.n, 0)
	if v == 0 {
		return
	}
	n, e := v-1, u.e
	if lv := e.second; lv != nil {
		giveBack(lv, n)
	}
	e.sem.Release(n)
	if !e.unref() {
		u.set.leaveSlow(e)
	}
}

// Count returns the number of units u owns at each level: n until released, then
// 0; 0 for a nil or zero *Units.
func (u *Units) Count() int64 {
	if u == nil {
		return 0
	}
	return max(atomic.LoadInt64(&u.n)-1, 0)
}

// Key returns the key the units belong to, also once released; "" for a nil or
// zero *Units.
func (u *Units) Key() string {
	if u == nil {
		return ""
	}
	return u.key
}
