package semaphore_test

import (
	"context"
	"errors"
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

// A grant and a cancellation that both happened before the waiter runs: the
// cancellation came first, so the call fails with its context's error, and the
// unit it was granted goes on to the waiter behind it.
func TestAcquire_AGrantAfterTheCancellationIsHandedOn(t *testing.T) {
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
			require.ErrorIs(t, <-racer, context.Canceled)
			require.NoError(t, <-behind, "the waiter behind gets the unit")
			s.Release(1)
			assert.Equal(t, int64(1), s.Available())
			assert.Equal(t, 0, s.Waiters())
			assert.Equal(t, uint64(2), s.Stats().Acquired, "the handed-on grant is not counted")
		})
	}
}

// A context cancelled before the Release that could grant the call: the call
// fails with the context's error wherever it is when the two happen (checking its
// context, yielding, joining the list, parked, or waking), and the unit is free
// again when it returns. The rounds run on real processors so that the
// cancellation and the Release land at every point of the call's way in.
func TestAcquire_ACancellationBeforeTheGrantAlwaysWins(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	rounds := 3000
	if testing.Short() {
		rounds = 300
	}
	for i := range rounds {
		s := semaphore.New(1)
		require.True(t, s.TryAcquire(1))
		ctx, cancel := context.WithCancel(context.Background())
		calling := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			close(calling)
			done <- s.Acquire(ctx, 1)
		}()
		<-calling
		cancel()
		s.Release(1)
		err := <-done
		require.ErrorIs(t, err, context.Canceled, "round %d: granted after its cancellation", i)
		require.True(t, s.TryAcquire(1), "round %d: the unit was handed back", i)
		st := s.Stats()
		require.Equal(t, uint64(2), st.Acquired, "round %d: only the two TryAcquire calls count", i)
		require.Equal(t, uint64(1), st.Cancelled, "round %d: counted once, as Cancelled", i)
	}
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

// TryAcquire and AcquireTimeout(d <= 0) never wait, so they never yield the
// processor either: on one processor, a goroutine started just before the call
// does not run before the call returns.
func TestAcquireTimeout_ZeroAndTryAcquireNeverYield(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	s := semaphore.New(1)
	require.True(t, s.TryAcquire(1))
	for name, call := range map[string]func(){
		"AcquireTimeout(0)":  func() { _ = s.AcquireTimeout(0, 1) },
		"AcquireTimeout(-1)": func() { _ = s.AcquireTimeout(-1, 1) },
		"TryAcquire":         func() { s.TryAcquire(1) },
	} {
		var ran atomic.Bool
		done := make(chan struct{})
		go func() { ran.Store(true); close(done) }()
		call()
		assert.False(t, ran.Load(), "%s yielded the processor", name)
		<-done
	}
	s.Release(1)
}

// join sets flagWaiting by a swap of the very word it examined: a lock-free
// Release landing between its look and its swap makes the swap fail, and join
// looks again and finds the unit. A waiter is never left queued behind free
// units. The rounds run on real processors; a round that does not finish in
// time is a stranded waiter.
func TestAcquire_NoWaiterIsStrandedBehindFreeUnits(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	rounds := 5000 // the window is a few instructions wide: a plant fails in about one run in two at 2000
	if testing.Short() || raceEnabled {
		rounds = 500 // the race detector adds nothing here and makes each round ten times slower
	}
	for i := range rounds {
		s := semaphore.New(1)
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				for range 1000 {
					if s.Acquire(context.Background(), 1) != nil {
						return // broken by the watchdog below
					}
					s.Release(1)
				}
			})
		}
		finished := make(chan struct{})
		go func() { wg.Wait(); close(finished) }()
		select {
		case <-finished:
		case <-time.After(30 * time.Second):
			stuck := s.String()
			s.Break(nil) // lets the stranded goroutines return
			<-finished
			t.Fatalf("round %d: a waiter was stranded: %s", i, stuck)
		}
	}
}
