package httpsem_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
	"github.com/fairsem/semaphore/admission"
	"github.com/fairsem/semaphore/httpsem"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const patience = 10 * time.Second // a bound for polling, never a synchronization

// gated is a handler that counts the requests it runs and holds each until the
// test lets it go through release (or closes release to let all go).
type gated struct {
	started chan string // the path of each request as it starts
	release chan struct{}
	active  atomic.Int64
	peak    atomic.Int64
}

func newGated() *gated {
	return &gated{started: make(chan string, 100), release: make(chan struct{})}
}

func (g *gated) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := g.active.Add(1)
	for p := g.peak.Load(); now > p && !g.peak.CompareAndSwap(p, now); p = g.peak.Load() {
	}
	g.started <- r.URL.Path
	<-g.release
	g.active.Add(-1)
	io.WriteString(w, "ok")
}

type server struct {
	*httptest.Server
	client *http.Client
}

func serve(t *testing.T, h http.Handler) *server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &server{s, &http.Client{Transport: tr, Timeout: patience}}
}

type result struct {
	code       int
	retryAfter string
	err        error
}

// get sends a request on its own goroutine.
func (s *server) get(ctx context.Context, path string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+path, nil)
		resp, err := s.client.Do(req)
		if err != nil {
			ch <- result{err: err}
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		ch <- result{code: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
	}()
	return ch
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	require.Eventually(t, cond, patience, time.Millisecond, what)
}

func TestLimit_AtMostCapacityInFlightAndTheRestWaitInOrder(t *testing.T) {
	sem := semaphore.New(2)
	h := newGated()
	srv := serve(t, httpsem.Limit(sem)(h))
	var results []<-chan result
	for _, p := range []string{"/a", "/b"} {
		results = append(results, srv.get(t.Context(), p))
		<-h.started
	}
	for i, p := range []string{"/c", "/d", "/e"} {
		results = append(results, srv.get(t.Context(), p))
		waitFor(t, func() bool { return sem.Waiters() == i+1 }, "queued")
	}
	for _, want := range []string{"/c", "/d", "/e"} {
		h.release <- struct{}{}
		assert.Equal(t, want, <-h.started, "FIFO admission")
	}
	close(h.release)
	for _, r := range results {
		got := <-r
		require.NoError(t, got.err)
		assert.Equal(t, http.StatusOK, got.code)
	}
	assert.Equal(t, int64(2), h.peak.Load())
	assert.Equal(t, int64(2), sem.Available())
}

func TestLimit_WeightPerRequest(t *testing.T) {
	sem := semaphore.New(3)
	h := newGated()
	weight := func(r *http.Request) int64 {
		if r.URL.Path == "/heavy" {
			return 3
		}
		return 1
	}
	srv := serve(t, httpsem.Limit(sem, httpsem.WithWeight(weight))(h))
	light := srv.get(t.Context(), "/light")
	<-h.started
	assert.Equal(t, int64(2), sem.Available())
	heavy := srv.get(t.Context(), "/heavy")
	waitFor(t, func() bool { return sem.Waiters() == 1 }, "heavy waits for all three units")
	h.release <- struct{}{}
	assert.Equal(t, "/heavy", <-h.started)
	assert.Zero(t, sem.Available())
	close(h.release)
	assert.Equal(t, http.StatusOK, (<-light).code)
	assert.Equal(t, http.StatusOK, (<-heavy).code)
	assert.Equal(t, int64(3), sem.Available())
}

func TestLimit_FullBacklogGetsOverloadStatusWithRetryAfter(t *testing.T) {
	sem := semaphore.New(1, semaphore.WithMaxWaiters(1))
	h := newGated()
	srv := serve(t, httpsem.Limit(sem)(h))
	first := srv.get(t.Context(), "/1")
	<-h.started
	second := srv.get(t.Context(), "/2")
	waitFor(t, func() bool { return sem.Waiters() == 1 }, "second waits")

	third := <-srv.get(t.Context(), "/3")
	require.NoError(t, third.err)
	assert.Equal(t, http.StatusServiceUnavailable, third.code)
	assert.Equal(t, "1", third.retryAfter)

	close(h.release)
	assert.Equal(t, http.StatusOK, (<-first).code)
	assert.Equal(t, http.StatusOK, (<-second).code)
}

func TestLimit_WaitTimeoutGetsOverloadStatus(t *testing.T) {
	for _, tc := range []struct {
		name       string
		opts       []httpsem.Option
		code       int
		retryAfter string
	}{
		{"defaults", nil, http.StatusServiceUnavailable, "1"},
		{"429", []httpsem.Option{httpsem.WithStatus(http.StatusTooManyRequests)}, http.StatusTooManyRequests, "1"},
		{"retry after rounds up", []httpsem.Option{httpsem.WithRetryAfter(1500 * time.Millisecond)}, http.StatusServiceUnavailable, "2"},
		{"retry after below a second", []httpsem.Option{httpsem.WithRetryAfter(time.Millisecond)}, http.StatusServiceUnavailable, "1"},
		{"no retry after", []httpsem.Option{httpsem.WithRetryAfter(0)}, http.StatusServiceUnavailable, ""},
		// The largest duration rounds up without overflowing into a negative header.
		{"retry after the largest duration", []httpsem.Option{httpsem.WithRetryAfter(math.MaxInt64)}, http.StatusServiceUnavailable, "9223372037"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sem := semaphore.New(1)
			h := newGated()
			opts := append([]httpsem.Option{httpsem.WithTimeout(time.Millisecond)}, tc.opts...)
			srv := serve(t, httpsem.Limit(sem, opts...)(h))
			first := srv.get(t.Context(), "/1")
			<-h.started
			got := <-srv.get(t.Context(), "/2") // the unit is held until the end: it must time out
			require.NoError(t, got.err)
			assert.Equal(t, tc.code, got.code)
			assert.Equal(t, tc.retryAfter, got.retryAfter)
			assert.Equal(t, uint64(1), sem.Stats().Acquired, "only the first was admitted")
			close(h.release)
			assert.Equal(t, http.StatusOK, (<-first).code)
		})
	}
}

func TestLimit_BrokenGets503WithoutRetryAfter(t *testing.T) {
	sem := semaphore.New(1)
	h := newGated()
	srv := serve(t, httpsem.Limit(sem, httpsem.WithStatus(http.StatusTooManyRequests))(h))
	first := srv.get(t.Context(), "/1")
	<-h.started
	waiting := srv.get(t.Context(), "/2")
	waitFor(t, func() bool { return sem.Waiters() == 1 }, "second waits")
	sem.Break(errors.New("shutting down"))
	for _, got := range []result{<-waiting, <-srv.get(t.Context(), "/3")} {
		require.NoError(t, got.err)
		assert.Equal(t, http.StatusServiceUnavailable, got.code, "broken is 503 whatever WithStatus says")
		assert.Empty(t, got.retryAfter)
	}
	close(h.release)
	assert.Equal(t, http.StatusOK, (<-first).code, "the admitted request finishes")
}

func TestLimit_WeightLargerThanCapacityGets503AtOnce(t *testing.T) {
	// Up to the largest weight: above semaphore.MaxUnits too, a refusal, not a panic.
	for _, weight := range []int64{3, semaphore.MaxUnits + 1, math.MaxInt64} {
		sem := semaphore.New(2)
		var called atomic.Bool
		srv := serve(t, httpsem.Limit(sem, httpsem.WithWeight(func(*http.Request) int64 { return weight }))(
			http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called.Store(true) })))
		got := <-srv.get(t.Context(), "/")
		require.NoError(t, got.err)
		assert.Equal(t, http.StatusServiceUnavailable, got.code, "weight %d", weight)
		assert.Empty(t, got.retryAfter, "retrying cannot help")
		assert.False(t, called.Load())
		assert.Equal(t, int64(2), sem.Available())
	}
}

// A client that gives up while its request waits: the request's context ends,
// the wait ends with it, and the request leaves the queue without running.
func TestLimit_ClientDisconnectingWhileWaitingLeavesTheQueue(t *testing.T) {
	sem := semaphore.New(1)
	h := newGated()
	srv := serve(t, httpsem.Limit(sem)(h))
	first := srv.get(t.Context(), "/1")
	<-h.started

	ctx, cancel := context.WithCancel(t.Context())
	gone := srv.get(ctx, "/gone")
	waitFor(t, func() bool { return sem.Waiters() == 1 }, "the request waits")
	cancel()
	got := <-gone
	require.ErrorIs(t, got.err, context.Canceled)
	// The wait is counted after the waiter leaves the list, by its own
	// goroutine: wait for both.
	waitFor(t, func() bool { return sem.Waiters() == 0 && sem.Stats().Cancelled == 1 },
		"the server noticed, the request left the queue and its wait counts as cancelled")

	close(h.release)
	assert.Equal(t, http.StatusOK, (<-first).code)
	assert.Equal(t, http.StatusOK, (<-srv.get(t.Context(), "/3")).code)
	select {
	case p := <-h.started:
		assert.Equal(t, "/3", p, "only /3 ran after /1")
	default:
		t.Fatal("/3 did not run")
	}
	select {
	case p := <-h.started:
		t.Fatalf("%s ran", p)
	default:
	}
	assert.Equal(t, int64(1), sem.Available())
}

func TestLimit_HandlerPanicReleasesTheUnits(t *testing.T) {
	sem := semaphore.New(2)
	mw := httpsem.Limit(sem, httpsem.WithWeight(func(*http.Request) int64 { return 2 }))
	h := mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }))
	assert.PanicsWithValue(t, http.ErrAbortHandler, func() {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	})
	assert.Equal(t, int64(2), sem.Available())
}

func TestLimit_NegativeWeightPanics(t *testing.T) {
	h := httpsem.Limit(semaphore.New(1), httpsem.WithWeight(func(*http.Request) int64 { return -1 }))(http.NotFoundHandler())
	assert.PanicsWithValue(t, "httpsem: weight -1 for GET /x: negative", func() {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/x", nil))
	})
}

func TestOptions_InvalidValuesPanic(t *testing.T) {
	sem := semaphore.New(1)
	ctrl := admission.New(admission.Resources{Count: 1}, admission.WithName("test"))
	for name, f := range map[string]func(){
		"WithTimeout(0)":         func() { httpsem.WithTimeout(0) },
		"WithTimeout(-1)":        func() { httpsem.WithTimeout(-1) },
		"WithRetryAfter(-1)":     func() { httpsem.WithRetryAfter(-1) },
		"WithStatus(200)":        func() { httpsem.WithStatus(http.StatusOK) },
		"WithStatus(500)":        func() { httpsem.WithStatus(http.StatusInternalServerError) },
		"WithWeight(nil)":        func() { httpsem.WithWeight(nil) },
		"WithOp(nil)":            func() { httpsem.WithOp(nil) },
		"WithMemory(nil)":        func() { httpsem.WithMemory(nil) },
		"Limit(nil)":             func() { httpsem.Limit(nil) },
		"Admit(nil)":             func() { httpsem.Admit(nil) },
		"Limit with WithOp":      func() { httpsem.Limit(sem, httpsem.WithOp(func(*http.Request) string { return "" })) },
		"Limit with WithMemory":  func() { httpsem.Limit(sem, httpsem.WithMemory(func(*http.Request) int64 { return 0 })) },
		"Admit with WithWeight":  func() { httpsem.Admit(ctrl, httpsem.WithWeight(func(*http.Request) int64 { return 1 })) },
		"Limit with WithDropped": func() { httpsem.Limit(sem, httpsem.WithDropped(func(int) bool { return false })) },
		"Admit with WithDropped": func() { httpsem.Admit(ctrl, httpsem.WithDropped(func(int) bool { return false })) },
		"WithPriority(nil)":      func() { httpsem.WithPriority(nil) },
		"Admit with WithPriority": func() {
			httpsem.Admit(ctrl, httpsem.WithPriority(func(*http.Request) adaptive.Priority { return adaptive.Critical }))
		},
	} {
		assert.Panics(t, f, name)
	}
	assert.NotPanics(t, func() { httpsem.WithRetryAfter(0) })
	assert.NotPanics(t, func() { httpsem.WithTimeout(time.Nanosecond) })
}

func TestTimeout_NeverRefusesARequestThatNeedsNoWait(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	for name, mw := range map[string]func(http.Handler) http.Handler{
		"Limit": httpsem.Limit(semaphore.New(1), httpsem.WithTimeout(time.Nanosecond)),
		// Admit cannot try without waiting; a timeout well above the time to
		// reach the controller is what it guarantees this for.
		"Admit": httpsem.Admit(admission.New(admission.Resources{Count: 1}, admission.WithName("api")), httpsem.WithTimeout(time.Minute)),
	} {
		for range 100 {
			rec := httptest.NewRecorder()
			mw(ok).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
			require.Equal(t, http.StatusOK, rec.Code, name)
		}
	}
}

// A request whose context is cancelled while it waits gets the overload status
// with Retry-After, whatever sentinel the context's cause matches: the response
// follows how the wait ended, Cancelled, not the cause.
func TestRefusal_ACancelledWaitIsAnOverloadWhateverItsCause(t *testing.T) {
	causes := []error{semaphore.ErrBroken, semaphore.ErrTimedOut, semaphore.ErrQueueFull, semaphore.ErrShed, semaphore.ErrTooLarge}
	middlewares := map[string]func() (func(http.Handler) http.Handler, func() int, func()){
		"Limit": func() (func(http.Handler) http.Handler, func() int, func()) {
			sem := semaphore.New(1)
			require.NoError(t, sem.Acquire(context.Background(), 1))
			return httpsem.Limit(sem, httpsem.WithStatus(http.StatusTooManyRequests)), sem.Waiters, func() { sem.Release(1) }
		},
		"Admit": func() (func(http.Handler) http.Handler, func() int, func()) {
			ctrl := admission.New(admission.Resources{Count: 1, Memory: 100})
			p, err := ctrl.Acquire(context.Background(), "holder", 0)
			require.NoError(t, err)
			return httpsem.Admit(ctrl, httpsem.WithStatus(http.StatusTooManyRequests)),
				func() int { return ctrl.Stats().Waiters }, p.Release
		},
	}
	for name, setup := range middlewares {
		for _, cause := range causes {
			t.Run(name+"/"+cause.Error(), func(t *testing.T) {
				mw, waiters, release := setup()
				defer release()
				ctx, cancel := context.WithCancelCause(context.Background())
				rec := httptest.NewRecorder()
				served := make(chan struct{})
				go func() {
					defer close(served)
					mw(http.NotFoundHandler()).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil).WithContext(ctx))
				}()
				waitFor(t, func() bool { return waiters() == 1 }, "the request waits")
				cancel(fmt.Errorf("elsewhere: %w", cause))
				<-served
				assert.Equal(t, http.StatusTooManyRequests, rec.Code)
				assert.NotEmpty(t, rec.Header().Get("Retry-After"))
			})
		}
	}
}
