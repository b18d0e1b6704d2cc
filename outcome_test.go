package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
)

func TestOutcome_StringNamesEachOutcome(t *testing.T) {
	want := map[semaphore.Outcome]string{
		semaphore.Granted: "granted", semaphore.TimedOut: "timed_out", semaphore.Cancelled: "cancelled",
		semaphore.Broken: "broken", semaphore.TooLarge: "too_large", semaphore.QueueFull: "queue_full",
		semaphore.Shed: "shed", semaphore.Outcome(200): "unknown",
	}
	for o, s := range want {
		assert.Equal(t, s, o.String())
	}
}

func TestOutcomeOf_EveryFailedCallCarriesItsOutcomeThroughWrapping(t *testing.T) {
	full := semaphore.New(1, semaphore.WithMaxWaiters(0))
	require.True(t, full.TryAcquire(1))
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(1, 0))
	defer cancel2()
	broken := semaphore.New(1)
	broken.Break(errors.New("shutting down"))
	cases := []struct {
		name string
		err  error
		want semaphore.Outcome
	}{
		{"timeout", full.AcquireTimeout(0, 1), semaphore.TimedOut},
		{"deadline", full.Acquire(expired, 1), semaphore.TimedOut},
		{"cancelled", full.Acquire(cancelled, 1), semaphore.Cancelled},
		{"broken", broken.Acquire(context.Background(), 1), semaphore.Broken},
		{"too large", full.Acquire(context.Background(), 2), semaphore.TooLarge},
		{"queue full", full.Acquire(context.Background(), 1), semaphore.QueueFull},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Error(t, c.err)
			o, ok := semaphore.OutcomeOf(c.err)
			require.True(t, ok)
			assert.Equal(t, c.want, o)
			o, ok = semaphore.OutcomeOf(fmt.Errorf("handler: %w", c.err))
			require.True(t, ok, "through wrapping")
			assert.Equal(t, c.want, o)
		})
	}
}

func TestOutcomeOf_ACauseIsNotAnOutcome(t *testing.T) {
	other := semaphore.New(1)
	other.Break(errors.New("shutting down"))
	for _, cause := range []error{other.Err(), semaphore.ErrBroken, semaphore.ErrTimedOut, semaphore.ErrQueueFull, semaphore.ErrShed, semaphore.ErrTooLarge} {
		s := semaphore.New(1)
		require.True(t, s.TryAcquire(1))
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		err := s.Acquire(ctx, 1)
		require.ErrorIs(t, err, cause, "the cause still matches")
		o, ok := semaphore.OutcomeOf(err)
		require.True(t, ok)
		assert.Equal(t, semaphore.Cancelled, o, "cause %v", cause)
	}
}

func TestOutcomeOf_ErrorsThatEndNoCallHaveNone(t *testing.T) {
	s := semaphore.New(2)
	u, err := s.AcquireUnits(context.Background(), 1)
	require.NoError(t, err)
	_, err = u.Split(2)
	require.ErrorIs(t, err, semaphore.ErrInsufficientUnits)
	for _, err := range []error{nil, err, errors.New("elsewhere"), semaphore.ErrBroken, context.Canceled} {
		_, ok := semaphore.OutcomeOf(err)
		assert.False(t, ok, "%v", err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	other := semaphore.New(1)
	require.True(t, other.TryAcquire(1))
	cause := other.AcquireTimeout(0, 1) // an outcome of another call, as a cause
	cancel(cause)
	err = s.Drain(ctx)
	require.ErrorIs(t, err, cause)
	_, ok := semaphore.OutcomeOf(err)
	assert.False(t, ok, "Drain ends no call, whatever its context's cause")
	u.Release()
}
