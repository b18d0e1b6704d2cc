package semaphore

import (
	"time"
)

// An Observer is told how each call that could not be granted at once ended, and
// about Break, so that wait times can be exported as a distribution (a p99 wait),
// which the totals in Stats cannot give. Set one with WithObserver; the metrics
// modules (metrics/prom, metrics/otel) provide ready-made ones.
//
// The methods run synchronously on the goroutine that made the call (WaitEnded) or
// that called Break (Broken), after the semaphore's lock is released: they may call
// the semaphore's read methods (Stats, Available, String), but they delay their
// caller, so they must be quick and must not block. They may run concurrently.
type Observer interface {
	// WaitEnded is called exactly once for every Acquire, AcquireTimeout,
	// AcquireUnits and WithSemaphore call that was not granted at once: one
	// that waited in the list, whatever the outcome, and one refused or failed
	// without waiting. Calls granted at once, and TryAcquire, are never reported:
	// they cost the observer nothing.
	WaitEnded(s *Semaphore, e WaitEvent)
	// Broken is called once, by the first Break, after the waiters were failed.
	Broken(s *Semaphore, cause error)
}

// A WaitEvent describes how one call that was not granted at once ended.
type WaitEvent struct {
	Units   int64
	Outcome Outcome
	// Queued reports whether the call joined the wait list. A call refused at once
	// (queue full, too large, broken) or whose context was done, or whose timeout
	// was not positive, before it could queue did not.
	Queued bool
	// Waited is the time spent in the wait list, measured with the same clock
	// reads as Stats.WaitTime; 0 when !Queued.
	Waited time.Duration
	// Ahead is the number of waiters that were ahead of the call when it joined.
	Ahead int
}
