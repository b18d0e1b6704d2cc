// Package adaptive lets a concurrency limit find the backend's capacity: a
// Limiter measures the calls it admits and moves the limit of a semaphore (or
// of anything else with a settable limit) with the load the backend can take.
//
//	sem := semaphore.New(16, semaphore.WithName("db"))
//	l := adaptive.New(sem, nil) // Capacity, from 16
//	err := l.Do(ctx, func(ctx context.Context) error { return query(ctx) })
//
// # Algorithms
//
// An Algorithm is a pure function of samples: each Sample summarizes a window
// of calls (their round trips, the units in flight, drops, whether callers
// waited for the limit) and the algorithm answers with the new limit. Time is
// a field of the sample, never read from a clock, so an algorithm is tested
// with synthetic streams.
//
// Capacity, the default (New with a nil Algorithm), estimates what the backend
// serves at once without queueing, by Little's law, and keeps the limit just
// above it; it has a latency ceiling (CapacityConfig.MaxLatency). AIMD, Vegas
// and Gradient2 are the published algorithms of Netflix's concurrency-limits,
// with their defaults; each type's documentation says where it stands on the
// module's benchmark (the README's table). A user adds one by implementing
// Algorithm's two methods; one that also estimates the capacity implements
// Estimator, and Stats reports its estimate.
//
// # The Limiter
//
// A call's round trip runs from its grant (not its arrival: time spent waiting
// for the limit is not the backend's) to Done, and the units in flight are
// taken at the grant, the call's own included. Calls count their units:
// AcquireN and DoN take a weight, so a memory budget or a batch size adapts as
// a count of calls does. A window closes with at least 10 calls, after twice
// the shortest round trip in it but at most 20ms (WithWindow), and the new
// limit is applied at once with Resize, which never revokes holders: when the
// limit shrinks, the calls in excess finish and new calls wait, in the
// semaphore's strict FIFO order.
//
// The caller gives each call its Verdict: Success, Dropped (the overload
// signal: a 503 or 429, RESOURCE_EXHAUSTED), Ignore (a client error, a
// cancellation) or TimedOut. Done decides what a timeout means, for every way
// into the Limiter alike (Do, httpsem's Adaptive, grpcsem's Adaptive): a
// timeout at least as long as the last window's mean round trip is a drop; a
// sooner one tells of a call granted with too little of its deadline left,
// and counts as late, not as a drop. Do judges fn's error with Classify,
// which reads an error of this module by how the call ended
// (semaphore.OutcomeOf), never by the errors it matches.
//
// # What it drives
//
// New takes a Resizer: the core semaphore, a keyed set's global limit, or any
// setter through ResizeFunc, such as an admission controller's SetCountLimit.
// Given a semaphore, Acquire and Do wait on it, and its options (a name, an
// Observer, WithMaxWaiters) keep working. Given anything else, the calls are
// admitted by it and measured with Start, which takes their units and how
// long they waited; Acquire and Do still work, on a semaphore of the
// Limiter's own at the same limit. New starts from the semaphore's capacity
// with the default algorithm, and from the algorithm's initial limit when one
// is given.
//
// # Under overload
//
// With FIFO waiting up to each caller's deadline, an overloaded limiter, like
// any semaphore, fills its queue with callers that are granted too late to
// finish in time; give the wait a budget shorter than the deadline (a context
// for Acquire), or use WithStandingQueue, which fails them early instead, as
// CoDel does, once the queue has stood for an interval. It changes what
// Acquire promises (a caller may fail before its own deadline), so it is off
// by default.
//
// A Limiter starts no goroutine; a call granted at once allocates nothing.
// Acquire returns a *Call that stays on the caller's stack (Acquire is
// inlined), and Release is safe as a defer after Done. Limit is an atomic, so
// a metrics gauge reads it without taking the lock; WithOnChange reports each
// change.
package adaptive
