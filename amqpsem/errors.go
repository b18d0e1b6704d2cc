package amqpsem

import (
	"errors"
	"strconv"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/errs"
	amqp "github.com/rabbitmq/amqp091-go"
)

// Errors of this package. Every error a Semaphore returns names the semaphore,
// what was asked and why, as `amqpsem "NAME": WHAT: WHY`, for example
//
//	amqpsem "jobs": acquire 2 units: timed out after 1.5s: context deadline exceeded
//
// and wraps a sentinel. The error of an acquire carries how it ended, for
// semaphore.OutcomeOf: TimedOut, Cancelled, Broken or TooLarge; an acquire
// ended by anything else (lost units, a closed handle, the broker) carries
// none. The meanings shared with the in-process semaphore wrap the core's
// sentinels, so one errors.Is check serves both: semaphore.ErrBroken,
// ErrTimedOut, ErrTooLarge and ErrInsufficientUnits (there is no bound on
// waiters, so never ErrQueueFull). The others are this package's own and match
// none of those.
var (
	// ErrLost: units were lost without being released: the connection that
	// holds their queues was not known to be alive within the heartbeat
	// timeout (a partition, a stalled broker), or it closed (a broker restart,
	// an operator closing it).
	ErrLost = errors.New("units lost")
	// ErrClosed: the Semaphore handle was closed.
	ErrClosed = errors.New("closed")
	// ErrBadName: the name cannot name a semaphore (see CheckName).
	ErrBadName = errors.New("bad name")
	// ErrContended: TryAcquire lost the race for a free slot to other clients
	// (the broker answered RESOURCE_LOCKED) on each of its attempts.
	ErrContended = errors.New("contended: another client declared the slot's holder queue first on every attempt")
	// ErrRefused: the broker refused an operation for good: permissions
	// (ACCESS_REFUSED), a queue declared with other properties by someone else
	// (PRECONDITION_FAILED), a virtual host that does not exist. The error
	// also wraps the broker's *amqp091.Error.
	ErrRefused = errors.New("refused by the broker")
	// ErrSlotRemoved: Units.Verify found the A queue of a held slot gone: an
	// administrator removed the slot. The holder still holds its B queue.
	ErrSlotRemoved = errors.New("slot removed from the semaphore")
	// ErrBlocked: the broker blocks this client's publishing because of a
	// resource alarm (memory or disk); slots cannot be probed until it clears.
	ErrBlocked = errors.New("blocked by the broker (resource alarm)")
)

// A call is what a call asked for, at the head of its errors' messages: an op
// on n units ("acquire 2 units"), or an op on none ("stats", "add 2 slots").
type call struct {
	op    string
	n     int64
	units bool
}

func acquireCall(n int) call { return call{op: "acquire", n: int64(n), units: true} }
func tryCall(n int) call     { return call{op: "try acquire", n: int64(n), units: true} }
func opCall(op string) call  { return call{op: op} }

// subject names a handle in its errors' messages: `amqpsem "NAME"`.
type subject Semaphore

func (s *subject) Label() string { return errs.Label("amqpsem", s.name, s) }

// fail makes the package's one error: `amqpsem "NAME": CALL: WHY`, matching
// matches. o is the semaphore.Outcome of an acquire that ended in one, or nil.
func (s *Semaphore) fail(c call, o any, why string, matches ...error) error {
	e := &errs.Error{Subject: (*subject)(s), Why: why, Outcome: o, Matches: matches}
	if c.units {
		e.Op, e.N = c.op, c.n
	} else {
		e.Why = c.op + ": " + why
	}
	return e
}

func (s *Semaphore) closedError(c call) error { return s.fail(c, nil, ErrClosed.Error(), ErrClosed) }

func (s *Semaphore) brokenError(c call, reason string) error {
	return s.fail(c, semaphore.Broken, "broken: "+reason+": "+semaphore.ErrBroken.Error(), semaphore.ErrBroken)
}

func (s *Semaphore) tooLargeError(c call, slots int) error {
	return s.fail(c, semaphore.TooLarge, "more than the "+errs.Count(int64(slots), "slot")+" of the semaphore: "+semaphore.ErrTooLarge.Error(),
		semaphore.ErrTooLarge)
}

// brokerError is the error of c that failed on the broker with err: said to be
// final (ErrRefused) when the broker refused it for good, ErrBlocked during a
// resource alarm, ErrClosed if the handle closed meanwhile.
func (s *Semaphore) brokerError(c call, err error) error {
	if s.isClosed() {
		return s.closedError(c)
	}
	var ae *amqp.Error
	switch {
	case errors.Is(err, ErrBlocked), errors.Is(err, ErrLost), errors.Is(err, ErrContended):
		return s.fail(c, nil, err.Error(), err)
	case errors.As(err, &ae) && refused(ae):
		return s.fail(c, nil, ErrRefused.Error()+": "+err.Error(), ErrRefused, err)
	}
	return s.fail(c, nil, err.Error(), err)
}

// refused reports whether the broker refused for good: retrying the same
// operation as the same user on the same broker fails again.
func refused(e *amqp.Error) bool {
	switch e.Code {
	case amqp.AccessRefused, amqp.PreconditionFailed, amqp.NotAllowed, amqp.InvalidPath, amqp.NotImplemented, amqp.CommandInvalid, amqp.SyntaxError:
		return true
	}
	return false
}

// isCode reports whether err is the broker's error code.
func isCode(err error, code int) bool {
	var ae *amqp.Error
	return errors.As(err, &ae) && ae.Code == code
}

func slotList(slots []int) string {
	b := make([]byte, 0, 4*len(slots))
	for i, sl := range slots {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(sl), 10)
	}
	return string(b)
}
