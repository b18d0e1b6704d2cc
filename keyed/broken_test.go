package keyed_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/keyed"
)

func TestBreak_FailsWaitersAtBothLevelsAndEveryLaterCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := semaphore.New(1)
		s := keyed.New(1, keyed.WithName("up"), keyed.WithGlobal(g))
		ctx := context.Background()
		held, err := s.Acquire(ctx, "a", 1)
		require.NoError(t, err)
		atKey := acquireAsync(ctx, s, "a", 1)    // waits for a's unit
		atGlobal := acquireAsync(ctx, s, "b", 1) // holds b's unit, waits for the global one
		synctest.Wait()
		cause := errors.New("shutting down")
		s.Break(cause)
		for _, ch := range []<-chan result{atKey, atGlobal} {
			r := <-ch
			assert.Nil(t, r.u)
			assert.ErrorIs(t, r.err, semaphore.ErrBroken)
			assert.ErrorIs(t, r.err, cause)
		}
		assert.ErrorIs(t, g.Err(), cause, "the global semaphore is broken too")

		_, err = s.Acquire(ctx, "new", 1)
		assert.ErrorIs(t, err, semaphore.ErrBroken)
		assert.Equal(t, `keyed "up": acquire 1 unit for key "new": broken: "shutting down"`, err.Error())
		_, err = s.AcquireTimeout(time.Second, "new", 1)
		assert.ErrorIs(t, err, cause)
		_, ok := s.TryAcquire("new", 1)
		assert.False(t, ok)
		assert.Equal(t, 1, s.Stats().Keys, "only the holder is left")
		assert.True(t, s.Stats().Broken)
		assert.Contains(t, s.Diagnostics(0), `keyed "up": broken, 1 key active`)

		err = s.Err()
		assert.ErrorIs(t, err, semaphore.ErrBroken)
		assert.ErrorIs(t, err, cause)
		assert.Equal(t, `keyed "up": broken: "shutting down"`, err.Error())

		held.Release()
		assert.Equal(t, 0, s.Stats().Keys)
		assert.Equal(t, uint64(0), s.Stats().Cancelled+s.Stats().TimedOut+s.Stats().Rejected, "calls failed by Break count in no failure counter")
	})
}

func TestBreak_DoneContextIsReportedFirst(t *testing.T) {
	s := keyed.New(1)
	s.Break(nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Acquire(ctx, "k", 1)
	assert.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, semaphore.ErrBroken)
}

func TestBreak_OnlyTheFirstCounts(t *testing.T) {
	obs := &recorder{}
	s := keyed.New(1, keyed.WithObserver(obs))
	first, second := errors.New("first"), errors.New("second")
	s.Break(first)
	s.Break(second)
	assert.ErrorIs(t, s.Err(), first)
	assert.NotErrorIs(t, s.Err(), second)
	assert.Equal(t, []error{first}, obs.broken)
	assert.NoError(t, keyed.New(1).Err(), "a healthy set has no error")
}

func TestDrain_WaitsForTheHoldersAfterBreak(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := keyed.New(2)
		u, err := s.Acquire(context.Background(), "k", 1)
		require.NoError(t, err)
		s.Break(nil)
		done := make(chan error, 1)
		go func() { done <- s.Drain(context.Background()) }()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("Drain returned while a holder holds units")
		default:
		}
		u.Release()
		assert.NoError(t, <-done)
		assert.NoError(t, s.Drain(context.Background()), "nothing active: at once")
	})
}

func TestDrain_FailsWithTheContextAndSaysWhatIsStillOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := keyed.New(3, keyed.WithName("up"))
		u, _ := s.TryAcquire("k", 2)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err := s.Drain(ctx)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorIs(t, err, semaphore.ErrTimedOut)
		assert.Equal(t, `keyed "up": drain: 1 key still active, holding 2 units: context deadline exceeded`, err.Error())
		u.Release()
	})
}

func TestDrain_WaitsAgainOnceTheSetIsBusyAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := keyed.New(2)
		for round := range 3 {
			u, err := s.Acquire(context.Background(), "k", 1)
			require.NoError(t, err)
			done := make(chan error, 1)
			go func() { done <- s.Drain(context.Background()) }()
			synctest.Wait()
			select {
			case <-done:
				t.Fatalf("round %d: Drain returned while a holder holds units", round)
			default:
			}
			u.Release() // empties the set: ends this round's Drain, once
			require.NoError(t, <-done, "round %d", round)
		}
	})
}

func TestDrain_AKeyThatBecomesActiveWhileItWaitsKeepsItWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := keyed.New(2, keyed.WithLimit(4))
		a, ok := s.TryAcquire("a", 1)
		require.True(t, ok)
		done := make(chan error, 1)
		go func() { done <- s.Drain(context.Background()) }()
		synctest.Wait()
		b, err := s.Acquire(context.Background(), "b", 1)
		require.NoError(t, err, "Drain does not stop admission")
		a.Release() // a was all that was active when Drain began
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("Drain returned while a key that became active meanwhile holds units")
		default:
		}
		b.Release()
		assert.NoError(t, <-done)
	})
}
