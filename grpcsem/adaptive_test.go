package grpcsem_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
	"github.com/fairsem/semaphore/grpcsem"
	"github.com/fairsem/semaphore/grpcsem/internal/echo"
)

// Each Verdict reaches the adaptive limiter as is, and every
// call gives its slot back.
func TestAdaptive_GivesTheCallsVerdictToTheLimiter(t *testing.T) {
	sem := semaphore.New(1)
	l := adaptive.New(sem, adaptive.NewAIMD(adaptive.AIMDConfig{InitialLimit: 4, MinLimit: 4, MaxLimit: 4}))
	lim := grpcsem.Adaptive(l)
	for _, o := range []adaptive.Verdict{adaptive.Success, adaptive.Dropped, adaptive.Ignore} {
		tok, err := lim.Admit(t.Context(), grpcsem.Call{FullMethod: "/s/M"})
		require.NoError(t, err)
		assert.Equal(t, 1, l.InFlight())
		tok.Done(o)
		assert.Equal(t, 0, l.InFlight(), "the slot is given back when the call ends")
	}
	st := l.Stats()
	assert.Equal(t, uint64(1), st.Succeeded)
	assert.Equal(t, uint64(1), st.Dropped)
	assert.Equal(t, uint64(1), st.Ignored)
	assert.Equal(t, int64(4), sem.Available())
}

// A refusal is the limiter's own error, so the status table applies to it.
func TestAdaptive_RefusesAsTheLimitersAcquire(t *testing.T) {
	sem := semaphore.New(1, semaphore.WithMaxWaiters(0))
	l := adaptive.New(sem, adaptive.NewAIMD(adaptive.AIMDConfig{InitialLimit: 1, MinLimit: 1, MaxLimit: 1}))
	lim := grpcsem.Adaptive(l)
	held, err := lim.Admit(t.Context(), grpcsem.Call{FullMethod: "/s/M"})
	require.NoError(t, err)
	_, err = lim.Admit(t.Context(), grpcsem.Call{FullMethod: "/s/M"})
	require.ErrorIs(t, err, semaphore.ErrQueueFull)
	held.Done(adaptive.Ignore)
	assert.PanicsWithValue(t, "grpcsem: Adaptive(nil)", func() { grpcsem.Adaptive(nil) })
}

// Behind the server interceptor, a handler's status is the limiter's verdict:
// OK is a success, Unavailable a drop, on both transports.
func TestAdaptive_ServerInterceptorTeachesTheLimiterFromEachCall(t *testing.T) {
	for _, transport := range transports {
		t.Run(transport, func(t *testing.T) {
			l := adaptive.New(semaphore.New(1), adaptive.NewAIMD(adaptive.AIMDConfig{InitialLimit: 4, MinLimit: 4, MaxLimit: 4}))
			svc := &service{unary: func(_ context.Context, in *echo.Message) (*echo.Message, error) {
				if in.Text == "overloaded" {
					return nil, status.Error(codes.Unavailable, "backend overloaded")
				}
				return in, nil
			}}
			cc := serve(t, transport, svc, serverLimit(grpcsem.Adaptive(l)))
			_, err := echo.Call(t.Context(), cc, "hello")
			require.NoError(t, err)
			_, err = echo.Call(t.Context(), cc, "overloaded")
			require.Equal(t, codes.Unavailable, status.Code(err))
			st := l.Stats()
			assert.Equal(t, uint64(1), st.Succeeded)
			assert.Equal(t, uint64(1), st.Dropped)
			assert.Equal(t, 0, st.InFlight)
		})
	}
}

// A deadline is TimedOut, which the limiter judges as it judges every
// timeout: one sooner than the usual round trip is no drop, a later one is.
func TestAdaptive_JudgesADeadlineAsTheLimiterJudgesEveryTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := adaptive.New(semaphore.New(4), adaptive.NewAIMD(adaptive.AIMDConfig{InitialLimit: 4, MinLimit: 4, MaxLimit: 4}),
			adaptive.WithWindow(1, 0, 0))
		lim := grpcsem.Adaptive(l)
		call := func(d time.Duration, v adaptive.Verdict) {
			tok, err := lim.Admit(context.Background(), grpcsem.Call{FullMethod: "/s/M"})
			require.NoError(t, err)
			time.Sleep(d)
			tok.Done(v)
		}
		call(100*time.Millisecond, adaptive.Success) // the usual round trip: 100ms
		call(10*time.Millisecond, adaptive.TimedOut)
		assert.Equal(t, uint64(0), l.Stats().Dropped, "sooner than the usual round trip: late, not dropped")
		call(time.Second, adaptive.TimedOut)
		assert.Equal(t, uint64(1), l.Stats().Dropped)
	})
}
