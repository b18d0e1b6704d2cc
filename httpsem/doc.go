// Package httpsem is HTTP middleware that bounds the requests a server works on
// at once, with a bounded backlog, a wait timeout and a clear refusal instead of
// a hang.
//
//	sem := semaphore.New(64, semaphore.WithMaxWaiters(256)) // 64 in flight, 256 waiting
//	handler = httpsem.Limit(sem, httpsem.WithTimeout(2*time.Second))(handler)
//
// Limit admits a request once it holds units of a core Semaphore (one per
// request, or WithWeight); Admit admits it through an admission.Controller,
// which bounds count and memory together and sheds load by itself. A request
// waits in the semaphore's or controller's FIFO queue until it is admitted, its
// own context ends (the client went away), the wait timeout passes, or the
// queue is broken; whatever happens, it gets an answer.
//
// # Responses
//
// A request refused because the server is busy (the backlog is full, it waited
// WithTimeout without being admitted, the controller shed it, or its context
// ended while it waited) gets the overload status, 503 Service Unavailable by
// default or 429 Too Many Requests with WithStatus, and a Retry-After header
// (1 second by default, WithRetryAfter). A request that cannot be served here
// at all gets 503 without Retry-After: the semaphore or controller is broken
// (the server is going away), or the request's weight is larger than the
// semaphore's capacity (it would never fit). The response follows how the wait
// ended (semaphore.OutcomeOf), not the sentinels the error matches: a request
// whose context was cancelled with a cause matching ErrBroken is still an
// overload. The body is the status text only: error messages, which name the
// semaphore, stay on the server.
//
// # Never served too late
//
// Limit and Adaptive apply the module's deadline rule by default (for Adaptive,
// the Limiter's rule, see package adaptive): a request that finds the limit
// reached is refused at once, with the overload status and Retry-After, when
// its expected wait (the units ahead of it and its own, at the rate the units
// in flight come back per usual round trip, measured from admission to the
// handler's return) is longer than WithTimeout, or than its context's deadline
// less the usual round trip; one admitted waits at most that long. A queue
// that stands (nobody found it empty for 100ms) is drained: a request with a
// timeout or a deadline then waits at most 5ms. Before a round trip is
// measured, nobody is refused on the expected wait. WithoutDeadlineShedding
// turns it off: a request waits its whole timeout and is served however late,
// as before. Admit hands WithTimeout to the controller as the request's wait
// budget, for admission's own rule (see package admission).
//
// WithPriority says how critical a request is (adaptive.Critical, Default,
// Sheddable), from the request; without it, its context says
// (adaptive.ContextWithPriority, from an outer middleware). Under overload
// sheddable requests are refused first, critical ones last; admitted
// requests are served in arrival order whatever their priority. Floors
// (adaptive.WithFloor) are set on an adaptive Limiter, behind Adaptive.
//
// # Details
//
//   - The backlog is the semaphore's own bound, semaphore.WithMaxWaiters (for
//     Admit, admission.WithMaxWaiters), not a second counter in the
//     middleware, so the same bound holds when the semaphore is shared with
//     other users.
//   - Waiters are admitted in FIFO order, weights included.
//   - The default overload status is 503 (the server is overloaded, not the
//     client rate-limited). Broken and too large are always 503 without
//     Retry-After.
//   - Without WithTimeout (and without a deadline on its context) a request
//     waits as long as its own context allows. WithTimeout(d) panics for d <=
//     0: to refuse at once instead of waiting, bound the queue with
//     WithMaxWaiters(0).
//   - Admit's operation name is the request's ServeMux pattern (r.Pattern) when
//     the middleware wraps a routed handler, else the method, or WithOp; the
//     memory estimate is 0 unless WithMemory gives one. The handler finds its
//     permit with PermitFrom, to consume memory or mark CPU use.
//   - WithTimeout bounds the wait, not the request: Limit first tries to take
//     its units without waiting, so a request that needs no wait is never
//     refused by the timeout, and is admitted even if its context has already
//     ended (net/http would have run it too). Admit has no such try, so its
//     timeout should be well above the microseconds it takes to reach the
//     controller.
//   - Units and permits are released when the handler returns, also when it
//     panics (the panic continues to net/http).
//   - An option that does not apply to the middleware it is given to (WithWeight
//     to Admit, WithOp or WithMemory to Limit) panics, as do invalid values: a
//     programmer error is reported at construction, not ignored.
package httpsem
