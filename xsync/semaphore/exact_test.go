package semaphore_test

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore/xsync/semaphore"
)

// hugeSizes are sizes above the core's MaxUnits (2^44-1), counted by the exact path.
var hugeSizes = []struct {
	name string
	size int64
}{
	{"2^44", 1 << 44},
	{"2^50", 1 << 50},
	{"MaxInt64", math.MaxInt64},
}

func TestHugeSize_OneAcquireReleasedInPiecesIsExact(t *testing.T) {
	for _, tc := range hugeSizes {
		t.Run(tc.name, func(t *testing.T) {
			s := semaphore.NewWeighted(tc.size)
			require.NoError(t, s.Acquire(context.Background(), 2))
			require.NotPanics(t, func() { s.Release(1) })
			require.NotPanics(t, func() { s.Release(1) }, "the second half of what was taken")
			assert.Panics(t, func() { s.Release(1) }, "nothing is held")
			assert.True(t, s.TryAcquire(tc.size), "everything is free again")
		})
	}
}

func TestHugeSize_SeveralAcquiresReleasedAtOnceReturnEverything(t *testing.T) {
	for _, tc := range hugeSizes {
		t.Run(tc.name, func(t *testing.T) {
			s := semaphore.NewWeighted(tc.size)
			for range 3 {
				require.NoError(t, s.Acquire(context.Background(), 1))
			}
			s.Release(3)
			assert.True(t, s.TryAcquire(tc.size), "no unit was lost")
			s.Release(tc.size)
			synctest.Test(t, func(t *testing.T) {
				require.NoError(t, s.Acquire(t.Context(), tc.size), "Acquire(size) is granted too")
			})
		})
	}
}

func TestHugeSize_CountsEveryUnit(t *testing.T) {
	for _, tc := range hugeSizes {
		t.Run(tc.name, func(t *testing.T) {
			s := semaphore.NewWeighted(tc.size)
			require.True(t, s.TryAcquire(tc.size-1))
			assert.False(t, s.TryAcquire(2), "one unit is free, not two")
			assert.True(t, s.TryAcquire(1))
			assert.False(t, s.TryAcquire(1))
			assert.True(t, s.TryAcquire(0), "n = 0 costs nothing")
			s.Release(tc.size - 2)
			assert.False(t, s.TryAcquire(tc.size-1), "size-2 units are free")
			assert.True(t, s.TryAcquire(tc.size-2))
			s.Release(tc.size)
			assert.True(t, s.TryAcquire(tc.size))
		})
	}
}

func TestHugeSize_AcquireSizeExcludesEveryoneElse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.NewWeighted(math.MaxInt64)
		for range 1000 {
			require.True(t, s.TryAcquire(1))
		}
		exclusive := startAcquire(t.Context(), s, math.MaxInt64)
		synctest.Wait()
		_, ok := exclusive.finished()
		require.False(t, ok, "it waits for the shared holders")
		for range 999 {
			s.Release(1)
		}
		synctest.Wait()
		_, ok = exclusive.finished()
		require.False(t, ok, "one unit is still held")
		s.Release(1)
		synctest.Wait()
		err, ok := exclusive.finished()
		require.True(t, ok)
		require.NoError(t, err)
		assert.False(t, s.TryAcquire(1), "the exclusive holder excludes n = 1")
		assert.True(t, s.TryAcquire(0), "n = 0 costs nothing")
		s.Release(math.MaxInt64)
		assert.True(t, s.TryAcquire(math.MaxInt64-1))
		assert.False(t, s.TryAcquire(math.MaxInt64))
		s.Release(math.MaxInt64 - 1)
		assert.Panics(t, func() { s.Release(math.MaxInt64) }, "over-release still panics")
	})
}

func TestHugeSize_LargerRequestsStillRejected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.NewWeighted(math.MaxInt64 - 1)
		assert.False(t, s.TryAcquire(math.MaxInt64))
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		big := startAcquire(ctx, s, math.MaxInt64)
		synctest.Wait()
		assert.True(t, s.TryAcquire(1), "the too-large request does not queue")
		err := <-big.done
		assert.Equal(t, context.DeadlineExceeded, err)
		assert.True(t, s.TryAcquire(math.MaxInt64-2))
	})
}

func TestHugeSize_NegativeValuesPanic(t *testing.T) {
	s := semaphore.NewWeighted(math.MaxInt64)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.PanicsWithValue(t, "semaphore: Weighted of size 9223372036854775807: Acquire(-1): negative weight",
		func() { _ = s.Acquire(ctx, -1) }, "even with a done context")
	assert.PanicsWithValue(t, "semaphore: Weighted of size 9223372036854775807: TryAcquire(-2): negative weight",
		func() { s.TryAcquire(-2) })
	assert.PanicsWithValue(t, "semaphore: Weighted of size 9223372036854775807: Release(-3): negative weight",
		func() { s.Release(-3) })
	assert.True(t, s.TryAcquire(math.MaxInt64), "the panics changed nothing")
}

func TestHugeSize_OverReleasePanicsAndChangesNothing(t *testing.T) {
	s := semaphore.NewWeighted(1 << 50)
	require.True(t, s.TryAcquire(5))
	assert.PanicsWithValue(t, "semaphore: Weighted of size 1125899906842624: Release(6): released more than held (5 held)",
		func() { s.Release(6) })
	assert.Panics(t, func() { s.Release(math.MaxInt64) })
	assert.False(t, s.TryAcquire(1<<50-4), "the 5 units are still held")
	s.Release(5)
	assert.True(t, s.TryAcquire(1<<50))
}

// The queue rules of the exact path, in units of a quarter of the size.
const quarter = math.MaxInt64 / 4

func TestHugeSize_GrantsInArrivalOrderAndHoldsBackBehindALargeHead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.NewWeighted(math.MaxInt64)
		require.True(t, s.TryAcquire(3*quarter))
		big := startAcquire(t.Context(), s, 2*quarter)
		synctest.Wait()
		small := startAcquire(t.Context(), s, 1)
		synctest.Wait()
		assert.False(t, s.TryAcquire(1), "a waiter is ahead")
		_, ok := small.finished()
		assert.False(t, ok, "the small request fits, but the large one is ahead")

		s.Release(quarter)
		synctest.Wait()
		err, ok := big.finished()
		require.True(t, ok)
		require.NoError(t, err)
		err, ok = small.finished()
		require.True(t, ok, "granted by the same Release, behind the head")
		require.NoError(t, err)
		s.Release(4*quarter + 1)
		assert.True(t, s.TryAcquire(math.MaxInt64))
	})
}

func TestHugeSize_CancelledHeadLetsTheWaitersBehindIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.NewWeighted(math.MaxInt64)
		require.True(t, s.TryAcquire(2*quarter))
		head := startAcquire(t.Context(), s, 3*quarter)
		synctest.Wait()
		middle := startAcquire(t.Context(), s, 3*quarter)
		synctest.Wait()
		last := startAcquire(t.Context(), s, quarter)
		synctest.Wait()

		middle.cancel()
		synctest.Wait()
		_, ok := last.finished()
		assert.False(t, ok, "the head still holds it back")
		head.cancel()
		synctest.Wait()
		err, ok := last.finished()
		require.True(t, ok)
		assert.NoError(t, err)
		for _, a := range []*acquirer{head, middle} {
			err, _ := a.finished()
			assert.Equal(t, context.Canceled, err)
		}
		s.Release(3 * quarter)
		assert.True(t, s.TryAcquire(math.MaxInt64))
	})
}

// The same deliberate difference from x/sync as on the core's path.
func TestHugeSize_CancelledHeadGrantsZeroWaitersEvenWithNoUnitFree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.NewWeighted(math.MaxInt64)
		require.True(t, s.TryAcquire(math.MaxInt64))
		head := startAcquire(t.Context(), s, 1)
		synctest.Wait()
		zero := startAcquire(t.Context(), s, 0)
		synctest.Wait()
		head.cancel()
		synctest.Wait()
		err, ok := zero.finished()
		require.True(t, ok)
		assert.NoError(t, err)
		s.Release(math.MaxInt64)
	})
}

// The context ends before the waiter runs, and a Release grants it in between:
// the call fails and the units come back.
func TestHugeSize_CancelledBeforeTheGrantFailsAndHandsTheUnitsOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.NewWeighted(math.MaxInt64)
		require.True(t, s.TryAcquire(quarter))
		a := startAcquire(t.Context(), s, math.MaxInt64)
		synctest.Wait()
		behind := startAcquire(t.Context(), s, 1)
		synctest.Wait()
		a.cancel()
		s.Release(quarter) // before the waiter has run: the grant races the cancellation
		synctest.Wait()
		err, ok := a.finished()
		require.True(t, ok)
		assert.Equal(t, context.Canceled, err)
		err, ok = behind.finished()
		require.True(t, ok, "the units were handed on")
		assert.NoError(t, err)
		s.Release(1)
		assert.True(t, s.TryAcquire(math.MaxInt64), "the units handed to the cancelled waiter came back")
	})
}

func TestHugeSize_DoneContextFailsEvenWhenUnitsAreFree(t *testing.T) {
	s := semaphore.NewWeighted(math.MaxInt64)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.Equal(t, context.Canceled, s.Acquire(ctx, 1))
	assert.Equal(t, context.Canceled, s.Acquire(ctx, 0))
	assert.True(t, s.TryAcquire(math.MaxInt64), "the failed calls took nothing")
}

func TestZeroValue_IsASemaphoreOfSizeZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s semaphore.Weighted
		assert.True(t, s.TryAcquire(0))
		assert.False(t, s.TryAcquire(1))
		require.NoError(t, s.Acquire(t.Context(), 0))
		s.Release(0)
		assert.Panics(t, func() { s.Release(1) }, "nothing is held")

		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		one := startAcquire(ctx, &s, 1)
		synctest.Wait()
		_, ok := one.finished()
		assert.False(t, ok, "n = 1 is larger than the size: it waits for its context")
		require.NoError(t, s.Acquire(t.Context(), 0), "without holding anyone back")
		assert.Equal(t, context.DeadlineExceeded, <-one.done)
	})
}
