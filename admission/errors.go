package admission

import (
	"errors"
	"fmt"
	"strconv"
)

// The sentinel errors. The meanings admission shares with the rest of the module
// have one sentinel each, in the semaphore package: an error of this package
// matches semaphore.ErrQueueFull when the admission queue was full,
// semaphore.ErrTimedOut when the context's deadline passed while waiting, and
// semaphore.ErrBroken (and Break's cause) after Break, and semaphore.ErrShed
// (which also matches ErrQueueFull) when a queued request reached the head with
// too little of its time budget left (WithShedFactor). The sentinels below are
// admission's own. Every error the package returns wraps, with fmt.Errorf's %w,
// the sentinels that describe it (and the context's errors, when a context
// ended), so callers test it with errors.Is; its text names the controller, the
// operation and the reason, so that it stands alone in a log line:
//
//	admission "reads": admit "scan" (memory 128K): timed out after 1.5s, queued behind 3 (count 8/8, memory 6M/64M in use; bottleneck: concurrency): context deadline exceeded
//
// The sentinels' own texts are the reasons, without a prefix: the wrapping message
// supplies the controller.
var (
	// ErrMemoryLimit: consuming more would pass the kill limit (WithKillLimit).
	ErrMemoryLimit = errors.New("memory kill limit reached")
	// ErrEvicted: the permit is not active: it is parked, evicted, or being
	// readmitted, so it cannot take resources or be parked until it is resumed or
	// readmitted; or a memory request it had pending failed because it was parked.
	ErrEvicted = errors.New("permit inactive or evicted")
	// ErrReleased: the permit was released. Release is terminal: every later
	// Consume, RequestMemory, Park and Readmit fails with it and takes nothing, and a
	// memory request or readmission pending at the time fails with it.
	ErrReleased = errors.New("permit released")
)

// opError is the one error type of the package: a message built by fmt.Errorf,
// which wraps the sentinels, and the outcome of the call that failed, decided
// where it failed, for OutcomeOf.
type opError struct {
	outcome outcome
	err     error
}

func (e *opError) Error() string { return e.err.Error() }
func (e *opError) Unwrap() error { return e.err }

// errorf builds an error about operation op (see what) of this controller, which
// ended with outcome. format should wrap the sentinels with %w. The controller's
// name is fixed after New, so this reads no guarded state; the arguments must have
// been read under c.mu.
func (c *Controller) errorf(o outcome, op, format string, args ...any) error {
	return &opError{outcome: o, err: fmt.Errorf("%s: %s: "+format, append([]any{c.label(), op}, args...)...)}
}

// label names the controller in messages: `admission "reads"`, or by its address
// when unnamed, so that messages about two unnamed controllers can be told apart.
func (c *Controller) label() string {
	if c.name != "" {
		return "admission " + strconv.Quote(c.name)
	}
	return fmt.Sprintf("unnamed admission controller %p", c)
}

func (c *Controller) panicf(format string, args ...any) {
	panic(c.label() + ": " + fmt.Sprintf(format, args...))
}

// what describes a permit's request for messages: `admit "scan" (memory 128K)`.
func what(verb string, p *Permit, memory int64) string {
	return fmt.Sprintf("%s %q (memory %s)", verb, p.op, formatBytes(memory))
}
