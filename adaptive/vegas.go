package adaptive

import (
	"math"
	"time"
)

// VegasConfig configures a Vegas. A zero field takes its default, the value
// of Netflix concurrency-limits' VegasLimit (which calls MaxLimit
// maxConcurrency). Alpha, Beta and Threshold are functions of the limit there;
// here they are multiples of L = max(1, floor(log10(limit))), as in its
// defaults.
type VegasConfig struct {
	InitialLimit int // the limit before the first sample; default 20, or MinLimit if higher
	MinLimit     int // the limit never goes below it; default 1
	MaxLimit     int // the limit never goes above it; default 1000, or InitialLimit if higher

	// Smoothing weighs the new limit against the old one after each update:
	// limit = (1-Smoothing)*old + Smoothing*new; in (0, 1], default 1 (none).
	Smoothing float64

	// Alpha, Beta, Threshold are the estimated queue sizes, in multiples of
	// L, that steer the limit: at or below Threshold the limit grows fast (by
	// Beta*L), below Alpha it grows by L, above Beta it shrinks by L, and in
	// between it stays. Defaults 3, 6 and 1.
	Alpha, Beta, Threshold float64

	// ProbeMultiplier: after ProbeMultiplier x limit windows the no-load round
	// trip is forgotten and re-measured from the next window, so that a backend
	// that got slower for good is not taken for a queue forever; default 30.
	// Netflix jitters the period by [0.5, 1); here it is not jittered, so the
	// algorithm stays deterministic. Negative disables probing.
	ProbeMultiplier float64
}

// Vegas is the delay-based algorithm of TCP Vegas: it keeps the shortest round
// trip seen (the no-load RTT) and estimates the queue at the backend as
// limit x (1 - noLoadRTT/RTT), growing the limit while that queue is small
// and shrinking it when the queue grows; a drop shrinks it too. It keeps a
// small standing queue at the backend and reacts within a few windows.
//
// On the module's benchmark (the README's table), Vegas serves 0.91 of the
// best static limit per phase in real time (0.94 simulated), but it does not
// find a capacity that fell to a quarter: its limit comes down by 1 per
// window and stays at 7 times it, and its p99 is about 4 times the best
// static's.
type Vegas struct {
	cfg        VegasConfig
	limit      float64
	noLoad     time.Duration // shortest RTT since the last probe; 0 unknown
	sinceProbe int           // windows since the last probe
}

// NewVegas returns a Vegas at cfg's initial limit. It panics if the limits are
// not 1 <= MinLimit <= InitialLimit <= MaxLimit (after defaults), if Smoothing
// is outside (0, 1], or if Alpha, Beta, Threshold are negative or not
// Threshold <= Alpha <= Beta.
func NewVegas(cfg VegasConfig) *Vegas {
	bounds("Vegas", &cfg.MinLimit, &cfg.InitialLimit, &cfg.MaxLimit, 1, 20, 1000)
	if cfg.Smoothing == 0 {
		cfg.Smoothing = 1
	}
	if cfg.Alpha == 0 {
		cfg.Alpha = 3
	}
	if cfg.Beta == 0 {
		cfg.Beta = 6
	}
	if cfg.Threshold == 0 {
		cfg.Threshold = 1
	}
	if cfg.ProbeMultiplier == 0 {
		cfg.ProbeMultiplier = 30
	}
	checkRange("Vegas", "Smoothing", cfg.Smoothing, 0, 1, true, false)
	if cfg.Threshold < 0 || cfg.Alpha < cfg.Threshold || cfg.Beta < cfg.Alpha {
		panic("adaptive: Vegas: need 0 <= Threshold <= Alpha <= Beta, got " +
			ftoa(cfg.Threshold) + ", " + ftoa(cfg.Alpha) + ", " + ftoa(cfg.Beta))
	}
	return &Vegas{cfg: cfg, limit: float64(cfg.InitialLimit)}
}

// Limit returns the current limit.
func (v *Vegas) Limit() int { return floorLimit(v.limit) }

// Update applies one window. See Vegas for the rule; a window in which less
// than half the limit was in flight, without a drop, leaves the limit as is.
func (v *Vegas) Update(s Sample) int {
	if s.RTT <= 0 { // every call dropped: nothing to learn about delay
		if s.Dropped() {
			v.set(v.limit - v.log10())
		}
		return v.Limit()
	}
	v.sinceProbe++
	if v.cfg.ProbeMultiplier > 0 && float64(v.sinceProbe) >= v.cfg.ProbeMultiplier*v.limit {
		v.sinceProbe = 0
		v.noLoad = s.RTT
		return v.Limit()
	}
	if v.noLoad == 0 || s.RTT < v.noLoad {
		v.noLoad = s.RTT
		return v.Limit()
	}
	queue := math.Ceil(v.limit * (1 - float64(v.noLoad)/float64(s.RTT)))
	l := v.log10()
	var next float64
	switch {
	case s.Dropped():
		next = v.limit - l
	case float64(s.InFlight)*2 < v.limit:
		return v.Limit()
	case queue <= v.cfg.Threshold*l:
		next = v.limit + v.cfg.Beta*l
	case queue < v.cfg.Alpha*l:
		next = v.limit + l
	case queue > v.cfg.Beta*l:
		next = v.limit - l
	default:
		return v.Limit()
	}
	v.set(next)
	return v.Limit()
}

// log10 is L, the step unit: max(1, floor(log10(limit))).
func (v *Vegas) log10() float64 { return math.Max(1, math.Floor(math.Log10(v.limit))) }

func (v *Vegas) set(next float64) {
	next = bound(next, float64(v.cfg.MinLimit), float64(v.cfg.MaxLimit))
	v.limit = (1-v.cfg.Smoothing)*v.limit + v.cfg.Smoothing*next
}
