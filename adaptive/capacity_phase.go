package adaptive

import "math"

// A phase is what Capacity's last reading found the backend doing. Update has
// one case per phase, each a method below that returns the next limit;
// phaseOf decides, from each reading, which phase the rule is in.
type phase uint8

const (
	// starting: no reading has found the backend queueing yet. Nothing is
	// known of the capacity: the limit follows the callers that waited.
	starting phase = iota
	// overloaded: the fastest call queued past Headroom: the limit is above
	// the capacity.
	overloaded
	// nearCapacity: calls queued, less than overloaded: the limit is at
	// the capacity.
	nearCapacity
	// room: callers waited and the backend did not queue: the limit held the
	// load back, and the backend has room for more.
	room
	// idle: nobody waited and the backend did not queue: the load, not the
	// limit, bounds what is in flight.
	idle
	// probing: the limit is down below the capacity until a reading of
	// calls granted there measures the no-load round trip (see startProbe).
	probing
)

// String names the phase, for tests and diagnostics.
func (p phase) String() string {
	switch p {
	case starting:
		return "starting"
	case overloaded:
		return "overloaded"
	case nearCapacity:
		return "near capacity"
	case room:
		return "room"
	case idle:
		return "idle"
	case probing:
		return "probing"
	}
	return "phase(" + itoa(int(p)) + ")"
}

// phaseOf returns the phase reading w shows: every transition between the
// phases of the rule is decided here, except into and out of probing, which
// the clock and the probe's reading decide (startProbe, endProbe).
func (c *Capacity) phaseOf(w reading) phase {
	h := c.cfg.Headroom
	switch {
	case w.fast >= 1+h:
		// Even the fastest call queued past Headroom: nothing else delays
		// every call of a round trip alike.
		return overloaded
	case w.fast >= 1+h/4 || w.typical >= 1+h/4:
		// The fastest call queued a little, or most calls queued though the
		// fastest found a free slot (a FIFO backend at its capacity): growing
		// on the callers that wait would only lengthen the queue.
		return nearCapacity
	case c.phase == starting:
		// No queue yet: still starting, whether callers wait or not.
		return starting
	case w.s.Waited > 0:
		return room
	}
	return idle
}

// starting grows the limit by the callers that waited, up to doubling, while
// it knows nothing of the capacity: from the limit, which they found reached,
// not from the load, which may still be coming. With nobody waiting it comes
// down as idle does.
func (c *Capacity) starting(w reading) float64 {
	if w.s.Waited == 0 {
		return c.idle(w)
	}
	return math.Max(w.target, c.limit*(1+math.Min(1, float64(w.s.Waited)/c.limit)))
}

// overloaded cuts the limit to the target, by a quarter at most in the first
// reading of a streak and by half in each next one: a capacity that fell to a
// quarter is found in three readings, and calls delayed by a pause of the
// caller's process cost little. The cut is from what was in
// flight when that is below the limit (a limit far above the load bounds
// nothing).
func (c *Capacity) overloaded(w reading) float64 {
	from := math.Min(c.limit, float64(w.s.InFlight))
	floor := from * 3 / 4
	if c.streak == 1 {
		c.calm = c.limit
	} else {
		floor = from / 2
	}
	return math.Max(w.target, floor)
}

// nearCapacity goes half the way to the target, so that the limit settles
// rather than swings when a backend's throughput falls past its capacity
// (each step past it underestimates the capacity).
func (c *Capacity) nearCapacity(w reading) float64 {
	return c.limit + (w.target-c.limit)/2
}

// room grows the limit gently at first (it may sit just under the capacity),
// then faster for each reading in a row that still finds room. The reading
// found room at the load it had, not at a limit the load did not fill, so the
// growth is from the load: by Headroom/4, Headroom/2, Headroom, then by twice
// Headroom (or by the callers that waited, if fewer) in each next reading in a
// row; a limit above that stays. And the limit moves by Headroom/4 at most
// past itself twice, then twice as much for each next growth in a row:
// readings of a load below the limit (callers shed from the queue, calls of
// many units) quicken the steps but not the first moves, so that the limit
// climbs fast after the capacity rose without leaping past it when it sits
// just above.
func (c *Capacity) room(w reading) float64 {
	h := c.cfg.Headroom
	step := h / 4 * math.Exp2(float64(min(c.streak, 4)-1))
	if c.streak > 3 {
		step = min(step, max(h, float64(w.s.Waited)/c.limit))
	}
	move := h / 4 * math.Exp2(float64(min(max(c.grown-1, 0), 3)))
	next := math.Max(c.limit, math.Min(math.Max(w.target, w.load*(1+step)), c.limit*(1+move)))
	if next > c.limit {
		c.grown++
	} else {
		c.grown = 0
	}
	return next
}

// idle comes down to what the load needs, with room for bursts: 1+2 Headroom
// times the most in flight, so that the limit stays near the load and a
// sudden loss of capacity meets a limit close to it.
func (c *Capacity) idle(w reading) float64 {
	return math.Max(w.target, float64(w.s.InFlight)*(1+2*c.cfg.Headroom))
}
