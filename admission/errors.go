package admission

import (
	"errors"
	"fmt"

	"github.com/fairsem/semaphore/internal/errs"
)

// The sentinel errors. The meanings admission shares with the rest of the module
// have one sentinel each, in the semaphore package: an error of this package
// matches semaphore.ErrQueueFull when the admission queue was full,
// semaphore.ErrTimedOut when the context's deadline passed while waiting, and
// semaphore.ErrBroken (and Break's cause) after Break, and semaphore.ErrShed
// (which also matches ErrQueueFull) when a queued request reached the head with
// too little of its time budget left (WithShedFactor). The sentinels below are
// admission's own. Every error the package returns matches the sentinels that
// describe it (and the context's errors, when a context
// ended), so callers test it with errors.Is; its text names the controller, the
// operation and the reason, so that it stands alone in a log line:
//
//	admission "reads": admit "scan" (memory 128K): timed out after 1.5s, queued behind 3 requests (count 8/8, memory 6M/64M in use; bottleneck: concurrency): context deadline exceeded
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

// Errors are errs.Error, the module's one error type: the message reads
// `admission "NAME": WHAT: WHY`, and the error matches the sentinels given and
// carries the semaphore.Outcome of the call it ends (nil for the failures of
// this package's own sentinels, which no Outcome names), for
// semaphore.OutcomeOf.

// fail builds an error about request what (see what) of this controller, ended in
// o, matching matches. The controller's name is fixed after New, so this reads no
// guarded state; why must have been made under c.mu.
func (c *Controller) fail(o any, what, why string, matches ...error) error {
	return &errs.Error{Subject: (*subject)(c), Why: what + ": " + why, Outcome: o, Matches: matches}
}

// subject names a controller in its errors' messages.
type subject Controller

func (c *subject) Label() string { return (*Controller)(c).label() }

// label names the controller in messages: `admission "reads"`, or by its address
// when unnamed, so that messages about two unnamed controllers can be told apart.
func (c *Controller) label() string {
	return errs.Label("admission", c.name, c)
}

func (c *Controller) panicf(format string, args ...any) {
	panic(c.label() + ": " + fmt.Sprintf(format, args...))
}

// what describes a permit's request for messages: `admit "scan" (memory 128K)`.
func what(verb string, p *Permit, memory int64) string {
	return fmt.Sprintf("%s %q (memory %s)", verb, p.op, formatBytes(memory))
}
