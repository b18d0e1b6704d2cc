package grpcsem

import (
	"context"
	"errors"
	"fmt"
	"github.com/fairsem/semaphore/adaptive"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/errs"
)

// TestRefusal_MapsEveryErrorByTheTable checks each row of the package
// documentation's table, with the server's and the client's configuration.
func TestRefusal_MapsEveryErrorByTheTable(t *testing.T) {
	// ended is a limiter's error for a call that ended in o, matching sentinel.
	ended := func(o semaphore.Outcome, sentinel error) error {
		return &errs.Error{Subject: errs.Text(`limiter "x"`), Why: sentinel.Error(), Outcome: o, Matches: []error{sentinel}}
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel2()
	live := context.Background()
	const jitter = "jitter"
	rows := []struct {
		name     string
		ctx      context.Context
		err      error
		code     codes.Code
		pushback string
	}{
		{"call cancelled", cancelled, ended(semaphore.QueueFull, semaphore.ErrQueueFull), codes.Canceled, ""},
		{"call deadline", expired, ended(semaphore.TimedOut, context.DeadlineExceeded), codes.DeadlineExceeded, ""},
		{"too large", live, ended(semaphore.TooLarge, semaphore.ErrTooLarge), codes.ResourceExhausted, "-1"},
		{"broken", live, ended(semaphore.Broken, semaphore.ErrBroken), codes.Unavailable, ""},
		{"queue full", live, ended(semaphore.QueueFull, semaphore.ErrQueueFull), codes.Unavailable, jitter},
		{"shed", live, ended(semaphore.Shed, semaphore.ErrShed), codes.Unavailable, jitter},
		{"wait timeout", live, ended(semaphore.TimedOut, semaphore.ErrTimedOut), codes.Unavailable, jitter},
		{"a status", live, fmt.Errorf("wrapped: %w", status.Error(codes.PermissionDenied, "no")), codes.PermissionDenied, ""},
		{"a sentinel without an outcome", live, fmt.Errorf("wrapped: %w", semaphore.ErrQueueFull), codes.Unknown, ""},
		{"anything else", live, errors.New("surprise"), codes.Unknown, ""},
	}
	server := newConfig([]Option{WithOverloadCode(codes.Unavailable), WithTimeout(time.Second)}, false)
	client := newConfig([]Option{WithOverloadCode(codes.Unavailable), WithTimeout(time.Second)}, true)
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			st, pushback := server.refusal(r.ctx, r.err)
			assert.Equal(t, r.code, st.Code())
			if r.pushback == jitter {
				ms, err := strconv.Atoi(pushback)
				require.NoError(t, err)
				assert.True(t, ms >= 80 && ms < 120, "pushback %dms", ms)
			} else {
				assert.Equal(t, r.pushback, pushback)
			}
			assert.NotContains(t, st.Message(), `limiter "x"`, "the server keeps the limiter's error")

			st, pushback = client.refusal(r.ctx, r.err)
			assert.Equal(t, r.code, st.Code(), "the client uses the same codes")
			if r.pushback == jitter {
				assert.Empty(t, pushback, "the client sends nothing")
			}
			if r.code != codes.Canceled && r.code != codes.DeadlineExceeded && r.name != "a status" {
				assert.Contains(t, st.Message(), r.err.Error(), "the client keeps the limiter's error")
			}
		})
	}
}

func TestPushbackValue_IsJitteredAroundTheBaseInMilliseconds(t *testing.T) {
	c := newConfig([]Option{WithPushback(time.Second)}, false)
	seen := map[string]bool{}
	for range 200 {
		v := c.pushbackValue()
		ms, err := strconv.Atoi(v)
		require.NoError(t, err)
		require.True(t, ms >= 800 && ms < 1200, "pushback %dms", ms)
		seen[v] = true
	}
	assert.Greater(t, len(seen), 1, "jittered")
	none := newConfig([]Option{WithPushback(0)}, false)
	assert.Empty(t, none.pushbackValue(), "0 sends none")
	tiny := newConfig([]Option{WithPushback(time.Microsecond)}, false)
	assert.Equal(t, "0", tiny.pushbackValue(), "below a millisecond: retry at once")
}

func TestVerdict_FollowsTheCallsError(t *testing.T) {
	rows := []struct {
		err  error
		want adaptive.Verdict
	}{
		{nil, adaptive.Success},
		{status.Error(codes.NotFound, "app error"), adaptive.Success},
		{errors.New("plain"), adaptive.Success},
		{status.Error(codes.Canceled, ""), adaptive.Ignore},
		{context.Canceled, adaptive.Ignore},
		{fmt.Errorf("w: %w", context.DeadlineExceeded), adaptive.TimedOut},
		{status.Error(codes.DeadlineExceeded, ""), adaptive.TimedOut},
		{status.Error(codes.ResourceExhausted, ""), adaptive.Dropped},
		{status.Error(codes.Unavailable, ""), adaptive.Dropped},
	}
	for _, r := range rows {
		assert.Equal(t, r.want, verdict(r.err), "%v", r.err)
	}
}

// A shed call also matches ErrQueueFull; its refusal still says shed.
func TestRefusal_AShedCallIsRefusedAsShedNotAsQueueFull(t *testing.T) {
	shed := &errs.Error{Subject: errs.Text(`limiter "x"`), Why: "shed", Outcome: semaphore.Shed,
		Matches: []error{semaphore.ErrShed}}
	require.ErrorIs(t, shed, semaphore.ErrQueueFull, "the premise: shed matches queue full too")
	c := newConfig([]Option{WithOverloadCode(codes.Unavailable)}, false)
	st, _ := c.refusal(context.Background(), shed)
	assert.Equal(t, codes.Unavailable, st.Code())
	assert.Equal(t, "grpcsem: overloaded: shed", st.Message())
}

// A waiting call whose context is cancelled with a cause matching a sentinel is
// refused as cancelled: the status follows how the call ended, not the cause.
func TestRefusal_ACancelledCallIsCancelledWhateverItsCause(t *testing.T) {
	c := newConfig([]Option{WithOverloadCode(codes.Unavailable)}, false)
	for _, cause := range []error{semaphore.ErrBroken, semaphore.ErrTimedOut, semaphore.ErrQueueFull, semaphore.ErrShed, semaphore.ErrTooLarge} {
		t.Run(cause.Error(), func(t *testing.T) {
			s := semaphore.New(1)
			require.NoError(t, s.Acquire(context.Background(), 1))
			ctx, cancel := context.WithCancelCause(context.Background())
			done := make(chan error, 1)
			go func() { done <- s.Acquire(ctx, 1) }()
			require.Eventually(t, func() bool { return s.Waiters() == 1 }, 10*time.Second, time.Millisecond)
			cancel(fmt.Errorf("elsewhere: %w", cause))
			err := <-done
			require.ErrorIs(t, err, cause)
			st, pushback := c.refusal(ctx, err)
			assert.Equal(t, codes.Canceled, st.Code())
			assert.Empty(t, pushback)
		})
	}
}
