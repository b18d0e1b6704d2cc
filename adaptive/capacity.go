package adaptive

import (
	"math"
	"time"
)

// CapacityConfig configures a Capacity. A zero field takes its default.
type CapacityConfig struct {
	InitialLimit int // the limit before the first sample; default 20, or MinLimit if higher
	MinLimit     int // the limit never goes below it; default 1
	MaxLimit     int // the limit never goes above it; default 10000, or InitialLimit if higher

	// Headroom sets how far the limit goes past the capacity: it settles
	// where the typical round trip is Headroom/3 above its no-load value; a
	// reading whose fastest call queued Headroom past it is overloaded, one
	// whose typical or fastest call queued Headroom/4 is near capacity; the
	// limit grows by Headroom/4, Headroom/2, Headroom, then twice Headroom
	// while callers wait and the backend does not queue; and,
	// while nobody waits, it comes down to 1+2 Headroom times the most in
	// flight. In (0, 1], default 0.25.
	Headroom float64

	// MaxLatency is a ceiling on the mean round trip: while it is above it,
	// the limit comes down to what the backend serves in that time
	// (throughput x MaxLatency, by Little's law), whatever the no-load round
	// trip is. 0 means none; negative panics.
	MaxLatency time.Duration

	// ProbeInterval: when no reading found the fastest call within
	// Headroom/2 of the no-load round trip for this long, the limit goes down
	// to half the estimated capacity, below the capacity, until a reading of
	// calls granted there measures the no-load round trip; then it goes back.
	// It re-measures a no-load round trip that is out of date (a backend that
	// got slower for good), at the cost of half the throughput for two round
	// trips or so; a limit at the capacity, whose fastest calls run near the
	// no-load round trip, does not cause it. Default 2s; negative disables
	// it.
	ProbeInterval time.Duration
}

// Capacity estimates the backend's capacity, the units it serves at once
// without queueing, and keeps the limit just above it. By Little's law that is
// its throughput times its no-load round trip: above it, the round trip grows
// and the throughput does not; below it, the round trip stays at its no-load
// value and the throughput follows the load.
//
// It reads the windows a round trip of calls at a time: their units in flight,
// throughput, typical round trip and fastest call. The no-load round trip is
// the shortest seen, the estimate is the throughput times it, and windows
// whose calls were mostly granted before the limit last changed are left out
// (they tell of the old limit). Each reading puts the rule in a phase:
//
//   - starting, until a reading first finds a queue: the limit grows by the
//     callers that waited, up to doubling.
//   - overloaded, when even the fastest call queued past Headroom: down to the
//     estimate, by a quarter at most at first and by half in each next
//     reading in a row.
//   - near capacity, when calls queued less than that, or the fastest did not
//     but most did (a FIFO backend at its capacity): half the way to the
//     estimate times a margin that shrinks as the queue grows, however many
//     callers wait.
//   - room, when callers waited and nothing queued: up from what was in
//     flight by a quarter of Headroom, half of it, all of it, then by twice
//     Headroom (or by the callers that waited, if fewer) in each next reading
//     in a row.
//   - idle, when nobody waited: down to 1+2 Headroom times the most in flight.
//   - probing, after ProbeInterval without a reading near the no-load round
//     trip: down to half the estimate, below the capacity, until a reading
//     there re-measures the no-load round trip; then back.
//
// Whatever the phase, dropped calls take the limit down by at least half their
// share of the calls, a window of calls all granted too late to finish (see
// TimedOut) grows it by a quarter of Headroom while callers wait, and
// MaxLatency caps it. A reading clearly lighter than the last but not faster
// raises the no-load round trip (a slower backend, not a busier one) and
// restores the limit from before the cuts it caused.
//
// Capacity needs the Sample's Load, Throughput and Waited, which a Limiter
// fills.
type Capacity struct {
	cfg     CapacityConfig
	limit   float64       // in [MinLimit, MaxLimit]; Limit is its floor
	phase   phase         // what the last reading found
	streak  int           // readings in a row in phase
	grown   int           // readings in a row in room that raised the limit
	noLoad  time.Duration // the no-load round trip; 0 unknown
	est     float64       // the last reading's estimate of the capacity, in units; 0 before
	prev    Sample        // the last reading's windows
	changed time.Time     // when the limit last changed
	clean   time.Time     // when a reading last found the fastest call near the no-load round trip: the probe's clock
	resume  float64       // while probing: the limit to go back to
	calm    float64       // the limit before the last overloaded streak began

	last        time.Time // when the last window closed
	pending     Sample    // the windows since the last reading, granted after the last change, merged; Count 0 if none
	pendingFrom time.Time // when the window before the first of pending closed; zero if none did
}

// NewCapacity returns a Capacity at cfg's initial limit. It panics if the
// limits are not 1 <= MinLimit <= InitialLimit <= MaxLimit (after defaults),
// if Headroom is outside (0, 1] or MaxLatency is negative.
func NewCapacity(cfg CapacityConfig) *Capacity {
	bounds("Capacity", &cfg.MinLimit, &cfg.InitialLimit, &cfg.MaxLimit, 1, 20, 10000)
	if cfg.Headroom == 0 {
		cfg.Headroom = 0.25
	}
	checkRange("Capacity", "Headroom", cfg.Headroom, 0, 1, true, false)
	if cfg.MaxLatency < 0 {
		panic("adaptive: Capacity: MaxLatency " + cfg.MaxLatency.String() + " is negative")
	}
	if cfg.ProbeInterval == 0 {
		cfg.ProbeInterval = 2 * time.Second
	}
	return &Capacity{cfg: cfg, limit: float64(cfg.InitialLimit)}
}

// Limit returns the current limit.
func (c *Capacity) Limit() int { return floorLimit(c.limit) }

// Estimate returns the estimated capacity, in units, as of the last window
// with round trips; 0 before the first. It is what the backend served at once
// without queueing, so it is bounded by the load seen: while the load puts
// fewer units in flight than the backend could serve, the estimate is that
// load, not the backend's capacity, which nothing has measured yet.
func (c *Capacity) Estimate() int { return int(math.Round(c.est)) }

// NoLoadRTT returns the round trip the backend answers in without queueing,
// as estimated so far; 0 before the first window with round trips.
func (c *Capacity) NoLoadRTT() time.Duration { return c.noLoad }

// Update applies one window. A window without round trips acts at once (see
// Capacity); one granted before the last change is left out; the others
// gather into a reading (gather), which ends the probe while probing, starts
// it when it is due, and otherwise decides the next limit by the phase it
// shows (phaseOf), one case per phase.
func (c *Capacity) Update(s Sample) int {
	from := c.last
	c.last = s.Time
	if s.RTT <= 0 { // no round trip: every call was dropped or late
		switch {
		case s.Dropped():
			c.set(s.Time, c.limit*(1-0.5*float64(s.Drops)/float64(s.Drops+s.Late)))
		case s.Waited > 0:
			// Only late calls, granted with too little of their deadline
			// left: callers queue too long for the limit to learn anything
			// of the backend. A little more room shortens the queue until
			// round trips are measured again (and cut the limit if the
			// backend queues).
			c.set(s.Time, c.limit*(1+c.cfg.Headroom/4))
		}
		return c.Limit()
	}
	// The shortest round trip seen is the no-load one: a queue at the
	// backend slows calls, while the delays of a busy machine (a call's
	// goroutine waiting for a processor) fall on some calls and not others.
	if fast := fastest(s); c.noLoad == 0 || fast < c.noLoad {
		c.noLoad = fast
	}
	if s.Time.Add(-s.RTT).Before(c.changed) {
		// Most of the window's calls were granted before the limit last
		// changed: they tell of the old limit, which was already acted on.
		return c.Limit()
	}
	if !c.gather(s, from) {
		return c.Limit()
	}
	s, c.pending = c.pending, Sample{}
	w := c.read(s)
	if c.phase == probing {
		c.endProbe(w)
		return c.Limit()
	}
	if c.clean.IsZero() || w.fast < 1+c.cfg.Headroom/2 {
		c.clean = s.Time
	}
	if p := c.cfg.ProbeInterval; p > 0 && s.Time.Sub(c.clean) >= p {
		c.startProbe(w)
		return c.Limit()
	}
	raised := c.learnNoLoad(s)
	c.prev = s
	if raised {
		// The cuts since the round trip rose were for a queue that was not
		// there: go back to the limit from before them.
		c.enter(nearCapacity)
		c.clean = s.Time
		c.set(s.Time, math.Max(c.limit, c.calm))
		return c.Limit()
	}
	c.est = w.est
	var next float64
	switch c.enter(c.phaseOf(w)) {
	case starting:
		next = c.starting(w)
	case overloaded:
		next = c.overloaded(w)
	case nearCapacity:
		next = c.nearCapacity(w)
	case room:
		next = c.room(w)
	case idle:
		next = c.idle(w)
	}
	if s.Waited == 0 {
		next = math.Min(next, c.limit) // nothing held back: no reason to grow
	}
	if s.Dropped() {
		next = math.Min(next, c.limit*(1-0.5*float64(s.Drops)/float64(s.Count)))
	}
	if m := c.cfg.MaxLatency; m > 0 && s.RTT > m {
		next = math.Min(next, s.Throughput*m.Seconds())
	}
	c.set(s.Time, next)
	return c.Limit()
}

// enter makes p the phase, counts the windows in a row in it, and returns it.
func (c *Capacity) enter(p phase) phase {
	if p == c.phase {
		c.streak++
	} else {
		c.phase, c.streak, c.grown = p, 1, 0
	}
	return p
}

// set sets the limit, and notes when it changed.
func (c *Capacity) set(now time.Time, next float64) {
	next = bound(next, float64(c.cfg.MinLimit), float64(c.cfg.MaxLimit))
	if floorLimit(next) != c.Limit() {
		c.changed = now
		c.pending = Sample{} // granted under the old limit
	}
	c.limit = next
}
