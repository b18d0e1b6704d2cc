package semaphore_test

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fairsem/semaphore/xsync/semaphore"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// acquirer runs Acquire on its own goroutine and reports the result on done.
type acquirer struct {
	cancel context.CancelFunc
	done   chan error
}

func startAcquire(ctx context.Context, s weighted, n int64) *acquirer {
	ctx, cancel := context.WithCancel(ctx)
	a := &acquirer{cancel: cancel, done: make(chan error, 1)}
	go func() { a.done <- s.Acquire(ctx, n) }()
	return a
}

// finished reports whether the acquire returned, and with what. Call it after
// synctest.Wait, when every goroutine of the bubble is blocked or gone.
func (a *acquirer) finished() (error, bool) {
	select {
	case err := <-a.done:
		a.done <- err // keep it for later calls
		return err, true
	default:
		return nil, false
	}
}

func TestNewWeighted_StartsWithEverythingFree(t *testing.T) {
	s := semaphore.NewWeighted(3)
	assert.True(t, s.TryAcquire(3))
	assert.False(t, s.TryAcquire(1))
	s.Release(3)
	assert.True(t, semaphore.NewWeighted(0).TryAcquire(0), "size 0 admits n = 0")
	assert.False(t, semaphore.NewWeighted(0).TryAcquire(1))
}

func TestNegativeValues_Panic(t *testing.T) {
	s := semaphore.NewWeighted(2)
	assert.PanicsWithValue(t, "semaphore: NewWeighted(-1): negative size", func() { semaphore.NewWeighted(-1) })
	assert.Panics(t, func() { _ = s.Acquire(context.Background(), -1) })
	assert.Panics(t, func() { s.TryAcquire(-1) })
	assert.Panics(t, func() { s.Release(-1) })
	assert.True(t, s.TryAcquire(2), "the panics changed nothing")
}

// x/sync: TestWeightedPanic.
func TestRelease_PanicsOnOverRelease(t *testing.T) {
	s := semaphore.NewWeighted(1)
	assert.Panics(t, func() { s.Release(1) }, "release of an unacquired semaphore")

	require.NoError(t, s.Acquire(context.Background(), 1))
	assert.Panics(t, func() { s.Release(2) }, "release of more than held")
}

func TestRelease_PanicLeavesTheSemaphoreUsable(t *testing.T) {
	s := semaphore.NewWeighted(2)
	require.True(t, s.TryAcquire(1))
	require.Panics(t, func() { s.Release(2) })
	assert.False(t, s.TryAcquire(2), "the unit still held is still held")
	s.Release(1)
	assert.True(t, s.TryAcquire(2))
}

// x/sync: TestWeightedTryAcquire.
func TestTryAcquire_SucceedsOnlyWhenUnitsAreFree(t *testing.T) {
	ctx := context.Background()
	s := semaphore.NewWeighted(2)
	require.NoError(t, s.Acquire(ctx, 1))
	assert.True(t, s.TryAcquire(1))
	assert.False(t, s.TryAcquire(1))
	s.Release(2)
	assert.True(t, s.TryAcquire(1))
	require.NoError(t, s.Acquire(ctx, 1))
	assert.False(t, s.TryAcquire(1))
}

func TestTryAcquire_LargerThanSizeFails(t *testing.T) {
	s := semaphore.NewWeighted(2)
	assert.False(t, s.TryAcquire(3))
	assert.True(t, s.TryAcquire(2), "the failed try took nothing")
}

func TestTryAcquire_NeverJumpsTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.NewWeighted(3)
		require.True(t, s.TryAcquire(2))
		big := startAcquire(t.Context(), s, 3)
		synctest.Wait()
		assert.False(t, s.TryAcquire(1), "one unit is free but a waiter is ahead")
		s.Release(2)
		synctest.Wait()
		err, ok := big.finished()
		require.True(t, ok)
		assert.NoError(t, err)
		s.Release(3)
	})
}

// x/sync: TestWeightedAcquire, without its timing: a context that is done
// before the units are free fails, one that is not succeeds.
func TestAcquire_SucceedsOrFailsWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.NewWeighted(2)
		try := func(n int64) bool {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
			defer cancel()
			return s.Acquire(ctx, n) == nil
		}
		require.NoError(t, s.Acquire(t.Context(), 1))
		assert.True(t, try(1))
		assert.False(t, try(1))
		s.Release(2)
		assert.True(t, try(1))
		require.NoError(t, s.Acquire(t.Context(), 1))
		assert.False(t, try(1))
	})
}

func TestAcquire_ReturnsExactlyCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.NewWeighted(1)
		require.True(t, s.TryAcquire(1))
		a := startAcquire(t.Context(), s, 1)
		synctest.Wait()
		a.cancel()
		synctest.Wait()
		err, ok := a.finished()
		require.True(t, ok)
		assert.True(t, err == context.Canceled, "got %v", err) //nolint:errorlint // == is the contract
		s.Release(1)
	})
}

func TestAcquire_ReturnsExactlyDeadlineExceeded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.NewWeighted(1)
		require.True(t, s.TryAcquire(1))
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		err := s.Acquire(ctx, 1)
		assert.True(t, err == context.DeadlineExceeded, "got %v", err) //nolint:errorlint // == is the contract
		s.Release(1)
		assert.True(t, s.TryAcquire(1), "the timed-out waiter took nothing")
	})
}

func TestAcquire_ReturnsCtxErrNotItsCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.NewWeighted(1)
		require.True(t, s.TryAcquire(1))
		ctx, cancel := context.WithCancelCause(t.Context())
		done := make(chan error, 1)
		go func() { done <- s.Acquire(ctx, 1) }()
		synctest.Wait()
		cancel(assert.AnError)
		assert.True(t, <-done == context.Canceled) //nolint:errorlint // == is the contract
	})
}

// x/sync: the second half of TestWeightedAcquireCanceled.
func TestAcquire_DoneContextFailsEvenWhenUnitsAreFree(t *testing.T) {
	s := semaphore.NewWeighted(2)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.Equal(t, context.Canceled, s.Acquire(ctx, 1))
	assert.Equal(t, context.Canceled, s.Acquire(ctx, 0))
	assert.Equal(t, context.Canceled, s.Acquire(ctx, 3), "too large and done")
	assert.True(t, s.TryAcquire(2), "the failed calls took nothing")
}

// x/sync: TestWeightedAcquireCanceled (go.dev/issue/63615). The context ends
// before the units are released: the waiter must fail, and the units must all
// come back.
func TestAcquire_CancelledBeforeTheGrantFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.NewWeighted(2)
		require.True(t, s.TryAcquire(1))
		a := startAcquire(t.Context(), s, 2)
		synctest.Wait()
		a.cancel()
		s.Release(1) // before the waiter has run: the grant races the cancellation
		synctest.Wait()
		err, ok := a.finished()
		require.True(t, ok)
		assert.Equal(t, context.Canceled, err)
		assert.True(t, s.TryAcquire(2), "the units handed to the cancelled waiter came back")
	})
}

// x/sync: TestWeightedDoesntBlockIfTooBig.
func TestAcquire_LargerThanSizeWaitsForCtxWithoutBlockingOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.NewWeighted(2)
		big := startAcquire(t.Context(), s, 3)
		synctest.Wait()
		_, ok := big.finished()
		require.False(t, ok, "a request larger than the size blocks")

		assert.True(t, s.TryAcquire(1), "it does not queue, so TryAcquire is not held back")
		require.NoError(t, s.Acquire(t.Context(), 1))
		small := startAcquire(t.Context(), s, 2)
		synctest.Wait()
		s.Release(2)
		synctest.Wait()
		err, ok := small.finished()
		require.True(t, ok)
		require.NoError(t, err, "a later, fitting waiter is granted")
		s.Release(2)

		big.cancel()
		synctest.Wait()
		err, ok = big.finished()
		require.True(t, ok)
		assert.Equal(t, context.Canceled, err)
	})
}

func TestAcquire_LargerThanSizeReturnsDeadlineExceeded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.NewWeighted(2)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		start := time.Now()
		assert.Equal(t, context.DeadlineExceeded, s.Acquire(ctx, 3))
		assert.Equal(t, time.Minute, time.Since(start), "it waited for the deadline")
	})
}

// x/sync: TestLargeAcquireDoesntStarve, as a deterministic sequence.
func TestAcquire_LargeRequestAtTheHeadHoldsBackSmallerOnes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.NewWeighted(4)
		require.True(t, s.TryAcquire(3))
		big := startAcquire(t.Context(), s, 4)
		synctest.Wait()
		small := startAcquire(t.Context(), s, 1)
		synctest.Wait()
		_, ok := small.finished()
		assert.False(t, ok, "one unit is free, but the large waiter is ahead")

		s.Release(3)
		synctest.Wait()
		err, ok := big.finished()
		require.True(t, ok)
		require.NoError(t, err)
		_, ok = small.finished()
		assert.False(t, ok)

		s.Release(4)
		synctest.Wait()
		err, ok = small.finished()
		require.True(t, ok)
		require.NoError(t, err)
		s.Release(1)
	})
}

// x/sync: TestAllocCancelDoesntStarve.
func TestAcquire_CancelledHeadLetsTheWaitersBehindIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.NewWeighted(10)
		require.NoError(t, s.Acquire(t.Context(), 1))
		big := startAcquire(t.Context(), s, 10)
		synctest.Wait()
		small := startAcquire(t.Context(), s, 1)
		synctest.Wait()
		_, ok := small.finished()
		require.False(t, ok)

		big.cancel()
		synctest.Wait()
		err, ok := small.finished()
		require.True(t, ok)
		assert.NoError(t, err, "the cancelled head let the small waiter in")
		err, _ = big.finished()
		assert.Equal(t, context.Canceled, err)
		s.Release(2)
	})
}

func TestAcquire_GrantsInArrivalOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.NewWeighted(1)
		require.True(t, s.TryAcquire(1))
		var order []int
		done := make(chan int)
		for i := range 5 {
			go func() {
				_ = s.Acquire(t.Context(), 1)
				done <- i
			}()
			synctest.Wait() // queued before the next one starts
		}
		for range 5 {
			s.Release(1)
			order = append(order, <-done)
		}
		s.Release(1)
		assert.Equal(t, []int{0, 1, 2, 3, 4}, order)
	})
}

func TestAcquire_ZeroWaitsBehindWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.NewWeighted(2)
		require.NoError(t, s.Acquire(t.Context(), 0), "n = 0 with nobody waiting is granted at once")
		require.True(t, s.TryAcquire(2))
		big := startAcquire(t.Context(), s, 1)
		synctest.Wait()
		zero := startAcquire(t.Context(), s, 0)
		synctest.Wait()
		_, ok := zero.finished()
		assert.False(t, ok, "n = 0 queues behind a waiter, as in x/sync")
		s.Release(1)
		synctest.Wait()
		_, ok = big.finished()
		assert.True(t, ok)
		_, ok = zero.finished()
		assert.True(t, ok)
		s.Release(2)
	})
}

// A deliberate difference from x/sync, which leaves the n = 0 waiter blocked
// until the next Release because no unit is free when the head leaves.
func TestAcquire_CancelledHeadGrantsZeroWaitersEvenWithNoUnitFree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.NewWeighted(2)
		require.True(t, s.TryAcquire(2))
		head := startAcquire(t.Context(), s, 1)
		synctest.Wait()
		zero := startAcquire(t.Context(), s, 0)
		synctest.Wait()
		head.cancel()
		synctest.Wait()
		err, ok := zero.finished()
		require.True(t, ok, "the n = 0 waiter fits once the head has left")
		assert.NoError(t, err)
		s.Release(2)
	})
}

// Releasing far more than the size must panic, not carry the core's count past
// its range and lose the units.
func TestRelease_FarMoreThanTheSizePanicsAndChangesNothing(t *testing.T) {
	const size = 1<<44 - 1 // the largest size the core counts
	s := semaphore.NewWeighted(size)
	require.True(t, s.TryAcquire(1))
	assert.Contains(t, panicValue(func() { s.Release(1<<45 - 1) }),
		"Release(35184372088831): released more than held (1 out of a capacity of 17592186044415)")
	assert.Contains(t, panicValue(func() { s.Release(math.MaxInt64) }), "released more than held")
	s.Release(1)
	assert.True(t, s.TryAcquire(size), "every unit is still free")
}

// panicValue calls f and returns what it panicked with, as a string; "" if it
// did not panic.
func panicValue(f func()) (v string) {
	defer func() {
		if r := recover(); r != nil {
			v = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}

// x/sync's contract: a waiter whose context ends returns ctx.Err() and leaves
// the semaphore as if it had never been called, also when a Release granted it
// first and its context ended before its goroutine ran: it must not return nil,
// and the units it was granted go on to the waiter behind it. One processor
// keeps the waiter from running between the grant and the cancellation, and the
// scene is played many times, since which of the two the waiter sees first is
// the runtime's choice. Sizes on the core's path and above its range.
func TestAcquire_GrantedThenCancelledBeforeItRunsFailsAndHandsTheUnitsOn(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, size := range []int64{4, 1 << 62} {
		for round := range 64 {
			synctest.Test(t, func(t *testing.T) {
				s := semaphore.NewWeighted(size)
				require.True(t, s.TryAcquire(size))
				a := startAcquire(t.Context(), s, size)
				synctest.Wait()
				behind := startAcquire(t.Context(), s, 1)
				synctest.Wait()
				s.Release(size) // grants a, which has not run since
				a.cancel()      // and a's context ends before it does
				synctest.Wait()
				err, ok := a.finished()
				require.True(t, ok)
				require.Equal(t, context.Canceled, err, "size %d, round %d: a cancelled call fails, granted or not", size, round)
				err, ok = behind.finished()
				require.True(t, ok, "size %d, round %d: the units a was granted went on to the waiter behind", size, round)
				require.NoError(t, err)
				s.Release(1)
				require.True(t, s.TryAcquire(size), "size %d, round %d: every unit came back", size, round)
			})
		}
	}
}
