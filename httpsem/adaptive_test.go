package httpsem_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
	"github.com/fairsem/semaphore/httpsem"
)

func newAdaptive(t *testing.T, limit int, opts ...adaptive.Option) (*adaptive.Limiter, *semaphore.Semaphore) {
	t.Helper()
	sem := semaphore.New(1)
	alg := adaptive.NewAIMD(adaptive.AIMDConfig{InitialLimit: limit, MinLimit: 1, MaxLimit: 100})
	return adaptive.New(sem, alg, append([]adaptive.Option{adaptive.WithWindow(1, 0, 0)}, opts...)...), sem
}

func status(code int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) })
}

func TestAdaptive_Counts5xxAsDropsAndOthersAsSuccesses(t *testing.T) {
	l, sem := newAdaptive(t, 4)
	for _, tc := range []struct {
		code             int
		succeeded, drops uint64
	}{{200, 1, 0}, {404, 2, 0}, {500, 2, 1}, {503, 2, 2}} {
		rec := httptest.NewRecorder()
		httpsem.Adaptive(l)(status(tc.code)).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		assert.Equal(t, tc.code, rec.Code)
		st := l.Stats()
		assert.Equal(t, tc.succeeded, st.Succeeded, "after %d", tc.code)
		assert.Equal(t, tc.drops, st.Dropped, "after %d", tc.code)
	}
	assert.Equal(t, sem.Capacity(), sem.Available())
	assert.Less(t, l.Limit(), 4, "drops lowered the limit")
}

func TestAdaptive_CountsAWriteWithoutHeaderAsOK(t *testing.T) {
	l, _ := newAdaptive(t, 4)
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusContinue)
		_, _ = w.Write([]byte("hi"))
	})
	httpsem.Adaptive(l)(h).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	assert.Equal(t, uint64(1), l.Stats().Succeeded)
}

func TestAdaptive_UsesWithDropped(t *testing.T) {
	l, _ := newAdaptive(t, 4)
	mw := httpsem.Adaptive(l, httpsem.WithDropped(func(code int) bool { return code == http.StatusTooManyRequests }))
	mw(status(500)).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	mw(status(429)).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	st := l.Stats()
	assert.Equal(t, uint64(1), st.Succeeded)
	assert.Equal(t, uint64(1), st.Dropped)
}

func TestAdaptive_CountsDeadlinesAsDropsAndGoneClientsAsIgnored(t *testing.T) {
	l, _ := newAdaptive(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { cancel() })
	httpsem.Adaptive(l)(h).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil).WithContext(ctx))
	assert.Equal(t, uint64(1), l.Stats().Ignored)

	synctest.Test(t, func(t *testing.T) {
		l, _ := newAdaptive(t, 4)
		dl, stop := context.WithTimeout(context.Background(), time.Second)
		defer stop()
		h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { time.Sleep(2 * time.Second) })
		httpsem.Adaptive(l)(h).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil).WithContext(dl))
		assert.Equal(t, uint64(1), l.Stats().Dropped)
	})
}

func TestAdaptive_RefusesWithOverloadStatusWhenNoSlotInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, sem := newAdaptive(t, 1)
		hold, err := l.Acquire(context.Background())
		require.NoError(t, err)
		rec := httptest.NewRecorder()
		httpsem.Adaptive(l, httpsem.WithTimeout(time.Second))(status(200)).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
		assert.Equal(t, "1", rec.Header().Get("Retry-After"))
		hold.Release()
		sem.Break(nil)
		rec = httptest.NewRecorder()
		httpsem.Adaptive(l)(status(200)).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
		assert.Empty(t, rec.Header().Get("Retry-After"), "broken: no retry here")
	})
}

func TestAdaptive_ReleasesWithoutSampleWhenHandlerPanics(t *testing.T) {
	l, sem := newAdaptive(t, 2)
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })
	assert.Panics(t, func() {
		httpsem.Adaptive(l)(h).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	})
	assert.Equal(t, sem.Capacity(), sem.Available())
	assert.Equal(t, uint64(1), l.Stats().Ignored)
}

func TestAdaptive_PanicsOnNilAndForeignOptions(t *testing.T) {
	l, _ := newAdaptive(t, 2)
	assert.PanicsWithValue(t, "httpsem: Adaptive(nil)", func() { httpsem.Adaptive(nil) })
	assert.Panics(t, func() { httpsem.Adaptive(l, httpsem.WithWeight(func(*http.Request) int64 { return 1 })) })
	assert.Panics(t, func() { httpsem.Adaptive(l, httpsem.WithOp(func(*http.Request) string { return "" })) })
	assert.Panics(t, func() { httpsem.WithDropped(nil) })
}

func TestAdaptive_LetsHandlersReachTheResponseController(t *testing.T) {
	l, _ := newAdaptive(t, 2)
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		assert.NoError(t, http.NewResponseController(w).Flush())
	})
	rec := httptest.NewRecorder()
	httpsem.Adaptive(l)(h).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	assert.True(t, rec.Flushed)
}

// The limiter judges a request's deadline as it judges every timeout (see
// adaptive.TimedOut): one that passes sooner than the usual round trip tells
// of a long wait, not of a slow backend, and is no drop; a later one is. (The
// deadline rule would refuse the request whose deadline is shorter than the
// round trip: it is off here, to reach the verdict.)
func TestAdaptive_JudgesADeadlineAsTheLimiterJudgesEveryTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := newAdaptive(t, 4, adaptive.WithoutDeadlineShedding())
		serve := func(deadline, work time.Duration) {
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			h := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				select {
				case <-time.After(work):
				case <-r.Context().Done():
				}
			})
			httpsem.Adaptive(l)(h).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil).WithContext(ctx))
		}
		serve(time.Hour, 100*time.Millisecond) // the usual round trip: 100ms
		serve(10*time.Millisecond, time.Hour)  // timed out after 10ms
		st := l.Stats()
		assert.Equal(t, uint64(0), st.Dropped, "sooner than the usual round trip: late, not dropped")
		assert.Equal(t, uint64(1), st.Ignored)
		serve(time.Second, time.Hour) // timed out after 1s
		assert.Equal(t, uint64(1), l.Stats().Dropped)
	})
}
