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
// # Never served too late
//
// A caller that finds the limit reached is admitted to the semaphore's FIFO
// wait list only if it can still be served in time, and waits no longer than
// that: the deadline rule, on by default for every caller whose context has a
// deadline (or that a door gave a wait budget, as httpsem's and grpcsem's
// WithTimeout do). Its expected wait is the units that must come back before
// it fits (the units waiting ahead of it, its own, those in flight past the
// limit) at the rate the units in flight come back, the limit (or the units
// in flight, if more) per usual round trip, which is the last window's mean.
// A caller whose deadline cannot cover that wait plus the usual round trip is
// refused at once; one admitted waits at most until its deadline less the
// round trip; one granted too late (the round trip grew meanwhile) hands its
// units on. A caller whose deadline cannot cover the round trip is refused
// even when units are free. Each fails with an error whose outcome is
// semaphore.Shed, matching semaphore.ErrShed (and so ErrQueueFull), and is
// counted in Stats.Shed (ShedAtOnce for the refusals at once). Before the
// first window closes the round trip is unknown: nobody is refused on the
// expected wait, and a deadline bounds the wait whole, as the context does.
//
// A context's deadline is read as the caller's deadline for the whole call. A
// caller that bounds its wait apart from it (a 20ms wait for a call due in
// 200ms) calls AcquireTimeout: a context of 20ms would tell the rule that the
// call must end within 20ms, and it would be refused.
//
// A queue that stands is drained, as CoDel does in "Fail at Scale": once no
// caller has found the queue empty for 100ms, a Default caller with a
// deadline waits at most 5ms (WithStandingQueue sets both values and drains
// for callers without a deadline too). Breakwater's drop at the budget is the
// bound above; Meta's adaptive LIFO is not done, since the wait list stays
// the core's FIFO one (see Priority for what replaces it).
//
// WithoutDeadlineShedding turns the rule off: callers wait FIFO as long as
// their context allows and are granted however late, as a plain semaphore
// does; the core semaphore itself keeps that contract.
//
// # Criticality
//
// A call carries a Priority in its context (ContextWithPriority; httpsem and
// grpcsem take a function of the request): Critical, Default (the zero value)
// or Sheddable. The levels share the one FIFO wait list; a level caps how long
// its calls may expect to wait, and so whether they may join it. A Sheddable
// call waits at most the standing-queue target (5ms), always; a Default call
// at most twice that while Sheddable calls are being shed, and the target
// while the queue stands; a Critical call as its deadline allows. So as the
// load grows the queue's expected wait reaches the Sheddable cap first, and
// refusing Sheddable calls holds it there; only when that is not enough does
// it reach the Default cap; Critical calls find a queue of at most 10ms while
// either level is shed. Admitted calls are granted in arrival order, whatever
// their level: a level never jumps the queue, so no second wait list, grant
// rule or cancel rule exists beside the semaphore's. WithFloor gives a level
// a share of the limit within which its calls skip their cap, so it is never
// starved outright. This is failsafe-go's PriorityLimiter idea (refuse
// levels at a threshold that rises with the queue), decided from the
// expected wait per call instead of from a periodic calibration.
//
// A Limiter starts no goroutine; a call granted at once allocates nothing.
// Acquire returns a *Call that stays on the caller's stack (Acquire is
// inlined), and Release is safe as a defer after Done. Limit is an atomic, so
// a metrics gauge reads it without taking the lock; WithOnChange reports each
// change.
package adaptive
