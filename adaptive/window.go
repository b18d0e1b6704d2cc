package adaptive

import "time"

// window accumulates the samples of calls until it closes into one Sample.
// It closes when it has at least minSamples calls and has been open at least
// clamp(2 x shortest RTT, minTime, maxTime), counted from its first call's grant:
// long enough for the calls started
// under the previous limit to have finished, as in Netflix's WindowedLimit. The shortest round trip,
// not the mean, sets it, so that windows stay short when overload stretches
// the mean.
type window struct {
	start    time.Time     // first call's grant; zero while empty
	count    int           // calls, dropped included
	drops    int           // dropped calls
	late     int           // calls granted too late to finish
	rttSum   time.Duration // round trips of the calls not dropped
	rttMin   time.Duration // shortest of those; 0 if none
	inFlight int64         // most units in flight at any call's grant
	rate     float64       // sum over the calls with a round trip of units in flight at the grant / RTT in seconds
	load     float64       // sum over the calls with a round trip of units in flight at the grant
}

// add records one call that ended at now with verdict v: Success, Dropped,
// or TimedOut for a call granted too late.
func (w *window) add(now time.Time, rtt time.Duration, inFlight int64, v Verdict) {
	if w.count == 0 {
		w.start = now.Add(-rtt)
	}
	w.count++
	w.inFlight = max(w.inFlight, inFlight)
	switch v {
	case Dropped:
		w.drops++
		return
	case TimedOut:
		w.late++
		return
	}
	w.rttSum += rtt
	w.rate += float64(inFlight) / max(rtt, 1).Seconds()
	w.load += float64(inFlight)
	if w.rttMin == 0 || rtt < w.rttMin {
		w.rttMin = max(rtt, 1) // keep 0 for "none"
	}
}

// closeAt returns the window's Sample and empties it, if it may close at now.
func (w *window) closeAt(now time.Time, minSamples int, minTime, maxTime time.Duration) (Sample, bool) {
	if w.count < minSamples {
		return Sample{}, false
	}
	var mean time.Duration
	var rate, load float64
	if ok := w.count - w.drops - w.late; ok > 0 {
		mean = max(w.rttSum/time.Duration(ok), 1)
		rate, load = w.rate/float64(ok), w.load/float64(ok)
	}
	if now.Sub(w.start) < min(max(2*w.rttMin, minTime), maxTime) {
		return Sample{}, false
	}
	s := Sample{Time: now, RTT: mean, MinRTT: w.rttMin, InFlight: int(w.inFlight), Count: w.count, Drops: w.drops, Late: w.late, Load: load, Throughput: rate}
	*w = window{}
	return s, true
}
