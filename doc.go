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
// it holds no units and it counts in Waiters no longer. When a grant and a
// cancellation race, the caller sees its context error and the granted units are
// handed on as by Release, never lost.
//
// Break fails every waiter and every later Acquire with an error that matches
// ErrBroken and the cause given. After Break, TryAcquire returns false, Available
// reports 0, and Release, Consume and Resize do nothing, so that holders can return
// units during shutdown without checking anything.
//
// Consume takes units without waiting and may drive availability below zero
// (Available then reports 0); Resize changes the capacity without revoking holders
// and fails queued requests that no longer fit with ErrTooLarge.
//
// # Decisions where the contract leaves room
//
//   - Zero units: Acquire(ctx, 0) follows the FIFO rule like any other request: it
//     waits behind earlier waiters, and while availability is negative after Consume.
//   - WithMaxWaiters(0) allows no waiting at all: every call that cannot be granted
//     at once fails with ErrQueueFull. Without the option the list is unbounded.
//   - Error messages name the semaphore by its WithName name, or as "unnamed
//     semaphore 0x…" (its address) so that log lines about one semaphore can be told
//     apart. "queued behind N waiters" counts the waiters ahead when the call joined
//     the list (counting them again on failure would cost O(N)).
//   - Stats counts a cancelled call that was granted in the race as Cancelled, not
//     Acquired: the counters describe what callers saw.
//   - Capacities, requests and releases are limited to MaxUnits.
//   - Panics (programmer errors: negative units, releasing more than is held, a
//     negative capacity) name the semaphore and the value.
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
// Decisions where the issue left room:
//
//   - The observer hears about every call not granted at once, refusals included
//     (Queued false), and never about calls granted at once, so that the lock-free
//     paths never look at it. Its Outcome follows the error the caller sees: a
//     context deadline is TimedOut, although Stats counts it as Cancelled.
//   - Only Units are tracked: a plain Acquire/Release pair has nothing to follow the
//     units by, so dumps show those units as held outside Units.
//   - A tracked Units is followed through a weak pointer and finalized rather than
//     given a runtime.AddCleanup: leak detection must read how many units the
//     Units held when it was dropped, which a cleanup cannot see, and counting them
//     anywhere else would cost Units.Release a branch on every semaphore.
//   - Leaked units are reported, never returned, unless the report's Reclaim is
//     called.
//   - The core does not import expvar, whose import registers an HTTP handler; the
//     one-line Publish is documented on LogValue instead.
//   - The watchdog starts no goroutine; its timer is armed only while someone
//     waits, and dumps are rate-limited per semaphore.
//
// # Cost
//
// TryAcquire, and Acquire and Release when nobody waits, are one atomic operation
// each and take no lock. A call that has to wait costs a pooled wait-list node and
// no allocation with a context that cannot be cancelled, one allocation (the timer)
// with AcquireTimeout, and one (the channel it selects on) with a cancellable
// context. The semaphore never starts a goroutine; AcquireTimeout's deadline runs on
// the runtime's timer goroutine.
//
// # Testing with testing/synctest
//
// A goroutine waiting in Acquire or AcquireTimeout is durably blocked, and
// AcquireTimeout uses the bubble's fake clock, so code built on this package can be
// tested in a synctest bubble. A semaphore must not be shared between bubbles, or
// between a bubble and the outside, as with channels.
package semaphore
