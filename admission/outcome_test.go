package admission_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/admission"
)

// failure makes a controller fail one call and returns the call's error.
type failure func(t *testing.T) error

// fullQueue: the queue holds one request already.
func fullQueue(t *testing.T) error {
	c := admission.New(limits(1, 100), admission.WithName("reads"), admission.WithMaxWaiters(1))
	p := mustAcquire(t, c, "holder", 1)
	defer p.Release()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	queued := start(ctx, c, "queued", 1)
	_, err := c.Acquire(t.Context(), "refused", 1)
	cancel()
	<-queued
	return err
}

// shedAtTheHead: the request reaches the head with no time budget left.
func shedAtTheHead(t *testing.T) error {
	c := admission.New(limits(1, 100), admission.WithName("reads"), admission.WithShedFactor(1))
	p := mustAcquire(t, c, "holder", 1)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	queued := start(ctx, c, "queued", 1)
	p.Release()
	return (<-queued).err
}

func timedOutWhileQueued(t *testing.T) error {
	c := admission.New(limits(1, 100), admission.WithName("reads"))
	p := mustAcquire(t, c, "holder", 1)
	defer p.Release()
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	_, err := c.Acquire(ctx, "late", 1)
	return err
}

func brokenWhileQueued(t *testing.T) error {
	c := admission.New(limits(1, 100), admission.WithName("reads"))
	p := mustAcquire(t, c, "holder", 1)
	defer p.Release()
	queued := start(t.Context(), c, "queued", 1)
	c.Break(errors.New("shutting down"))
	return (<-queued).err
}

func brokenBeforeAcquire(t *testing.T) error {
	c := admission.New(limits(1, 100), admission.WithName("reads"))
	c.Break(nil)
	_, err := c.Acquire(t.Context(), "late", 1)
	return err
}

// cancelledByABrokenCause: the context's cause is another controller's broken
// error, so the error matches semaphore.ErrBroken too, yet the call was cancelled.
func cancelledByABrokenCause(t *testing.T) error {
	other := admission.New(limits(1, 100), admission.WithName("other"))
	other.Break(nil)
	_, cause := other.Acquire(t.Context(), "x", 1)
	c := admission.New(limits(1, 100), admission.WithName("reads"))
	p := mustAcquire(t, c, "holder", 1)
	defer p.Release()
	ctx, cancel := context.WithCancelCause(t.Context())
	queued := start(ctx, c, "queued", 1)
	cancel(cause)
	return (<-queued).err
}

func killLimit(t *testing.T) error {
	c := admission.New(limits(1, 100), admission.WithName("reads"), admission.WithKillLimit(1))
	p := mustAcquire(t, c, "holder", 1)
	defer p.Release()
	return p.Consume(admission.Resources{Memory: 200})
}

func parkedPermit(t *testing.T) error {
	c := admission.New(limits(1, 100), admission.WithName("reads"))
	p := mustAcquire(t, c, "holder", 1)
	defer p.Release()
	park(t, c, p, nil)
	return p.Consume(admission.Resources{Memory: 1})
}

func releasedPermit(t *testing.T) error {
	c := admission.New(limits(1, 100), admission.WithName("reads"))
	p := mustAcquire(t, c, "holder", 1)
	p.Release()
	return p.Readmit(t.Context())
}

func TestOutcomeOf_NamesTheOutcomeDecidedWhereTheCallFailed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fail    failure
		outcome string
		matches []error
		not     []error
	}{
		{"queue full", fullQueue, "queue_full", []error{semaphore.ErrQueueFull}, []error{semaphore.ErrShed}},
		{"shed", shedAtTheHead, "shed", []error{semaphore.ErrShed, semaphore.ErrQueueFull}, nil},
		{"timed out", timedOutWhileQueued, "timed_out", []error{semaphore.ErrTimedOut, context.DeadlineExceeded}, nil},
		{"broken while queued", brokenWhileQueued, "broken", []error{semaphore.ErrBroken}, nil},
		{"broken before", brokenBeforeAcquire, "broken", []error{semaphore.ErrBroken}, nil},
		{"cancelled with a broken cause", cancelledByABrokenCause, "cancelled", []error{context.Canceled, semaphore.ErrBroken}, nil},
		{"kill limit", killLimit, "memory_limit", []error{admission.ErrMemoryLimit}, nil},
		{"parked", parkedPermit, "evicted", []error{admission.ErrEvicted}, nil},
		{"released", releasedPermit, "released", []error{admission.ErrReleased}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				err := tc.fail(t)
				require.Error(t, err)
				assert.Equal(t, tc.outcome, admission.ResultLabel(err))
				assert.Equal(t, tc.outcome, admission.ResultLabel(fmt.Errorf("wrapped: %w", err)), "wrapped by the caller")
				for _, m := range tc.matches {
					assert.ErrorIs(t, err, m)
				}
				for _, m := range tc.not {
					assert.NotErrorIs(t, err, m)
				}
			})
		})
	}
}

func TestResultLabel_ErrorsOfOtherPackagesAreErrors(t *testing.T) {
	assert.Equal(t, "acquired", admission.ResultLabel(nil))
	assert.Equal(t, "error", admission.ResultLabel(context.DeadlineExceeded), "not a call of this package")
	assert.Equal(t, "error", admission.ResultLabel(fmt.Errorf("op: %w", context.Canceled)))
	assert.Equal(t, "error", admission.ResultLabel(errors.New("something else")))
}

// A queued request whose context is cancelled is Cancelled, in its error's
// Outcome, its label and the counters, whatever sentinel the cause matches.
func TestStats_ACancelledWaitIsCancelledWhateverItsCause(t *testing.T) {
	for _, cause := range []error{semaphore.ErrBroken, semaphore.ErrTimedOut, semaphore.ErrQueueFull, semaphore.ErrShed, semaphore.ErrTooLarge} {
		t.Run(cause.Error(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := admission.New(limits(1, 100), admission.WithName("reads"))
				p := mustAcquire(t, c, "holder", 1)
				defer p.Release()
				ctx, cancel := context.WithCancelCause(t.Context())
				queued := start(ctx, c, "queued", 1)
				synctest.Wait()
				cancel(fmt.Errorf("elsewhere: %w", cause))
				err := (<-queued).err
				require.ErrorIs(t, err, cause, "the cause is matched")
				o, ok := semaphore.OutcomeOf(err)
				require.True(t, ok)
				assert.Equal(t, semaphore.Cancelled, o)
				assert.Equal(t, "cancelled", admission.ResultLabel(err))
				st := c.Stats()
				assert.Equal(t, uint64(1), st.Cancelled)
				assert.Zero(t, st.TimedOut+st.Rejected+st.Shed)
				assert.Equal(t, uint64(1), st.Acquired, "the holder only")
			})
		})
	}
}

func TestErrShed_MatchesQueueFullButNotTheOtherWayRound(t *testing.T) {
	assert.ErrorIs(t, semaphore.ErrShed, semaphore.ErrQueueFull)
	assert.NotErrorIs(t, semaphore.ErrQueueFull, semaphore.ErrShed)
	assert.Equal(t, "shed", semaphore.ErrShed.Error(), "a bare reason: the wrapping message names the controller")
}
