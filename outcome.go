package semaphore

import "github.com/fairsem/semaphore/internal/errs"

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
