package semaphore_test

import (
	"math"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
)

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
