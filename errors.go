package semaphore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
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

// opError is the only error type the package returns. It records the facts of a
// failure and formats its message only when Error is called: when many waiters fail
// at once (a Break, an overload that times out a whole queue) each failure costs one
// small allocation, and messages nobody logs are never built. Unwrap lists what
// errors.Is should match: sentinels, context errors and causes.
type opError struct {
	sem      *Semaphore
	kind     errKind
	op       string // the Units method, for kindInsufficient
	n        int64  // units asked for, or offered for kindDifferent
	count    int64  // capacity, waiters or units held, as the kind says
	queued   bool   // the call waited in the list (timeouts and cancellations)
	waited   time.Duration
	ahead    int   // waiters in the list when the call joined it
	avail    int64 // units available when the call failed
	other    *Semaphore
	causes   [3]error
	nCauses  int
	timeout  time.Duration // AcquireTimeout's d, for a timeout without waiting
	ctxWhat  string        // "canceled" or "timed out", for kindContext
	ctxCause bool          // causes[len-1] is a context.Cause distinct from ctx.Err()
}

type errKind uint8

const (
	kindBroken       errKind = iota // Err() after Break
	kindAcquireBroke                // a call refused or failed because of Break
	kindTooLarge                    // n > capacity
	kindResized                     // failed while queued by a shrinking Resize
	kindQueueFull                   // WithMaxWaiters reached
	kindTimeout                     // AcquireTimeout's deadline
	kindContext                     // the context ended
	kindInsufficient                // Units.Return or Split of more than held
	kindDifferent                   // Units.Adopt across semaphores
)

func (s *Semaphore) newError(kind errKind, n int64, causes ...error) *opError {
	e := &opError{sem: s, kind: kind, n: n}
	e.nCauses = copy(e.causes[:], causes)
	return e
}

func (e *opError) Unwrap() []error { return e.causes[:e.nCauses] }

func (e *opError) Error() string {
	var b strings.Builder
	b.WriteString(e.sem.label())
	b.WriteString(": ")
	switch e.kind {
	case kindBroken:
		b.WriteString("broken")
		e.writeBreakCause(&b)
		return b.String()
	case kindInsufficient:
		fmt.Fprintf(&b, "%s %s: the units hold only %d", e.op, units(e.n), e.count)
		return b.String()
	case kindDifferent:
		fmt.Fprintf(&b, "Adopt %s of %s", units(e.n), e.other.label())
		return b.String()
	}
	fmt.Fprintf(&b, "acquire %s: ", units(e.n))
	switch e.kind {
	case kindAcquireBroke:
		b.WriteString("broken")
		e.writeBreakCause(&b)
	case kindTooLarge:
		fmt.Fprintf(&b, "more than the capacity of %d", e.count)
	case kindResized:
		fmt.Fprintf(&b, "the capacity was reduced to %d while waiting", e.count)
	case kindQueueFull:
		fmt.Fprintf(&b, "wait queue full (%d waiters)", e.count)
	case kindTimeout:
		if !e.queued {
			fmt.Fprintf(&b, "timed out: not available at once and the timeout is %v (%s)", e.timeout, e.availability())
			break
		}
		fmt.Fprintf(&b, "timed out %s (%s)", e.report(), e.availability())
	case kindContext:
		b.WriteString(e.ctxWhat)
		if e.queued {
			fmt.Fprintf(&b, " %s (%s): ", e.report(), e.availability())
		} else {
			b.WriteString(" before waiting: ")
		}
		b.WriteString(e.causes[0].Error())
		if e.ctxCause {
			b.WriteString(": ")
			b.WriteString(e.causes[e.nCauses-1].Error())
		}
	}
	return b.String()
}

func (e *opError) writeBreakCause(b *strings.Builder) {
	if e.nCauses > 1 {
		b.WriteString(": ")
		b.WriteString(e.causes[1].Error())
	}
}

func (e *opError) report() string {
	return fmt.Sprintf("after %v, queued behind %d waiters", roundWait(e.waited), e.ahead)
}

func (e *opError) availability() string {
	return fmt.Sprintf("%d of %d units available", e.avail, e.count)
}

// label names the semaphore in messages: its name, or its address when unnamed so
// that log lines about one semaphore can still be told apart from another's.
func (s *Semaphore) label() string {
	if s.name != "" {
		return "semaphore " + strconv.Quote(s.name)
	}
	return fmt.Sprintf("unnamed semaphore %p", s)
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
	e := s.newError(kindTooLarge, n, ErrTooLarge)
	e.count = capacity
	return e
}

func (s *Semaphore) errResized(n int64) error {
	e := s.newError(kindResized, n, ErrTooLarge)
	e.count = s.Capacity()
	return e
}

func (s *Semaphore) errQueueFull(n int64, waiters int) error {
	s.rejected.Add(1)
	e := s.newError(kindQueueFull, n, ErrQueueFull)
	e.count = int64(waiters)
	return e
}

func (s *Semaphore) errBroken(n int64) error {
	if b := s.broken.Load(); b.cause != nil {
		return s.newError(kindAcquireBroke, n, ErrBroken, b.cause)
	}
	return s.newError(kindAcquireBroke, n, ErrBroken)
}

// waitReport describes a wait that ended in failure, for the error message.
type waitReport struct {
	waited time.Duration
	ahead  int // waiters in the list when the call joined it
}

// withWait records the wait (nil: the call never queued) and the units available
// now into e.
func (s *Semaphore) withWait(e *opError, r *waitReport) *opError {
	if r != nil {
		e.queued, e.waited, e.ahead = true, r.waited, r.ahead
	}
	e.avail, e.count = s.Available(), s.Capacity()
	return e
}

// errTimeout is AcquireTimeout's failure. It matches context.DeadlineExceeded too,
// so callers that treat both acquire forms alike need one check.
func (s *Semaphore) errTimeout(n int64, d time.Duration, r *waitReport) error {
	e := s.withWait(s.newError(kindTimeout, n, ErrTimedOut, context.DeadlineExceeded), r)
	e.timeout = d
	return e
}

// errContext is Acquire's failure when ctx ends first. It matches ctx.Err() and
// context.Cause(ctx), and ErrTimedOut when the context's deadline passed.
func (s *Semaphore) errContext(ctx context.Context, n int64, r *waitReport) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	e := s.withWait(s.newError(kindContext, n, err), r)
	e.ctxWhat = "canceled"
	if errors.Is(err, context.DeadlineExceeded) {
		e.ctxWhat = "timed out"
		e.causes[e.nCauses] = ErrTimedOut
		e.nCauses++
	}
	if cause != nil && cause != err {
		e.causes[e.nCauses] = cause
		e.nCauses++
		e.ctxCause = true
	}
	return e
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
