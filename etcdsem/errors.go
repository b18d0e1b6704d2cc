package etcdsem

import (
	"errors"
	"strconv"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/errs"
)

// Errors of this package. Every error a Semaphore returns names the semaphore,
// what was asked and why, as `etcdsem "NAME": WHAT: WHY`, for example
//
//	etcdsem "jobs": acquire 2 units: timed out after 1.5s: context deadline exceeded
//
// and wraps a sentinel. The error of an acquire carries how it ended, for
// semaphore.OutcomeOf: TimedOut, Cancelled, Broken or TooLarge; an acquire
// ended by ErrLost, ErrClosed or an RPC failure carries none. The meanings
// shared with the in-process semaphore wrap the sentinels of
// github.com/fairsem/semaphore, so one errors.Is check serves both: ErrBroken,
// ErrTimedOut, ErrTooLarge and ErrInsufficientUnits (etcdsem has no bound on
// waiters, so never ErrQueueFull). ErrLost and ErrClosed are this package's
// own, and match none of those: lost units and a closed handle say nothing of
// the semaphore's state, and another handle may still acquire.
var (
	// ErrLost: units were lost without being released: the handle's lease was not
	// renewed in time (a partition, a stalled or lost cluster), or the key was
	// deleted by someone else. A waiter whose lease is lost fails with it too.
	ErrLost = errors.New("units lost")
	// ErrClosed: the Semaphore handle was closed.
	ErrClosed = errors.New("closed")
)

// A call is what a call asked for, at the head of its errors' messages: an op
// on n units ("acquire 2 units", "release 1 unit of token 7"), or an op on none
// ("stats", "resize to 3").
type call struct {
	op    string
	n     int64  // the units asked for, when units
	of    string // what the units are of ("of token 7"); may be ""
	units bool
}

func acquireCall(n int64) call { return call{op: "acquire", n: n, units: true} }
func tryCall(n int64) call     { return call{op: "try acquire", n: n, units: true} }
func opCall(op string) call    { return call{op: op} }

// tokenCall is op (release, return) of n units of the holding with token.
func tokenCall(op string, n, token int64) call {
	return call{op: op, n: n, of: "of token " + strconv.FormatInt(token, 10), units: true}
}

// subject names a handle in its errors' messages: `etcdsem "NAME"`.
type subject handle

func (s *subject) Label() string { return errs.Label("etcdsem", s.name, s) }

// fail makes the package's one error, an errs.Error that reads
// `etcdsem "NAME": CALL: WHY` and matches matches. o is how the call ended, a
// semaphore.Outcome, for an acquire that ended in one; nil otherwise: for a
// call that is no acquire, and for an acquire ended by ErrLost, ErrClosed or
// an RPC failure, which no outcome describes (OutcomeOf reports false).
func (h *handle) fail(c call, o any, why string, matches ...error) error {
	e := &errs.Error{Subject: (*subject)(h), Why: why, Outcome: o, Matches: matches}
	if c.units {
		e.Op, e.N, e.Of = c.op, c.n, c.of
	} else {
		e.Why = c.op + ": " + why
	}
	return e
}

// closedError is the error of c on a closed handle.
func (h *handle) closedError(c call) error { return h.fail(c, nil, ErrClosed.Error(), ErrClosed) }

// brokenError is the error of acquire c on a semaphore broken for reason.
func (h *handle) brokenError(c call, reason string) error {
	return h.fail(c, semaphore.Broken, "broken: "+strconv.Quote(reason)+": "+semaphore.ErrBroken.Error(), semaphore.ErrBroken)
}

// tooLargeError is the error of acquire c for more than the capacity.
func (h *handle) tooLargeError(c call, capacity int64) error {
	return h.fail(c, semaphore.TooLarge, "more than the capacity "+strconv.FormatInt(capacity, 10)+": "+semaphore.ErrTooLarge.Error(),
		semaphore.ErrTooLarge)
}

// failed is the error of c whose RPC failed with err: ErrClosed if the handle
// closed meanwhile (Close ends every call in flight), otherwise rpcFailed's.
// h.mu must not be held.
func (h *handle) failed(c call, err error) error {
	if cerr := h.errIfClosed(c); cerr != nil {
		return cerr
	}
	return h.rpcFailed(c, err)
}

// rpcFailed is the error of c whose RPC failed with err: err, said to be final
// when etcd refused the request for good.
func (h *handle) rpcFailed(c call, err error) error {
	if classify(err) == rpcRefused {
		return h.fail(c, nil, "refused for good: "+err.Error(), err)
	}
	return h.fail(c, nil, err.Error(), err)
}
