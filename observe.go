package semaphore

import (
	"errors"
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

// Outcome is how a call that was not granted at once ended. It follows the error
// the caller sees: a context whose deadline passed is TimedOut, as the error
// matches ErrTimedOut (and as Stats counts it).
type Outcome uint8

const (
	// Granted: the units were granted after waiting.
	Granted Outcome = iota
	// TimedOut: the AcquireTimeout or context deadline passed (ErrTimedOut).
	TimedOut
	// Cancelled: the context was cancelled.
	Cancelled
	// Broken: the semaphore was, or was meanwhile, broken (ErrBroken).
	Broken
	// TooLarge: the request exceeds the capacity, at once or after a shrinking
	// Resize (ErrTooLarge).
	TooLarge
	// QueueFull: the wait list was at WithMaxWaiters (ErrQueueFull).
	QueueFull
)

var outcomeNames = [...]string{"granted", "timed_out", "cancelled", "broken", "too_large", "queue_full"}

// String returns the outcome in snake case, as used for metric labels:
// "granted", "timed_out", "cancelled", "broken", "too_large", "queue_full".
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown"
}

// WithObserver sets the semaphore's observer; see Observer for when it is called.
// Without it (or with a nil o) nothing is reported, and the cost of observing is
// one nil check on the slow path only: the lock-free paths never look at it.
func WithObserver(o Observer) Option {
	return func(c *config) { c.observer = o }
}

// observeRefusal reports a call that failed without waiting in the list. The
// outcome is read from the error's sentinels, so it cannot disagree with what the
// caller sees.
func (s *Semaphore) observeRefusal(n int64, err error) {
	s.observer.WaitEnded(s, WaitEvent{Units: n, Outcome: outcomeOf(err)})
}

// refused returns err, the outcome of a call that did not wait in the list, after
// reporting it to the observer if there is one and err is not nil (nil: granted at
// once, which is never reported).
func (s *Semaphore) refused(n int64, err error) error {
	if s.observer != nil && err != nil {
		s.observeRefusal(n, err)
	}
	return err
}

// observeWait reports a call that waited in the list. waited comes from the
// wait's two clock reads, the ones Stats.WaitTime adds up.
func (s *Semaphore) observeWait(n int64, outcome int64, waited time.Duration, ahead int) {
	e := WaitEvent{Units: n, Queued: true, Waited: waited, Ahead: ahead}
	switch outcome {
	case settledGranted:
		e.Outcome = Granted
	case settledTimedOut:
		e.Outcome = TimedOut
	case settledCancelled:
		e.Outcome = Cancelled
	case settledTooLarge:
		e.Outcome = TooLarge
	default:
		e.Outcome = Broken
	}
	s.observer.WaitEnded(s, e)
}

func outcomeOf(err error) Outcome {
	switch {
	case errors.Is(err, ErrBroken):
		return Broken
	case errors.Is(err, ErrTooLarge):
		return TooLarge
	case errors.Is(err, ErrQueueFull):
		return QueueFull
	case errors.Is(err, ErrTimedOut):
		return TimedOut
	default:
		return Cancelled
	}
}
