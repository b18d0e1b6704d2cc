package semdebug

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/stretchr/testify/require"
)

// fakeSource is a Limiter whose reading the test sets.
type fakeSource struct {
	mu   sync.Mutex
	snap semaphore.Reading
	dump string
}

// newFake returns a fake named name, of kind "fake" unless snap names another.
func newFake(name string, snap semaphore.Reading) *fakeSource {
	snap.Name = name
	if snap.Kind == "" {
		snap.Kind = "fake"
	}
	return &fakeSource{snap: snap, dump: "dump of " + name + "\n"}
}

// registerKept registers p on r and keeps p reachable until the returned func
// unregisters it: registration is weak, so an object the test no longer refers
// to could be collected, and leave the page, in the middle of the test.
func registerKept[T any, P limiterPtr[T]](r *registry, p P) (unregister func()) {
	unreg := registerPtr[T](r, p)
	return func() {
		unreg()
		runtime.KeepAlive(p)
	}
}

func (f *fakeSource) Reading() semaphore.Reading {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snap
}

func (f *fakeSource) Diagnostics(int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dump
}

func (f *fakeSource) set(update func(*semaphore.Reading)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	update(&f.snap)
}

// get serves path with h and returns the status, the content type and the body.
func get(t *testing.T, h http.Handler, path string) (int, string, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, err := io.ReadAll(rec.Body)
	require.NoError(t, err)
	return rec.Code, rec.Header().Get("Content-Type"), string(body)
}

// samplerRunning reports whether r's sampler goroutine is running.
func samplerRunning(r *registry) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sampler.running
}

func ptrString(p any) string { return fmt.Sprintf("%p", p) }

// outlastSampling, in a synctest bubble, lets every lease of r end and waits for
// its sampler to exit, which the bubble needs before it can end.
func outlastSampling(t *testing.T, r *registry) {
	t.Helper()
	time.Sleep(viewLease + 2*sampleEvery)
	synctest.Wait()
	require.False(t, samplerRunning(r))
}
