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

	// Headroom sets how far the limit goes past what the backend serves
	// without queueing: it settles where the round trip is Headroom/3 above
	// its no-load value; it grows in steps of Headroom/4, Headroom/2, then
	// Headroom while callers wait and the backend does not queue (then,
	// and before the backend first queued, by the callers that waited);
	// and, while nobody waits, it comes down to 1+2 Headroom times the most
	// in flight.
	// In (0, 1], default 0.25.
	Headroom float64

	// MaxLatency is a ceiling on the mean round trip: while it is above it,
	// the limit comes down to what the backend serves in that time
	// (throughput x MaxLatency, by Little's law), whatever the no-load round
	// trip is. 0 means none; negative panics.
	MaxLatency time.Duration

	// ProbeInterval: when no window found the round trip within Headroom/4
	// of its no-load value for this long, the limit goes to three quarters
	// for one round trip, below the capacity, and the round trip measured
	// there becomes the no-load one if it is more than 1+Headroom times it;
	// then the limit goes back. It re-measures
	// a no-load round trip that is out of date, at the cost of a quarter of
	// the limit for one round trip per interval under sustained overload.
	// Default 2s; negative disables it.
	ProbeInterval time.Duration
}

// Capacity estimates the backend's capacity, the units it serves at once
// without queueing, and keeps the limit just above it. By Little's law, what a
// backend serves at once without queueing is its throughput times its no-load
// round trip: above that, the round trip grows and the throughput does not;
// below it, the round trip stays at its no-load value and the throughput
// follows the limit. Each window gives the units in flight (Load) and the
// round trip of its fastest call (MinRTT: a queue at the backend slows every
// call, the pauses of a busy machine only some); the shortest window round
// trip is the no-load one, and the capacity is the load over the round trip's
// ratio to it. A window whose calls were mostly granted before the limit last
// changed is not acted on (it tells of the old limit), so that each change is
// measured before the next.
//
//   - While callers wait for the limit and the round trip stays near its
//     no-load value, the backend has room: the limit grows, by a quarter of
//     Headroom in the first such window, half of it in the next one in a
//     row, all of it in the third, and from the fourth on by the callers
//     that waited for it, up to doubling, so that it probes gently near the
//     capacity and climbs fast after the capacity rose. Until a window first
//     finds the backend queueing, it grows by the callers that waited from
//     the first window on: nothing is known of the capacity yet. A window
//     whose calls were granted at less than half the last growth above the
//     load of the window that made it does not grow the limit: the growth is
//     not taken up yet (one such window at most, as calls larger than the
//     growth never take it up).
//   - While the backend queues (the round trip is above its no-load value),
//     the limit goes to the estimate times a factor between 1 and
//     1+Headroom/2 that shrinks as the queue grows. Past 1+Headroom times the
//     no-load round trip, it goes there by a quarter at most in the first
//     such window and by half in each next one in a row: a capacity that fell
//     to a quarter is found in three windows, and one window of calls delayed
//     by a pause of the caller's process costs little. Below that, it goes
//     half the way, so that it settles a little above the capacity, where the
//     queue at the backend is short.
//   - While no caller waits, the load, not the limit, bounds what is in
//     flight: the limit does not grow, and comes down to 1+2 Headroom times
//     the most in flight, so that it stays near what the load needs and a
//     sudden loss of capacity meets a limit close to it.
//   - A window with dropped calls takes the limit down by at least half their
//     share of its calls: a window in which every call was dropped halves it.
//     A window of late calls only (granted too late to finish, see TimedOut)
//     while callers wait grows the limit by 1+Headroom: the queue is too long
//     for the limit to learn anything else.
//   - The no-load round trip is raised when a window with clearly fewer units
//     in flight than the one before does not answer faster than that one's
//     mean (its fastest call may have run at a lower load): the round trip
//     then does not depend on the load, so the backend got slower, not busier
//     (a base latency that doubled), and the limit goes back to where it was
//     before the round trip rose. And it is re-measured below the capacity
//     after ProbeInterval without a window at it. So it follows a slower
//     backend, and does not drift up under sustained overload, as a baseline
//     that forgets its minimum over time does.
//
// On the module's benchmark (the README's table), in simulated time, its
// median limit is within 10% of the capacity in every phase and stays within
// 25% of it from 0.6s after the capacity fell to a quarter; it serves 0.96 of
// the best static limit per phase (0.75–0.89 in real time on a shared
// machine), 0.98 of it after the capacity fell to a quarter, with the lowest
// p99 of the adaptive algorithms.
//
// Capacity needs the Sample's Load and Waited, which a Limiter fills.
type Capacity struct {
	cfg     CapacityConfig
	limit   float64
	noLoad  time.Duration // the no-load round trip; 0 unknown
	est     float64       // the last window's estimate of the capacity, in units; 0 before
	prev    Sample        // the last window acted on
	changed time.Time     // when the limit last changed
	room    int           // windows in a row that grew the limit
	over    int           // windows in a row that found the backend overloaded
	calm    float64       // the limit before the last such streak began
	clean   time.Time     // when a window last found the round trip at its no-load value
	drained float64       // the limit to go back to after draining; 0 when not draining
	queued  bool          // whether a window found the backend queueing
	grew    float64       // the load a window needs to show the last growth taken up; 0 once it came down or a window held for it
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
// with round trips; 0 before the first.
func (c *Capacity) Estimate() int { return int(math.Round(c.est)) }

// NoLoadRTT returns the round trip the backend answers in without queueing,
// as estimated so far; 0 before the first window with round trips.
func (c *Capacity) NoLoadRTT() time.Duration { return c.noLoad }

// Update applies one window. See Capacity for the rule.
func (c *Capacity) Update(s Sample) int {
	h := c.cfg.Headroom
	if s.RTT <= 0 { // no round trip: every call was dropped or late
		switch {
		case s.Dropped():
			c.set(s.Time, c.limit*(1-0.5*float64(s.Drops)/float64(s.Drops+s.Late)))
		case s.Waited > 0:
			// Only late calls, granted with too little of their deadline
			// left: callers queue too long for the limit to learn from them.
			// More room shortens the queue until round trips are measured
			// again.
			c.set(s.Time, c.limit*(1+h))
		}
		return c.Limit()
	}
	// The window's shortest round trip: a queue at the backend slows every
	// call, while the delays of a busy machine (a call's goroutine waiting
	// for a processor) fall on some calls and not others.
	rtt := s.MinRTT
	if rtt <= 0 {
		rtt = s.RTT
	}
	if c.noLoad == 0 || rtt < c.noLoad {
		c.noLoad = rtt
	}
	if s.Time.Add(-s.RTT).Before(c.changed) {
		// Most of the window's calls were granted before the limit last
		// changed: they tell of the old limit, which was already acted on.
		return c.Limit()
	}
	if c.drained > 0 {
		// The first window granted under the drained limit, below the
		// capacity: its round trip is the no-load one, if it differs by
		// more than a busy machine's noise.
		if rtt > c.noLoad+time.Duration(float64(c.noLoad)*h) {
			c.noLoad = rtt
		}
		c.clean = s.Time
		c.set(s.Time, c.drained)
		c.drained = 0
		return c.Limit()
	}
	if c.clean.IsZero() {
		c.clean = s.Time
	}
	if p := c.cfg.ProbeInterval; p > 0 && s.Time.Sub(c.clean) >= p {
		// The round trip has not been at its no-load value for a while:
		// either the limit sits above the capacity, or the no-load round
		// trip is out of date. Drain to three quarters of the limit, below
		// the capacity when the limit settled above it, for a round trip,
		// and measure it there.
		c.drained = c.limit
		c.set(s.Time, c.limit*3/4)
		return c.Limit()
	}
	raised := c.learnNoLoad(s, rtt)
	c.prev = s
	if raised {
		// The cuts since the round trip rose were for a queue that was not
		// there: go back to the limit from before them.
		c.over, c.clean = 0, s.Time
		c.set(s.Time, math.Max(c.limit, c.calm))
		return c.Limit()
	}
	q := float64(rtt) / float64(c.noLoad) // 1: no queue at the backend
	c.est = meanInFlight(s) / q
	// The factor over the estimate: 1+h/2 without a queue, falling to 1 as
	// the queue reaches h. Its slope, -1/2, makes the limit settle rather than
	// swing, where the round trip is h/3 above its no-load value.
	f := 1 + h/2*bound(1-(q-1)/h, 0, 1)
	target := c.est * f
	var next float64
	if q >= 1+h/4 {
		c.queued = true
		c.room = 0 // the streak of windows finding room is over
	}
	over := c.over
	if c.over = 0; q >= 1+h {
		c.over = over + 1
		if over == 0 {
			c.calm = c.limit
		}
	}
	if q < 1+h/4 {
		c.clean = s.Time
	}
	switch {
	case q >= 1+h:
		// Overloaded: down to the estimate, by a quarter at most in the first
		// such window and by half in each next one in a row, so that one
		// window of calls delayed for another reason (a pause of the
		// process) costs little.
		floor := c.limit * 3 / 4
		if over > 0 {
			floor = c.limit / 2
		}
		next = math.Max(target, floor)
	case q >= 1+h/4:
		// Near the capacity: half the way to the target, so that the limit
		// settles rather than swings when a backend's throughput falls past
		// its capacity (each step past it underestimates the capacity).
		next = c.limit + (target-c.limit)/2
	case s.Waited > 0 && meanInFlight(s) < c.grew:
		// Callers wait, but the window's calls were granted at less than
		// half the last growth above the units in flight of the window that
		// made it: the growth is not taken up yet, and this window tells
		// nothing of it. Wait for one more window (calls of more units than
		// the growth never take it up).
		c.grew = 0
		next = c.limit
	case s.Waited > 0:
		// Callers wait and the backend does not queue: the limit bounds the
		// load, and the backend has room for more. Probe gently at first
		// (the limit may sit just under the capacity), then faster for
		// each window in a row that still finds room: by h/4, h/2, h, then
		// by the callers that waited, up to doubling, as before the backend
		// first queued, when nothing is known of its capacity.
		step := h / float64(int(4)>>min(c.room, 2))
		if c.room >= 3 || !c.queued {
			step = math.Min(1, float64(s.Waited)/c.limit)
		}
		c.room++
		next = math.Max(target, math.Max(c.limit*(1+step), c.limit+1))
		c.grew = meanInFlight(s) + (next-c.limit)/2
	default:
		// Nobody waits and the backend does not queue: the load bounds what
		// is in flight. Come down to what it needs, with room for bursts.
		next = math.Max(target, float64(s.InFlight)*(1+2*h))
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

// learnNoLoad raises the no-load round trip, and reports whether it did, when
// a window with clearly fewer units in flight than the last one, both slow, is
// not much faster: a queue at the backend shrinks with the load; a slower
// backend does not. A window clearly slower than the last one says nothing:
// the backend may have lost capacity meanwhile. The last window is taken at
// its mean round trip, the one of its mean load: its fastest call may have
// run at a lower load than the rest, granted as the load fell.
func (c *Capacity) learnNoLoad(s Sample, rtt time.Duration) bool {
	p, prtt := c.prev, c.prev.RTT
	load, prevLoad := meanInFlight(s), meanInFlight(p)
	if load <= 0 || prevLoad <= 0 {
		return false
	}
	ratio := load / prevLoad
	// A queue's round trip falls in proportion to the load; ask for a clear
	// cut of the load, and for no more than half of that fall, before calling
	// the round trip load-independent.
	slow := float64(c.noLoad) * (1 + c.cfg.Headroom/2)
	if ratio <= 0.7 && float64(prtt) > slow && float64(rtt) > slow &&
		float64(rtt) >= float64(prtt)*(1+ratio)/2 && float64(rtt) <= float64(prtt)*1.1 {
		c.noLoad = rtt
		return true
	}
	return false
}

// meanInFlight is a window's mean units in flight at the grants, or its most
// in flight for a Sample without Load.
func meanInFlight(s Sample) float64 {
	if s.Load > 0 {
		return s.Load
	}
	return float64(s.InFlight)
}

// set sets the limit, and notes when it changed.
func (c *Capacity) set(now time.Time, next float64) {
	next = bound(next, float64(c.cfg.MinLimit), float64(c.cfg.MaxLimit))
	if floorLimit(next) != c.Limit() {
		c.changed = now
	}
	if next < c.limit {
		c.grew = 0
	}
	c.limit = next
}
