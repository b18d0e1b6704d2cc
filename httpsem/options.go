package httpsem

import (
	"net/http"
	"strconv"
	"time"

	"github.com/fairsem/semaphore/adaptive"
)

// An Option configures Limit, Admit or Adaptive. An option that does not apply
// to the middleware it is given to makes it panic.
type Option func(*config)

// config is fixed once the middleware is built.
type config struct {
	weight     func(*http.Request) int64             // Limit: units per request; nil means 1
	op         func(*http.Request) string            // Admit: operation name; nil means the pattern or method
	memory     func(*http.Request) int64             // Admit: memory estimate; nil means 0
	timeout    time.Duration                         // longest wait; 0 means as long as the request's context
	retryAfter time.Duration                         // Retry-After on overload responses; 0 means none
	status     int                                   // overload status
	dropped    func(status int) bool                 // Adaptive: which statuses are overload; nil means 5xx
	priority   func(*http.Request) adaptive.Priority // Limit, Adaptive: a request's priority; nil: its context's (adaptive.PriorityFrom)
	noShed     bool                                  // WithoutDeadlineShedding
}

// WithWeight sets how many units of the semaphore a request takes (default 1).
// Limit only. It panics if f is nil; a request for which f returns a negative
// weight panics in the handler.
func WithWeight(f func(r *http.Request) int64) Option {
	if f == nil {
		panic("httpsem: WithWeight(nil)")
	}
	return func(c *config) { c.weight = f }
}

// WithOp sets the operation name a request is admitted under. Admit only.
// Without it the name is r.Pattern, the ServeMux pattern that matched (set when
// the middleware wraps a handler registered on a ServeMux), or else r.Method.
// It panics if f is nil.
func WithOp(f func(r *http.Request) string) Option {
	if f == nil {
		panic("httpsem: WithOp(nil)")
	}
	return func(c *config) { c.op = f }
}

// WithMemory sets the memory, in bytes, a request is estimated to need; it is
// admitted only when that much is available (see admission.Controller.Acquire).
// Admit only. Without it the estimate is 0. It panics if f is nil; a request
// for which f returns a negative estimate panics in the handler.
func WithMemory(f func(r *http.Request) int64) Option {
	if f == nil {
		panic("httpsem: WithMemory(nil)")
	}
	return func(c *config) { c.memory = f }
}

// WithTimeout bounds how long a request waits to be admitted; past it the
// request gets the overload status. Without it a request waits as long as its
// own context allows. It is also the request's wait budget for the deadline
// rule (see the package documentation): a request whose expected wait is
// longer is refused at once rather than after waiting it out, unless
// WithoutDeadlineShedding. It panics if d <= 0 (use the semaphore's
// WithMaxWaiters(0) to refuse instead of waiting).
func WithTimeout(d time.Duration) Option {
	if d <= 0 {
		panic("httpsem: WithTimeout(" + d.String() + "): the wait must be positive")
	}
	return func(c *config) { c.timeout = d }
}

// WithRetryAfter sets the Retry-After header sent with overload responses, in
// whole seconds rounded up (default 1 second), for any d up to the largest
// Duration. 0 sends none. It panics if d is negative.
func WithRetryAfter(d time.Duration) Option {
	if d < 0 {
		panic("httpsem: WithRetryAfter(" + d.String() + "): negative duration")
	}
	return func(c *config) { c.retryAfter = d }
}

// WithStatus sets the status of overload responses: http.StatusServiceUnavailable
// (the default) or http.StatusTooManyRequests. It panics for any other code.
func WithStatus(code int) Option {
	if code != http.StatusServiceUnavailable && code != http.StatusTooManyRequests {
		panic("httpsem: WithStatus(" + strconv.Itoa(code) + "): must be 503 or 429")
	}
	return func(c *config) { c.status = code }
}

// WithoutDeadlineShedding turns the deadline rule off (see the package
// documentation): a request that finds the limit reached waits in the FIFO
// wait list as long as WithTimeout and its context allow, and is served
// however late, as before the rule. With Adaptive and Admit, the Limiter or
// controller is given no budget for the request (neither WithTimeout nor its
// context's deadline), so its rule sheds nothing on them; the levels' caps
// and an explicit adaptive.WithStandingQueue still apply.
func WithoutDeadlineShedding() Option { return func(c *config) { c.noShed = true } }

// WithPriority sets how critical a request is, from the request: under
// overload a Sheddable request is refused first and a Critical one last (see
// adaptive.Priority). Without it a request has the Priority its context
// carries (adaptive.ContextWithPriority, from an outer middleware), Default if
// none. Limit and Adaptive only. It panics if f is nil; a request for which f
// returns a value that is not a Priority panics in the handler.
func WithPriority(f func(r *http.Request) adaptive.Priority) Option {
	if f == nil {
		panic("httpsem: WithPriority(nil)")
	}
	return func(c *config) { c.priority = f }
}

func newConfig(opts []Option) config {
	c := config{retryAfter: time.Second, status: http.StatusServiceUnavailable}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// retryAfterValue renders the Retry-After header: whole seconds, rounded up.
func (c *config) retryAfterValue() string {
	if c.retryAfter <= 0 {
		return ""
	}
	// Rounded up from the quotient, not by adding a second first, which would
	// overflow for durations within a second of the largest.
	s := c.retryAfter / time.Second
	if c.retryAfter%time.Second != 0 {
		s++
	}
	return strconv.FormatInt(int64(s), 10)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
