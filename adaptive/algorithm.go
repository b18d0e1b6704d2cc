package adaptive

import (
	"math"
	"time"
)

// A Sample summarizes one sampling window of calls for an Algorithm: how long
// they took, how many were in flight, and whether any was dropped.
type Sample struct {
	Time     time.Time     // when the window closed
	RTT      time.Duration // mean round trip of the window's calls that were neither dropped nor late; 0 if none
	MinRTT   time.Duration // shortest of those round trips; 0 if none
	InFlight int           // most units in flight at the grant of any of the window's calls, its own included
	Count    int           // calls in the window, dropped ones included (>= 1)
	Drops    int           // calls in the window that were dropped (<= Count)
	Late     int           // calls in the window granted too late to finish (see TimedOut); Drops+Late <= Count

	// Load is the mean, over the window's calls with a round trip, of the
	// units in flight at their grants. Load/Throughput is their round trip
	// weighted by load and averaged harmonically: a few calls delayed far
	// past the rest (a pause of the caller's process) move it little.
	Load float64
	// Throughput is what the backend served, in units per second, by Little's
	// law: the mean over the window's calls with a round trip of the units
	// in flight at the grant over the round trip; 0 if none.
	Throughput float64
	// Waited counts the calls that found the limit reached since the previous
	// window closed, and waited for it (granted or not): the load wanted more
	// than the limit.
	Waited int
}

// Dropped reports whether any call in the window was dropped: the overload signal.
func (s Sample) Dropped() bool { return s.Drops > 0 }

// An Algorithm computes a concurrency limit from samples. It is a pure,
// deterministic function of the samples it was given (time is a field of the
// Sample, never read from a clock), so a test drives it with a synthetic
// stream. A Limiter calls it from one goroutine at a time; an Algorithm need not
// be safe for concurrent use, and must not be shared between limiters.
//
// AIMD, Vegas and Gradient2 implement it; any type with these two methods can be
// given to New.
type Algorithm interface {
	// Limit returns the current limit, at least 1.
	Limit() int
	// Update takes the sample of a closed window and returns the new limit,
	// at least 1.
	Update(s Sample) int
}

// bound clamps x to [lo, hi].
func bound(x, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, x)) }

// floorLimit is the integer limit of a smoothed float limit, at least 1.
func floorLimit(x float64) int { return max(1, int(x)) }

// bounds fills the bounds left 0 with an algorithm's published defaults (lo0,
// initial0, hi0), each unset one following the ones given, then panics unless
// 1 <= lo <= initial <= hi.
func bounds(kind string, lo, initial, hi *int, lo0, initial0, hi0 int) {
	if *lo == 0 {
		*lo = min(lo0, max(1, *initial))
	}
	if *initial == 0 {
		*initial = max(initial0, *lo)
	}
	if *hi == 0 {
		*hi = max(hi0, *initial)
	}
	checkBounds(kind, *lo, *initial, *hi)
}

// checkBounds panics unless 1 <= lo <= initial <= hi.
func checkBounds(kind string, lo, initial, hi int) {
	if lo < 1 || hi < lo || initial < lo || initial > hi {
		panic("adaptive: " + kind + ": limits must satisfy 1 <= MinLimit <= InitialLimit <= MaxLimit, got " +
			itoa(lo) + ", " + itoa(initial) + ", " + itoa(hi))
	}
}

func checkRange(kind, field string, v, lo, hi float64, loOpen, hiOpen bool) {
	bad := v < lo || v > hi || math.IsNaN(v) || (loOpen && v == lo) || (hiOpen && v == hi)
	if bad {
		l, r := "[", "]"
		if loOpen {
			l = "("
		}
		if hiOpen {
			r = ")"
		}
		panic("adaptive: " + kind + ": " + field + " " + ftoa(v) + " outside " + l + ftoa(lo) + ", " + ftoa(hi) + r)
	}
}
