package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fairsem/semaphore"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// started runs Acquire on its own goroutine and reports its result.
func started(ctx context.Context, s *semaphore.Semaphore, n int64) <-chan error {
	done := make(chan error, 1)
	go func() { done <- s.Acquire(ctx, n) }()
	return done
}

// together runs each function on a goroutine of its own, released by a spinning
// barrier so that they start within nanoseconds of each other (a channel's close
// wakes them microseconds apart), and waits for all of them.
func together(fs ...func()) {
	var ready atomic.Int32
	var wg sync.WaitGroup
	for _, f := range fs {
		wg.Go(func() {
			ready.Add(1)
			for ready.Load() < int32(len(fs)) {
			}
			f()
		})
	}
	wg.Wait()
}

// queue starts one Acquire per n, in order, waiting in the bubble after each so
// that their arrival order is exactly the order given.
func queue(ctx context.Context, s *semaphore.Semaphore, ns ...int64) []<-chan error {
	out := make([]<-chan error, len(ns))
	for i, n := range ns {
		out[i] = started(ctx, s, n)
		synctest.Wait()
	}
	return out
}

// finished reports which of the calls have returned, with their errors.
func finished(calls []<-chan error) map[int]error {
	got := map[int]error{}
	for i, c := range calls {
		select {
		case err := <-c:
			got[i] = err
		default:
		}
	}
	return got
}

func requirePanic(t *testing.T, contains string, f func()) {
	t.Helper()
	defer func() {
		r := recover()
		require.NotNil(t, r, "expected a panic containing %q", contains)
		assert.Contains(t, fmt.Sprint(r), contains)
	}()
	f()
}

// New: a semaphore starts with its whole capacity available; a capacity out of range panics.

func TestNew_StartsWithAllUnitsAvailable(t *testing.T) {
	s := semaphore.New(7)
	assert.Equal(t, int64(7), s.Capacity())
	assert.Equal(t, int64(7), s.Available())
	assert.Equal(t, 0, s.Waiters())
	assert.NoError(t, s.Err())
}

func TestNew_PanicsOnNegativeCapacity(t *testing.T) {
	requirePanic(t, "New(-1): capacity must be between 0", func() { semaphore.New(-1, semaphore.WithName("db")) })
	requirePanic(t, `semaphore "db"`, func() { semaphore.New(-1, semaphore.WithName("db")) })
	requirePanic(t, "capacity must be between", func() { semaphore.New(semaphore.MaxUnits + 1) })
}

// Acquire: negative units are a programmer error and panic, naming the semaphore.

func TestAcquire_NegativePanics(t *testing.T) {
	s := semaphore.New(1, semaphore.WithName("db"))
	requirePanic(t, `semaphore "db": Acquire(-2): negative units`, func() { _ = s.Acquire(context.Background(), -2) })
	requirePanic(t, "AcquireTimeout(-1)", func() { _ = s.AcquireTimeout(time.Second, -1) })
	requirePanic(t, "TryAcquire(-1)", func() { s.TryAcquire(-1) })
	_, err := s.AcquireUnits(context.Background(), 1)
	require.NoError(t, err, "the panics must not have taken units")
}

func TestAcquire_ZeroFollowsTheSameRules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(2)
		require.NoError(t, s.Acquire(context.Background(), 0), "0 units with nobody waiting is granted at once")
		require.NoError(t, s.Acquire(context.Background(), 2))
		calls := queue(context.Background(), s, 1, 0)
		assert.Empty(t, finished(calls), "a 0-unit request waits behind an earlier waiter")
		assert.Equal(t, 2, s.Waiters())
		assert.False(t, s.TryAcquire(0), "TryAcquire(0) does not jump the queue")
		s.Release(1)
		synctest.Wait()
		assert.Len(t, finished(calls), 2, "releasing lets the head in, then the 0-unit waiter")
		s.Release(1)
	})
}

// Acquire: strict FIFO. Waiters are granted in arrival order, and a large head holds back smaller waiters behind it.

func TestAcquire_StrictFIFOGrantsInArrivalOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(3)
		require.NoError(t, s.Acquire(context.Background(), 3))
		calls := queue(context.Background(), s, 1, 1, 1)
		for i := range calls {
			s.Release(1)
			synctest.Wait()
			got := finished(calls)
			require.Len(t, got, 1, "one release grants exactly one waiter")
			assert.Contains(t, got, i, "waiter %d is granted in arrival order", i)
			calls[i] = nil
		}
	})
}

func TestAcquire_LargeHeadHoldsBackSmallerWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(4)
		require.NoError(t, s.Acquire(context.Background(), 3))
		calls := queue(context.Background(), s, 4, 1)
		assert.Empty(t, finished(calls), "1 unit is free but the 1-unit waiter must not overtake the 4-unit head")
		assert.False(t, s.TryAcquire(1), "a newcomer does not overtake either")
		s.Release(3)
		synctest.Wait()
		got := finished(calls)
		assert.Equal(t, map[int]error{0: nil}, got, "the head is granted first; the small one waits for it")
		s.Release(4)
		synctest.Wait()
		assert.Equal(t, map[int]error{1: nil}, finished(calls))
	})
}

// Acquire: a context that is already done fails the call at once, even when units are free.

func TestAcquire_DoneContextFailsEvenWhenUnitsAreFree(t *testing.T) {
	s := semaphore.New(5)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Acquire(ctx, 1)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "before waiting")
	assert.Equal(t, int64(5), s.Available(), "no units taken")
	_, err = s.AcquireUnits(ctx, 1)
	assert.ErrorIs(t, err, context.Canceled)
}

// Acquire: a request larger than the capacity fails at once with ErrTooLarge, without queuing.

func TestAcquire_TooLargeFailsAtOnceWithoutQueuing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(3, semaphore.WithName("mem"))
		require.NoError(t, s.Acquire(context.Background(), 3))
		err := s.Acquire(context.Background(), 4)
		require.ErrorIs(t, err, semaphore.ErrTooLarge)
		assert.Equal(t, `semaphore "mem": acquire 4 units: more than the capacity of 3`, err.Error())
		assert.Equal(t, 0, s.Waiters(), "it never queued")
		calls := queue(context.Background(), s, 1)
		s.Release(3)
		synctest.Wait()
		assert.Equal(t, map[int]error{0: nil}, finished(calls), "and holds nobody back")
		assert.ErrorIs(t, s.AcquireTimeout(time.Hour, 4), semaphore.ErrTooLarge)
		assert.False(t, s.TryAcquire(4))
		assert.Equal(t, uint64(2), s.Stats().Rejected)
	})
}

// Acquire: a broken semaphore fails the call at once with ErrBroken and the cause.

func TestAcquire_BrokenFailsAtOnce(t *testing.T) {
	s := semaphore.New(3)
	cause := errors.New("shutting down")
	s.Break(cause)
	err := s.Acquire(context.Background(), 1)
	assert.ErrorIs(t, err, semaphore.ErrBroken)
	assert.ErrorIs(t, err, cause)
	assert.ErrorIs(t, s.AcquireTimeout(time.Hour, 1), semaphore.ErrBroken)
	u, err := s.AcquireUnits(context.Background(), 1)
	assert.Nil(t, u)
	assert.ErrorIs(t, err, cause)
}

// Acquire: with WithMaxWaiters(m), the call that would be waiter m+1 fails at once with ErrQueueFull.

func TestAcquire_QueueFullFailsTheExtraWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(1, semaphore.WithName("q"), semaphore.WithMaxWaiters(2))
		require.NoError(t, s.Acquire(context.Background(), 1))
		calls := queue(context.Background(), s, 1, 1)
		require.Equal(t, 2, s.Waiters())
		err := s.Acquire(context.Background(), 1)
		require.ErrorIs(t, err, semaphore.ErrQueueFull)
		assert.Equal(t, `semaphore "q": acquire 1 unit: wait queue full (2 waiters)`, err.Error())
		assert.ErrorIs(t, s.AcquireTimeout(time.Hour, 1), semaphore.ErrQueueFull)
		assert.Equal(t, 2, s.Waiters(), "the queued waiters are untouched")
		s.Release(1)
		synctest.Wait()
		assert.Equal(t, map[int]error{0: nil}, finished(calls), "the queued ones are served in order")
		s.Release(1)
		synctest.Wait()
		assert.Equal(t, map[int]error{1: nil}, finished(calls))
		s.Release(1)
		assert.Equal(t, uint64(2), s.Stats().Rejected)
	})
}

func TestAcquire_MaxWaitersZeroNeverQueues(t *testing.T) {
	s := semaphore.New(1, semaphore.WithMaxWaiters(0))
	require.NoError(t, s.Acquire(context.Background(), 1))
	assert.ErrorIs(t, s.Acquire(context.Background(), 1), semaphore.ErrQueueFull)
	requirePanic(t, "WithMaxWaiters(-2)", func() { semaphore.New(1, semaphore.WithMaxWaiters(-2)) })
}

// Acquire: a waiter that gives up leaves from anywhere in the list, lets the waiters behind it in if they now fit, and leaves no trace.

func TestAcquire_LeavingHeadWakesFollowers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(4)
		require.NoError(t, s.Acquire(context.Background(), 2))
		ctx, cancel := context.WithCancel(context.Background())
		head := started(ctx, s, 4)
		synctest.Wait()
		calls := queue(context.Background(), s, 1, 1, 1)
		assert.Empty(t, finished(calls), "2 units free, but the head needs 4")
		cancel()
		synctest.Wait()
		assert.ErrorIs(t, <-head, context.Canceled)
		assert.Equal(t, map[int]error{0: nil, 1: nil}, finished(calls), "the head's leaving lets the next two in at once")
		assert.Equal(t, 1, s.Waiters())
		s.Release(2)
		synctest.Wait()
		assert.Equal(t, map[int]error{2: nil}, finished(calls))
	})
}

func TestAcquire_LeavingFromTheMiddleKeepsTheOthersQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(1)
		require.NoError(t, s.Acquire(context.Background(), 1))
		ctx, cancel := context.WithCancel(context.Background())
		first := started(context.Background(), s, 1)
		synctest.Wait()
		middle := started(ctx, s, 1)
		synctest.Wait()
		last := started(context.Background(), s, 1)
		synctest.Wait()
		cancel()
		synctest.Wait()
		assert.ErrorIs(t, <-middle, context.Canceled)
		assert.Equal(t, 2, s.Waiters(), "a cancelled waiter is gone from the count at once")
		s.Release(1)
		synctest.Wait()
		require.NoError(t, <-first)
		s.Release(1)
		require.NoError(t, <-last)
		s.Release(1)
		assert.Equal(t, int64(1), s.Available())
	})
}

func TestAcquire_FailedCallLeavesNoTrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(2)
		require.NoError(t, s.Acquire(context.Background(), 2))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		before := s.Available()
		assert.ErrorIs(t, s.Acquire(ctx, 1), semaphore.ErrTimedOut)
		assert.ErrorIs(t, s.AcquireTimeout(time.Second, 2), semaphore.ErrTimedOut)
		assert.Equal(t, before, s.Available())
		assert.Equal(t, 0, s.Waiters())
		s.Release(2)
		assert.Equal(t, int64(2), s.Available(), "no unit was kept by the failed calls")
	})
}

// A grant and a cancellation that arrive together: whichever wins, no units are lost
// and the waiter behind is let in when the cancelled call gives its grant back.
func TestAcquire_GrantRacingCancellationLosesNoUnits(t *testing.T) {
	outcomes := map[bool]int{}
	for range 200 {
		synctest.Test(t, func(t *testing.T) {
			s := semaphore.New(1)
			require.NoError(t, s.Acquire(context.Background(), 1))
			ctx, cancel := context.WithCancel(context.Background())
			racer := started(ctx, s, 1)
			synctest.Wait()
			behind := started(context.Background(), s, 1)
			synctest.Wait()
			cancel()
			s.Release(1) // both ready before the racer runs
			synctest.Wait()
			err := <-racer
			outcomes[err == nil]++
			if err == nil {
				assert.Empty(t, finished([]<-chan error{behind}), "the racer holds the unit")
				s.Release(1)
				synctest.Wait()
			} else {
				assert.ErrorIs(t, err, context.Canceled)
			}
			require.NoError(t, <-behind, "the waiter behind gets the unit either way")
			s.Release(1)
			assert.Equal(t, int64(1), s.Available())
			assert.Equal(t, 0, s.Waiters())
		})
	}
	assert.NotZero(t, outcomes[false], "the cancellation should win some races")
}

// Acquire: errors match the context's error and cause, and ErrTimedOut for a deadline.

func TestAcquire_ErrorsMatchTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(1)
		require.NoError(t, s.Acquire(context.Background(), 1))

		ctx, cancel := context.WithCancel(context.Background())
		c := started(ctx, s, 1)
		synctest.Wait()
		cancel()
		err := <-c
		assert.ErrorIs(t, err, context.Canceled)
		assert.NotErrorIs(t, err, semaphore.ErrTimedOut)

		dctx, dcancel := context.WithTimeout(context.Background(), time.Second)
		defer dcancel()
		err = s.Acquire(dctx, 1)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorIs(t, err, semaphore.ErrTimedOut)

		cause := errors.New("client went away")
		cctx, ccancel := context.WithCancelCause(context.Background())
		c = started(cctx, s, 1)
		synctest.Wait()
		ccancel(cause)
		err = <-c
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, err, cause)
		assert.Contains(t, err.Error(), "client went away")
	})
}

// Errors: each message says which semaphore, what was asked and why it failed.

func TestErrors_SayWhichSemaphoreWhatWasAskedAndWhy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(4, semaphore.WithName("db-conns"))
		require.NoError(t, s.Acquire(context.Background(), 4))
		queue(context.Background(), s, 1, 1, 1)
		err := s.AcquireTimeout(1500*time.Millisecond, 2)
		assert.Equal(t, `semaphore "db-conns": acquire 2 units: timed out after 1.5s, queued behind 3 waiters (0 of 4 units available)`, err.Error())
		s.Break(errors.New("shutting down"))
		assert.Equal(t, `semaphore "db-conns": acquire 1 unit: broken: shutting down`, s.Acquire(context.Background(), 1).Error())
		assert.Equal(t, `semaphore "db-conns": broken: shutting down`, s.Err().Error())
	})
}

func TestErrors_UnnamedSemaphoreIsStillIdentified(t *testing.T) {
	s := semaphore.New(1)
	msg := s.Acquire(context.Background(), 2).Error()
	assert.Regexp(t, `^unnamed semaphore 0x[0-9a-f]+: acquire 2 units: more than the capacity of 1$`, msg)
	assert.Contains(t, s.String(), strings.SplitN(msg, ":", 2)[0])
}

// AcquireTimeout: waits at most d, leaves the list at once on expiry, and never waits for d <= 0.

func TestAcquireTimeout_ExpiresAfterExactlyD(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(1)
		require.NoError(t, s.Acquire(context.Background(), 1))
		start := time.Now()
		err := s.AcquireTimeout(3*time.Second, 1)
		assert.Equal(t, 3*time.Second, time.Since(start))
		assert.ErrorIs(t, err, semaphore.ErrTimedOut)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, uint64(1), s.Stats().TimedOut)
	})
}

func TestAcquireTimeout_GrantedBeforeTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(1)
		require.NoError(t, s.Acquire(context.Background(), 1))
		done := make(chan error, 1)
		go func() { done <- s.AcquireTimeout(time.Hour, 1) }()
		time.Sleep(time.Minute)
		s.Release(1)
		require.NoError(t, <-done)
		assert.Equal(t, int64(0), s.Available(), "the waiter holds the unit")
		time.Sleep(2 * time.Hour) // past the old deadline: the stopped timer must not fire
		assert.Equal(t, int64(0), s.Available())
		s.Release(1)
	})
}

func TestAcquireTimeout_NonPositiveDurationIsATry(t *testing.T) {
	s := semaphore.New(1)
	require.NoError(t, s.AcquireTimeout(0, 1), "units free and nobody waiting: granted")
	err := s.AcquireTimeout(0, 1)
	assert.ErrorIs(t, err, semaphore.ErrTimedOut)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, s.AcquireTimeout(-time.Second, 1), semaphore.ErrTimedOut)
	assert.Equal(t, 0, s.Waiters())
}

func TestAcquireTimeout_ExpiredWaiterLeavesAtOnceFromAnywhere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(2)
		require.NoError(t, s.Acquire(context.Background(), 1))
		head := started(context.Background(), s, 2)
		synctest.Wait()
		middle := make(chan error, 1)
		go func() { middle <- s.AcquireTimeout(time.Second, 2) }()
		synctest.Wait()
		tail := started(context.Background(), s, 1)
		synctest.Wait()
		require.Equal(t, 3, s.Waiters())
		time.Sleep(time.Second)
		synctest.Wait()
		assert.ErrorIs(t, <-middle, semaphore.ErrTimedOut)
		assert.Equal(t, 2, s.Waiters())

		// A timed-out head lets the followers in.
		timedHead := make(chan error, 1)
		s2 := semaphore.New(2)
		require.NoError(t, s2.Acquire(context.Background(), 1))
		go func() { timedHead <- s2.AcquireTimeout(time.Second, 2) }()
		synctest.Wait()
		follower := started(context.Background(), s2, 1)
		synctest.Wait()
		time.Sleep(time.Second)
		assert.ErrorIs(t, <-timedHead, semaphore.ErrTimedOut)
		require.NoError(t, <-follower, "the follower fits once the head has timed out")

		s.Release(1)
		require.NoError(t, <-head)
		s.Release(2)
		require.NoError(t, <-tail)
	})
}

// TryAcquire: only when the units are available and nobody waits; never on a broken semaphore.

func TestTryAcquire_OnlyWhenAvailableAndNobodyWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(3)
		assert.True(t, s.TryAcquire(2))
		assert.False(t, s.TryAcquire(2), "only 1 left")
		assert.True(t, s.TryAcquire(1))
		queue(context.Background(), s, 3)
		s.Release(2)
		assert.False(t, s.TryAcquire(1), "2 units free but someone waits")
		s.Release(1)
		synctest.Wait()
		s.Release(3)
		s.Break(nil)
		assert.False(t, s.TryAcquire(1), "broken")
		assert.Equal(t, uint64(2), s.Stats().AcquiredImmediately, "two TryAcquires succeeded")
	})
}

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

func TestRelease_OnBrokenSemaphoreIsANoop(t *testing.T) {
	s := semaphore.New(2)
	require.NoError(t, s.Acquire(context.Background(), 2))
	s.Break(nil)
	assert.NotPanics(t, func() { s.Release(2); s.Release(5) }, "no over-release check either: holders just drop units")
	assert.Equal(t, int64(0), s.Available())
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

func TestConsume_BrokenIsANoopAndNegativePanics(t *testing.T) {
	s := semaphore.New(2, semaphore.WithName("mem"))
	requirePanic(t, `semaphore "mem": Consume(-1): negative units`, func() { s.Consume(-1) })
	s.Break(nil)
	s.Consume(1)
	s.Resize(10)
	assert.Equal(t, int64(2), s.Capacity(), "Resize is a no-op on a broken semaphore")
}

// Break: fails every waiter and every later call with ErrBroken and the cause; only the first Break counts.

func TestBreak_FailsEveryWaiterWithTheCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(1)
		require.NoError(t, s.Acquire(context.Background(), 1))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		calls := queue(ctx, s, 1, 1)
		calls = append(calls, queue(context.Background(), s, 1)...)
		timed := make(chan error, 1)
		go func() { timed <- s.AcquireTimeout(time.Hour, 1) }()
		synctest.Wait()
		calls = append(calls, timed)
		cause := errors.New("shutting down")
		s.Break(cause)
		synctest.Wait()
		got := finished(calls)
		require.Len(t, got, 4)
		for i, err := range got {
			assert.ErrorIs(t, err, semaphore.ErrBroken, "waiter %d", i)
			assert.ErrorIs(t, err, cause, "waiter %d", i)
		}
		assert.Equal(t, 0, s.Waiters())
	})
}

func TestBreak_OnlyTheFirstCounts(t *testing.T) {
	s := semaphore.New(1)
	assert.NoError(t, s.Err())
	first := errors.New("first")
	s.Break(first)
	s.Break(errors.New("second"))
	assert.ErrorIs(t, s.Err(), first)
	assert.ErrorIs(t, s.Err(), semaphore.ErrBroken)
	assert.NotContains(t, s.Err().Error(), "second")
	assert.True(t, s.Stats().Broken)
	assert.Contains(t, s.String(), "broken: first")
}

func TestBreak_NilCauseMatchesErrBroken(t *testing.T) {
	s := semaphore.New(1)
	s.Break(nil)
	assert.ErrorIs(t, s.Err(), semaphore.ErrBroken)
	assert.ErrorIs(t, s.Acquire(context.Background(), 1), semaphore.ErrBroken)
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

func TestResize_NegativePanics(t *testing.T) {
	requirePanic(t, "Resize(-1)", func() { semaphore.New(1).Resize(-1) })
}

// Queries and Stats report the live state and exact counters.

func TestQueries_ReportLiveState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(3, semaphore.WithName("q"))
		assert.Equal(t, "q", s.Name())
		require.NoError(t, s.Acquire(context.Background(), 3))
		ctx, cancel := context.WithCancel(context.Background())
		calls := queue(ctx, s, 1, 1)
		assert.Equal(t, 2, s.Waiters())
		assert.Equal(t, `semaphore "q" (0 of 3 units available, 2 waiting)`, s.String())
		time.Sleep(time.Second)
		cancel()
		synctest.Wait()
		assert.Equal(t, 0, s.Waiters())
		assert.Len(t, finished(calls), 2)
		st := s.Stats()
		assert.Equal(t, semaphore.Stats{
			Name: "q", Capacity: 3, Available: 0, Waiters: 0,
			Acquired: 1, AcquiredImmediately: 1, Queued: 2, Cancelled: 2,
			WaitTime: 2 * time.Second,
		}, st)
	})
}

func TestStats_CountsEveryKindOfOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(2, semaphore.WithMaxWaiters(1))
		require.True(t, s.TryAcquire(2))
		c := started(context.Background(), s, 1)
		synctest.Wait()
		assert.ErrorIs(t, s.Acquire(context.Background(), 1), semaphore.ErrQueueFull)
		assert.ErrorIs(t, s.Acquire(context.Background(), 3), semaphore.ErrTooLarge)
		time.Sleep(time.Second)
		s.Release(2)
		require.NoError(t, <-c)
		assert.ErrorIs(t, s.AcquireTimeout(time.Second, 2), semaphore.ErrTimedOut)
		st := s.Stats()
		assert.Equal(t, uint64(2), st.Acquired)
		assert.Equal(t, uint64(1), st.AcquiredImmediately)
		assert.Equal(t, uint64(2), st.Queued)
		assert.Equal(t, uint64(1), st.TimedOut)
		assert.Equal(t, uint64(2), st.Rejected)
		assert.Equal(t, 2*time.Second, st.WaitTime)
	})
}

// Options: the name appears in every error, panic, String and Stats.

func TestOptions_NameAppearsEverywhere(t *testing.T) {
	s := semaphore.New(1, semaphore.WithName("pool"))
	assert.Contains(t, s.Acquire(context.Background(), 5).Error(), `semaphore "pool"`)
	assert.Contains(t, s.String(), `semaphore "pool"`)
	assert.Equal(t, "pool", s.Stats().Name)
	requirePanic(t, `semaphore "pool"`, func() { s.Release(3) })
}

// Errors: every sentinel is distinct under errors.Is.

func TestErrors_SentinelsAreDistinct(t *testing.T) {
	all := []error{semaphore.ErrBroken, semaphore.ErrTimedOut, semaphore.ErrQueueFull,
		semaphore.ErrTooLarge, semaphore.ErrInsufficientUnits, semaphore.ErrDifferentSemaphore}
	for i, a := range all {
		for j, b := range all {
			assert.Equal(t, i == j, errors.Is(a, b), "%v vs %v", a, b)
		}
	}
}

// The lock-free path counts its grants in a 16-bit field of the state word that is
// folded into a 64-bit total; crossing the fold many times must lose no count.
func TestStats_CountsLockFreeGrantsExactlyAcrossFolds(t *testing.T) {
	s := semaphore.New(3)
	const rounds = 3*65535 + 17
	for range rounds {
		require.True(t, s.TryAcquire(1))
		require.NoError(t, s.Acquire(context.Background(), 2))
		s.Release(3)
	}
	st := s.Stats()
	assert.Equal(t, uint64(2*rounds), st.AcquiredImmediately)
	assert.Equal(t, uint64(2*rounds), st.Acquired)
	assert.Equal(t, int64(3), s.Available(), "folding never touches the units")
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

// A call that finds the units held while nobody waits yields once before it queues,
// and takes the units if the holder releases meanwhile. With one processor the
// holder, made runnable just before, runs during the yield (unless the scheduler
// happens to look at its global queue first, about one time in 61), so most rounds
// must be granted without queueing; without the yield every round would queue.
func TestAcquire_YieldsOnceBeforeQueueing(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const rounds = 20
	s := semaphore.New(1)
	for range rounds {
		require.True(t, s.TryAcquire(1))
		released := make(chan struct{})
		go func() {
			s.Release(1)
			close(released)
		}()
		require.NoError(t, s.Acquire(context.Background(), 1))
		<-released
		s.Release(1)
	}
	assert.Less(t, s.Stats().Queued, uint64(rounds/2), "most rounds are granted during the yield")
}

// The yield never lets a call pass a waiter: with someone waiting it does not
// yield, and after the yield the lock-free grant is still refused while anyone
// waits, even when the units it asks for are free.
func TestAcquire_YieldNeverPassesAWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(3)
		require.True(t, s.TryAcquire(2))
		calls := queue(context.Background(), s, 2, 1) // 1 unit free: the 2 waits, the 1 behind it
		synctest.Wait()
		assert.Empty(t, finished(calls), "the small call queues behind the large one")
		assert.Equal(t, 2, s.Waiters())
		s.Release(2)
		synctest.Wait()
		assert.Equal(t, map[int]error{0: nil, 1: nil}, finished(calls))
		s.Release(3)
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

// A call that finds too few units yields before queueing only when nobody waits:
// with a waiter queued it queues at once. On one processor, a goroutine started
// just before the call runs only once the call yields or parks, and it sees the
// call already queued.
func TestAcquire_QueuesWithoutYieldingBehindAWaiter(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for range 20 {
		s := semaphore.New(1)
		require.True(t, s.TryAcquire(1))
		ctx, cancel := context.WithCancel(context.Background())
		first := make(chan error, 1)
		go func() { first <- s.Acquire(ctx, 1) }()
		for s.Waiters() != 1 {
			runtime.Gosched()
		}
		seen := make(chan int, 1)
		second := make(chan error, 1)
		go func() {
			go func() { seen <- s.Waiters() }()
			second <- s.Acquire(ctx, 1)
		}()
		assert.Equal(t, 2, <-seen, "the second call yielded before queueing behind a waiter")
		cancel()
		require.ErrorIs(t, <-first, context.Canceled)
		require.ErrorIs(t, <-second, context.Canceled)
	}
}
