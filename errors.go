package semaphore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// The sentinel errors. Every error this package returns wraps the sentinels that
// describe it, so callers test it with errors.Is, and its text stands alone in a log
// line: it names the semaphore, what was asked and why it failed, for example
//
//	semaphore "db-conns": acquire 2 units: timed out after 1.5s, queued behind 3 waiters (0 of 4 units available)
var (
	// ErrBroken: the semaphore was broken by Break. The error also matches the
	// error passed to Break.
	ErrBroken = errors.New("semaphore: broken")
	// ErrTimedOut: the wait reached its deadline, from AcquireTimeout or from the
	// context's deadline.
	ErrTimedOut = errors.New("semaphore: timed out")
	// ErrQueueFull: the wait list already held the number of waiters set by
	// WithMaxWaiters.
	ErrQueueFull = errors.New("semaphore: wait queue full")
	// ErrTooLarge: the request is larger than the capacity, so it could never be
	// granted.
	ErrTooLarge = errors.New("semaphore: request larger than capacity")
	// ErrInsufficientUnits: a Units was asked to give up more units than it holds.
	ErrInsufficientUnits = errors.New("semaphore: not enough units held")
	// ErrDifferentSemaphore: Units of one semaphore were offered to Units of another.
	ErrDifferentSemaphore = errors.New("semaphore: units belong to a different semaphore")
)

// opError is the only error type the package returns. Its message is complete on
// its own; Unwrap lists what errors.Is should match (sentinels, context errors and
// causes), none of which is repeated in the message unless it says something new.
type opError struct {
	msg    string
	causes []error
}

func (e *opError) Error() string   { return e.msg }
func (e *opError) Unwrap() []error { return e.causes }

// label names the semaphore in messages: its name, or its address when unnamed so
// that log lines about one semaphore can still be told apart from another's.
func (s *Semaphore) label() string {
	if s.name != "" {
		return "semaphore " + strconv.Quote(s.name)
	}
	return fmt.Sprintf("unnamed semaphore %p", s)
}

func (s *Semaphore) fail(causes []error, format string, args ...any) error {
	return &opError{msg: s.label() + ": " + fmt.Sprintf(format, args...), causes: causes}
}

// panicf reports a programmer error: the message names the semaphore and the value.
func (s *Semaphore) panicf(format string, args ...any) {
	panic(s.label() + ": " + fmt.Sprintf(format, args...))
}

func units(n int64) string {
	if n == 1 {
		return "1 unit"
	}
	return strconv.FormatInt(n, 10) + " units"
}

func (s *Semaphore) errTooLarge(n, capacity int64) error {
	s.rejected.Add(1)
	return s.fail([]error{ErrTooLarge}, "acquire %s: more than the capacity of %d", units(n), capacity)
}

func (s *Semaphore) errQueueFull(n int64, waiters int) error {
	s.rejected.Add(1)
	return s.fail([]error{ErrQueueFull}, "acquire %s: wait queue full (%d waiters)", units(n), waiters)
}

func (s *Semaphore) errBroken(n int64) error {
	b := s.broken.Load()
	if b.cause == nil {
		return s.fail([]error{ErrBroken}, "acquire %s: broken", units(n))
	}
	return s.fail([]error{ErrBroken, b.cause}, "acquire %s: broken: %v", units(n), b.cause)
}

// waitReport describes a wait that ended in failure, for the error message.
type waitReport struct {
	waited time.Duration
	ahead  int // waiters in the list when the call joined it
}

func (r waitReport) String() string {
	return fmt.Sprintf("after %v, queued behind %d waiters", roundWait(r.waited), r.ahead)
}

// errTimeout is AcquireTimeout's failure. It matches context.DeadlineExceeded too,
// so callers that treat both acquire forms alike need one check.
func (s *Semaphore) errTimeout(n int64, d time.Duration, r *waitReport) error {
	causes := []error{ErrTimedOut, context.DeadlineExceeded}
	if r == nil {
		return s.fail(causes, "acquire %s: timed out: not available at once and the timeout is %v (%s)",
			units(n), d, s.availability())
	}
	return s.fail(causes, "acquire %s: timed out %v (%s)", units(n), r, s.availability())
}

// errContext is Acquire's failure when ctx ends first. It matches ctx.Err() and
// context.Cause(ctx), and ErrTimedOut when the context's deadline passed.
func (s *Semaphore) errContext(ctx context.Context, n int64, r *waitReport) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	causes := []error{err}
	what := "canceled"
	if errors.Is(err, context.DeadlineExceeded) {
		what = "timed out"
		causes = append(causes, ErrTimedOut)
	}
	why := err.Error()
	if cause != nil && cause != err {
		causes = append(causes, cause)
		why += ": " + cause.Error()
	}
	if r == nil {
		return s.fail(causes, "acquire %s: %s before waiting: %s", units(n), what, why)
	}
	return s.fail(causes, "acquire %s: %s %v (%s): %s", units(n), what, r, s.availability(), why)
}

func (s *Semaphore) availability() string {
	return fmt.Sprintf("%d of %d units available", s.Available(), s.Capacity())
}

// roundWait keeps durations in messages readable: 1.5s, 120ms, 35µs.
func roundWait(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	default:
		return d.Round(time.Microsecond)
	}
}
