// Package errs holds the one error type of the module and the parts every
// package builds its messages from, so that an error reads the same whichever
// package returned it and carries how the call ended, as the package that
// decided it said.
//
// A message reads `KIND "NAME": OP N UNITS[ OF]: WHY`, for example
//
//	semaphore "db": acquire 2 units: timed out after 1.5s, queued behind 3 waiters (0 of 4 units available)
//	keyed "tenants": acquire 1 unit for key "acme": wait queue full (8 waiters)
//
// or `KIND "NAME": WHY` when no units were asked for.
package errs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A Subject names the object an error is about. Its Label is read only when the
// message is made, so that failing many calls at once (a Break) costs one small
// object each and no formatting.
type Subject interface{ Label() string }

// Text is a Subject whose label is known in advance.
type Text string

// Label returns t.
func (t Text) Label() string { return string(t) }

// Error is the module's one error type.
type Error struct {
	Subject Subject // names the object
	Op      string  // what was asked, "acquire"; "" when the message is the subject and Why
	N       int64   // the units Op asked for
	Of      string  // what the units are of, after them (`for key "acme"`); may be ""
	Why     string  // why it failed
	// Outcome is how the call ended, a semaphore.Outcome, as the package that
	// returned the error decided it; nil when the error is not the end of a
	// call (a Units method, Drain). It is an interface so that this package
	// does not import the core; a one-byte value in it costs no allocation.
	Outcome any
	Matches []error // what errors.Is matches: sentinels, the context's error and cause
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Subject.Label())
	b.WriteString(": ")
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteByte(' ')
		b.WriteString(Count(e.N, "unit"))
		if e.Of != "" {
			b.WriteByte(' ')
			b.WriteString(e.Of)
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Why)
	return b.String()
}

// Unwrap returns the errors e matches.
func (e *Error) Unwrap() []error { return e.Matches }

// OutcomeIn returns the Outcome of the outermost Error in err's tree, nil if
// there is none or it has none. Only the outermost counts: an Error found
// below it is a cause (a context cancelled with another object's error), not
// how this call ended.
func OutcomeIn(err error) any {
	var e *Error
	if errors.As(err, &e) {
		return e.Outcome
	}
	return nil
}

// Count writes n of a noun, in the singular for one: "1 unit", "3 waiters".
func Count(n int64, noun string) string {
	s := strconv.FormatInt(n, 10) + " " + noun
	if n != 1 {
		s += "s"
	}
	return s
}

// Label names an object in messages: `KIND "NAME"`, or, unnamed, `unnamed KIND`
// and its address, so that log lines about two unnamed objects can be told apart.
func Label(kind, name string, ptr any) string {
	if name != "" {
		return kind + " " + strconv.Quote(name)
	}
	return fmt.Sprintf("unnamed %s %p", kind, ptr)
}

// Cause writes err, a cause a user or a peer gave (to Break, or to a context's
// cancellation), as a Go string literal, as Label writes names: its text can
// then forge no line, field or terminal escape where the message is printed.
func Cause(err error) string { return strconv.Quote(err.Error()) }

// Context describes how ctx ended, for a message and for matching: deadline
// reports whether its deadline passed; why is its error's text followed by its
// cause's, quoted, when that differs (`context canceled: "shutting down"`); matches are its
// error and that cause. The caller adds its own sentinel (ErrTimedOut when
// deadline) and its words for what was going on.
func Context(ctx context.Context) (deadline bool, why string, matches []error) {
	err, cause := ctx.Err(), context.Cause(ctx)
	deadline = errors.Is(err, context.DeadlineExceeded)
	why, matches = err.Error(), []error{err}
	if cause != nil && cause != err {
		why += ": " + Cause(cause)
		matches = append(matches, cause)
	}
	return deadline, why, matches
}

// Round keeps a duration readable wherever the module prints one (messages,
// diagnostics, Stats lines): to the millisecond from a second up, to 10µs
// from a millisecond, else to the microsecond: 1.5s, 120ms, 35µs.
func Round(d time.Duration) time.Duration {
	switch a := max(d, -d); {
	case a >= time.Second:
		return d.Round(time.Millisecond)
	case a >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	default:
		return d.Round(time.Microsecond)
	}
}
