// Package semaphore provides a weighted, strictly FIFO semaphore with a
// timeout-aware wait list, a broken state for shutdown, and Units that return
// themselves: the semaphore Seastar users know, for Go.
//
// Use it to bound concurrency (a critical section that spans blocking steps, an
// accept loop that should push back on a flood of clients) and to budget weighted
// resources such as bytes of memory:
//
//	sem := semaphore.New(10, semaphore.WithName("db-conns"))
//
//	u, err := sem.AcquireUnits(ctx, 1)
//	if err != nil {
//		return err // says which semaphore, what was asked and why it failed
//	}
//	defer u.Release()
//
// # Semantics
//
// A call is granted at once only when its units are available and nobody is
// waiting; otherwise it joins the tail of the wait list. Units are granted to
// waiters in arrival order, by the goroutine that releases them, as far as they fit:
// a large waiter at the head holds back smaller ones behind it, so it is never
// starved. The grant order is FIFO; the order in which granted goroutines are then
// scheduled is up to the Go scheduler.
//
// A waiter leaves the list the moment it gives up (its context ends or its
// AcquireTimeout deadline passes), from wherever it stands, and if its leaving lets
// the waiters behind it fit they are granted at once. A failed call leaves no trace:
// it holds no units and it counts in Waiters no longer.
//
// A call granted while its context is already done fails with the context's
// error and gives the units back as Release does, so that the waiters that now
// fit are granted in FIFO order and nothing is lost. So a cancellation that
// happened before the grant (cancel, then the Release that would have granted
// the call) always wins, wherever the call was: checking its context, yielding,
// joining the list or waking; one concurrent with the grant may win too. This is
// golang.org/x/sync/semaphore's rule, and a grant given back is not counted in
// Stats.Acquired.
//
// Break fails every waiter and every later Acquire with an error that matches
// ErrBroken and the cause given. After Break, TryAcquire returns false, Available
// reports 0, Resize does nothing, Consume changes nothing visible, and Release never
// panics, so that holders can return units during shutdown without checking
// anything. Units consumed after Break count as out like held ones. Drain waits
// until every unit is back; Break followed by Drain is the shutdown sequence "stop
// admitting, then wait for the holders".
//
// Consume takes units without waiting and may drive availability below zero
// (Available then reports 0); Resize changes the capacity without revoking holders
// and fails queued requests that no longer fit with ErrTooLarge.
//
// Every failed call decides in one order: a done context first (Acquire with a
// context that has already ended fails even when units are free), then broken,
// then too large, then queue full or, for AcquireTimeout with d <= 0, "would wait".
// A call that fails holds no units and holds nobody back.
//
// A call that finds too few units while nobody waits yields the processor once and
// looks again before it queues, so that a unit held for a moment is taken without
// parking; it never takes units while anyone waits. TryAcquire and
// AcquireTimeout(d <= 0) never yield: they do not wait.
//
// Each call not granted at once ends in exactly one Outcome, decided where it
// ends; Stats, the Observer and the error the caller sees are all derived from
// that one decision, so they cannot disagree, and OutcomeOf reads it back from
// the error, through any wrapping. A context that ended by its deadline is
// TimedOut (its error matches ErrTimedOut and context.DeadlineExceeded); one
// cancelled otherwise is Cancelled, whatever cause it carries: the cause may
// match any sentinel, so count and label calls with OutcomeOf, not errors.Is.
//
// The sentinels ErrBroken, ErrTimedOut, ErrQueueFull and ErrTooLarge are the
// module's: the admission, keyed and etcdsem packages return errors that match
// them for the same meanings, so one errors.Is check covers every package.
//
// # Edge cases
//
//   - The zero Semaphore is not usable, as in Seastar, where a semaphore has no
//     default constructor: every method that takes, returns or waits for units
//     (the acquire forms, Release, Consume, Resize, Break, Drain) panics with
//     "semaphore: zero Semaphore: create it with New"; the queries (Capacity,
//     Available, Waiters, Name, Err, String, Stats, Reading) describe it without panicking,
//     so that logging one never crashes. A silent capacity of 0 would instead
//     fail every call with a message blaming the capacity.
//   - Zero units: Acquire(ctx, 0) follows the FIFO rule like any other request: it
//     waits behind earlier waiters, and while availability is negative after Consume.
//   - WithMaxWaiters(0) allows no waiting at all: every call that cannot be granted
//     at once fails with ErrQueueFull. Without the option the list is unbounded.
//   - Error messages name the semaphore by its WithName name, or as "unnamed
//     semaphore 0x…" (its address) so that log lines about one semaphore can be told
//     apart. "queued behind N waiters" counts the waiters ahead when the call joined
//     the list (counting them again on failure would cost O(N)).
//   - Stats counts every failed call once, by its Outcome, when the call
//     returns: a wait that ends at its context's deadline is TimedOut, like
//     AcquireTimeout's; a cancelled call that was granted in the race is
//     Cancelled (or TimedOut), not Acquired: the counters describe what callers
//     saw. AcquireTimeout(0) that cannot be granted is TimedOut and never queues.
//     A waiter failed by a shrinking Resize is counted in Rejected when it
//     returns, not when Resize does.
//   - Capacities, requests, releases and Consume amounts are limited to MaxUnits,
//     and so is the debt Consume may create. The state keeps room for the sum of
//     any two values in range, so no count ever wraps, and Release detects an
//     over-release (more units available than the capacity) as it happens, not
//     later. Release cannot tell which holder released too much; Units, which
//     release what they own exactly once, are what protect a caller.
//   - Drain does not stop admission by itself (call Break first for a shutdown);
//     it returns nil when, at some instant, no unit is held or consumed. After
//     Break, Release keeps counting returned units for Drain, capped at the
//     capacity, while Available reports 0.
//   - Panics (programmer errors: negative units, releasing more than is held, a
//     capacity out of range, a negative WithMaxWaiters) name the semaphore and the
//     value.
//   - Errors have one shape across the module: the message reads
//     `<kind> "<name>": <what was asked>: <why>`, for example `semaphore "db":
//     acquire 2 units: timed out after 1.5s, ...`; the sentinels' own texts are
//     bare reasons ("timed out"), since the message names the semaphore.
//     errors.Is matches the sentinel and, where they apply, the context's error
//     and cause or the error passed to Break. Unlike golang.org/x/sync/semaphore,
//     a context error is wrapped, not returned as is: compare with errors.Is,
//     not ==.
//
// # Observability
//
// WithObserver reports how each call that was not granted at once ended, with its
// time in the wait list; the metrics modules (metrics/prom, metrics/otel) turn that
// into wait-time histograms. A Semaphore logs as a slog group (LogValue), and its
// Stats publish with expvar in one line. WithHolderTracking records who holds units
// through Units, for Diagnostics, a dump whose first line names the bottleneck;
// WithWatchdog logs that dump when the head waiter waits too long;
// WithLeakDetection reports Units dropped without Release.
//
// Reading gives the same state in plain values every package of the module shares
// (a Reading: capacity, units held, waiters, counters, and what is unknown), which
// is how the debug page and tools read any limiter without knowing its type.
// Interface is the contract, in the core's words (TryAcquire, Acquire,
// AcquireTimeout, Release, Resize, Break, Reading), that the capabilities built
// over a semaphore-shaped type rely on; *Semaphore is its model.
//
// In detail:
//
//   - The observer hears about every call not granted at once, refusals included
//     (Queued false), and never about calls granted at once, so that the lock-free
//     paths never look at it. Its Outcome follows the error the caller sees, as
//     the Stats counters do: a context deadline is TimedOut.
//   - Only Units are tracked: a plain Acquire/Release pair has nothing to follow the
//     units by, so dumps show those units as held outside Units.
//   - A tracked Units is followed through a weak pointer, and with leak detection
//     it gets a finalizer rather than a runtime.AddCleanup: leak detection must
//     read how many units the Units held when it was dropped, which a cleanup
//     cannot see, and counting them anywhere else would cost Units.Release a
//     branch on every semaphore.
//   - With tracking on, a call that queues reads the clock once more, under the
//     lock, so that dumps can show how long each waiter has waited, and that time
//     is kept in a map beside the wait list rather than in the node, which stays
//     64 bytes; without tracking the wait's two clock reads are the ones
//     Stats.WaitTime and the observer share.
//   - Leaked units are reported, never returned, unless the report's Reclaim is
//     called.
//   - The core does not import expvar, whose import registers an HTTP handler; the
//     one-line Publish is documented on LogValue instead.
//   - The watchdog starts no goroutine; its timer is armed only while someone
//     waits (it is stopped and dropped when the wait list empties, so it never
//     keeps an idle semaphore reachable), and dumps are rate-limited per semaphore.
//   - After Break, Diagnostics counts as held every unit Drain waits for, those
//     held outside Units included, as before Break: the dump is what explains a
//     stuck shutdown.
//
// # Cost
//
// New without options allocates one 80-byte object; what only some semaphores
// use (the wait list's Cond, the counters of failed calls, the deadline heap,
// Drain's channel) is allocated once, about 200 bytes, by the first call that
// waits, is refused, or breaks or drains the semaphore. Options are kept in an
// object of their own, shared by every semaphore made without any. A map of
// per-key semaphores therefore costs 80 bytes per idle key.
//
// TryAcquire, and Acquire and Release when nobody waits, are one compare-and-swap
// each and take no lock. An Acquire or AcquireTimeout that finds too few units while
// nobody waits yields the processor once and tries again before it queues: a
// park and a wake-up cost far more than a yield when the holder is about to
// release, and a yield costs little when it is not. A call that has to wait costs
// a pooled 64-byte wait-list node and no allocation with a context that cannot be
// cancelled (it parks on the semaphore's one sync.Cond), at most one allocation
// (a timer) with AcquireTimeout, plus the timer's callback bound once in the
// semaphore's life, and one (the channel it selects on) with a cancellable
// context. AcquireTimeout's waiters share one deadline timer per semaphore, set
// for the earliest deadline, so a timed wait adds a heap push and a removal under
// the lock rather than starting and stopping a runtime timer, and allocates
// nothing while the pending timer covers its deadline. The timer is stopped when
// the last timed waiter leaves, so none outlives the waits it serves.
// The semaphore starts no goroutine of its own: the deadline timer's callback runs
// in the goroutine time.AfterFunc starts for it when it fires. Stats.WaitTime is
// exact: a call that waits reads the monotonic clock twice, when it joins the list
// and when it wakes.
//
// # Testing with testing/synctest
//
// A goroutine waiting in Acquire or AcquireTimeout is durably blocked, and
// AcquireTimeout uses the bubble's fake clock, so code built on this package can be
// tested in a synctest bubble. A semaphore must not be used from two bubbles, or
// from a bubble and the outside, at the same time, as with channels. Used by one
// after the other (a package-level semaphore that several tests use, each in its
// own bubble), it works as long as nobody waits at the switch: nothing a wait
// leaves behind is tied to a bubble, and the deadline timer and the watchdog's
// timer are stopped and dropped when the last waiter they serve leaves.
package semaphore
