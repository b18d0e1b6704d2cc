package admission

import (
	"errors"
	"fmt"
)

// The sentinel errors. Every error the package returns wraps, with fmt.Errorf's %w,
// the sentinels that describe it (and the context's errors, when a context ended),
// so callers test it with errors.Is; its text names the controller, the operation
// and the reason, so that it stands alone in a log line:
//
//	admission "reads": admit "scan" (memory 128K): timed out after 1.5s, queued behind 3 (count 8/8, memory 6M/64M in use; bottleneck: concurrency): context deadline exceeded
//
// The sentinels' own texts are the reasons, without a prefix: the wrapping message
// supplies the controller.
var (
	// ErrQueueFull: the admission queue was at WithMaxQueueLength; the request
	// was shed at once.
	ErrQueueFull = errors.New("wait queue full")
	// ErrShed: the request reached the head of the queue with too little of its
	// time budget left to be worth starting (WithShedFactor).
	ErrShed = errors.New("shed")
	// ErrTimedOut: the context's deadline passed while waiting.
	ErrTimedOut = errors.New("timed out")
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
	// ErrBroken: Break was called. The error also matches Break's cause.
	ErrBroken = errors.New("broken")
	// ErrClosed: Close was called.
	ErrClosed = errors.New("closed")
)

// errorf builds an error about operation op (see what) of this controller. format
// should wrap the sentinels with %w. The controller's name is fixed after New, so
// this reads no guarded state; the arguments must have been read under c.mu.
func (c *Controller) errorf(op, format string, args ...any) error {
	return fmt.Errorf("admission %q: %s: "+format, append([]any{c.name, op}, args...)...)
}

func (c *Controller) panicf(format string, args ...any) {
	panic(fmt.Sprintf("admission %q: ", c.name) + fmt.Sprintf(format, args...))
}

// what describes a permit's request for messages: `admit "scan" (memory 128K)`.
func what(verb string, p *Permit, memory int64) string {
	return fmt.Sprintf("%s %q (memory %s)", verb, p.op, formatBytes(memory))
}
