package semaphore_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
)

// Release: grants waiters in FIFO order as far as they fit, on the caller's goroutine; releasing more than is held panics.

func TestRelease_GrantsWaitersInOrderAsFarAsTheyFit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(6)
		require.NoError(t, s.Acquire(context.Background(), 6))
		calls := queue(context.Background(), s, 2, 3, 2, 1)
		s.Release(5)
		synctest.Wait()
		assert.Equal(t, map[int]error{0: nil, 1: nil}, finished(calls), "2 and 3 fit in 5; the next 2 does not")
		s.Release(3)
		synctest.Wait()
		assert.Equal(t, map[int]error{2: nil, 3: nil}, finished(calls))
	})
}

func TestRelease_GrantsOnTheCallersGoroutineWithoutSpawning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(100)
		require.NoError(t, s.Acquire(context.Background(), 100))
		hold := make(chan struct{})
		for range 100 {
			go func() {
				if s.Acquire(context.Background(), 1) == nil {
					<-hold // waiter code that never finishes until told
					s.Release(1)
				}
			}()
		}
		synctest.Wait()
		before := runtime.NumGoroutine()
		s.Release(100) // must return although no waiter's code completes
		assert.Equal(t, 0, s.Waiters())
		assert.Equal(t, int64(0), s.Available(), "every unit was handed to a waiter")
		assert.LessOrEqual(t, runtime.NumGoroutine(), before, "Release started no goroutine")
		close(hold)
	})
}

// A waiter's units are taken before it leaves the list: clearing the "someone
// waits" flag with the last waiter must not let a spinning TryAcquire take the
// units granted to it. Units held never exceed the capacity.
func TestRelease_GrantToTheLastWaiterIsNeverOvertaken(t *testing.T) {
	rounds := 3000
	if testing.Short() {
		rounds = 500
	}
	s := semaphore.New(1)
	var held atomic.Int64
	hold := func() {
		if h := held.Add(1); h > 1 {
			panic(fmt.Sprintf("%d units held of a capacity of 1", h))
		}
	}
	var stop atomic.Bool
	var spinner sync.WaitGroup
	spinner.Go(func() {
		for !stop.Load() {
			if s.TryAcquire(1) {
				hold()
				for range 20 { // hold long enough for a waiter granted meanwhile to see it
					runtime.Gosched()
				}
				held.Add(-1)
				s.Release(1)
			}
		}
	})
	for range rounds {
		require.NoError(t, s.Acquire(context.Background(), 1))
		hold()
		granted := make(chan struct{})
		go func() {
			require.NoError(t, s.Acquire(context.Background(), 1))
			hold()
			close(granted)
		}()
		for s.Waiters() != 1 {
			runtime.Gosched()
		}
		held.Add(-1)
		s.Release(1) // to the one waiter, while the spinners try to take it
		<-granted
		held.Add(-1)
		s.Release(1)
	}
	stop.Store(true)
	spinner.Wait()
	assert.Equal(t, int64(1), s.Available())
}

func TestRelease_NegativePanics(t *testing.T) {
	s := semaphore.New(1, semaphore.WithName("db"))
	requirePanic(t, `semaphore "db": Release(-1): negative units`, func() { s.Release(-1) })
}

func TestRelease_MoreThanHeldPanics(t *testing.T) {
	s := semaphore.New(2, semaphore.WithName("db"))
	require.NoError(t, s.Acquire(context.Background(), 1))
	requirePanic(t, `semaphore "db": Release(2): released more than held`, func() { s.Release(2) })
	assert.Equal(t, int64(1), s.Available(), "the failed release changed nothing")
	requirePanic(t, "released more than held", func() { s.Release(semaphore.MaxUnits + 1) })
	s.Release(1)
	assert.Equal(t, int64(2), s.Available())
}

// Releasing past the capacity panics even when the sum would not fit in the state
// word, and the refused release changes nothing.
func TestRelease_PastTheRangePanicsAndChangesNothing(t *testing.T) {
	full := semaphore.New(semaphore.MaxUnits)
	requirePanic(t, "released more than held", func() { full.Release(1) })
	assert.Equal(t, int64(semaphore.MaxUnits), full.Available())
	assert.True(t, full.TryAcquire(semaphore.MaxUnits), "the refused release left the count whole")

	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(10)
		require.NoError(t, s.Acquire(context.Background(), 10))
		calls := queue(context.Background(), s, 3)
		requirePanic(t, "released more than held", func() { s.Release(semaphore.MaxUnits) })
		requirePanic(t, "released more than held", func() { s.Release(semaphore.MaxUnits + 1) })
		assert.Equal(t, int64(0), s.Available())
		s.Release(3)
		synctest.Wait()
		assert.Equal(t, map[int]error{0: nil}, finished(calls), "the queued waiter is still granted")
		s.Release(10)
		assert.Equal(t, int64(10), s.Available())
	})
}

// A lock-free acquirer taking the surplus of an over-release between its check and
// its effect must not hide it: the check and the change are one atomic step.
func TestRelease_OverReleaseCaughtWhileTryAcquireTakesTheSurplus(t *testing.T) {
	missed := 0
	for range 100 {
		s := semaphore.New(1)
		require.True(t, s.TryAcquire(1))
		var stop, spinning atomic.Bool
		var wg sync.WaitGroup
		wg.Go(func() {
			spinning.Store(true)
			for !stop.Load() && !s.TryAcquire(1) {
			}
		})
		wg.Go(func() { // keeps the lock busy, as any Stats reader may
			for !stop.Load() {
				_ = s.Stats()
			}
		})
		for !spinning.Load() {
			runtime.Gosched()
		}
		if _, ok := panics(func() { s.Release(2) }); !ok {
			missed++
		}
		stop.Store(true)
		wg.Wait()
	}
	assert.Zero(t, missed, "over-releases that did not panic")
}

// After Break, Release never panics and Available stays 0, but every unit it
// returns is counted for Drain, up to the capacity.
func TestRelease_AfterBreakCountsForDrain(t *testing.T) {
	s := semaphore.New(2, semaphore.WithName("db"))
	require.NoError(t, s.Acquire(context.Background(), 2))
	s.Break(nil)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	require.EqualError(t, s.Drain(done), `semaphore "db": drain: 2 units still out: context canceled`)
	assert.NotPanics(t, func() { s.Release(1) })
	assert.Equal(t, int64(0), s.Available())
	require.EqualError(t, s.Drain(done), `semaphore "db": drain: 1 unit still out: context canceled`,
		"the released unit is counted")
	assert.NotPanics(t, func() { s.Release(1); s.Release(5) }, "no over-release check: the count stops at the capacity")
	assert.Equal(t, int64(0), s.Available())
	assert.NoError(t, s.Drain(done), "every unit is back")
}

// Consume: takes units at once, may drive availability below zero, ignores waiters and never blocks.

func TestConsume_TakesUnitsAtOnceAndMayGoNegative(t *testing.T) {
	s := semaphore.New(4)
	s.Consume(3)
	assert.Equal(t, int64(1), s.Available())
	s.Consume(3)
	assert.Equal(t, int64(0), s.Available(), "Available never reports a negative count")
	assert.False(t, s.TryAcquire(0), "-2 units available: not even 0 fits")
	s.Release(2)
	assert.Equal(t, int64(0), s.Available())
	s.Release(4)
	assert.Equal(t, int64(4), s.Available())
}

func TestConsume_IgnoresWaitersAndNeverBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(2)
		require.NoError(t, s.Acquire(context.Background(), 1))
		calls := queue(context.Background(), s, 2)
		s.Consume(1) // would not be granted by FIFO, is taken anyway
		assert.Equal(t, int64(0), s.Available())
		assert.Equal(t, 1, s.Waiters())
		s.Release(2)
		synctest.Wait()
		assert.Equal(t, map[int]error{0: nil}, finished(calls))
	})
}

// Consume panics, changing nothing, on negative units, on more than MaxUnits, and
// on a debt past MaxUnits, which is allowed exactly at the limit.
func TestConsume_OutOfRangePanicsAndChangesNothing(t *testing.T) {
	s := semaphore.New(0, semaphore.WithName("mem"))
	requirePanic(t, `semaphore "mem": Consume(-1): negative units`, func() { s.Consume(-1) })
	assert.True(t, s.TryAcquire(0), "the refused call took nothing")
	s.Consume(semaphore.MaxUnits) // exactly at the limit: allowed
	requirePanic(t, `semaphore "mem": Consume(2): units in debt would exceed`, func() { s.Consume(2) })
	requirePanic(t, "units in debt would exceed", func() { s.Consume(1) })
	assert.Equal(t, int64(0), s.Available())
	assert.False(t, s.TryAcquire(semaphore.MaxUnits), "a capacity-0 semaphore in debt grants nothing")
	assert.False(t, s.TryAcquire(0), "not even 0 units while in debt")
	s.Release(semaphore.MaxUnits)
	assert.True(t, s.TryAcquire(0))
	requirePanic(t, "more than", func() { s.Consume(semaphore.MaxUnits + 1) })
	requirePanic(t, "released more than held", func() { s.Release(1) })
}

// After Break, Consume changes nothing visible (Available stays 0), but the units
// it takes are out until released, and Drain waits for them.
func TestConsume_AfterBreakCountsForDrain(t *testing.T) {
	s := semaphore.New(2, semaphore.WithName("mem"))
	s.Break(nil)
	require.NoError(t, s.Drain(context.Background()), "nothing out yet")
	s.Consume(1)
	assert.Equal(t, int64(0), s.Available())
	done, cancel := context.WithCancel(context.Background())
	cancel()
	require.EqualError(t, s.Drain(done), `semaphore "mem": drain: 1 unit still out: context canceled`)
	s.Release(1)
	assert.NoError(t, s.Drain(done), "the consumed unit is back")
}

// Resize: growing grants waiters that now fit; shrinking never revokes holders and fails waiters larger than the new capacity.

func TestResize_GrowingGrantsWaitersThatNowFit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(2)
		require.NoError(t, s.Acquire(context.Background(), 2))
		calls := queue(context.Background(), s, 1, 2)
		s.Resize(3)
		synctest.Wait()
		assert.Equal(t, map[int]error{0: nil}, finished(calls))
		s.Resize(5)
		synctest.Wait()
		assert.Equal(t, map[int]error{1: nil}, finished(calls))
		assert.Equal(t, int64(0), s.Available())
		s.Release(5)
		assert.Equal(t, int64(5), s.Available())
	})
}

func TestResize_ShrinkingNeverRevokesHolders(t *testing.T) {
	s := semaphore.New(10)
	require.NoError(t, s.Acquire(context.Background(), 8))
	s.Resize(4)
	assert.Equal(t, int64(4), s.Capacity())
	assert.Equal(t, int64(0), s.Available(), "8 held of 4: nothing available until enough are released")
	s.Release(5)
	assert.Equal(t, int64(1), s.Available())
	s.Release(3)
	assert.Equal(t, int64(4), s.Available())
	requirePanic(t, "released more than held", func() { s.Release(1) })
}

func TestResize_FailsWaitersLargerThanTheNewCapacity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(5, semaphore.WithName("r"))
		require.NoError(t, s.Acquire(context.Background(), 4))
		calls := queue(context.Background(), s, 5, 3, 2)
		s.Resize(3)
		synctest.Wait()
		got := finished(calls)
		require.Len(t, got, 1)
		assert.ErrorIs(t, got[0], semaphore.ErrTooLarge)
		assert.Contains(t, got[0].Error(), "more than the capacity, which was reduced while waiting")
		s.Release(4)
		synctest.Wait()
		assert.Equal(t, map[int]error{1: nil}, finished(calls), "3 fits the new capacity; 2 waits behind it")
		s.Release(3)
		synctest.Wait()
		assert.Equal(t, map[int]error{2: nil}, finished(calls))
		s.Release(2)
	})
}

// A waiter refused by a shrinking Resize reports what decided it, not a capacity
// read later: a Resize that grows the semaphore again before the waiter builds its
// error does not turn the message into "reduced to" a capacity that would fit.
func TestResize_RefusalMessageDoesNotReadALaterCapacity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(5, semaphore.WithName("r"))
		require.NoError(t, s.Acquire(context.Background(), 5))
		calls := queue(context.Background(), s, 5)
		s.Resize(3)
		s.Resize(10) // before the refused waiter runs
		synctest.Wait()
		got := finished(calls)
		require.Len(t, got, 1)
		require.ErrorIs(t, got[0], semaphore.ErrTooLarge)
		assert.NotContains(t, got[0].Error(), "reduced to 10")
		assert.Equal(t, `semaphore "r": acquire 5 units: more than the capacity, which was reduced while waiting`, got[0].Error())
		s.Release(5)
	})
}

// A Resize that refuses a plain waiter behind other plain waiters wakes that one,
// at once, and the ones ahead of it stay queued and are granted in order later.
func TestResize_RefusingAPlainWaiterOutOfOrderKeepsTheOthersInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(5)
		require.True(t, s.TryAcquire(5))
		calls := queue(context.Background(), s, 1, 1, 5, 1, 1)
		s.Resize(4)
		synctest.Wait()
		got := finished(calls)
		require.Len(t, got, 1, "only the refused waiter returns")
		assert.ErrorIs(t, got[2], semaphore.ErrTooLarge)
		assert.Equal(t, 4, s.Waiters())
		s.Release(1) // 5 held of 4: this one only pays the debt
		synctest.Wait()
		assert.Empty(t, finished(calls))
		for _, i := range []int{0, 1, 3, 4} {
			s.Release(1)
			synctest.Wait()
			assert.Equal(t, map[int]error{i: nil}, finished(calls), "one release grants exactly the next in line")
		}
		s.Release(4)
		assert.Equal(t, int64(4), s.Available())
		st := s.Stats()
		assert.Equal(t, uint64(5), st.Queued)
		assert.Equal(t, uint64(5), st.Acquired, "the first TryAcquire and four waiters")
	})
}

// Resizes that keep refusing plain waiters from the middle of the list, while
// holders release and others queue, lose no wakeup and no unit.
func TestResize_RefusalStormLosesNoWakeup(t *testing.T) {
	s := semaphore.New(8)
	stop := make(chan struct{})
	resizer := make(chan struct{})
	go func() {
		defer close(resizer)
		for i := 0; ; i++ {
			select {
			case <-stop:
				s.Resize(8)
				return
			default:
				s.Resize(int64(4 + i%5))
				runtime.Gosched()
			}
		}
	}()
	var wg sync.WaitGroup
	for g := range 12 {
		wg.Go(func() {
			for i := range 1000 {
				n := int64(1 + (g+i)%8)
				if s.Acquire(context.Background(), n) == nil {
					runtime.Gosched()
					s.Release(n)
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	<-resizer
	assert.Equal(t, int64(8), s.Available())
	assert.Equal(t, 0, s.Waiters())
}

// Resize panics on a capacity out of range, and does nothing on a broken semaphore.
func TestResize_OutOfRangePanicsAndBrokenDoesNothing(t *testing.T) {
	requirePanic(t, "Resize(-1)", func() { semaphore.New(1).Resize(-1) })
	requirePanic(t, "capacity must be between 0 and", func() { semaphore.New(1).Resize(semaphore.MaxUnits + 1) })
	s := semaphore.New(2)
	s.Break(nil)
	s.Resize(10)
	assert.Equal(t, int64(2), s.Capacity(), "a broken semaphore keeps its capacity")
	assert.Equal(t, int64(0), s.Available())
}

// A shrinking Resize over a deep debt leaves a debt, not a wrapped count.
func TestResize_OverADeepDebtDoesNotWrap(t *testing.T) {
	s := semaphore.New(10)
	require.True(t, s.TryAcquire(10))
	s.Consume(semaphore.MaxUnits)
	s.Resize(0)
	assert.Equal(t, int64(0), s.Available())
	assert.False(t, s.TryAcquire(1))
	assert.False(t, s.TryAcquire(0))
	s.Resize(semaphore.MaxUnits) // the largest capacity over the deepest debt
	assert.Equal(t, int64(0), s.Available())
	s.Resize(0)
	s.Release(semaphore.MaxUnits)
	s.Release(10)
	assert.Equal(t, int64(0), s.Available(), "everything back on a capacity of 0")
	requirePanic(t, "released more than held", func() { s.Release(1) })
	s.Resize(10)
	assert.Equal(t, int64(10), s.Available())
}

// Resize changes the units while lock-free acquirers keep counting their grants in
// the same word. However the two interleave (the grant counter passing its fold
// point included), no unit is created or lost: after everyone releases, Available
// equals the capacity, and the grant count is exact.
func TestResize_RacingLockFreeGrantsKeepsUnitsExact(t *testing.T) {
	defer runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), 2))
	const grants = 1 << 21 // 64 turns of the grant counter
	s := semaphore.New(10)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; !stop.Load(); i++ {
			s.Resize(int64(10 + i%2))
		}
		s.Resize(10)
	})
	var got uint64
	for range grants {
		if s.TryAcquire(1) {
			got++
			s.Release(1)
		}
	}
	stop.Store(true)
	wg.Wait()
	require.Equal(t, int64(10), s.Capacity())
	assert.Equal(t, int64(10), s.Available(), "no unit created or lost")
	assert.Equal(t, got, s.Stats().Acquired)
}

// A waiter for 0 units waits while availability is negative; when a shrinking
// Resize fails a waiter behind it, the wake-up meant for that one may reach it
// first, and it must go on waiting, then be granted when units come back.
func TestResize_AZeroUnitWaiterWokenForAnotherWaitsOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(10)
		s.Consume(11) // availability -1: a request for 0 waits behind the debt
		calls := queue(context.Background(), s, 0, 10)
		s.Resize(5) // fails the second waiter, out of list order
		synctest.Wait()
		got := finished(calls)
		require.Len(t, got, 1)
		require.ErrorIs(t, got[1], semaphore.ErrTooLarge)
		s.Release(11)
		synctest.Wait()
		got = finished(calls) // the calls not seen finished before
		require.Len(t, got, 1)
		require.NoError(t, got[0], "the 0-unit waiter is granted once the debt is paid")
		assert.Equal(t, int64(5), s.Available())
	})
}
