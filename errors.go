package semaphore

import (
	"errors"
	"fmt"

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

// errZeroValue is the panic of every method of a zero Semaphore that takes,
// returns or waits for units.
const errZeroValue = "semaphore: zero Semaphore: create it with New"

// panicf reports a programmer error: the message names the semaphore and the value.
func (s *Semaphore) panicf(format string, args ...any) {
	panic(s.label() + ": " + fmt.Sprintf(format, args...))
}
