package adaptive

import "time"

// An Outcome is the caller's verdict on a call, given to Call.Done.
type Outcome uint8

const (
	// Success: the call was served; its round trip is a latency sample.
	Success Outcome = iota
	// Dropped: the call failed in a way that signals overload (a timeout, a
	// 503 or 429, RESOURCE_EXHAUSTED); the limit backs off.
	Dropped
	// Ignore: the call says nothing about the backend's load (a client error,
	// a cancellation); it ends without a sample.
	Ignore
)

// String returns "success", "dropped" or "ignore".
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Dropped:
		return "dropped"
	case Ignore:
		return "ignore"
	}
	return "Outcome(" + itoa(int(o)) + ")"
}

// A Call is one call admitted by a Limiter, from its grant to Done or Release.
// It belongs to the goroutine that made it: its methods must not be called
// concurrently with each other.
type Call struct {
	l        *Limiter
	start    time.Time // when it was granted
	inFlight int       // calls in flight at its grant, itself included
	unit     bool      // it holds a unit of the Limiter's semaphore (Acquire, Do; not Track)
	ended    bool      // Done or Release was called
}

// Done ends the call with the caller's verdict: its round trip (from grant to
// now) and the in-flight count at its grant go into the current sampling
// window, unless o is Ignore, and its slot is given back. Done panics if the
// call already ended (Done or Release) or o is not an Outcome.
func (c *Call) Done(o Outcome) {
	if o > Ignore {
		panic("adaptive: Call.Done(" + o.String() + "): not an Outcome")
	}
	if c.ended {
		panic("adaptive: Call.Done(" + o.String() + ") after the call ended")
	}
	c.ended = true
	c.l.end(c, o, time.Now())
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
