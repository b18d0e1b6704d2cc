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

	// Headroom is how far above the estimated capacity the limit may go while
	// the backend does not queue, as a fraction of it: the limit grows by this
	// factor per window while callers wait for it and the round trip stays at
	// its no-load value, and settles where the backend queues a little (the
	// round trip two thirds of Headroom above its no-load value). In (0, 1],
	// default 0.25.
	Headroom float64

	// MaxLatency is a ceiling on the round trip: while the round trip is above
	// it, the limit comes down to what the backend serves in that time
	// (throughput x MaxLatency, by Little's law), whatever the no-load round
	// trip is. 0 means none; negative panics.
	MaxLatency time.Duration
}

// Capacity estimates the backend's capacity, the units it serves at once
// without queueing, and keeps the limit just above it. By Little's law, what a
// backend serves at once without queueing is its throughput times its no-load
// round trip: above that, the round trip grows and the throughput does not;
// below it, the round trip stays at its no-load value and the throughput
// follows the limit. Each window gives the throughput (units in flight over
// round trip, averaged over its calls) and the mean round trip; the shortest
// window mean is the no-load round trip.
//
//   - While callers wait for the limit and the round trip stays near its
//     no-load value, the backend has room: the limit grows by 1+Headroom per
//     window.
//   - While the backend queues (the round trip is above its no-load value),
//     the limit is set at once to the estimate times a factor between 1 and
//     1+Headroom that shrinks as the queue grows: a capacity that fell to a
//     quarter is found in one window, and the limit settles a little above the
//     capacity, where the queue at the backend is short.
//   - While no caller waits, the load, not the limit, bounds what is in flight:
//     the limit does not grow, and comes down to 1+Headroom times the most in
//     flight, so that it stays near what the load needs and a sudden loss of
//     capacity meets a limit close to it.
//   - A window with dropped calls takes the limit down by at least half their
//     share of its calls: a window in which every call was dropped halves it.
//     A window of late calls only (granted too late to finish, see TimedOut)
//     while callers wait grows the limit by 1+Headroom: the queue is too long
//     for the limit to learn anything else.
//   - The no-load round trip is the shortest window mean seen. It is raised
//     only when a window with clearly fewer units in flight than the one before
//     does not answer faster: the round trip then does not depend on the load,
//     so the backend got slower, not busier (a base latency that doubled). So
//     it does not drift up under sustained overload, as a baseline that
//     forgets its minimum over time does.
//
// Capacity needs the Sample's Throughput and Waited, which a Limiter fills.
type Capacity struct {
	cfg    CapacityConfig
	limit  float64
	noLoad time.Duration // shortest window mean round trip; 0 unknown
	est    float64       // the last window's estimate of the capacity, in units; 0 before
	prev   Sample        // the last window with round trips
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
			c.set(c.limit * (1 - 0.5*float64(s.Drops)/float64(s.Drops+s.Late)))
		case s.Waited > 0:
			// Only late calls, granted with too little of their deadline
			// left: callers queue too long for the limit to learn from them.
			// More room shortens the queue until round trips are measured
			// again.
			c.set(c.limit * (1 + h))
		}
		return c.Limit()
	}
	c.learnNoLoad(s)
	c.prev = s
	q := float64(s.RTT) / float64(c.noLoad) // 1: no queue at the backend
	c.est = s.Throughput * c.noLoad.Seconds()
	if c.est <= 0 { // a Sample without Throughput: in flight over queueing
		c.est = float64(s.InFlight) / q
	}
	// The factor over the estimate: 1+h without a queue, falling to 1 as the
	// queue reaches 2h.
	f := 1 + h*bound(1-(q-1)/(2*h), 0, 1)
	target := c.est * f
	var next float64
	switch {
	case q >= 1+2*h:
		// Overloaded: down to the estimate at once.
		next = target
	case q >= 1+h/4:
		// Near the capacity: half the way to the target, so that the limit
		// settles rather than swings when a backend's throughput falls past
		// its capacity (each step past it underestimates the capacity).
		next = c.limit + (target-c.limit)/2
	case s.Waited > 0:
		// Callers wait and the backend does not queue: the limit bounds the
		// load, and the backend has room for more.
		next = math.Max(target, c.limit*(1+h))
	default:
		// Nobody waits and the backend does not queue: the load bounds what
		// is in flight. Come down to what it needs.
		next = math.Max(target, float64(s.InFlight)*(1+h))
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
	c.set(next)
	return c.Limit()
}

// learnNoLoad keeps the shortest window mean round trip, and raises it when a
// window with clearly fewer units in flight than the last one, both slow, is
// not much faster: a queue at the backend shrinks with the load; a slower
// backend does not. A window slower than the last one says nothing: the
// backend may have lost capacity meanwhile.
func (c *Capacity) learnNoLoad(s Sample) {
	if c.noLoad == 0 || s.RTT < c.noLoad {
		c.noLoad = s.RTT
		return
	}
	p := c.prev
	if p.RTT <= 0 || s.InFlight <= 0 || p.InFlight <= 0 {
		return
	}
	ratio := float64(s.InFlight) / float64(p.InFlight)
	// A queue's round trip falls in proportion to the load; ask for no more
	// than half of that fall before calling the round trip load-independent.
	slow := float64(c.noLoad) * (1 + c.cfg.Headroom/2)
	if ratio <= 0.85 && float64(p.RTT) > slow && float64(s.RTT) > slow &&
		float64(s.RTT) >= float64(p.RTT)*(1+ratio)/2 && s.RTT <= p.RTT {
		c.noLoad = s.RTT
	}
}

func (c *Capacity) set(next float64) {
	c.limit = bound(next, float64(c.cfg.MinLimit), float64(c.cfg.MaxLimit))
}
