package httpsem_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore/admission"
	"github.com/fairsem/semaphore/httpsem"
)

func TestAdmit_OpIsTheRoutePatternAndThePermitIsInTheContext(t *testing.T) {
	ctrl := admission.New(admission.Resources{Count: 4, Memory: 1 << 20}, admission.WithName("api"))
	seen := make(chan *admission.Permit, 1)
	mw := httpsem.Admit(ctrl, httpsem.WithMemory(func(r *http.Request) int64 { return 1000 }))
	mux := http.NewServeMux()
	mux.Handle("GET /items/{id}", mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := httpsem.PermitFrom(r.Context())
		seen <- p
		assert.Equal(t, admission.Resources{Count: 1, Memory: 1000}, p.Consumed())
	})))
	srv := serve(t, mux)
	got := <-srv.get(t.Context(), "/items/7")
	require.NoError(t, got.err)
	assert.Equal(t, http.StatusOK, got.code)
	p := <-seen
	require.NotNil(t, p)
	assert.Equal(t, "GET /items/{id}", p.Op())
	assert.Equal(t, admission.Resources{}, ctrl.Stats().Held, "released after the handler")
}

func TestAdmit_OpIsTheMethodWithoutARouteOrFromWithOp(t *testing.T) {
	ctrl := admission.New(admission.Resources{Count: 4}, admission.WithName("api"))
	ops := make(chan string, 2)
	record := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ops <- httpsem.PermitFrom(r.Context()).Op()
	})
	httpsem.Admit(ctrl)(record).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/x", nil))
	httpsem.Admit(ctrl, httpsem.WithOp(func(r *http.Request) string { return "op:" + r.URL.Path }))(record).
		ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/y", nil))
	assert.Equal(t, "POST", <-ops)
	assert.Equal(t, "op:/y", <-ops)
	assert.Nil(t, httpsem.PermitFrom(context.Background()))
}

func TestAdmit_FullQueueGetsOverloadStatusWithRetryAfter(t *testing.T) {
	ctrl := admission.New(admission.Resources{Count: 1}, admission.WithName("api"), admission.WithMaxWaiters(1))
	h := newGated()
	srv := serve(t, httpsem.Admit(ctrl, httpsem.WithStatus(http.StatusTooManyRequests))(h))
	first := srv.get(t.Context(), "/1")
	<-h.started
	second := srv.get(t.Context(), "/2")
	waitFor(t, func() bool { return ctrl.Stats().Waiters == 1 }, "second queued")
	third := <-srv.get(t.Context(), "/3")
	require.NoError(t, third.err)
	assert.Equal(t, http.StatusTooManyRequests, third.code)
	assert.Equal(t, "1", third.retryAfter)
	close(h.release)
	assert.Equal(t, http.StatusOK, (<-first).code)
	assert.Equal(t, http.StatusOK, (<-second).code)
}

func TestAdmit_BrokenControllerGets503WithoutRetryAfter(t *testing.T) {
	ctrl := admission.New(admission.Resources{Count: 1}, admission.WithName("api"))
	ctrl.Break(nil)
	srv := serve(t, httpsem.Admit(ctrl)(http.NotFoundHandler()))
	got := <-srv.get(t.Context(), "/")
	require.NoError(t, got.err)
	assert.Equal(t, http.StatusServiceUnavailable, got.code)
	assert.Empty(t, got.retryAfter)
}

func TestAdmit_ClientDisconnectingWhileQueuedLeavesTheQueue(t *testing.T) {
	ctrl := admission.New(admission.Resources{Count: 1}, admission.WithName("api"))
	h := newGated()
	srv := serve(t, httpsem.Admit(ctrl)(h))
	first := srv.get(t.Context(), "/1")
	<-h.started
	ctx, cancel := context.WithCancel(t.Context())
	gone := srv.get(ctx, "/gone")
	waitFor(t, func() bool { return ctrl.Stats().Waiters == 1 }, "queued")
	cancel()
	require.ErrorIs(t, (<-gone).err, context.Canceled)
	waitFor(t, func() bool { return ctrl.Stats().Waiters == 0 }, "left the queue")
	close(h.release)
	assert.Equal(t, http.StatusOK, (<-first).code)
	assert.Equal(t, uint64(1), ctrl.Stats().Acquired, "the request that left never ran")
	assert.Equal(t, admission.Resources{}, ctrl.Stats().Held)
}

func TestAdmit_WaitTimeoutGetsOverloadStatus(t *testing.T) {
	ctrl := admission.New(admission.Resources{Count: 1}, admission.WithName("api"))
	h := newGated()
	// The first request is admitted without a timeout, so that however short
	// the second one's is, it cannot refuse the first (Admit cannot try first).
	mux := http.NewServeMux()
	mux.Handle("/1", httpsem.Admit(ctrl)(h))
	mux.Handle("/2", httpsem.Admit(ctrl, httpsem.WithTimeout(1), httpsem.WithRetryAfter(0))(h))
	srv := serve(t, mux)
	first := srv.get(t.Context(), "/1")
	<-h.started
	got := <-srv.get(t.Context(), "/2")
	require.NoError(t, got.err)
	assert.Equal(t, http.StatusServiceUnavailable, got.code)
	assert.Empty(t, got.retryAfter)
	close(h.release)
	resp := <-first
	assert.Equal(t, http.StatusOK, resp.code)
}

func TestAdmit_NegativeMemoryPanicsAndPanicReleasesThePermit(t *testing.T) {
	ctrl := admission.New(admission.Resources{Count: 1}, admission.WithName("api"))
	bad := httpsem.Admit(ctrl, httpsem.WithMemory(func(*http.Request) int64 { return -5 }))(http.NotFoundHandler())
	assert.PanicsWithValue(t, "httpsem: memory estimate -5 for GET /m: negative", func() {
		bad.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/m", nil))
	})
	boom := httpsem.Admit(ctrl)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }))
	assert.Panics(t, func() { boom.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil)) })
	assert.Equal(t, admission.Resources{}, ctrl.Stats().Held)
	rec := httptest.NewRecorder()
	httpsem.Admit(ctrl)(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })).
		ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	assert.Equal(t, "ok", rec.Body.String(), "the permit came back")
}
