package admission

import (
	"context"
	"errors"
)

// outcome is how a call ended, as OutcomeOf names it.
type outcome string

const (
	admitted    outcome = "admitted"
	queueFull   outcome = "queue_full"
	shed        outcome = "shed"
	timedOut    outcome = "timed_out"
	cancelled   outcome = "cancelled"
	broken      outcome = "broken"
	memoryLimit outcome = "memory_limit"
	evicted     outcome = "evicted"
	released    outcome = "released"
	failed      outcome = "error"
)

// OutcomeOf names how a call of this package ended, from the error it returned,
// as a label for metrics and logs:
//
//	"admitted"      nil: the call succeeded
//	"queue_full"    the queue was at WithMaxWaiters (semaphore.ErrQueueFull)
//	"shed"          preemptive shedding dropped it (semaphore.ErrShed)
//	"timed_out"     its context's deadline passed (semaphore.ErrTimedOut)
//	"cancelled"     its context was cancelled
//	"broken"        the controller was broken (semaphore.ErrBroken)
//	"memory_limit"  the kill limit (ErrMemoryLimit)
//	"evicted"       the permit was not active (ErrEvicted)
//	"released"      the permit was released (ErrReleased)
//
// The outcome is the one decided where the call failed, not guessed back from
// the sentinels the error matches: a call cancelled with a broken controller's
// error as its context's cause is "cancelled". For an error that no call of this
// package made, OutcomeOf falls back on the context's errors ("timed_out",
// "cancelled"), else "error".
func OutcomeOf(err error) string {
	if err == nil {
		return string(admitted)
	}
	var e *opError
	if errors.As(err, &e) {
		return string(e.outcome)
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return string(timedOut)
	case errors.Is(err, context.Canceled):
		return string(cancelled)
	}
	return string(failed)
}
