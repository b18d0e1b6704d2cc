package httpsem

import (
	"context"
	"net/http"

	"github.com/fairsem/semaphore/adaptive"
	"github.com/fairsem/semaphore/internal/shed"
)

// Adaptive returns middleware that runs requests behind an adaptive limiter:
// a request waits for a slot under l's current limit (in the FIFO wait list of
// the semaphore l drives), runs, and its verdict (below) moves the limit. l's
// deadline rule reads WithTimeout as the request's wait budget and
// WithPriority as its Priority. It is refused as Limit refuses: the overload
// status with Retry-After when it cannot get a slot in time (WithTimeout, its
// context, the semaphore's WithMaxWaiters, l's deadline rule), 503 without it
// when the semaphore is broken.
//
// The verdict on a request that ran: Dropped (overload) when the handler
// answered a status that WithDropped's function accepts (by default any 5xx);
// else TimedOut when the request's deadline passed (which l judges as it
// judges every timeout, see adaptive.TimedOut); Ignore when the client went
// away (the request's context was cancelled) or the handler panicked; Success
// otherwise. The status is read through a wrapper of the ResponseWriter; the
// handler reaches the original's optional interfaces (Flusher, Hijacker)
// through http.ResponseController.
//
// Adaptive panics if l is nil, or if an option applies only to Limit's
// weights or to Admit.
func Adaptive(l *adaptive.Limiter, opts ...Option) func(http.Handler) http.Handler {
	if l == nil {
		panic("httpsem: Adaptive(nil)")
	}
	c := newConfig(opts)
	if c.weight != nil || c.op != nil || c.memory != nil {
		panic("httpsem: WithWeight, WithOp and WithMemory do not apply to Adaptive")
	}
	dropped := c.dropped
	if dropped == nil {
		dropped = func(status int) bool { return status >= 500 }
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, cancel := r.Context(), context.CancelFunc(nil)
			if c.priority != nil {
				ctx = adaptive.ContextWithPriority(ctx, c.priority(r))
			}
			if c.noShed {
				// No budget from this door: the request waits as WithTimeout
				// and its context allow, and the Limiter sheds nothing on them.
				ctx, cancel = c.waitContextOf(shed.WithBudget(ctx, shed.Budget{}))
			} else if c.timeout > 0 {
				// The Limiter bounds the wait by the budget, and sheds on it.
				ctx = shed.WithBudget(ctx, c.budget(r))
			}
			call, err := l.Acquire(ctx)
			if cancel != nil {
				cancel()
			}
			if err != nil {
				c.refuse(w, err)
				return
			}
			defer call.Release() // a panicking handler: no sample
			sw := &statusWriter{ResponseWriter: w}
			next.ServeHTTP(sw, r)
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			v := adaptive.Classify(r.Context().Err())
			if dropped(status) {
				v = adaptive.Dropped
			}
			call.Done(v)
		})
	}
}

// WithDropped sets which response statuses Adaptive counts as overload
// (dropped calls that lower the limit); by default any 5xx. Adaptive only. It
// panics if f is nil.
func WithDropped(f func(status int) bool) Option {
	if f == nil {
		panic("httpsem: WithDropped(nil)")
	}
	return func(c *config) { c.dropped = f }
}

// statusWriter records the status the handler answered.
type statusWriter struct {
	http.ResponseWriter
	status int // 0 until WriteHeader or Write
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 { // 1xx are informational: the final status comes later
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the original ResponseWriter.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
