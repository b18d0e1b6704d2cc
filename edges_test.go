package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
)

// panics reports whether f panicked, and with what.
func panics(f func()) (msg string, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			msg, ok = fmt.Sprint(r), true
		}
	}()
	f()
	return "", false
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

// Consume refuses a debt past MaxUnits, exactly at the limit and past it, and the
// refused call changes nothing.
func TestConsume_DebtAtAndPastTheLimit(t *testing.T) {
	s := semaphore.New(0, semaphore.WithName("mem"))
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

// AcquireTimeout with d <= 0 decides in the same order as every acquire: broken,
// then too large, then "would wait", and it never queues.
func TestAcquireTimeout_NonPositiveDecidesInTheContractOrder(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		s := semaphore.New(2)
		require.True(t, s.TryAcquire(2))
		err := s.AcquireTimeout(d, 3)
		assert.ErrorIs(t, err, semaphore.ErrTooLarge, "too large, not a timeout")
		assert.NotErrorIs(t, err, semaphore.ErrTimedOut)
		err = s.AcquireTimeout(d, 1)
		assert.ErrorIs(t, err, semaphore.ErrTimedOut, "busy")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Contains(t, err.Error(), "not available at once")
		s.Break(errors.New("stopping"))
		err = s.AcquireTimeout(d, 1)
		assert.ErrorIs(t, err, semaphore.ErrBroken, "broken, not a timeout")
		assert.NotErrorIs(t, err, semaphore.ErrTimedOut)
		assert.ErrorIs(t, s.AcquireTimeout(d, 3), semaphore.ErrBroken, "broken comes before too large")
		st := s.Stats()
		assert.Zero(t, st.Queued, "a non-positive timeout never queues")
		assert.Equal(t, uint64(1), st.TimedOut)
		assert.Equal(t, uint64(1), st.Rejected)
	}
}

// A non-positive timeout never joins the list, even for an instant: no waiter is
// seen and nothing is granted behind anyone's back.
func TestAcquireTimeout_NonPositiveNeverQueues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(1)
		require.True(t, s.TryAcquire(1))
		head := queue(context.Background(), s, 1)
		for range 100 {
			require.ErrorIs(t, s.AcquireTimeout(0, 0), semaphore.ErrTimedOut)
		}
		assert.Equal(t, uint64(1), s.Stats().Queued, "only the real waiter queued")
		s.Release(1)
		require.NoError(t, <-head[0])
		s.Release(1)
	})
}

// Every failure path decides in one order: broken, then too large, then queue full.
func TestAcquire_FailureCausesAreDecidedInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(1, semaphore.WithMaxWaiters(0))
		require.True(t, s.TryAcquire(1))
		assert.ErrorIs(t, s.Acquire(context.Background(), 2), semaphore.ErrTooLarge, "too large before queue full")
		assert.ErrorIs(t, s.AcquireTimeout(time.Second, 2), semaphore.ErrTooLarge)
		assert.ErrorIs(t, s.Acquire(context.Background(), 1), semaphore.ErrQueueFull)
		s.Break(nil)
		assert.ErrorIs(t, s.Acquire(context.Background(), 2), semaphore.ErrBroken, "broken before too large")
		assert.ErrorIs(t, s.AcquireTimeout(time.Second, 2), semaphore.ErrBroken)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		assert.ErrorIs(t, s.Acquire(ctx, 1), context.Canceled, "a done context is reported first, as documented")
	})
}

func TestWithMaxWaiters_NegativePanicsAsDocumented(t *testing.T) {
	for _, m := range []int{-1, -2, -100} {
		requirePanic(t, fmt.Sprintf(`semaphore "q": WithMaxWaiters(%d)`, m), func() {
			semaphore.New(1, semaphore.WithName("q"), semaphore.WithMaxWaiters(m))
		})
	}
	assert.NotPanics(t, func() { semaphore.New(1, semaphore.WithMaxWaiters(-1), semaphore.WithMaxWaiters(3)) },
		"a later option overrides an earlier one")
}

// A wait that ends at its context's deadline is a timeout in Stats, as in its error.
func TestStats_ContextDeadlineCountsAsTimedOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(1)
		require.True(t, s.TryAcquire(1))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err := s.Acquire(ctx, 1)
		require.ErrorIs(t, err, semaphore.ErrTimedOut)
		st := s.Stats()
		assert.Equal(t, uint64(1), st.TimedOut)
		assert.Zero(t, st.Cancelled)
		assert.Equal(t, time.Second, st.WaitTime)
		assert.ErrorIs(t, s.Acquire(ctx, 1), semaphore.ErrTimedOut, "already past its deadline")
		assert.Equal(t, uint64(2), s.Stats().TimedOut, "a call failed before waiting on a deadline is a timeout too")
	})
}

// Stats are exact after a mixed concurrent run: every success counted once, as
// immediate or as waited for, whichever path granted it.
func TestStats_ExactAfterAMixedConcurrentRun(t *testing.T) {
	s := semaphore.New(2)
	var ok, tries, triesOK atomic.Uint64
	var wg sync.WaitGroup
	var stop atomic.Bool
	observer := make(chan struct{})
	go func() { // keeps the lock busy, as a metrics scraper may, so that some
		// calls that missed the lock-free grant find the units free under the lock
		defer close(observer)
		for !stop.Load() {
			_ = s.Stats()
		}
	}()
	for g := range 8 {
		wg.Go(func() {
			for i := range 3000 {
				n := int64(1 + (g+i)%2)
				switch i % 3 {
				case 0:
					if s.TryAcquire(n) {
						ok.Add(1)
						triesOK.Add(1)
						s.Release(n)
					}
					tries.Add(1)
				case 1:
					require.NoError(t, s.Acquire(context.Background(), n))
					ok.Add(1)
					s.Release(n)
				default:
					require.NoError(t, s.AcquireTimeout(time.Hour, n))
					ok.Add(1)
					runtime.Gosched()
					s.Release(n)
				}
			}
		})
	}
	wg.Wait()
	stop.Store(true)
	<-observer
	st := s.Stats()
	assert.Equal(t, ok.Load(), st.Acquired, "every success counted once")
	assert.Equal(t, st.Acquired-st.AcquiredImmediately, st.Queued, "every queued call was granted, and counted as waited for")
	assert.Zero(t, st.TimedOut+st.Cancelled+st.Rejected)
	assert.Equal(t, int64(2), s.Available())
}

// Units moved between owners by concurrent Split, Return, Adopt, Detach and
// Release never create or lose a unit. Two goroutines work on the same Units in
// tight loops, so that their read-modify-writes overlap.
func TestUnits_ConcurrentStormKeepsExactTotals(t *testing.T) {
	const capacity = 1 << 30
	s := semaphore.New(capacity)
	root, ok := s.TryAcquireUnits(capacity)
	require.True(t, ok)
	var detached, returned, overlaps atomic.Int64
	var progress [2]atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			var kept *semaphore.Units
			// Run until the two goroutines were seen running at the same time
			// many times, or for a second on a machine too busy to run them so.
			for i := 0; i < 100_000 || overlaps.Load() < 2_000 && (i%1024 != 0 || time.Since(start) < time.Second); i++ {
				before := progress[1-g].Load()
				progress[g].Add(1)
				p, err := root.Split(int64(1 + (g+i)%3))
				require.NoError(t, err)
				switch i % 8 {
				case 0:
					require.NoError(t, p.Return(1))
					returned.Add(1)
					p.Release()
				case 1:
					detached.Add(p.Detach())
				case 2:
					if kept == nil {
						kept = p
						continue
					}
					require.NoError(t, kept.Adopt(p))
				case 3:
					p.Release()
				default:
					require.NoError(t, root.Adopt(p))
				}
				if progress[1-g].Load() != before {
					overlaps.Add(1)
				}
			}
			require.NoError(t, root.Adopt(kept))
		})
	}
	wg.Wait()
	t.Logf("%d overlapping iterations", overlaps.Load())
	held := root.Count()
	root.Release()
	assert.Equal(t, capacity-detached.Load(), s.Available(), "units neither created nor lost")
	assert.Equal(t, capacity-detached.Load()-held, s.Available()-held)
	s.Release(detached.Load())
	assert.Equal(t, int64(capacity), s.Available())
}

// Messages count in the singular for one: "1 waiter", "1 unit available".
func TestErrors_SayOneInTheSingular(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(1, semaphore.WithName("one"))
		require.True(t, s.TryAcquire(1))
		queue(context.Background(), s, 1)
		err := s.AcquireTimeout(time.Second, 1)
		assert.Equal(t, `semaphore "one": acquire 1 unit: timed out after 1s, queued behind 1 waiter (0 of 1 unit available)`, err.Error())
		s.Release(1)
		synctest.Wait()
		s.Release(1)
		assert.Equal(t, `semaphore "one" (1 of 1 unit available, 0 waiting)`, s.String())
	})
}
