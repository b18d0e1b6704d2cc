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

// opError is the one error type of the package. Its message reads
// `semaphore "NAME": OP N units: WHY`, or `semaphore "NAME": WHY` when there is no
// op, and it matches the sentinel and, where they apply, the context's error and
// cause or the error passed to Break. The message is put together when Error is
// called, from parts made when the error is made: Break fails every waiter at
// once, and each then costs one small allocation instead of a formatted string.
type opError struct {
	s       *Semaphore
	op      string // "acquire", or the Units method; "" when the message is the semaphore and why
	n       int64  // units asked for by op
	why     string
	matches []error
}

func (e *opError) Error() string {
	if e.op == "" {
		return e.s.label + ": " + e.why
	}
	return e.s.label + ": " + e.op + " " + count(e.n, "unit") + ": " + e.why
}

func (e *opError) Unwrap() []error { return e.matches }

// fail makes an error of the acquire of n units.
func (s *Semaphore) fail(n int64, why string, matches ...error) error {
	return &opError{s: s, op: "acquire", n: n, why: why, matches: matches}
}

// labelOf names the semaphore in messages: its name, or its address when unnamed
// so that log lines about one semaphore can still be told apart from another's.
func labelOf(s *Semaphore) string {
	if s.name != "" {
		return "semaphore " + strconv.Quote(s.name)
	}
	return fmt.Sprintf("unnamed semaphore %p", s)
}

// panicf reports a programmer error: the message names the semaphore and the value.
func (s *Semaphore) panicf(format string, args ...any) {
	panic(s.label + ": " + fmt.Sprintf(format, args...))
}

// count writes n of a noun, in the singular for one: "1 unit", "3 waiters".
func count(n int64, noun string) string {
	s := strconv.FormatInt(n, 10) + " " + noun
	if n != 1 {
		s += "s"
	}
	return s
}

// availability is "3 of 10 units available", read under mu so that the two numbers
// go together (Resize changes both). mu must not be held.
func (s *Semaphore) availability() string {
	s.mu.Lock()
	st, capacity := s.state.Load(), s.capacity.Load()
	s.mu.Unlock()
	unit := " units"
	if capacity == 1 {
		unit = " unit"
	}
	return strconv.FormatInt(availableIn(st), 10) + " of " + strconv.FormatInt(capacity, 10) + unit + " available"
}

func (s *Semaphore) errTooLarge(n, capacity int64) error {
	return s.fail(n, "more than the capacity of "+strconv.FormatInt(capacity, 10), ErrTooLarge)
}

// errResized is the failure of a waiter refused by a shrinking Resize. It names no
// capacity: the one that refused it is gone, and the capacity now may be another.
func (s *Semaphore) errResized(n int64) error {
	return s.fail(n, "more than the capacity, which was reduced while waiting", ErrTooLarge)
}

func (s *Semaphore) errQueueFull(n int64, waiters int) error {
	return s.fail(n, "wait queue full ("+count(int64(waiters), "waiter")+")", ErrQueueFull)
}

// errBroken is the failure of an acquire after Break; its parts were made by Break.
func (s *Semaphore) errBroken(n int64) error {
	b := s.broken.Load()
	return &opError{s: s, op: "acquire", n: n, why: b.why, matches: b.matches}
}

// waitReport describes how a failed call waited, for its error message.
type waitReport struct {
	queued bool // the call joined the wait list
	waited time.Duration
	ahead  int // waiters in the list when the call joined it
}

func (r waitReport) String() string {
	return "after " + roundWait(r.waited).String() + ", queued behind " + count(int64(r.ahead), "waiter")
}

// errTimeout is AcquireTimeout's failure. It matches context.DeadlineExceeded too,
// so callers that treat both acquire forms alike need one check.
func (s *Semaphore) errTimeout(n int64, d time.Duration, r waitReport) error {
	why := "not available at once and the timeout is " + d.String()
	if r.queued {
		why = "timed out " + r.String()
	}
	return s.fail(n, why+" ("+s.availability()+")", ErrTimedOut, context.DeadlineExceeded)
}

// errContext is Acquire's failure when ctx ends first. It matches ctx.Err() and
// context.Cause(ctx), and ErrTimedOut when the context's deadline passed.
func (s *Semaphore) errContext(ctx context.Context, n int64, r waitReport) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	matches := []error{err}
	what := "canceled"
	if errors.Is(err, context.DeadlineExceeded) {
		what = "timed out"
		matches = append(matches, ErrTimedOut)
	}
	if r.queued {
		what += " " + r.String() + " (" + s.availability() + ")"
	} else {
		what += " before waiting"
	}
	what += ": " + err.Error()
	if cause != nil && cause != err {
		what += ": " + cause.Error()
		matches = append(matches, cause)
	}
	return s.fail(n, what, matches...)
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
