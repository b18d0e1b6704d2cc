package admission

import (
	"errors"
	"fmt"
	"strconv"
)

// The sentinel errors. Every error the package returns wraps the sentinels that
// describe it (and the context's errors, when a context ended), so callers test it
// with errors.Is, and its text names the controller, the operation and the reason.
var (
	// ErrQueueFull: the admission queue was at WithMaxQueueLength; the request
	// was shed at once.
	ErrQueueFull = errors.New("admission: wait queue full")
	// ErrShed: the request reached the head of the queue with too little of its
	// time budget left to be worth starting (WithShedFactor).
	ErrShed = errors.New("admission: shed: would likely time out")
	// ErrTimedOut: the context's deadline passed while waiting.
	ErrTimedOut = errors.New("admission: timed out")
	// ErrMemoryLimit: consuming more would pass the kill limit (WithKillLimit).
	ErrMemoryLimit = errors.New("admission: memory kill limit reached")
	// ErrEvicted: the permit was parked or evicted, so it cannot take memory
	// until it is resumed or readmitted.
	ErrEvicted = errors.New("admission: permit inactive or evicted")
	// ErrBroken: Break was called. The error also matches Break's cause.
	ErrBroken = errors.New("admission: broken")
	// ErrClosed: Close was called.
	ErrClosed = errors.New("admission: closed")
)

// opError is the package's error type: a complete message, and what errors.Is
// should match.
type opError struct {
	msg    string
	causes []error
}

func (e *opError) Error() string   { return e.msg }
func (e *opError) Unwrap() []error { return e.causes }

func (c *Controller) label() string { return "admission " + strconv.Quote(c.name) }

// fail builds an error about operation op of this controller.
func (c *Controller) fail(op string, causes []error, format string, args ...any) error {
	return &opError{msg: c.label() + ": " + op + ": " + fmt.Sprintf(format, args...), causes: causes}
}

func (c *Controller) panicf(format string, args ...any) {
	panic(c.label() + ": " + fmt.Sprintf(format, args...))
}

// what describes a permit's request for messages: `admit "scan" (memory 128K)`.
func what(verb string, p *Permit, memory int64) string {
	return fmt.Sprintf("%s %q (memory %s)", verb, p.op, formatBytes(memory))
}
