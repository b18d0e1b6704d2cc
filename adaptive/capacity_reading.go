package adaptive

import (
	"math"
	"time"
)

// A reading is what a round trip of windows says of the backend, against the
// no-load round trip.
type reading struct {
	s    Sample  // the windows merged
	fast float64 // the fastest call's round trip over the no-load one: 1 if it did not queue
	// typical is the round trip weighted by load and averaged harmonically
	// (Load/Throughput), over the no-load one: 1 if no call queued. Behind a
	// FIFO backend just past its capacity, some calls find a free slot and
	// most queue: the fastest call alone would not tell.
	typical float64
	load    float64 // mean units in flight at the grants
	est     float64 // the capacity the windows show: load/typical, their throughput times the no-load round trip
	// target is where the limit settles: est times 1+Headroom/2 with no
	// queue, down to est as the typical queue reaches Headroom. Its slope,
	// -1/2, makes the limit settle rather than swing, where the typical
	// round trip is Headroom/3 above its no-load value.
	target float64
}

// read reads s against the no-load round trip.
func (c *Capacity) read(s Sample) reading {
	h := c.cfg.Headroom
	load := meanInFlight(s)
	typical := s.RTT
	if s.Throughput > 0 && load > 0 {
		typical = time.Duration(load / s.Throughput * float64(time.Second))
	}
	w := reading{s: s, load: load,
		fast:    float64(fastest(s)) / float64(c.noLoad),
		typical: math.Max(1, float64(typical)/float64(c.noLoad))}
	w.est = load / w.typical
	w.target = w.est * (1 + h/2*bound(1-(w.typical-1)/h, 0, 1))
	return w
}

// gather adds s, a window with round trips, to the windows not acted on yet,
// which began after the window closed at from, and reports whether they now
// make a reading: their calls ended over at least their mean round trip, or
// even the fastest of them queued past Headroom (overload is acted on at
// once). A window of ten calls is a few of the calls in flight, and behind a
// backend whose slots free together (calls that started together end
// together), the ten may all have found a slot, or all have queued; a round
// trip of calls is all of them, as TCP takes one decision per round trip.
func (c *Capacity) gather(s Sample, from time.Time) bool {
	if c.pending.Count == 0 {
		c.pendingFrom = from
	}
	c.pending = merge(c.pending, s)
	return c.pendingFrom.IsZero() || s.Time.Sub(c.pendingFrom) >= c.pending.RTT ||
		float64(fastest(c.pending)) >= float64(c.noLoad)*(1+c.cfg.Headroom)
}

// merge returns the Sample of the calls of a and b (a may be empty): counts
// add up, the most in flight and the fastest round trip are over both, the
// means are weighted by the calls with a round trip, and the time is b's.
func merge(a, b Sample) Sample {
	if a.Count == 0 {
		return b
	}
	na, nb := float64(a.Count-a.Drops-a.Late), float64(b.Count-b.Drops-b.Late)
	mean := func(x, y float64) float64 {
		if na+nb == 0 {
			return 0
		}
		return (x*na + y*nb) / (na + nb)
	}
	m := Sample{Time: b.Time, InFlight: max(a.InFlight, b.InFlight), Count: a.Count + b.Count, Drops: a.Drops + b.Drops,
		Late: a.Late + b.Late, Waited: a.Waited + b.Waited,
		RTT:  time.Duration(mean(float64(a.RTT), float64(b.RTT))),
		Load: mean(a.Load, b.Load), Throughput: mean(a.Throughput, b.Throughput)}
	m.MinRTT = a.MinRTT
	if m.MinRTT <= 0 || (b.MinRTT > 0 && b.MinRTT < m.MinRTT) {
		m.MinRTT = b.MinRTT
	}
	return m
}

// meanInFlight is a window's mean units in flight at the grants, or its most
// in flight for a Sample without Load.
func meanInFlight(s Sample) float64 {
	if s.Load > 0 {
		return s.Load
	}
	return float64(s.InFlight)
}

// fastest is the round trip of a window's fastest call, or its mean round
// trip for a Sample without MinRTT.
func fastest(s Sample) time.Duration {
	if s.MinRTT > 0 {
		return s.MinRTT
	}
	return s.RTT
}
