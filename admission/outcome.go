package admission

import (
	"errors"

	"github.com/fairsem/semaphore"
)

// ResultLabel names the result of a call of this package, from the error it
// returned, as a label for metrics and logs:
//
//	"acquired"      nil: the call succeeded
//	an Outcome      the call ended in a semaphore.Outcome, read with
//	                semaphore.OutcomeOf: "queue_full", "shed", "timed_out",
//	                "cancelled", "broken"
//	"memory_limit"  the kill limit (ErrMemoryLimit)
//	"evicted"       the permit was not active (ErrEvicted)
//	"released"      the permit was released (ErrReleased)
//	"error"         an error no call of this package made
//
// The outcome is the one decided where the call failed: a call cancelled with
// a broken controller's error as its context's cause is "cancelled". Only the
// failures no Outcome names are told apart by their sentinel, and those are
// never made from a context's cause.
func ResultLabel(err error) string {
	if err == nil {
		return "acquired"
	}
	if o, ok := semaphore.OutcomeOf(err); ok {
		return o.String()
	}
	switch {
	case errors.Is(err, ErrMemoryLimit):
		return "memory_limit"
	case errors.Is(err, ErrEvicted):
		return "evicted"
	case errors.Is(err, ErrReleased):
		return "released"
	}
	return "error"
}
