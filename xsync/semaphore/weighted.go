package semaphore

import (
	"context"
	"strconv"
	"sync"

	core "github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/list"
)

// Weighted provides a way to bound concurrent access to a resource.
// The callers can request access with a given weight.
//
// It is golang.org/x/sync/semaphore.Weighted's API on the strict-FIFO core of
// github.com/fairsem/semaphore. All methods are safe for concurrent use. The zero
// value is a semaphore of size 0, as in x/sync: it grants only n = 0.
type Weighted struct {
	// Fixed after NewWeighted.
	size int64           // the size given to NewWeighted, in caller units; 0 in the zero value
	sem  *core.Semaphore // capacity size when size <= core.MaxUnits; nil above, and in the zero value

	// The exact path (exact.go), used when sem is nil. Guarded by mu.
	mu      sync.Mutex
	cur     int64             // units held, in [0, size]
	waiters list.List[waiter] // Acquire calls waiting, in arrival order; none is granted while they wait
}

// NewWeighted creates a new weighted semaphore with the given maximum combined
// weight for concurrent access. It panics if n is negative.
func NewWeighted(n int64) *Weighted {
	if n < 0 {
		panic("semaphore: NewWeighted(" + strconv.FormatInt(n, 10) + "): negative size")
	}
	// Up to MaxUnits the core counts the caller's units one for one (capacity
	// n, every request and release passed unchanged), so any split of acquires
	// and releases sums exactly, and its FIFO wait list and its handling of a
	// cancellation racing a grant are x/sync's rules. Its over-release check
	// compares n with what is out before adding, so even a Release far above the
	// size panics without changing anything. Larger sizes go to the exact path;
	// exact.go says why they cannot use the core.
	if n > core.MaxUnits {
		return &Weighted{size: n}
	}
	return &Weighted{size: n, sem: core.New(n)}
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
	if s.sem == nil {
		return s.acquireExact(ctx, n)
	}
	if n > s.size {
		<-ctx.Done()
		return ctx.Err()
	}
	err := s.sem.Acquire(ctx, n)
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
	if s.sem == nil {
		return s.tryAcquireExact(n)
	}
	return n <= s.size && s.sem.TryAcquire(n)
}

// Release releases the semaphore with a weight of n, and grants the waiters at
// the head of the queue that now fit, in order. It never blocks. It panics,
// changing nothing, if n is negative or if it would release more than is held.
func (s *Weighted) Release(n int64) {
	if s.sem == nil {
		s.releaseExact(n)
		return
	}
	s.sem.Release(n)
}
