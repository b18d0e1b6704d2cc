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
	"github.com/fairsem/semaphore/admission"
	"github.com/fairsem/semaphore/httpsem"
)

// door runs requests through h, each in the background; hold lets them
// return.
type door struct {
	h    http.Handler
	hold chan struct{}
}

// newDoor puts middleware in front of a handler that sleeps d and then
// waits for hold to be closed, if it is not yet.
func newDoor(mw func(http.Handler) http.Handler, d time.Duration) *door {
	dr := &door{hold: make(chan struct{})}
	dr.h = mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(d)
		<-dr.hold
	}))
	return dr
}

// served is a request sent in the background.
type served struct {
	rec  *httptest.ResponseRecorder
	done chan struct{}
	sent time.Time
	took time.Duration
}

func (dr *door) send(r *http.Request) *served {
	s := &served{rec: httptest.NewRecorder(), done: make(chan struct{}), sent: time.Now()}
	go func() {
		dr.h.ServeHTTP(s.rec, r)
		s.took = time.Since(s.sent)
		close(s.done)
	}()
	synctest.Wait()
	return s
}

func (s *served) answered() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

func get() *http.Request { return httptest.NewRequest("GET", "/", nil) }

// TestLimit_RefusesAtOnceARequestWhoseExpectedWaitExceedsWithTimeout: the
// request's usual round trip is measured from its handlers; a request that
// would wait longer than WithTimeout gets the overload answer at once.
func TestLimit_RefusesAtOnceARequestWhoseExpectedWaitExceedsWithTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sem := semaphore.New(1)
		dr := newDoor(httpsem.Limit(sem, httpsem.WithTimeout(150*time.Millisecond)), 100*time.Millisecond)
		close(dr.hold)
		first := dr.send(get())
		<-first.done // the usual round trip: 100ms
		running := dr.send(get())
		waits := dr.send(get())   // 100ms expected: within the 150ms
		refused := dr.send(get()) // 200ms expected
		<-refused.done
		assert.Zero(t, refused.took, "told at once")
		assert.Equal(t, http.StatusServiceUnavailable, refused.rec.Code)
		assert.Equal(t, "1", refused.rec.Header().Get("Retry-After"))
		assert.False(t, waits.answered())
		<-running.done
		<-waits.done
		assert.Equal(t, http.StatusOK, waits.rec.Code)
	})
}

// TestLimit_TheRequestsDeadlineMustCoverTheWaitAndTheRoundTrip: without
// WithTimeout, the request's context deadline is its budget: a request whose
// deadline cannot cover the expected wait plus the usual round trip gets the
// overload answer at once; one whose deadline covers both waits.
func TestLimit_TheRequestsDeadlineMustCoverTheWaitAndTheRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sem := semaphore.New(1)
		dr := newDoor(httpsem.Limit(sem), 100*time.Millisecond)
		close(dr.hold)
		<-dr.send(get()).done // the usual round trip: 100ms
		within := func(d time.Duration) *http.Request {
			ctx, cancel := context.WithTimeout(context.Background(), d)
			t.Cleanup(cancel)
			return get().WithContext(ctx)
		}
		running := dr.send(get())
		refused := dr.send(within(150 * time.Millisecond)) // 100ms of wait and 100ms of round trip do not fit
		<-refused.done
		assert.Zero(t, refused.took, "told at once")
		assert.Equal(t, http.StatusServiceUnavailable, refused.rec.Code)
		waits := dr.send(within(250 * time.Millisecond)) // they fit
		assert.False(t, waits.answered())
		<-running.done
		<-waits.done
		assert.Equal(t, http.StatusOK, waits.rec.Code)
		assert.Equal(t, 200*time.Millisecond, waits.took, "its wait and its round trip")
	})
}

func TestLimit_WithTimeoutStillEndsAWaitThatRunsLong(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sem := semaphore.New(1)
		dr := newDoor(httpsem.Limit(sem, httpsem.WithTimeout(150*time.Millisecond)), 10*time.Millisecond)
		close(dr.hold)
		<-dr.send(get()).done                                    // the usual round trip: 10ms
		require.NoError(t, sem.Acquire(context.Background(), 1)) // held by another user of the semaphore
		w := dr.send(get())                                      // 10ms expected: admitted, never granted
		<-w.done
		assert.Equal(t, 150*time.Millisecond, w.took, "the whole wait budget, then the overload answer")
		assert.Equal(t, http.StatusServiceUnavailable, w.rec.Code)
		sem.Release(1)
	})
}

func TestLimit_WithPriorityShedsSheddableRequestsFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sem := semaphore.New(1)
		priority := func(r *http.Request) adaptive.Priority {
			switch r.URL.Path {
			case "/batch":
				return adaptive.Sheddable
			case "/pay":
				return adaptive.Critical
			}
			return adaptive.Default
		}
		dr := newDoor(httpsem.Limit(sem, httpsem.WithPriority(priority)), 20*time.Millisecond)
		close(dr.hold)
		<-dr.send(get()).done // the usual round trip: 20ms
		running := dr.send(get())
		batch := dr.send(httptest.NewRequest("GET", "/batch", nil)) // 20ms expected: past the 5ms a sheddable request waits
		<-batch.done
		assert.Zero(t, batch.took)
		assert.Equal(t, http.StatusServiceUnavailable, batch.rec.Code)
		pay := dr.send(httptest.NewRequest("GET", "/pay", nil))
		assert.False(t, pay.answered(), "a critical request waits")
		<-running.done
		<-pay.done
		assert.Equal(t, http.StatusOK, pay.rec.Code)

		// Without WithPriority, the request's context says.
		dr = newDoor(httpsem.Limit(sem), 20*time.Millisecond)
		close(dr.hold)
		<-dr.send(get()).done
		running = dr.send(get())
		ctx := adaptive.ContextWithPriority(context.Background(), adaptive.Sheddable)
		batch = dr.send(get().WithContext(ctx))
		<-batch.done
		assert.Equal(t, http.StatusServiceUnavailable, batch.rec.Code)
		<-running.done

		bad := httpsem.Limit(sem, httpsem.WithPriority(func(*http.Request) adaptive.Priority { return 9 }))(http.NotFoundHandler())
		assert.PanicsWithValue(t, "httpsem: priority Level(9) for GET /: not a Priority", func() { bad.ServeHTTP(httptest.NewRecorder(), get()) })
	})
}

func TestLimit_WithoutDeadlineSheddingWaitsOutWithTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sem := semaphore.New(1)
		dr := newDoor(httpsem.Limit(sem, httpsem.WithTimeout(150*time.Millisecond), httpsem.WithoutDeadlineShedding()), 100*time.Millisecond)
		close(dr.hold)
		<-dr.send(get()).done
		running := dr.send(get())
		next := dr.send(get())
		late := dr.send(get()) // 200ms expected: the rule would refuse it at once
		<-late.done
		assert.Equal(t, 150*time.Millisecond, late.took, "it waited its whole timeout")
		assert.Equal(t, http.StatusServiceUnavailable, late.rec.Code)
		<-running.done
		<-next.done
	})
}

func TestAdaptive_HandsTheLimiterWithTimeoutAsTheWaitBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := adaptive.New(semaphore.New(1), adaptive.NewAIMD(adaptive.AIMDConfig{InitialLimit: 1, MinLimit: 1, MaxLimit: 1}),
			adaptive.WithWindow(1, 0, 0))
		dr := newDoor(httpsem.Adaptive(l, httpsem.WithTimeout(150*time.Millisecond)), 100*time.Millisecond)
		close(dr.hold)
		<-dr.send(get()).done // the usual round trip: 100ms
		running := dr.send(get())
		waits := dr.send(get())
		refused := dr.send(get())
		<-refused.done
		assert.Zero(t, refused.took, "200ms expected against a budget of 150ms: told at once")
		assert.Equal(t, http.StatusServiceUnavailable, refused.rec.Code)
		assert.Equal(t, uint64(1), l.Stats().ShedAtOnce)
		<-running.done
		<-waits.done
		assert.Equal(t, http.StatusOK, waits.rec.Code)

		// Without the rule at the door, the wait budget stays the door's own.
		off := newDoor(httpsem.Adaptive(l, httpsem.WithTimeout(150*time.Millisecond), httpsem.WithoutDeadlineShedding()), 100*time.Millisecond)
		close(off.hold)
		running = off.send(get())
		next := off.send(get())
		late := off.send(get())
		<-late.done
		assert.Equal(t, 150*time.Millisecond, late.took)
		<-running.done
		<-next.done
	})
}

func TestAdaptive_WithPriorityGivesTheLimiterTheRequestsPriority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := adaptive.New(semaphore.New(1), adaptive.NewAIMD(adaptive.AIMDConfig{InitialLimit: 1, MinLimit: 1, MaxLimit: 1}),
			adaptive.WithWindow(1, 0, 0))
		dr := newDoor(httpsem.Adaptive(l, httpsem.WithPriority(func(r *http.Request) adaptive.Priority {
			if r.URL.Path == "/batch" {
				return adaptive.Sheddable
			}
			return adaptive.Critical
		})), 20*time.Millisecond)
		close(dr.hold)
		<-dr.send(get()).done
		running := dr.send(get())
		batch := dr.send(httptest.NewRequest("GET", "/batch", nil))
		<-batch.done
		assert.Equal(t, http.StatusServiceUnavailable, batch.rec.Code)
		st := l.Stats()
		assert.Equal(t, uint64(1), st.Levels[adaptive.Sheddable].ShedAtOnce)
		assert.Equal(t, uint64(2), st.Levels[adaptive.Critical].Acquired)
		<-running.done
	})
}

func TestAdmit_HandsTheControllerWithTimeoutAsTheWaitBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctrl := admission.New(admission.Resources{Count: 1}, admission.WithName("api"))
		dr := newDoor(httpsem.Admit(ctrl, httpsem.WithTimeout(150*time.Millisecond)), 100*time.Millisecond)
		close(dr.hold)
		<-dr.send(get()).done // permits usually hold the count 100ms
		running := dr.send(get())
		waits := dr.send(get())
		refused := dr.send(get()) // two counts ahead of it: 200ms
		<-refused.done
		assert.Zero(t, refused.took, "told at once")
		assert.Equal(t, http.StatusServiceUnavailable, refused.rec.Code)
		assert.Equal(t, uint64(1), ctrl.Stats().Shed)
		<-running.done
		<-waits.done
		assert.Equal(t, http.StatusOK, waits.rec.Code)
	})
}
