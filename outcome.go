package semaphore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/fairsem/semaphore/internal/errs"
)

// An Observer is told how each call that could not be granted at once ended, and
// about Break, so that wait times can be exported as a distribution (a p99 wait),
// which the totals in Stats cannot give. Set one with WithObserver; the metrics
// modules (metrics/prom, metrics/otel) provide ready-made ones.
//
// The methods run synchronously on the goroutine that made the call (WaitEnded) or
// that called Break (Broken), after the semaphore's lock is released: they may call
// the semaphore's read methods (Stats, Available, String), but they delay their
// caller, so they must be quick and must not block. They may run concurrently.
type Observer interface {
	// WaitEnded is called exactly once for every Acquire, AcquireTimeout,
	// AcquireUnits and WithSemaphore call that was not granted at once: one
	// that waited in the list, whatever the outcome, and one refused or failed
	// without waiting. Calls granted at once, and TryAcquire, are never reported:
	// they cost the observer nothing.
	WaitEnded(s *Semaphore, e WaitEvent)
	// Broken is called once, by the first Break, after the waiters were failed.
	Broken(s *Semaphore, cause error)
}

// A WaitEvent describes how one call that was not granted at once ended.
type WaitEvent struct {
	Units   int64
	Outcome Outcome
	// Queued reports whether the call joined the wait list. A call refused at once
	// (queue full, too large, broken) or whose context was done, or whose timeout
	// was not positive, before it could queue did not.
	Queued bool
	// Waited is the time spent in the wait list, measured with the same clock
	// reads as Stats.WaitTime; 0 when !Queued.
	Waited time.Duration
	// Ahead is the number of waiters that were ahead of the call when it joined.
	Ahead int
}

// Outcome is how a call that was not granted at once ended. It follows the error
// the caller sees: a context whose deadline passed is TimedOut, as the error
// matches ErrTimedOut (and as Stats counts it).
type Outcome uint8

const (
	// Granted: the units were granted after waiting.
	Granted Outcome = iota
	// TimedOut: the AcquireTimeout or context deadline passed (ErrTimedOut).
	TimedOut
	// Cancelled: the context was cancelled.
	Cancelled
	// Broken: the semaphore was, or was meanwhile, broken (ErrBroken).
	Broken
	// TooLarge: the request exceeds the capacity, at once or after a shrinking
	// Resize (ErrTooLarge).
	TooLarge
	// QueueFull: the wait list was at WithMaxWaiters (ErrQueueFull).
	QueueFull
	// Shed: the call was queued, then refused so that the queue stays short
	// (ErrShed). The core never sheds; admission and adaptive do.
	Shed
)

var outcomeNames = [...]string{"granted", "timed_out", "cancelled", "broken", "too_large", "queue_full", "shed"}

// String returns the outcome in snake case, as used for metric labels:
// "granted", "timed_out", "cancelled", "broken", "too_large", "queue_full", "shed".
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown"
}

// OutcomeOf reports how the call that returned err ended, as the package that
// returned it decided: every error of this module's packages that ends a call
// (an acquire, an admission, a keyed or etcdsem acquire) carries its Outcome,
// found through any wrapping. It reports false for nil, for errors that end no
// call (a Units method, Drain, Err) and for errors from outside the module.
//
// Use it, not errors.Is, to count or label how calls ended: a context can be
// cancelled with any error as its cause, so an error can match ErrBroken or
// ErrTimedOut and still be a call that was Cancelled.
func OutcomeOf(err error) (Outcome, bool) {
	o, ok := errs.OutcomeIn(err).(Outcome)
	return o, ok
}

// How a call ends. Every Acquire, AcquireTimeout, AcquireUnits and WithSemaphore
// call that is not granted on its lock-free path ends in exactly one Outcome,
// decided once, where the call ends: by join when it is granted or refused without
// queuing, by whoever settles its waiter (a grant, Break, Resize, the deadline
// timer) or by the waiter itself when its context ends. Then end, and nothing
// else, counts it in Stats, tells the observer and builds the caller's error, so
// the three cannot disagree.

// An ending describes how one call ended: everything end needs, gathered by the
// code that decided it.
type ending struct {
	outcome Outcome
	n       int64           // units asked for
	queued  bool            // the call joined the wait list
	waited  time.Duration   // time in the wait list, from the wait's two clock reads
	ahead   int             // waiters ahead of the call when it joined
	limit   int64           // TooLarge at the call: the capacity; QueueFull: the waiters
	ctx     context.Context // Acquire's context; nil for AcquireTimeout
	d       time.Duration   // AcquireTimeout's timeout
}

// end records how a call ended and returns what its caller sees: nil for Granted,
// otherwise the error of that outcome. A call granted without waiting (Granted,
// not queued) is counted where it was granted and reported to nobody.
func (s *Semaphore) end(e ending) error {
	if e.outcome == Granted && !e.queued {
		return nil
	}
	x := s.extra()
	switch e.outcome {
	case TimedOut:
		x.timedOut.Add(1)
	case Cancelled:
		x.cancelled.Add(1)
	case TooLarge, QueueFull:
		x.rejected.Add(1)
	}
	if e.queued {
		x.waitNanos.Add(int64(e.waited))
	}
	if o := s.opts.observer; o != nil {
		o.WaitEnded(s, WaitEvent{Units: e.n, Outcome: e.outcome, Queued: e.queued, Waited: e.waited, Ahead: e.ahead})
	}
	r := waitReport{queued: e.queued, waited: e.waited, ahead: e.ahead}
	switch e.outcome {
	case Granted:
		return nil
	case TimedOut:
		if e.ctx == nil {
			return s.errTimeout(e.n, e.d, r)
		}
		return s.errContext(e.ctx, TimedOut, e.n, r)
	case Cancelled:
		return s.errContext(e.ctx, Cancelled, e.n, r)
	case TooLarge:
		if e.queued {
			return s.errResized(e.n)
		}
		return s.errTooLarge(e.n, e.limit)
	case QueueFull:
		return s.errQueueFull(e.n, e.limit)
	default:
		return s.errBroken(e.n)
	}
}

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
	if s.opts == nil { // isZero, here so that the acquire path stays in three files
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

// Stats is a snapshot of a semaphore's state and counters. The counters only grow.
// Every call that fails is counted once, under the error it returned: Rejected for
// ErrTooLarge (at the call, or when a shrinking Resize fails a waiter) and
// ErrQueueFull, TimedOut for an error matching ErrTimedOut, Cancelled for a context
// cancelled without a deadline. A call failed by Break is in none of the failure
// counters: Broken says why.
type Stats struct {
	Name      string // from WithName
	Capacity  int64  // as Capacity
	Available int64  // as Available: never negative, 0 once broken
	Waiters   int    // as Waiters: calls waiting now
	Broken    bool   // Break was called

	Acquired            uint64        // successful acquisitions, waited for or not (TryAcquire included)
	AcquiredImmediately uint64        // of those, granted without waiting
	Queued              uint64        // calls that joined the wait list
	TimedOut            uint64        // calls that failed on a deadline: AcquireTimeout's, or the context's
	Cancelled           uint64        // waits whose context was cancelled (a deadline counts as TimedOut)
	Rejected            uint64        // calls failed with ErrTooLarge or ErrQueueFull
	WaitTime            time.Duration // total time spent in the wait list by all waiters, granted or not

	// Known with holder tracking only (WithHolderTracking, or an option that
	// implies it); 0 without it.
	HeadWait     time.Duration // how long the head waiter has waited; 0 when nobody waits
	OldestHolder time.Duration // the age of the oldest Units holding units; 0 when none does
}

// Stats returns a snapshot of the semaphore's state and counters. Capacity,
// Available, the grant counts and the ages are read together; the other fields are
// read one at a time, so under concurrent use they may be from slightly different
// instants. With holder tracking it costs O(holders), as Diagnostics does.
func (s *Semaphore) Stats() Stats {
	s.mu.Lock()
	// The capacity and the units together, under mu, where Resize changes both.
	st, capacity := s.state.Load(), s.capacity.Load()
	immediate := s.immediate + uint64(st&countMask)>>countShift
	x := s.x.Load()
	var queued, granted uint64
	if x != nil {
		queued, granted = x.queued, x.granted
	}
	var headWait, oldestHolder time.Duration
	if s.diag != nil {
		headWait, oldestHolder = s.diag.agesLocked()
	}
	s.mu.Unlock()
	stats := Stats{
		Name:                s.Name(),
		Capacity:            capacity,
		Available:           availableIn(st),
		Acquired:            immediate + granted,
		AcquiredImmediately: immediate,
		Queued:              queued,
		HeadWait:            headWait,
		OldestHolder:        oldestHolder,
	}
	if x != nil {
		stats.Waiters = int(x.waiters.Load())
		stats.Broken = x.broken.Load() != nil
		stats.TimedOut = x.timedOut.Load()
		stats.Cancelled = x.cancelled.Load()
		stats.Rejected = x.rejected.Load()
		stats.WaitTime = time.Duration(x.waitNanos.Load())
	}
	return stats
}
