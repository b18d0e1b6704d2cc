package semaphore

import (
	"context"
	"time"

	"github.com/fairsem/semaphore/internal/errs"
)

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
	// Shed: the call was queued, then refused so that the queue stays short
	// (ErrShed). The core never sheds; admission and adaptive do.
	Shed
)

var outcomeNames = [...]string{"granted", "timed_out", "cancelled", "broken", "too_large", "queue_full", "shed"}

// String returns the outcome in snake case, as used for metric labels:
// "granted", "timed_out", "cancelled", "broken", "too_large", "queue_full", "shed".
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown"
}

// OutcomeOf reports how the call that returned err ended, as the package that
// returned it decided, found through any wrapping: an error of this module's
// packages that ends a call (an acquire, an admission, a keyed or etcdsem
// acquire) in one of the outcomes above carries it. It reports false for nil,
// for errors that end no call (a Units method, Drain, Err), for failures
// outside the semaphore's own contract, which no outcome describes (a handle
// closed, units lost with their lease, an RPC refused), and for errors from
// outside the module.
//
// Use it, not errors.Is, to count or label how calls ended: a context can be
// cancelled with any error as its cause, so an error can match ErrBroken or
// ErrTimedOut and still be a call that was Cancelled.
func OutcomeOf(err error) (Outcome, bool) {
	o, ok := errs.OutcomeIn(err).(Outcome)
	return o, ok
}

// How a call ends. Every Acquire, AcquireTimeout, AcquireUnits and WithSemaphore
// call that is not granted on its lock-free path ends in exactly one Outcome,
// decided once, where the call ends: by join when it is granted or refused without
// queuing, by whoever settles its waiter (a grant, Break, Resize, the deadline
// timer) or by the waiter itself when its context ends. Then end, and nothing
// else, counts it in Stats, tells the observer and builds the caller's error, so
// the three cannot disagree.

// An ending describes how one call ended: everything end needs, gathered by the
// code that decided it.
type ending struct {
	outcome Outcome
	n       int64           // units asked for
	queued  bool            // the call joined the wait list
	waited  time.Duration   // time in the wait list, from the wait's two clock reads
	ahead   int             // waiters ahead of the call when it joined
	limit   int64           // TooLarge at the call: the capacity; QueueFull: the waiters
	ctx     context.Context // Acquire's context; nil for AcquireTimeout
	d       time.Duration   // AcquireTimeout's timeout
}

// end records how a call ended and returns what its caller sees: nil for Granted,
// otherwise the error of that outcome. A call granted without waiting (Granted,
// not queued) is counted where it was granted and reported to nobody.
func (s *Semaphore) end(e ending) error {
	if e.outcome == Granted && !e.queued {
		return nil
	}
	x := s.extra()
	switch e.outcome {
	case TimedOut:
		x.timedOut.Add(1)
	case Cancelled:
		x.cancelled.Add(1)
	case TooLarge, QueueFull:
		x.rejected.Add(1)
	}
	if e.queued {
		x.waitNanos.Add(int64(e.waited))
	}
	if o := s.opts.observer; o != nil {
		o.WaitEnded(s, WaitEvent{Units: e.n, Outcome: e.outcome, Queued: e.queued, Waited: e.waited, Ahead: e.ahead})
	}
	r := waitReport{queued: e.queued, waited: e.waited, ahead: e.ahead}
	switch e.outcome {
	case Granted:
		return nil
	case TimedOut:
		if e.ctx == nil {
			return s.errTimeout(e.n, e.d, r)
		}
		return s.errContext(e.ctx, TimedOut, e.n, r)
	case Cancelled:
		return s.errContext(e.ctx, Cancelled, e.n, r)
	case TooLarge:
		if e.queued {
			return s.errResized(e.n)
		}
		return s.errTooLarge(e.n, e.limit)
	case QueueFull:
		return s.errQueueFull(e.n, e.limit)
	default:
		return s.errBroken(e.n)
	}
}
