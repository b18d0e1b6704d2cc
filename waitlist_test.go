package semaphore_test

import (
	"context"
	"math"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
)

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

// Plain waiters (a context that cannot end) share one sync.Cond per semaphore. A
// Signal made after the lock is released can be lost when it races another Signal
// and a new waiter; then a granted waiter sleeps for good and, with weighted
// requests, the whole semaphore stalls. Many goroutines on many processors, weighted
// requests: every round must finish. The loss needs a preemption between two loads
// inside the runtime, so this test alone rarely sees it; in race-enabled builds
// every Signal also checks that the lock is held, and this test then fails at the
// first Signal made outside it.
func TestAcquire_PlainWaitersNeverMissAWakeup(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	rounds := 20
	if raceEnabled {
		rounds = 1
	}
	for round := range rounds {
		s := semaphore.New(16)
		finished := make(chan struct{})
		go func() {
			defer close(finished)
			var wg sync.WaitGroup
			for g := range 16 {
				wg.Go(func() {
					n := int64(g % 8)
					for range 2000 {
						n = n%8 + 1
						_ = s.Acquire(context.Background(), n)
						runtime.Gosched() // let others run while units are held, so that they queue
						s.Release(n)
					}
				})
			}
			wg.Wait()
		}()
		select {
		case <-finished:
		case <-time.After(time.Minute): // a watchdog, not a synchronization
			t.Fatalf("round %d: stalled with %v", round, s)
		}
		require.Equal(t, int64(16), s.Available())
		require.Equal(t, uint64(16*2000), s.Stats().Acquired)
	}
}

// Timed waiters share one deadline timer per semaphore (deadline.go). Each waiter
// still times out at exactly its own deadline, whatever order the deadlines come in
// and whoever else is granted or leaves in between.

// timedWait starts AcquireTimeout(d, n) and returns the channel its error arrives
// on, once the call is in the list.
func timedWait(s *semaphore.Semaphore, d time.Duration, n int64) <-chan error {
	done := make(chan error, 1)
	go func() { done <- s.AcquireTimeout(d, n) }()
	synctest.Wait()
	return done
}

func TestAcquireTimeout_AShorterDeadlineBehindALongerOneExpiresOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(1)
		require.True(t, s.TryAcquire(1))
		long := timedWait(s, time.Hour, 1)
		start := time.Now()
		short := timedWait(s, time.Second, 1)
		assert.ErrorIs(t, <-short, semaphore.ErrTimedOut)
		assert.Equal(t, time.Second, time.Since(start))
		assert.Equal(t, 1, s.Waiters(), "the longer deadline still waits")
		assert.ErrorIs(t, <-long, semaphore.ErrTimedOut)
		assert.Equal(t, time.Hour, time.Since(start))
	})
}

func TestAcquireTimeout_EachDeadlineExpiresAtItsOwnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(1)
		require.True(t, s.TryAcquire(1))
		start := time.Now()
		late := timedWait(s, 3*time.Second, 1)
		early := timedWait(s, 2*time.Second, 1)
		latest := timedWait(s, 4*time.Second, 1)
		for i, want := range []struct {
			c   <-chan error
			the time.Duration
		}{{early, 2 * time.Second}, {late, 3 * time.Second}, {latest, 4 * time.Second}} {
			assert.ErrorIs(t, <-want.c, semaphore.ErrTimedOut, "waiter %d", i)
			assert.Equal(t, want.the, time.Since(start), "waiter %d", i)
		}
	})
}

// A waiter granted before its deadline leaves its timer behind; the timer fires
// later and must neither fail a later waiter early nor keep one from expiring.
func TestAcquireTimeout_AGrantedWaitersTimerChangesNothingLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(1)
		require.True(t, s.TryAcquire(1))
		first := timedWait(s, 2*time.Second, 1)
		s.Release(1)
		require.NoError(t, <-first)
		start := time.Now()
		second := timedWait(s, 5*time.Second, 1) // joins while the 2s timer is pending
		time.Sleep(3 * time.Second)              // past the first timer
		synctest.Wait()
		assert.Equal(t, 1, s.Waiters(), "the first waiter's timer must not fail the second")
		assert.ErrorIs(t, <-second, semaphore.ErrTimedOut)
		assert.Equal(t, 5*time.Second, time.Since(start))
	})
}

// Timed waiters that leave by any road other than their deadline (granted,
// cancelled by Break, refused by Resize) leave the deadline heap with them: the
// waiter left behind keeps its own deadline.
func TestAcquireTimeout_WaitersLeavingByAnyRoadLeaveTheRestOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(4)
		require.True(t, s.TryAcquire(4))
		start := time.Now()
		tooLarge := timedWait(s, time.Second, 4)
		granted := timedWait(s, 2*time.Second, 1)
		last := timedWait(s, 3*time.Second, 1)
		s.Resize(3) // refuses the waiter for 4 and lets the others move up
		assert.ErrorIs(t, <-tooLarge, semaphore.ErrTooLarge)
		s.Release(2) // 4 held of 3: one unit free
		require.NoError(t, <-granted)
		assert.ErrorIs(t, <-last, semaphore.ErrTimedOut)
		assert.Equal(t, 3*time.Second, time.Since(start))

		s2 := semaphore.New(1)
		require.True(t, s2.TryAcquire(1))
		broken := timedWait(s2, time.Hour, 1)
		s2.Break(nil)
		assert.ErrorIs(t, <-broken, semaphore.ErrBroken)
	})
}

// A duration so long that the deadline would pass the end of time waits forever
// rather than wrapping into the past.
func TestAcquireTimeout_TheLongestDurationDoesNotWrap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(1)
		require.True(t, s.TryAcquire(1))
		forever := timedWait(s, math.MaxInt64, 1)
		time.Sleep(24 * time.Hour)
		synctest.Wait()
		assert.Equal(t, 1, s.Waiters())
		s.Release(1)
		require.NoError(t, <-forever)
	})
	s := semaphore.New(1) // outside a bubble too, where the clock reads are positive
	require.True(t, s.TryAcquire(1))
	done := make(chan error, 1)
	go func() { done <- s.AcquireTimeout(math.MaxInt64, 1) }()
	require.Eventually(t, func() bool { return s.Waiters() == 1 }, 10*time.Second, time.Millisecond)
	s.Release(1)
	require.NoError(t, <-done)
	require.NoError(t, s.AcquireTimeout(math.MaxInt64, 0))
}

// A timed wait that ends before its deadline leaves no timer pending behind it:
// a timer left to fire would keep the semaphore reachable until the deadline, and
// a caller whose waits come one at a time would pile up one timer per wait, each
// held for its whole duration (an hour here).
func TestAcquireTimeout_AFinishedWaitLeavesNoTimerPending(t *testing.T) {
	collected := make(chan struct{})
	func() {
		s := semaphore.New(1)
		runtime.AddCleanup(s, func(ch chan struct{}) { close(ch) }, collected)
		require.True(t, s.TryAcquire(1))
		done := make(chan error, 1)
		go func() { done <- s.AcquireTimeout(time.Hour, 1) }()
		require.Eventually(t, func() bool { return s.Waiters() == 1 }, 10*time.Second, time.Millisecond)
		s.Release(1)
		require.NoError(t, <-done)
		s.Release(1)
	}()
	require.Eventually(t, func() bool {
		runtime.GC()
		select {
		case <-collected:
			return true
		default:
			return false
		}
	}, 10*time.Second, 10*time.Millisecond, "a pending deadline timer keeps the semaphore alive")
}

// A semaphore used by a test in a synctest bubble and later outside it keeps its
// deadlines: a timer left pending in the ended bubble never fires, and must not be
// counted on.
func TestAcquireTimeout_ABubblesTimerIsNotCountedOnAfterTheBubbleEnds(t *testing.T) {
	s := semaphore.New(1)
	require.True(t, s.TryAcquire(1))
	synctest.Test(t, func(t *testing.T) {
		granted := timedWait(s, time.Hour, 1)
		s.Release(1)
		require.NoError(t, <-granted) // its one-hour timer stays pending in the bubble
	})
	done := make(chan error, 1)
	go func() { done <- s.AcquireTimeout(time.Millisecond, 1) }()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, semaphore.ErrTimedOut)
	case <-time.After(time.Minute): // a watchdog, not a synchronization
		t.Fatal("the waiter never timed out")
	}
}

// A semaphore used outside a bubble and then inside one: the timer its last
// outside timed wait started must not fire into the bubble, where it would read
// the real clock against the bubble's deadlines (and wake a bubbled waiter from
// outside the bubble, which the runtime makes a fatal error).
func TestAcquireTimeout_AnOutsideTimerDoesNotFireIntoALaterBubble(t *testing.T) {
	s := semaphore.New(1)
	require.True(t, s.TryAcquire(1))
	done := make(chan error, 1)
	go func() { done <- s.AcquireTimeout(20*time.Millisecond, 1) }()
	require.Eventually(t, func() bool { return s.Waiters() == 1 }, 10*time.Second, time.Millisecond)
	s.Release(1)
	require.NoError(t, <-done) // its 20ms timer, if left pending, fires during the bubble
	past := make(chan struct{})
	time.AfterFunc(500*time.Millisecond, func() { close(past) }) // a real-time mark, made outside
	synctest.Test(t, func(t *testing.T) {
		waiting := timedWait(s, time.Hour, 1)
		<-past // real time passes the outside timer's deadline
		synctest.Wait()
		select {
		case err := <-waiting:
			t.Fatalf("the bubbled waiter ended after no bubble time: %v", err)
		default:
		}
		s.Release(1)
		require.NoError(t, <-waiting)
	})
	s.Release(1)
}

// A semaphore used by one bubble and then by another: the second bubble's timed
// waiters time out on the second bubble's clock, whatever the first left behind.
func TestAcquireTimeout_ASecondBubbleKeepsItsOwnDeadlines(t *testing.T) {
	s := semaphore.New(1)
	require.True(t, s.TryAcquire(1))
	synctest.Test(t, func(t *testing.T) {
		granted := timedWait(s, time.Hour, 1)
		s.Release(1)
		require.NoError(t, <-granted) // the unit stays held
	})
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		timedOut := timedWait(s, 2*time.Hour, 1)
		assert.ErrorIs(t, <-timedOut, semaphore.ErrTimedOut)
		assert.Equal(t, 2*time.Hour, time.Since(start))
	})
	s.Release(1)
}

// waitEveryWay makes one parked, one timed and one context wait on a fresh
// semaphore, each granted by a Release, so that every kind of pooled waiter node
// goes through a full cycle.
func waitEveryWay(t *testing.T, settle func()) {
	t.Helper()
	s := semaphore.New(1)
	require.NoError(t, s.Acquire(context.Background(), 1))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	results := make(chan error, 3)
	go func() { results <- s.Acquire(context.Background(), 1) }()
	go func() { results <- s.AcquireTimeout(time.Hour, 1) }()
	go func() { results <- s.Acquire(ctx, 1) }()
	for s.Waiters() < 3 {
		settle()
	}
	for range 3 {
		s.Release(1)
		require.NoError(t, <-results)
	}
	s.Release(1)
}

// Waiter nodes are pooled across goroutines. A node used inside a synctest bubble
// must come back clean enough to be used outside it and in another bubble: the
// runtime makes a WaitGroup used from two bubbles a fatal error.
func TestWaiter_PooledNodesMoveSafelyBetweenBubbles(t *testing.T) {
	for range 3 {
		synctest.Test(t, func(t *testing.T) { waitEveryWay(t, synctest.Wait) })
		deadline := time.Now().Add(10 * time.Second)
		waitEveryWay(t, func() {
			require.True(t, time.Now().Before(deadline), "waiters did not queue")
			runtime.Gosched()
		})
	}
}
