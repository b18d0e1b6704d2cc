package adaptive

import (
	"context"
	"errors"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/shed"
)

// A Verdict is what a call says about the backend's load, given to Call.Done.
type Verdict uint8

const (
	// Success: the call was served; its round trip is a latency sample.
	Success Verdict = iota
	// Dropped: the call failed in a way that signals overload (a 503 or 429,
	// RESOURCE_EXHAUSTED); the limit backs off.
	Dropped
	// Ignore: the call says nothing about the backend's load (a client error,
	// a cancellation); it ends without a sample.
	Ignore
	// TimedOut: the call's deadline passed before the backend answered. Done
	// judges it: Dropped if the call ran at least the last window's mean round
	// trip (the backend was slow); else the call was granted with too little
	// of its deadline left, which tells of a long wait in the queue, not of a
	// slow backend: it gives no round trip (Stats counts it as ignored), and
	// the window counts it as late (Sample.Late).
	TimedOut
)

// String returns "success", "dropped", "ignore" or "timed out".
func (v Verdict) String() string {
	switch v {
	case Success:
		return "success"
	case Dropped:
		return "dropped"
	case Ignore:
		return "ignore"
	case TimedOut:
		return "timed out"
	}
	return "Verdict(" + itoa(int(v)) + ")"
}

// A Call is one call measured by a Limiter, from its grant to Done or
// Release. It belongs to the goroutine that made it: its methods must not be
// called concurrently with each other.
type Call struct {
	l        *Limiter
	start    time.Time  // when it was granted
	units    int64      // units it counts in flight (>= 1)
	inFlight int64      // units in flight at its grant, its own included
	level    shed.Level // its Priority, if it holds units of the Limiter's gate (Acquire, Do); shed.Levels if not (Start)
	ended    bool       // Done or Release was called
}

// Done ends the call with the caller's verdict: its round trip (from grant to
// now) and the units in flight at its grant go into the current sampling
// window, unless the verdict is Ignore (TimedOut is judged first, see
// TimedOut), and its units are given back. Done panics if the call already
// ended (Done or Release) or v is not a Verdict.
func (c *Call) Done(v Verdict) {
	if v > TimedOut {
		panic("adaptive: Call.Done(" + v.String() + "): not a Verdict")
	}
	if c.ended {
		panic("adaptive: Call.Done(" + v.String() + ") after the call ended")
	}
	c.end(v, time.Now())
}

// end judges v, the one place a timeout's meaning is decided, and ends c.
// What reaches the Limiter is Success, Dropped, Ignore, or TimedOut for a
// call granted too late.
func (c *Call) end(v Verdict, now time.Time) {
	if v == TimedOut && now.Sub(c.start) >= c.l.door.RTT() {
		v = Dropped
	}
	c.ended = true
	c.l.end(c, v, now)
}

// Release ends the call without a sample, as Done(Ignore). It does nothing if
// the call already ended, or if c is nil (a failed Acquire's), so that it is
// safe as a defer after Done.
func (c *Call) Release() {
	if c == nil || c.ended {
		return
	}
	c.ended = true
	c.l.end(c, Ignore, time.Time{})
}

// Classify is Do's verdict on fn's error without WithClassifier: nil is
// Success; a call that timed out (a deadline passed, here or further down) is
// TimedOut; a call cancelled, or refused further down as broken or too large,
// is Ignore; a call refused further down to keep a queue short (queue full,
// shed) is Dropped, the overload signal; any other error is Success, because
// the call ran at the backend and its round trip is load information. An
// error of this module is judged by how the call ended
// (semaphore.OutcomeOf), not by the errors it matches: a call cancelled with
// a timeout as its cause was cancelled.
func Classify(err error) Verdict {
	if err == nil {
		return Success
	}
	if o, ok := semaphore.OutcomeOf(err); ok {
		switch o {
		case semaphore.TimedOut:
			return TimedOut
		case semaphore.QueueFull, semaphore.Shed:
			return Dropped
		}
		return Ignore
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return TimedOut
	case errors.Is(err, context.Canceled):
		return Ignore
	}
	return Success
}
