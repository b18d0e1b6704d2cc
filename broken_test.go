package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/hostile"
)

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
	assert.Contains(t, s.String(), `broken: "first"`)
}

func TestBreak_NilCauseMatchesErrBroken(t *testing.T) {
	s := semaphore.New(1)
	s.Break(nil)
	assert.ErrorIs(t, s.Err(), semaphore.ErrBroken)
	assert.ErrorIs(t, s.Acquire(context.Background(), 1), semaphore.ErrBroken)
}

func TestDrain_ReturnsAtOnceWhenNothingIsOut(t *testing.T) {
	s := semaphore.New(3)
	require.NoError(t, s.Drain(context.Background()))
	s.Break(nil)
	require.NoError(t, s.Drain(context.Background()), "broken with nothing out: drained")
}

// Break, then Drain: waiters fail at once, holders keep running, and Drain returns
// when the last unit comes back, although Release changes nothing visible.
func TestDrain_AfterBreakWaitsForEveryHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(4)
		a, err := s.AcquireUnits(context.Background(), 3)
		require.NoError(t, err)
		s.Consume(1)
		waiter := queue(context.Background(), s, 2)
		s.Break(errors.New("stopping"))
		assert.ErrorIs(t, <-waiter[0], semaphore.ErrBroken)

		drained := make(chan error, 1)
		go func() { drained <- s.Drain(context.Background()) }()
		synctest.Wait()
		assert.Empty(t, drained, "3 held and 1 consumed are still out")
		require.NoError(t, a.Return(2))
		a.Release()
		synctest.Wait()
		assert.Empty(t, drained, "the consumed unit is still out")
		assert.Equal(t, int64(0), s.Available(), "broken: Available stays 0")
		s.Release(1)
		synctest.Wait()
		require.NoError(t, <-drained)
		assert.NotPanics(t, func() { s.Release(5) }, "after Break the count stops at the capacity")
		require.NoError(t, s.Drain(context.Background()))
	})
}

func TestDrain_ContextEndsFirstSaysHowManyAreOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(5, semaphore.WithName("conns"))
		require.True(t, s.TryAcquire(2))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err := s.Drain(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorIs(t, err, semaphore.ErrTimedOut)
		assert.Equal(t, `semaphore "conns": drain: 2 units still out: context deadline exceeded`, err.Error())

		cause := errors.New("operator gave up")
		cctx, ccancel := context.WithCancelCause(context.Background())
		go func() { synctest.Wait(); ccancel(cause) }()
		err = s.Drain(cctx)
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, err, cause)
		assert.Contains(t, err.Error(), `2 units still out: context canceled: "operator gave up"`)

		// The abandoned drains leave no trace: a release takes the lock-free path
		// again, and a new Drain still sees the last unit come back.
		assert.True(t, s.TryAcquire(3))
		s.Release(1)
		done := make(chan error, 1)
		go func() { done <- s.Drain(context.Background()) }()
		synctest.Wait()
		s.Release(4)
		require.NoError(t, <-done)
	})
}

// On a healthy semaphore Drain does not stop admission: it returns when, at some
// instant, every unit is back.
func TestDrain_HealthySemaphoreKeepsAdmitting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(2)
		require.True(t, s.TryAcquire(1))
		drains := make(chan error, 2)
		for range 2 {
			go func() { drains <- s.Drain(context.Background()) }()
		}
		synctest.Wait()
		assert.True(t, s.TryAcquire(1), "Drain takes nothing and blocks nobody")
		s.Release(1)
		synctest.Wait()
		assert.Empty(t, drains)
		s.Release(1)
		synctest.Wait()
		require.NoError(t, <-drains)
		require.NoError(t, <-drains)
		assert.Equal(t, int64(2), s.Available())
	})
}

// A lock-free Release that races the Drain setting its flag is never missed: the
// drain returns once the units are back, whoever released them.
func TestDrain_ConcurrentReleasesAreNeverMissed(t *testing.T) {
	for range 200 {
		s := semaphore.New(8)
		for range 8 {
			require.True(t, s.TryAcquire(1))
		}
		done := make(chan error, 1)
		go func() { done <- s.Drain(context.Background()) }()
		go func() {
			for range 8 {
				s.Release(1)
			}
		}()
		require.NoError(t, <-done)
		assert.Equal(t, int64(8), s.Available())
	}
}

// Units consumed after Break are out like any other: the semaphore counts them, so
// that the Release that gives them back does not stand in for a holder's units and
// end Drain while that holder still runs.
func TestDrain_UnitsConsumedAfterBreakAreOutUntilReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(10)
		holder, ok := s.TryAcquireUnits(5)
		require.True(t, ok)
		s.Break(nil)
		spent := s.ConsumeUnits(5)
		assert.Zero(t, s.Available(), "nothing visible changes after Break")
		drained := make(chan error, 1)
		go func() { drained <- s.Drain(context.Background()) }()
		synctest.Wait()
		spent.Release()
		synctest.Wait()
		select {
		case err := <-drained:
			t.Fatalf("Drain returned %v while a holder still has 5 units", err)
		default:
		}
		holder.Release()
		synctest.Wait()
		require.NoError(t, <-drained)
	})
}

// Drain sets its flag on the very state word it checks: a lock-free Release of the
// last unit lands either before (and Drain sees nothing out) or after (and fails
// its swap on the flag, taking the lock to end Drain). Raced thousands of times,
// every Drain returns.
func TestDrain_CheckAndFlagAreOneStepAgainstTheLastRelease(t *testing.T) {
	rounds := 20000
	if raceEnabled || testing.Short() {
		rounds = 2000
	}
	for i := range rounds {
		s := semaphore.New(1)
		require.True(t, s.TryAcquire(1))
		done := make(chan error, 1)
		var ready atomic.Int32 // a spinning barrier: both start within nanoseconds
		go func() {
			ready.Add(1)
			for ready.Load() < 2 {
			}
			done <- s.Drain(context.Background())
		}()
		ready.Add(1)
		for ready.Load() < 2 {
		}
		for range i % 128 { // a delay that differs per round, so that some rounds land the
			ready.Load() // Release between the two steps of a Drain that took two
		}
		s.Release(1)
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("Drain missed the last Release and never returned")
		}
	}
}

// A Break's cause is a value a user (or a peer) controls: every text that
// prints it quotes it (String, Err, a failed call's error, the dump), so a
// hostile cause can neither forge a line nor pass for the message's own words.
// Reading gives it as it was given, for readers to quote.
func TestBreak_EveryTextQuotesTheCause(t *testing.T) {
	for _, h := range hostile.Texts {
		s := semaphore.New(1, semaphore.WithName("db"))
		s.Break(errors.New(h.Value))
		quoted := strconv.Quote(h.Value)
		for form, text := range map[string]string{
			"String":        s.String(),
			"Err":           s.Err().Error(),
			"Acquire":       s.Acquire(context.Background(), 1).Error(),
			"the headline":  strings.SplitN(s.Diagnostics(0), "\n", 2)[0],
			"TryAcquireErr": fmt.Sprint(s.AcquireTimeout(0, 1)),
		} {
			assert.Contains(t, text, quoted, "%s, %s", form, h.Name)
			assert.NotContains(t, text, "\n", "%s, %s", form, h.Name)
		}
		assert.Equal(t, 4, strings.Count(s.Diagnostics(0), "\n"), h.Name)
		assert.Equal(t, h.Value, s.Reading().Cause, h.Name)
	}
}
