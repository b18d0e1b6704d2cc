package semaphore

import (
	"context"
	"strconv"

	core "github.com/fairsem/semaphore"
)

// Weighted provides a way to bound concurrent access to a resource.
// The callers can request access with a given weight.
//
// It is golang.org/x/sync/semaphore.Weighted's API on the strict-FIFO core of
// github.com/fairsem/semaphore. All methods are safe for concurrent use.
type Weighted struct {
	// All fields are fixed after NewWeighted.
	size  int64           // the size given to NewWeighted, in caller units
	block int64           // caller units per core unit: 1 unless size > exactSize
	sem   *core.Semaphore // capacity ceil(size/block) <= exactSize
}

// exactSize is the largest size accounted unit for unit. It is half the core's
// range so that no Release, even an over-release of up to the size, can carry
// the core's count past its range: the panic for over-release needs the sum of
// what is free and what is released to be representable.
const exactSize = core.MaxUnits / 2

// NewWeighted creates a new weighted semaphore with the given maximum combined
// weight for concurrent access. It panics if n is negative.
func NewWeighted(n int64) *Weighted {
	if n < 0 {
		panic("semaphore: NewWeighted(" + strconv.FormatInt(n, 10) + "): negative size")
	}
	block := int64(1)
	if n > exactSize {
		block = ceilDiv(n, exactSize)
	}
	return &Weighted{size: n, block: block, sem: core.New(ceilDiv(n, block))}
}

// Acquire acquires the semaphore with a weight of n, blocking until resources
// are available or ctx is done. On success, returns nil. On failure, returns
// ctx.Err() and leaves the semaphore unchanged.
//
// A ctx that is already done fails even when n units are free. Waiters are
// granted in arrival order. A request larger than the size does not queue (it
// would hold back everyone behind it for nothing): it blocks until ctx is done,
// forever with a context that is never done, and returns ctx.Err(). Acquire
// panics if n is negative.
func (s *Weighted) Acquire(ctx context.Context, n int64) error {
	if n > s.size {
		<-ctx.Done()
		return ctx.Err()
	}
	err := s.sem.Acquire(ctx, s.units(n))
	if err == nil {
		return nil
	}
	// The core fails here only because ctx is done: it is never broken, its wait
	// list is unbounded and n fits its capacity. Its error wraps ctx.Err() with
	// context; x/sync callers compare with ==, so they get ctx.Err() itself.
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	return err // not reached; never report success for a failed acquire
}

// TryAcquire acquires the semaphore with a weight of n without blocking.
// On success, returns true. On failure, returns false and leaves the semaphore
// unchanged. It fails when n units are not free, when anyone is waiting (it
// never jumps the queue), and when n is larger than the size. It panics if n is
// negative.
func (s *Weighted) TryAcquire(n int64) bool {
	return n <= s.size && s.sem.TryAcquire(s.units(n))
}

// Release releases the semaphore with a weight of n, and grants the waiters at
// the head of the queue that now fit, in order. It never blocks. It panics,
// changing nothing, if n is negative or if it would release more than is held.
func (s *Weighted) Release(n int64) {
	if n > s.size {
		panic("semaphore: Release(" + strconv.FormatInt(n, 10) + "): released more than held (size " +
			strconv.FormatInt(s.size, 10) + ")")
	}
	s.sem.Release(s.units(n))
}

// units converts n caller units to core units, rounding up to whole blocks.
// Negative n passes through unchanged so that the core panics with its message.
func (s *Weighted) units(n int64) int64 {
	if s.block == 1 || n < 0 {
		return n
	}
	return ceilDiv(n, s.block)
}

// ceilDiv returns ceil(a/b) for a >= 0, b > 0, without overflowing.
func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 {
		q++
	}
	return q
}
