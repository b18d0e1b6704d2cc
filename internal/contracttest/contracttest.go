// Package contracttest checks that a type keeps semaphore.Interface's contract,
// as *semaphore.Semaphore does: the tests every implementation in this module
// runs against itself.
package contracttest

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
)

// New makes a fresh, healthy implementation with the given capacity, all of it
// available, whose calls are served in arrival order (one flow of a type that
// orders several flows).
type New func(t *testing.T, capacity int64) semaphore.Interface

// Run runs every check of the contract on implementations made by newImpl,
// each in a testing/synctest bubble, so an implementation must make no
// goroutine or timer that outlives its calls.
func Run(t *testing.T, newImpl New) {
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { c.f(t, newImpl) })
		})
	}
}

var checks = []struct {
	name string
	f    func(*testing.T, New)
}{
	{"TryAcquireTakesFreeUnits", tryAcquireTakesFreeUnits},
	{"TryAcquireNeverJumpsAWaiter", tryAcquireNeverJumpsAWaiter},
	{"ALargeHeadIsNotOvertaken", aLargeHeadIsNotOvertaken},
	{"AWaiterThatLeavesLetsTheOthersIn", aWaiterThatLeavesLetsTheOthersIn},
	{"ACancellationBeforeTheGrantWins", aCancellationBeforeTheGrantWins},
	{"FailuresCarryTheirOutcome", failuresCarryTheirOutcome},
	{"AcquireTimeoutWithoutTimeNeverWaits", acquireTimeoutWithoutTimeNeverWaits},
	{"ResizeNeverRevokesAndFailsWaitersTooLarge", resizeNeverRevokes},
	{"BreakFailsWaitersAndLaterCalls", breakFailsWaitersAndLaterCalls},
	{"ReadingCountsWhatIsHeld", readingCountsWhatIsHeld},
}

// acquiring starts Acquire on a goroutine of its own, waits until it blocks or
// returns, and gives its result.
func acquiring(ctx context.Context, s semaphore.Interface, n int64) <-chan error {
	done := make(chan error, 1)
	go func() { done <- s.Acquire(ctx, n) }()
	synctest.Wait()
	return done
}

// pending reports whether the call has not returned.
func pending(c <-chan error) bool { return len(c) == 0 }

func tryAcquireTakesFreeUnits(t *testing.T, newImpl New) {
	s := newImpl(t, 3)
	assert.True(t, s.TryAcquire(2))
	assert.False(t, s.TryAcquire(2), "only 1 unit is free")
	assert.True(t, s.TryAcquire(1))
	assert.True(t, s.TryAcquire(0), "0 units are always free while nobody waits")
	s.Release(3)
	assert.True(t, s.TryAcquire(3), "released units are free again")
	s.Release(3)
}

func tryAcquireNeverJumpsAWaiter(t *testing.T, newImpl New) {
	s := newImpl(t, 4)
	require.True(t, s.TryAcquire(3))
	w := acquiring(context.Background(), s, 2)
	require.True(t, pending(w))
	assert.False(t, s.TryAcquire(1), "a unit is free, but a waiter is ahead")
	s.Release(3)
	require.NoError(t, <-w)
	s.Release(2)
}

func aLargeHeadIsNotOvertaken(t *testing.T, newImpl New) {
	s := newImpl(t, 4)
	require.True(t, s.TryAcquire(3))
	large := acquiring(context.Background(), s, 4)
	small := acquiring(context.Background(), s, 1)
	assert.True(t, pending(small), "the head wants 4; the 1 free unit must wait for it")
	s.Release(3)
	require.NoError(t, <-large)
	synctest.Wait()
	assert.True(t, pending(small))
	s.Release(4)
	require.NoError(t, <-small)
	s.Release(1)
}

func aWaiterThatLeavesLetsTheOthersIn(t *testing.T, newImpl New) {
	s := newImpl(t, 4)
	require.True(t, s.TryAcquire(3))
	ctx, cancel := context.WithCancel(context.Background())
	large := acquiring(ctx, s, 4)
	small := acquiring(context.Background(), s, 1)
	cancel()
	assert.ErrorIs(t, <-large, context.Canceled)
	require.NoError(t, <-small, "the unit free behind a head that left goes to the next waiter")
	s.Release(4)
}

func aCancellationBeforeTheGrantWins(t *testing.T, newImpl New) {
	s := newImpl(t, 1)
	require.True(t, s.TryAcquire(1))
	ctx, cancel := context.WithCancel(context.Background())
	first := acquiring(ctx, s, 1)
	second := acquiring(context.Background(), s, 1)
	cancel() // before the release that would grant it: the cancellation wins
	s.Release(1)
	err := <-first
	require.Error(t, err)
	o, ok := semaphore.OutcomeOf(err)
	assert.True(t, ok)
	assert.Equal(t, semaphore.Cancelled, o)
	require.NoError(t, <-second, "the unit goes on to the next waiter")
	s.Release(1)
	assert.Equal(t, int64(0), s.Reading().Held)
}

func failuresCarryTheirOutcome(t *testing.T, newImpl New) {
	s := newImpl(t, 2)
	outcome := func(err error) semaphore.Outcome {
		t.Helper()
		require.Error(t, err)
		o, ok := semaphore.OutcomeOf(err)
		require.True(t, ok, "%v carries no outcome", err)
		return o
	}
	err := s.Acquire(context.Background(), 3)
	assert.ErrorIs(t, err, semaphore.ErrTooLarge)
	assert.Equal(t, semaphore.TooLarge, outcome(err))

	require.True(t, s.TryAcquire(2))
	err = s.AcquireTimeout(time.Second, 1)
	assert.ErrorIs(t, err, semaphore.ErrTimedOut)
	assert.Equal(t, semaphore.TimedOut, outcome(err))

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err = s.Acquire(ctx, 1)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, semaphore.ErrTimedOut)
	assert.Equal(t, semaphore.TimedOut, outcome(err))

	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	err = s.Acquire(ctx, 1)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, semaphore.Cancelled, outcome(err))
	s.Release(2)
	assert.Equal(t, int64(0), s.Reading().Held, "a failed call holds nothing")
}

func acquireTimeoutWithoutTimeNeverWaits(t *testing.T, newImpl New) {
	s := newImpl(t, 1)
	for _, d := range []time.Duration{0, -time.Second} {
		require.NoError(t, s.AcquireTimeout(d, 1), "free units are taken without waiting (d = %v)", d)
		err := s.AcquireTimeout(d, 1)
		assert.ErrorIs(t, err, semaphore.ErrTimedOut, "d = %v", d)
		assert.Equal(t, 0, s.Reading().Waiters)
		s.Release(1)
	}
}

func resizeNeverRevokes(t *testing.T, newImpl New) {
	s := newImpl(t, 4)
	require.True(t, s.TryAcquire(3))
	tooLarge := acquiring(context.Background(), s, 3)
	s.Resize(2)
	err := <-tooLarge
	assert.ErrorIs(t, err, semaphore.ErrTooLarge, "a waiter above the new capacity fails")
	r := s.Reading()
	assert.Equal(t, int64(2), r.Capacity)
	assert.Equal(t, int64(3), r.Held, "holders are never revoked: more is held than the capacity")
	assert.Equal(t, int64(0), r.Available)
	one := acquiring(context.Background(), s, 1)
	s.Release(2)
	assert.True(t, pending(one), "1 of 2 units is still held: nothing is free")
	s.Release(1)
	require.NoError(t, <-one)
	s.Resize(4)
	assert.True(t, s.TryAcquire(3))
	s.Release(4)
}

func breakFailsWaitersAndLaterCalls(t *testing.T, newImpl New) {
	s := newImpl(t, 1)
	require.True(t, s.TryAcquire(1))
	w := acquiring(context.Background(), s, 1)
	cause := errors.New("shutting down\nnext line")
	s.Break(cause)
	for _, err := range []error{<-w, s.Acquire(context.Background(), 1), s.AcquireTimeout(time.Second, 1)} {
		assert.ErrorIs(t, err, semaphore.ErrBroken)
		assert.ErrorIs(t, err, cause)
		o, ok := semaphore.OutcomeOf(err)
		assert.True(t, ok)
		assert.Equal(t, semaphore.Broken, o)
	}
	assert.False(t, s.TryAcquire(0))
	r := s.Reading()
	assert.True(t, r.Broken)
	assert.Equal(t, cause.Error(), r.Cause)
	assert.Equal(t, int64(1), r.Held, "the holder keeps its unit after Break")
	assert.Equal(t, int64(0), r.Available)
	s.Release(1)
	assert.Equal(t, int64(0), s.Reading().Held, "what comes back after Break is counted")
}

func readingCountsWhatIsHeld(t *testing.T, newImpl New) {
	s := newImpl(t, 5)
	require.True(t, s.TryAcquire(2))
	w := acquiring(context.Background(), s, 4)
	r := s.Reading()
	assert.Equal(t, int64(5), r.Capacity)
	assert.Equal(t, int64(2), r.Held)
	assert.Equal(t, int64(3), r.Available)
	assert.Equal(t, 1, r.Waiters)
	assert.False(t, r.Broken)
	s.Release(2)
	require.NoError(t, <-w)
	r = s.Reading()
	assert.Equal(t, int64(4), r.Held)
	assert.Equal(t, 0, r.Waiters)
	if r.Unknown&semaphore.AcquiredField == 0 {
		assert.GreaterOrEqual(t, r.Acquired, uint64(2))
	}
	s.Release(4)
}
