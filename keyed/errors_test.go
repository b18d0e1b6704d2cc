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

func TestErrors_NameTheSetTheKeyAndTheRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := keyed.New(2, keyed.WithName("uploads"))
		u, err := s.Acquire(context.Background(), "alice", 2)
		require.NoError(t, err)
		_, err = s.AcquireTimeout(1500*time.Millisecond, "alice", 2)
		require.ErrorIs(t, err, semaphore.ErrTimedOut)
		assert.Equal(t, `keyed "uploads": acquire 2 units for key "alice": timed out after 1.5s, queued behind 0 waiters (0 of 2 units available)`, err.Error())
		u.Release()
	})
}

func TestErrors_UnnamedSetIsNamedByItsAddress(t *testing.T) {
	s := keyed.New(1)
	_, err := s.Acquire(context.Background(), "k", 2)
	assert.Regexp(t, `^unnamed keyed 0x[0-9a-f]+: acquire 2 units for key "k": more than the capacity of 1$`, err.Error())
	assert.Regexp(t, `^unnamed keyed 0x[0-9a-f]+ \(0 keys active\)$`, s.String())
}

func TestErrors_MatchTheContextErrorAndItsCause(t *testing.T) {
	cause := errors.New("client went away")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	s := keyed.New(1, keyed.WithName("up"))
	_, err := s.Acquire(ctx, "k", 1)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, cause)
	assert.Equal(t, `keyed "up": acquire 1 unit for key "k": canceled before waiting: context canceled: "client went away"`, err.Error())
	assert.Equal(t, uint64(1), s.Stats().Cancelled)
}

func TestErrors_ContextDeadlineCountsAsTimedOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := keyed.New(1)
		u, _ := s.TryAcquire("k", 1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := s.Acquire(ctx, "k", 1)
		assert.ErrorIs(t, err, semaphore.ErrTimedOut)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, uint64(1), s.Stats().TimedOut)
		u.Release()
	})
}

func TestErrors_WaitCancelledWithAnyCauseCountsAsCancelled(t *testing.T) {
	other := semaphore.New(1)
	other.Break(errors.New("another semaphore's shutdown"))
	causes := []error{semaphore.ErrBroken, semaphore.ErrTimedOut, semaphore.ErrQueueFull,
		semaphore.ErrTooLarge, semaphore.ErrShed, other.Err(), context.DeadlineExceeded}
	for _, level := range []string{"key", "limit", "global"} {
		for _, cause := range causes {
			synctest.Test(t, func(t *testing.T) {
				var opts []keyed.Option
				key := "k" // waits at the key level
				switch level {
				case "limit":
					opts, key = append(opts, keyed.WithLimit(1)), "other"
				case "global":
					opts, key = append(opts, keyed.WithGlobal(semaphore.New(1))), "other"
				}
				s := keyed.New(1, opts...)
				u, _ := s.TryAcquire("k", 1)
				ctx, cancel := context.WithCancelCause(context.Background())
				ch := acquireAsync(ctx, s, key, 1)
				synctest.Wait()
				cancel(cause)
				r := <-ch
				require.ErrorIs(t, r.err, context.Canceled)
				o, ok := semaphore.OutcomeOf(r.err)
				require.True(t, ok)
				assert.Equal(t, semaphore.Cancelled, o, "cause %v, waiting at the %s level", cause, level)
				st := s.Stats()
				assert.Equal(t, uint64(1), st.Cancelled, "cause %v, waiting at the %s level", cause, level)
				assert.Zero(t, st.TimedOut+st.Rejected, "cause %v, waiting at the %s level", cause, level)
				u.Release()
			})
		}
	}
}
