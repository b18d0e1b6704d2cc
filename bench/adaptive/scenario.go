package main

import (
	"math/rand/v2"
	"time"
)

// A phase is a stretch of the run in which the backend and the load hold
// still.
type phase struct {
	capacity int           // requests the backend serves at once at its base latency
	base     time.Duration // a request's service time at or under capacity
	load     float64       // arrivals per second, as a fraction of capacity/base
}

// rate is the phase's mean arrival rate, per second.
func (p phase) rate() float64 { return p.load * p.throughput() }

// throughput is the most the backend serves per second in the phase: its
// capacity kept busy at base latency.
func (p phase) throughput() float64 { return float64(p.capacity) / p.base.Seconds() }

// phases is the scenario, each phase testing one thing:
//
//  1. capacity 40 at 50ms, load 0.7x (560/s): below capacity, where a limit
//     that drifts far above what is in flight costs nothing yet;
//  2. capacity 10, load 1.3x (260/s): a drop to a quarter under overload, where
//     a limit above 10 thrashes the backend and one below wastes it;
//  3. capacity 40 again, load 1.1x (880/s): the limit must climb back to 40;
//  4. base latency 100ms at capacity 40, load 1.1x (440/s): a slower backend of
//     unchanged capacity, where a limit that reads latency as overload and cuts
//     itself loses throughput in proportion.
//
// Base latencies of tens of milliseconds keep a few milliseconds of scheduling
// noise, on a shared machine in real time, small against the backend's own
// times.
var phases = []phase{
	{capacity: 40, base: 50 * time.Millisecond, load: 0.7},
	{capacity: 10, base: 50 * time.Millisecond, load: 1.3},
	{capacity: 40, base: 50 * time.Millisecond, load: 1.1},
	{capacity: 40, base: 100 * time.Millisecond, load: 1.1},
}

// thrash is the backend's cost per request in flight beyond its capacity: with
// n > C in flight it serves C/(1+thrash*(n-C)) requests' worth at once, shared
// by the n. At 0.01, a limit of 4x a capacity of 10 loses 23% of the
// throughput (and makes every request 5x slower), 2x a capacity of 40 loses
// 29%, and a limit 25% above 40 loses 9%: a wrong limit costs goodput, not
// only latency, as a real server's contention, context switches and cache
// misses do.
const thrash = 0.01

// phaseAt returns the index of the phase at offset t into the run.
func phaseAt(t, phaseLen time.Duration) int { return min(max(0, int(t/phaseLen)), len(phases)-1) }

// arrivals returns the arrival offsets of one run: a Poisson process at each
// phase's rate, the same for a given seed, so that every strategy of a run
// meets the same requests.
func arrivals(seed uint64, phaseLen time.Duration) []time.Duration {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	var out []time.Duration
	for p, ph := range phases {
		start, end := phaseLen*time.Duration(p), phaseLen*time.Duration(p+1)
		for at := start; ; {
			at += time.Duration(r.ExpFloat64() / ph.rate() * float64(time.Second))
			if at >= end {
				break
			}
			out = append(out, at)
		}
	}
	return out
}
