package adaptive_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
)

// measured returns a Limiter at limit whose usual round trip is rtt: one
// call, held rtt, closed one window. It runs in a synctest bubble.
func measured(t *testing.T, limit int, rtt time.Duration, opts ...adaptive.Option) *adaptive.Limiter {
	t.Helper()
	l := adaptive.New(semaphore.New(int64(limit)), &script{limit: limit}, append([]adaptive.Option{adaptive.WithWindow(1, 0, 0), adaptive.WithName("api")}, opts...)...)
	c, err := l.Acquire(context.Background())
	require.NoError(t, err)
	time.Sleep(rtt)
	c.Done(adaptive.Success)
	return l
}

// hold takes n calls of one unit and returns them.
func hold(t *testing.T, l *adaptive.Limiter, n int) []*adaptive.Call {
	t.Helper()
	var calls []*adaptive.Call
	for range n {
		c, err := l.Acquire(context.Background())
		require.NoError(t, err)
		calls = append(calls, c)
	}
	return calls
}

// waiter is a call waiting in the background: its result arrives on done.
type waiter struct {
	done chan struct{}
	c    *adaptive.Call
	err  error
}

// wait starts a call for n units with ctx in the background and lets it
// reach the wait list (or its answer).
func wait(ctx context.Context, l *adaptive.Limiter, n int64) *waiter {
	w := &waiter{done: make(chan struct{})}
	go func() {
		w.c, w.err = l.AcquireN(ctx, n)
		close(w.done)
	}()
	synctest.Wait()
	return w
}

func (w *waiter) ended() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// deadline returns a context that ends d from now, cancelled at the end of
// the test.
func deadline(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func critical(ctx context.Context) context.Context {
	return adaptive.ContextWithPriority(ctx, adaptive.Critical)
}

func TestAcquire_RefusesAtOnceACallerWhoseDeadlineCannotCoverTheExpectedWaitAndTheRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := measured(t, 2, 10*time.Millisecond)
		held := hold(t, l, 2)
		ahead := wait(critical(context.Background()), l, 1) // one unit ahead
		// Two units must come back, at 2 per 10ms: an expected wait of 10ms,
		// and 10ms of round trip.
		start := time.Now()
		_, err := l.Acquire(deadline(t, 19*time.Millisecond))
		require.Error(t, err)
		assert.Zero(t, time.Since(start), "refused at once, not after waiting")
		assert.ErrorIs(t, err, semaphore.ErrShed)
		o, _ := semaphore.OutcomeOf(err)
		assert.Equal(t, semaphore.Shed, o)
		assert.Contains(t, err.Error(), `adaptive limiter "api": acquire 1 unit: shed at once: expected wait 10ms (1 units ahead, 2 in flight, limit 2) exceeds the 9ms before its deadline, less the round trip 10ms`)

		fits := wait(deadline(t, 21*time.Millisecond), l, 1)
		assert.False(t, fits.ended(), "a deadline that covers both waits")
		st := l.Stats()
		assert.Equal(t, uint64(1), st.Shed)
		assert.Equal(t, uint64(1), st.ShedAtOnce)
		assert.Equal(t, uint64(1), st.Levels[adaptive.Default].ShedAtOnce)
		assert.Equal(t, 2, st.Waiters)

		held[0].Release()
		held[1].Release()
		<-ahead.done
		<-fits.done
		require.NoError(t, ahead.err)
		require.NoError(t, fits.err)
		ahead.c.Release()
		fits.c.Release()
	})
}

func TestAcquireN_CountsTheExpectedWaitInUnits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := measured(t, 2, 10*time.Millisecond)
		held := hold(t, l, 2)
		ahead := wait(critical(context.Background()), l, 1)
		// One unit fits 21ms (10ms wait + 10ms round trip); two units need
		// three back: 15ms + 10ms.
		_, err := l.AcquireN(deadline(t, 21*time.Millisecond), 2)
		assert.ErrorIs(t, err, semaphore.ErrShed, "two units wait longer than one")
		assert.Contains(t, err.Error(), "acquire 2 units: shed at once: expected wait 15ms")
		one := wait(deadline(t, 21*time.Millisecond), l, 1)
		assert.False(t, one.ended())
		held[0].Release()
		held[1].Release()
		<-ahead.done
		<-one.done
		ahead.c.Release()
		one.c.Release()
	})
}

func TestAcquire_RefusesACallerWhoseDeadlineCannotCoverTheRoundTripEvenWithUnitsFree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := measured(t, 2, 10*time.Millisecond)
		_, err := l.Acquire(deadline(t, 9*time.Millisecond))
		assert.ErrorIs(t, err, semaphore.ErrShed)
		assert.Contains(t, err.Error(), "shed at once: 9ms left before its deadline, less than the round trip 10ms")
		c, err := l.Acquire(deadline(t, 10*time.Millisecond))
		require.NoError(t, err, "a deadline that covers the round trip")
		c.Release()
		c, err = l.Acquire(context.Background())
		require.NoError(t, err, "no deadline, nothing to cover")
		c.Release()
		assert.Equal(t, uint64(1), l.Stats().ShedAtOnce)
	})
}

func TestAcquire_ShedsAWaiterOnceItsDeadlineCanNoLongerCoverTheRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := measured(t, 1, 10*time.Millisecond)
		held := hold(t, l, 1)
		start := time.Now()
		_, err := l.Acquire(deadline(t, 50*time.Millisecond)) // expected 10ms: admitted, never granted
		assert.ErrorIs(t, err, semaphore.ErrShed)
		assert.Equal(t, 40*time.Millisecond, time.Since(start), "its deadline less the round trip")
		assert.Contains(t, err.Error(), "shed: waited 40ms, the most 40ms before its deadline, less the round trip 10ms")
		st := l.Stats()
		assert.Equal(t, uint64(1), st.Shed)
		assert.Zero(t, st.ShedAtOnce, "told after waiting")
		held[0].Release()
	})
}

func TestAcquire_HandsOnAGrantTooLateToBeServedInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := measured(t, 1, 10*time.Millisecond)
		held := hold(t, l, 1)
		late := wait(deadline(t, 50*time.Millisecond), l, 1)
		next := wait(critical(context.Background()), l, 1)
		time.Sleep(30 * time.Millisecond)
		held[0].Done(adaptive.Success) // a round trip of 30ms: 20ms left is too little
		<-late.done
		assert.ErrorIs(t, late.err, semaphore.ErrShed)
		assert.Contains(t, late.err.Error(), "shed: granted with 20ms left before its deadline, less than the round trip 30ms")
		<-next.done
		require.NoError(t, next.err, "the unit went on to the next waiter")
		next.c.Release()
	})
}

func TestAcquire_BeforeAnyRoundTripIsMeasuredWaitsToTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := adaptive.New(semaphore.New(1), &script{limit: 1})
		c, err := l.Acquire(deadline(t, time.Nanosecond))
		require.NoError(t, err, "no round trip to cover yet")
		start := time.Now()
		_, err = l.Acquire(deadline(t, 20*time.Millisecond))
		assert.ErrorIs(t, err, semaphore.ErrTimedOut, "the expected wait is unknown: the caller waits out its deadline")
		assert.NotErrorIs(t, err, semaphore.ErrShed)
		assert.Equal(t, 20*time.Millisecond, time.Since(start))
		assert.Zero(t, l.Stats().Shed)
		c.Release()
	})
}

func TestAcquire_DrainsAStandingQueueForCallersWithADeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := measured(t, 1, 10*time.Millisecond)
		held := hold(t, l, 1)
		first := wait(critical(context.Background()), l, 1) // found the queue empty
		time.Sleep(101 * time.Millisecond)                  // nobody found it empty since: it stands

		_, err := l.Acquire(deadline(t, time.Second))
		assert.ErrorIs(t, err, semaphore.ErrShed, "20ms expected against the 5ms target")
		assert.Contains(t, err.Error(), "shed at once: expected wait 20ms (1 units ahead, 1 in flight, limit 1) exceeds the 5ms a call waits in a queue standing for over 100ms")
		patient := wait(context.Background(), l, 1)
		assert.False(t, patient.ended(), "without a deadline or WithStandingQueue, the drain is not for it")
		crit := wait(critical(deadline(t, time.Second)), l, 1)
		assert.False(t, crit.ended(), "a critical call is capped by its budget alone")

		held[0].Release()
		for _, w := range []*waiter{first, patient, crit} {
			<-w.done
			require.NoError(t, w.err)
			w.c.Release()
		}
	})
}

func TestWithoutDeadlineShedding_WaitsAsTheContextAllowsAndServesLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := measured(t, 1, 10*time.Millisecond, adaptive.WithoutDeadlineShedding())
		held := hold(t, l, 1)
		late := wait(deadline(t, 15*time.Millisecond), l, 1) // 10ms + 10ms does not fit 15ms: the rule would refuse it
		assert.False(t, late.ended())
		time.Sleep(12 * time.Millisecond)
		held[0].Release()
		<-late.done
		require.NoError(t, late.err, "granted with 3ms left, as a plain semaphore grants")
		late.c.Release()
		_, err := l.Acquire(deadline(t, 5*time.Millisecond))
		require.NoError(t, err, "not refused for a deadline shorter than the round trip")
		assert.Zero(t, l.Stats().Shed)
	})
}

// pastDeadline is a context whose deadline has passed but which has not
// ended (as a context's timer that has not fired yet), and never does.
type pastDeadline struct{ context.Context }

func (pastDeadline) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

func TestAcquire_ACallerPastItsDeadlineIsTheSemaphoresToAnswerAndCountedIfGranted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := measured(t, 1, 10*time.Millisecond)
		c, err := l.Acquire(pastDeadline{context.Background()})
		require.NoError(t, err, "the semaphore grants a context that has not ended")
		assert.Equal(t, 1, l.Stats().Levels[adaptive.Default].InFlight)
		assert.Zero(t, l.Stats().Shed, "its deadline is its own, not the rule's")
		c.Release()
		assert.Zero(t, l.Stats().Levels[adaptive.Default].InFlight)
	})
}

func TestAcquireTimeout_BoundsTheWaitAloneAndTheDeadlineStaysTheCallers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := measured(t, 1, 20*time.Millisecond)
		ctx := deadline(t, 200*time.Millisecond)

		// Free units: a wait bound shorter than the round trip refuses nobody,
		// where a context of that length would (the deadline rule).
		c, err := l.AcquireTimeout(ctx, 1, 5*time.Millisecond)
		require.NoError(t, err, "the wait bound is not a deadline")
		_, err = l.AcquireN(deadline(t, 5*time.Millisecond), 1)
		require.ErrorIs(t, err, semaphore.ErrShed, "a 5ms context is the caller's deadline: shorter than the round trip")

		// Held: a bound shorter than the expected wait (20ms) is refused at
		// once; a longer one waits at most its bound, and times out there.
		start := time.Now()
		_, err = l.AcquireTimeout(ctx, 1, 10*time.Millisecond)
		require.ErrorIs(t, err, semaphore.ErrShed)
		assert.Zero(t, time.Since(start), "refused at once")
		_, err = l.AcquireTimeout(ctx, 1, 30*time.Millisecond)
		require.ErrorIs(t, err, semaphore.ErrTimedOut)
		assert.Equal(t, 30*time.Millisecond, time.Since(start), "it waited its bound, not its deadline")
		assert.NoError(t, ctx.Err())

		// A bound <= 0 takes only free units, and is refused otherwise.
		_, err = l.AcquireTimeout(ctx, 1, -time.Second)
		require.ErrorIs(t, err, semaphore.ErrShed)
		c.Done(adaptive.Success)
		c, err = l.AcquireTimeout(ctx, 1, 0)
		require.NoError(t, err)
		c.Done(adaptive.Success)
	})
}
