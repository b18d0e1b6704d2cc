package adaptive

import "math"

// startProbe begins the no-load measurement: no reading found the fastest
// call near the no-load round trip for ProbeInterval, so either the limit sits
// above the capacity or the no-load round trip is out of date (a backend that
// got slower). The limit goes to half the estimate, or of the limit if lower:
// the estimate is what the backend served at once, at most its capacity
// while the no-load round trip is not above the true one, so half of it runs
// below the capacity for sure, wherever the limit sat, with calls enough to
// measure. The first reading of calls granted there ends the probe
// (endProbe).
func (c *Capacity) startProbe(w reading) {
	c.resume = c.limit
	c.enter(probing)
	c.set(w.s.Time, math.Min(c.limit, math.Max(c.est, 1))/2)
}

// endProbe takes the probe's reading, of calls granted under the probe's
// limit: its fastest round trip is the no-load one if it is clearly longer
// than the one known (by more than Headroom, a busy machine's noise), a
// backend that got slower for good; then the limit goes back to where it was,
// or to where it was before the cuts the slower round trips caused, if that
// is higher.
func (c *Capacity) endProbe(w reading) {
	back := c.resume
	if fast := fastest(w.s); float64(fast) > float64(c.noLoad)*(1+c.cfg.Headroom) {
		c.noLoad = fast
		back = math.Max(back, c.calm)
	}
	c.resume = 0
	c.enter(nearCapacity)
	c.clean = w.s.Time
	c.prev = w.s
	c.set(w.s.Time, back)
}

// learnNoLoad raises the no-load round trip, and reports whether it did, when
// a reading with clearly fewer units in flight than the last one, both slow,
// is not much faster: a queue at the backend shrinks with the load; a slower
// backend does not. A reading clearly slower than the last one says nothing:
// the backend may have lost capacity meanwhile. The last reading is taken at
// its mean round trip, the one of its mean load: its fastest call may have
// run at a lower load than the rest, granted as the load fell.
func (c *Capacity) learnNoLoad(s Sample) bool {
	p, prtt, rtt := c.prev, c.prev.RTT, fastest(s)
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
