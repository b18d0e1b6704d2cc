// Package adaptive lets a semaphore find its own capacity: a Limiter measures
// the calls it admits and moves the limit with the load the backend can take,
// the way TCP congestion control moves a window.
//
//	sem := semaphore.New(1, semaphore.WithName("db"))
//	l := adaptive.New(sem, adaptive.NewGradient2(adaptive.Gradient2Config{MinLimit: 4}))
//	err := l.Do(ctx, func(ctx context.Context) error { return query(ctx) })
//
// # Algorithms and the Limiter
//
// An Algorithm is a pure function of samples: each Sample summarizes a window
// of calls (mean and shortest round trip, most calls in flight, drops) and the
// algorithm answers with the new limit. Time is a field of the sample, never
// read from a clock, so an algorithm is tested with synthetic streams. Three
// are provided, with the published defaults of Netflix's concurrency-limits:
//
//   - AIMD, loss-based: +1 per window without a drop, x0.9 on a drop;
//   - Vegas, delay-based: estimates the backend's queue from the shortest round
//     trip seen and keeps it between Alpha and Beta;
//   - Gradient2, delay-based: scales the limit by the ratio of the long-term to
//     the recent round trip, plus a small queue allowance, smoothed.
//
// All are bounded by MinLimit and MaxLimit. A user adds one by implementing
// Algorithm's two methods.
//
// The Limiter applies the algorithm: a call's round trip runs from its grant
// (not its arrival: time spent waiting in the semaphore's queue is not the
// backend's) to Done, and the in-flight count is taken at the grant, the call
// itself included. The caller judges each call: Success, Dropped (the overload
// signal: a timeout, 503/429, RESOURCE_EXHAUSTED) or Ignore. A window closes
// with at least 10 calls, after twice the shortest round trip but at most 20ms
// (WithWindow), and the new limit is applied at once with Resize, which never
// revokes holders: when the limit shrinks, the calls in excess finish and new
// calls wait. The waiters are served in the semaphore's strict FIFO order.
//
// # Under overload
//
// With FIFO waiting up to each caller's deadline, an overloaded limiter, like
// any semaphore, fills its queue with callers that are granted too late to
// finish in time. WithStandingQueue fails them early instead, as CoDel does,
// once the queue has stood for an interval; the README's benchmark compares
// it with FIFO waiting.
//
// NewController drives an admission.Controller's count limit instead
// (admission's SetCountLimit); there the controller admits and Track measures.
// The httpsem package's Adaptive middleware runs HTTP handlers behind a
// Limiter.
//
// # Decisions where the issue left room
//
//   - A Limiter wraps a Semaphore given to New rather than making its own, so
//     that the semaphore's options (WithMaxWaiters, WithName, an Observer, the
//     watchdog) keep working, and Stats, Diagnostics and Break stay the
//     semaphore's. New resizes it to the algorithm's initial limit. Break on
//     the semaphore is the Limiter's terminal state: Acquire and Do fail with
//     semaphore.ErrBroken from then on, and a broken semaphore ignores Resize.
//   - Samples are aggregated per window (as Netflix's WindowedLimit) rather
//     than given to the algorithm one by one: the algorithm runs under the
//     Limiter's lock once per window, not once per call, and a window is long
//     enough (two round trips) for the calls started under the previous limit
//     to have ended. A window's RTT is the mean of its calls that were not
//     dropped: a dropped call's round trip is the time until it gave up, not the
//     backend's latency.
//   - Gradient2 treats a window with a drop as overload (gradient 0.5); Netflix's
//     ignores drops. Vegas probes its no-load round trip without jitter, so
//     that it stays deterministic.
//   - Do's default verdict: nil is Success; context.DeadlineExceeded and
//     semaphore.ErrTimedOut are Dropped; context.Canceled is Ignore (the caller
//     left, the backend said nothing); any other error is Success, because the
//     call did run at the backend and its round trip is load information.
//     WithClassifier replaces it.
//   - Acquire returns a *Call that stays on the caller's stack (Acquire is
//     inlined), so that a granted call allocates nothing, and Release is safe as
//     a defer after Done; a Call is not pooled, because a pooled handle could
//     be released twice by a stale owner.
//   - The limit changes are reported by Stats (Increases, Decreases,
//     LastChange) and by WithOnChange; the limit itself is an atomic, so a
//     metrics gauge reads Limit without taking the lock.
//   - WithStandingQueue (CoDel-like shedding of queued callers) is kept, as
//     an option off by default: it bounds the wait of a caller whose context
//     allows a long one, and in the benchmark it halves the median latency of
//     the calls served, but it changes what Acquire promises (a caller may fail
//     before its own deadline).
//   - The algorithms keep the published rule that the limit does not grow
//     while less than half of it is in flight, so under a light load the limit
//     drifts up to twice the peak in flight; a sudden loss of capacity then
//     meets a high limit until the first slow calls complete (see the README).
//   - A Limiter made by NewController has no Acquire or Do (they panic):
//     admission needs an operation and a memory estimate, which belong to the
//     controller's own Acquire; Track measures the calls it admitted.
package adaptive
