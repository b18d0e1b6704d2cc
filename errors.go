package semaphore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/fairsem/semaphore/internal/errs"
)

// The sentinel errors. Every error this package returns wraps the sentinels that
// describe it, so callers test it with errors.Is, and its text stands alone in a log
// line: it names the semaphore, what was asked and why it failed, for example
//
//	semaphore "db-conns": acquire 2 units: timed out after 1.5s, queued behind 3 waiters (0 of 4 units available)
var (
	// ErrBroken: the semaphore was broken by Break. The error also matches the
	// error passed to Break.
	ErrBroken = errors.New("broken")
	// ErrTimedOut: the wait reached its deadline, from AcquireTimeout or from the
	// context's deadline.
	ErrTimedOut = errors.New("timed out")
	// ErrQueueFull: the wait list already held the number of waiters set by
	// WithMaxWaiters.
	ErrQueueFull = errors.New("wait queue full")
	// ErrShed: the call was queued, then refused so that the queue stays short:
	// it would have been served too late to be worth it (admission's
	// WithShedFactor, adaptive's WithStandingQueue; the core itself never sheds).
	// It also matches ErrQueueFull: one check catches every call refused for
	// load, and errors.Is(err, ErrShed) tells this kind apart.
	ErrShed error = &narrowerError{text: "shed", also: ErrQueueFull}
	// ErrTooLarge: the request is larger than the capacity, so it could never be
	// granted.
	ErrTooLarge = errors.New("request larger than capacity")
	// ErrInsufficientUnits: a Units was asked to give up more units than it holds.
	ErrInsufficientUnits = errors.New("not enough units held")
	// ErrDifferentSemaphore: Units of one semaphore were offered to Units of another.
	ErrDifferentSemaphore = errors.New("units belong to a different semaphore")
)

// narrowerError is a sentinel that also matches a more general one.
type narrowerError struct {
	text string
	also error
}

func (e *narrowerError) Error() string { return e.text }
func (e *narrowerError) Unwrap() error { return e.also }

// Errors are errs.Error, the module's one error type: its message reads
// `semaphore "NAME": acquire N units: WHY`, or `semaphore "NAME": WHY` when no
// units were asked for, and it matches the sentinel and, where they apply, the
// context's error and cause or the error passed to Break. The message is put
// together when Error is called, from parts made when the error is made: Break
// fails every waiter at once, and each then costs one small allocation instead
// of a formatted string.

// subject names a semaphore in its errors' messages.
type subject Semaphore

func (s *subject) Label() string { return (*Semaphore)(s).label() }

// fail makes the error of the acquire of n units that ended in o.
func (s *Semaphore) fail(n int64, o Outcome, why string, matches ...error) error {
	return &errs.Error{Subject: (*subject)(s), Op: "acquire", N: n, Why: why, Outcome: o, Matches: matches}
}

// failure makes an error that ends no call: `semaphore "NAME": WHY`.
func (s *Semaphore) failure(why string, matches ...error) error {
	return &errs.Error{Subject: (*subject)(s), Why: why, Matches: matches}
}

// label names the semaphore in messages: its name, or its address when unnamed so
// that log lines about one semaphore can still be told apart from another's. It is
// made when a message is, so that New allocates nothing for it.
func (s *Semaphore) label() string {
	return errs.Label("semaphore", s.Name(), s)
}

// checkUse panics for the programmer errors every acquire form checks first: a zero
// Semaphore, and a negative request.
func (s *Semaphore) checkUse(op string, n int64) {
	if s.isZero() {
		panic(errZeroValue)
	}
	if n < 0 {
		s.panicf("%s(%d): negative units", op, n)
	}
}

// errZeroValue is the panic of every method of a zero Semaphore that takes,
// returns or waits for units.
const errZeroValue = "semaphore: zero Semaphore: create it with New"

// panicf reports a programmer error: the message names the semaphore and the value.
func (s *Semaphore) panicf(format string, args ...any) {
	panic(s.label() + ": " + fmt.Sprintf(format, args...))
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
	return s.fail(n, TooLarge, "more than the capacity of "+strconv.FormatInt(capacity, 10), ErrTooLarge)
}

// errResized is the failure of a waiter refused by a shrinking Resize. It names no
// capacity: the one that refused it is gone, and the capacity now may be another.
func (s *Semaphore) errResized(n int64) error {
	return s.fail(n, TooLarge, "more than the capacity, which was reduced while waiting", ErrTooLarge)
}

func (s *Semaphore) errQueueFull(n, waiters int64) error {
	return s.fail(n, QueueFull, "wait queue full ("+errs.Count(waiters, "waiter")+")", ErrQueueFull)
}

// errBroken is the failure of an acquire after Break; its parts were made by Break.
func (s *Semaphore) errBroken(n int64) error {
	b := s.x.Load().broken.Load()
	return s.fail(n, Broken, b.why, b.matches...)
}

// waitReport describes how a failed call waited, for its error message.
type waitReport struct {
	queued bool // the call joined the wait list
	waited time.Duration
	ahead  int // waiters in the list when the call joined it
}

func (r waitReport) String() string {
	return "after " + roundWait(r.waited).String() + ", queued behind " + errs.Count(int64(r.ahead), "waiter")
}

// errTimeout is AcquireTimeout's failure. It matches context.DeadlineExceeded too,
// so callers that treat both acquire forms alike need one check.
func (s *Semaphore) errTimeout(n int64, d time.Duration, r waitReport) error {
	why := "not available at once and the timeout is " + d.String()
	if r.queued {
		why = "timed out " + r.String()
	}
	return s.fail(n, TimedOut, why+" ("+s.availability()+")", ErrTimedOut, context.DeadlineExceeded)
}

// errContext is Acquire's failure when ctx ended first, in o (TimedOut when its
// deadline passed, else Cancelled). It matches ctx.Err() and context.Cause(ctx),
// and ErrTimedOut when TimedOut.
func (s *Semaphore) errContext(ctx context.Context, o Outcome, n int64, r waitReport) error {
	_, why, matches := errs.Context(ctx)
	what := "canceled"
	if o == TimedOut {
		what = "timed out"
		matches = append(matches, ErrTimedOut)
	}
	if r.queued {
		what += " " + r.String() + " (" + s.availability() + ")"
	} else {
		what += " before waiting"
	}
	return s.fail(n, o, what+": "+why, matches...)
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
