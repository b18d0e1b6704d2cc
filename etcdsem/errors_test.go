package etcdsem

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each meaning etcdsem shares with the in-process semaphore matches the core's
// sentinel with errors.Is, in every way etcdsem can produce it, and an
// acquire's error carries the outcome the core names it by, for
// semaphore.OutcomeOf; the message names the semaphore and what was asked.
func TestErrors_SharedMeaningsMatchTheCoreSentinels(t *testing.T) {
	cli := newClient(t, sharedEndpoint(t))
	ctx := testCtx(t, time.Minute)
	// full returns a handle on a new semaphore of capacity 2 whose units are all held.
	full := func(t *testing.T) *Semaphore {
		s := newSem(t, cli, testName(t), WithCapacity(2))
		u, err := s.Acquire(ctx, 2)
		require.NoError(t, err)
		t.Cleanup(func() { _ = u.Release(context.Background()) })
		return s
	}
	const none = semaphore.Outcome(255) // the error ends no acquire: OutcomeOf reports false
	cases := []struct {
		name    string
		want    error
		outcome semaphore.Outcome
		prefix  string // after `etcdsem "NAME": `
		call    func(t *testing.T) (*Semaphore, error)
	}{
		{"acquire when broken", semaphore.ErrBroken, semaphore.Broken, `acquire 1 unit: broken: "maintenance": `, func(t *testing.T) (*Semaphore, error) {
			s := newSem(t, cli, testName(t), WithCapacity(2))
			require.NoError(t, s.Break(ctx, errors.New("maintenance")))
			_, err := s.Acquire(ctx, 1)
			return s, err
		}},
		{"try acquire when broken", semaphore.ErrBroken, semaphore.Broken, `try acquire 1 unit: broken: "maintenance": `, func(t *testing.T) (*Semaphore, error) {
			s := newSem(t, cli, testName(t), WithCapacity(2))
			require.NoError(t, s.Break(ctx, errors.New("maintenance")))
			_, _, err := s.TryAcquire(ctx, 1)
			return s, err
		}},
		{"waiter failed by Break", semaphore.ErrBroken, semaphore.Broken, `acquire 1 unit: broken: "maintenance": `, func(t *testing.T) (*Semaphore, error) {
			s := full(t)
			errc := make(chan error, 1)
			go func() { _, err := s.Acquire(ctx, 1); errc <- err }()
			waitWaiters(t, s, 1)
			require.NoError(t, s.Break(ctx, errors.New("maintenance")))
			return s, <-errc
		}},
		{"acquire timeout", semaphore.ErrTimedOut, semaphore.TimedOut, "acquire 1 unit: timed out after ", func(t *testing.T) (*Semaphore, error) {
			s := full(t)
			_, err := s.AcquireTimeout(ctx, 50*time.Millisecond, 1)
			return s, err
		}},
		{"acquire timeout of zero", semaphore.ErrTimedOut, semaphore.TimedOut, "acquire 1 unit: timed out after 0s: ", func(t *testing.T) (*Semaphore, error) {
			s := full(t)
			_, err := s.AcquireTimeout(ctx, 0, 1)
			return s, err
		}},
		{"context deadline", semaphore.ErrTimedOut, semaphore.TimedOut, "acquire 2 units: timed out after ", func(t *testing.T) (*Semaphore, error) {
			s := full(t)
			dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			_, err := s.Acquire(dctx, 2)
			return s, err
		}},
		{"acquire more than the capacity", semaphore.ErrTooLarge, semaphore.TooLarge, "acquire 3 units: more than the capacity 2: ", func(t *testing.T) (*Semaphore, error) {
			s := newSem(t, cli, testName(t), WithCapacity(2))
			_, err := s.Acquire(ctx, 3)
			return s, err
		}},
		{"try acquire more than the capacity", semaphore.ErrTooLarge, semaphore.TooLarge, "try acquire 3 units: more than the capacity 2: ", func(t *testing.T) (*Semaphore, error) {
			s := newSem(t, cli, testName(t), WithCapacity(2))
			_, _, err := s.TryAcquire(ctx, 3)
			return s, err
		}},
		{"waiter left too large by a shrink", semaphore.ErrTooLarge, semaphore.TooLarge, "acquire 2 units: capacity shrunk to 1: ", func(t *testing.T) (*Semaphore, error) {
			s := full(t)
			errc := make(chan error, 1)
			go func() { _, err := s.Acquire(ctx, 2); errc <- err }()
			waitWaiters(t, s, 1)
			require.NoError(t, s.Resize(ctx, 1))
			return s, <-errc
		}},
		{"return more than held", semaphore.ErrInsufficientUnits, none, "return 3 units of token ", func(t *testing.T) (*Semaphore, error) {
			s := newSem(t, cli, testName(t), WithCapacity(2))
			u, err := s.Acquire(ctx, 2)
			require.NoError(t, err)
			defer func() { assert.NoError(t, u.Release(ctx)) }()
			return s, u.Return(ctx, 3)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := c.call(t)
			require.Error(t, err)
			assert.ErrorIs(t, err, c.want)
			o, ok := semaphore.OutcomeOf(err)
			if c.outcome == none {
				assert.False(t, ok, "no outcome: got %v", o)
			} else if assert.True(t, ok, "an outcome") {
				assert.Equal(t, c.outcome, o)
			}
			assert.Contains(t, err.Error(), fmt.Sprintf("etcdsem %q: %s", s.Name(), c.prefix))
			for _, own := range []error{ErrLost, ErrClosed} {
				assert.NotErrorIs(t, err, own)
			}
		})
	}
}

// ErrLost and ErrClosed are etcdsem's own: bare reasons, matching none of the
// shared sentinels, and the message around them names the semaphore.
func TestErrors_OwnSentinelsAreBareAndMatchNoSharedOne(t *testing.T) {
	assert.Equal(t, "units lost", ErrLost.Error())
	assert.Equal(t, "closed", ErrClosed.Error())
	for _, own := range []error{ErrLost, ErrClosed} {
		for _, shared := range []error{semaphore.ErrBroken, semaphore.ErrTimedOut, semaphore.ErrQueueFull, semaphore.ErrTooLarge} {
			assert.NotErrorIs(t, own, shared)
		}
	}
	cli := newClient(t, sharedEndpoint(t))
	ctx := testCtx(t, 10*time.Second)
	s, err := New(ctx, cli, testName(t), WithCapacity(1))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = s.Acquire(ctx, 2)
	assert.ErrorIs(t, err, ErrClosed)
	assert.EqualError(t, err, fmt.Sprintf("etcdsem %q: acquire 2 units: closed", s.Name()))
	_, ok := semaphore.OutcomeOf(err)
	assert.False(t, ok, "a closed handle decides no outcome")
}

// A timeout or a cancellation is one line that says each reason once, and
// matches the context's error and cause.
func TestErrors_WaitErrorsAreOneLineAndMatchTheContext(t *testing.T) {
	cli := newClient(t, sharedEndpoint(t))
	s := newSem(t, cli, testName(t), WithCapacity(1))
	ctx := testCtx(t, 10*time.Second)
	u, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	defer func() { assert.NoError(t, u.Release(ctx)) }()

	_, err = s.AcquireTimeout(ctx, 20*time.Millisecond, 1)
	assert.ErrorIs(t, err, semaphore.ErrTimedOut)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NotContains(t, err.Error(), "\n")

	stop := errors.New("shutting down")
	cctx, cancel := context.WithCancelCause(ctx)
	cancel(stop)
	_, err = s.Acquire(cctx, 1)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, stop)
	assert.NotErrorIs(t, err, semaphore.ErrTimedOut)
	assert.Regexp(t, `^etcdsem ".*": acquire 1 unit: canceled after \d+m?s: context canceled: "shutting down"$`, err.Error())
}

// A call whose context is cancelled is Cancelled, whatever its cause matches:
// a cause matching ErrBroken, ErrTimedOut or any other sentinel (or itself an
// error of the module carrying an outcome) is a cause, not how the call ended.
// A deadline with such a cause is TimedOut.
func TestErrors_ACancelledCallIsCancelledWhateverItsCause(t *testing.T) {
	cli := newClient(t, sharedEndpoint(t))
	s := newSem(t, cli, testName(t), WithCapacity(1))
	ctx := testCtx(t, 20*time.Second)
	u, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	defer func() { assert.NoError(t, u.Release(ctx)) }()
	core := semaphore.New(1)
	core.Break(errors.New("core broken"))
	coreErr := core.Acquire(ctx, 1)
	require.ErrorIs(t, coreErr, semaphore.ErrBroken)
	causes := []error{
		semaphore.ErrBroken, semaphore.ErrTimedOut, semaphore.ErrTooLarge, semaphore.ErrQueueFull,
		semaphore.ErrShed, semaphore.ErrInsufficientUnits, ErrLost, ErrClosed, coreErr,
	}
	for _, cause := range causes {
		for _, waiting := range []bool{false, true} {
			cctx, cancel := context.WithCancelCause(ctx)
			if !waiting {
				cancel(cause)
			}
			errc := make(chan error, 1)
			go func() { _, err := s.Acquire(cctx, 1); errc <- err }()
			if waiting {
				waitWaiters(t, s, 1)
				cancel(cause)
			}
			err := <-errc
			cancel(nil)
			assert.ErrorIs(t, err, context.Canceled)
			assert.ErrorIs(t, err, cause)
			o, ok := semaphore.OutcomeOf(err)
			assert.True(t, ok)
			assert.Equal(t, semaphore.Cancelled, o, "cause %v, waiting %v: %v", cause, waiting, err)
		}
		dctx, cancel := context.WithDeadlineCause(ctx, time.Now(), cause)
		_, err := s.Acquire(dctx, 1)
		cancel()
		o, ok := semaphore.OutcomeOf(err)
		assert.True(t, ok)
		assert.Equal(t, semaphore.TimedOut, o, "deadline with cause %v: %v", cause, err)
		assert.ErrorIs(t, err, semaphore.ErrTimedOut)
		assert.ErrorIs(t, err, cause)
	}
	_, _, err = s.TryAcquire(func() context.Context {
		c, cancel := context.WithCancelCause(ctx)
		cancel(semaphore.ErrBroken)
		return c
	}(), 1)
	o, ok := semaphore.OutcomeOf(err)
	assert.True(t, ok)
	assert.Equal(t, semaphore.Cancelled, o, "TryAcquire: %v", err)
}

// A hostile name (markup, quotes, newlines, thousands of bytes) is quoted in
// every message, which stays on one line and names the semaphore exactly.
func TestErrors_HostileNamesAreQuotedOnOneLine(t *testing.T) {
	cli := newClient(t, sharedEndpoint(t))
	ctx := testCtx(t, 10*time.Second)
	for _, name := range []string{"<b>jobs</b>\n\"x\"\r\t%/", strings.Repeat("é\n", 2500)} {
		s, err := New(ctx, cli, name, WithCapacity(1))
		require.NoError(t, err)
		require.NoError(t, s.Close())
		_, err = s.Acquire(ctx, 1)
		require.ErrorIs(t, err, ErrClosed)
		assert.Equal(t, "etcdsem "+strconv.Quote(name)+": acquire 1 unit: closed", err.Error())
		assert.NotContains(t, err.Error(), "\n")
	}
}
