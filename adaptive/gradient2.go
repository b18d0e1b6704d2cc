package adaptive

import (
	"math"
	"time"
)

// Gradient2Config configures a Gradient2. A zero field takes its default, the
// value of Netflix concurrency-limits' Gradient2Limit (which calls MaxLimit
// maxConcurrency).
type Gradient2Config struct {
	InitialLimit int // the limit before the first sample; default 20, or MinLimit if higher
	MinLimit     int // the limit never goes below it; default 20, or InitialLimit if lower
	MaxLimit     int // the limit never goes above it; default 200, or InitialLimit if higher

	// Smoothing weighs the new limit against the old one after each update:
	// limit = (1-Smoothing)*old + Smoothing*new; in (0, 1], default 0.2.
	Smoothing float64

	// Tolerance is how much longer than the long-term round trip the recent one
	// may be before the limit shrinks; at least 1, default 1.5.
	Tolerance float64

	// QueueSize is added to the limit at each update, so that the limit keeps
	// probing upward while latency is steady; default 4. Negative means 0.
	QueueSize float64

	// LongWindow is the number of windows the long-term round trip averages
	// over (an exponential average with factor 2/(LongWindow+1), a plain mean
	// over the first 10 windows); default 600.
	LongWindow int
}

// Gradient2 is the latency-gradient algorithm of Netflix: it compares each
// window's round trip (short RTT) with an exponential average of past ones
// (long RTT) and scales the limit by gradient = clamp(Tolerance x long/short,
// 0.5, 1), plus QueueSize, smoothed. While latency is steady the limit creeps up
// by about QueueSize x Smoothing per window; when latency rises past Tolerance,
// it shrinks by up to half per window (times Smoothing). When the long RTT
// exceeds twice the short one (the backend got faster), the long average is
// pulled down by 5% per window.
//
// Netflix's Gradient2 ignores drops; here a window with a drop takes the
// smallest gradient, 0.5, as overload, so that timeouts are not mistaken for
// health when the round trips of dropped calls are left out.
//
// On the module's benchmark (the README's table), Gradient2 serves 0.84 of
// the best static limit per phase, in real time and simulated: its limit
// settles at 2.5 times a capacity of 10 and twice a capacity of 40, where the
// round trip is within Tolerance of its long-term average.
type Gradient2 struct {
	cfg     Gradient2Config
	limit   float64
	longRTT float64 // exponential average of window RTTs, in nanoseconds
	windows int     // windows averaged into longRTT
}

// NewGradient2 returns a Gradient2 at cfg's initial limit. It panics if the
// limits are not 1 <= MinLimit <= InitialLimit <= MaxLimit (after defaults),
// if Smoothing is outside (0, 1], Tolerance below 1, or LongWindow negative.
func NewGradient2(cfg Gradient2Config) *Gradient2 {
	bounds("Gradient2", &cfg.MinLimit, &cfg.InitialLimit, &cfg.MaxLimit, 20, 20, 200)
	if cfg.Smoothing == 0 {
		cfg.Smoothing = 0.2
	}
	if cfg.Tolerance == 0 {
		cfg.Tolerance = 1.5
	}
	if cfg.QueueSize == 0 {
		cfg.QueueSize = 4
	}
	cfg.QueueSize = math.Max(0, cfg.QueueSize)
	if cfg.LongWindow == 0 {
		cfg.LongWindow = 600
	}
	checkRange("Gradient2", "Smoothing", cfg.Smoothing, 0, 1, true, false)
	checkRange("Gradient2", "Tolerance", cfg.Tolerance, 1, math.MaxFloat64, false, false)
	if cfg.LongWindow < 0 {
		panic("adaptive: Gradient2: LongWindow " + itoa(cfg.LongWindow) + " is negative")
	}
	return &Gradient2{cfg: cfg, limit: float64(cfg.InitialLimit)}
}

// Limit returns the current limit.
func (g *Gradient2) Limit() int { return floorLimit(g.limit) }

// LongRTT returns the long-term round trip the short one is compared with.
func (g *Gradient2) LongRTT() time.Duration { return time.Duration(g.longRTT) }

// Update applies one window. See Gradient2 for the rule; a window in which
// less than half the limit was in flight, without a drop, updates the long RTT
// but leaves the limit as is.
func (g *Gradient2) Update(s Sample) int {
	gradient := 0.5
	if s.RTT > 0 {
		short := float64(s.RTT)
		g.addLong(short)
		if g.longRTT/short > 2 {
			g.longRTT *= 0.95
		}
		if !s.Dropped() {
			if float64(s.InFlight) < g.limit/2 {
				return g.Limit()
			}
			gradient = bound(g.cfg.Tolerance*g.longRTT/short, 0.5, 1)
		}
	} else if !s.Dropped() {
		return g.Limit()
	}
	next := g.limit * gradient
	if !s.Dropped() {
		next += g.cfg.QueueSize // no allowance on overload, or the limit could not fall below QueueSize/(1-0.5)
	}
	next = g.limit*(1-g.cfg.Smoothing) + next*g.cfg.Smoothing
	g.limit = bound(next, float64(g.cfg.MinLimit), float64(g.cfg.MaxLimit))
	return g.Limit()
}

// addLong folds one window's RTT into the long average: a plain mean over the
// first 10 windows (the warm-up), then exponential.
func (g *Gradient2) addLong(rtt float64) {
	const warmup = 10
	if g.windows < warmup {
		g.windows++
		g.longRTT += (rtt - g.longRTT) / float64(g.windows)
		return
	}
	f := 2 / float64(g.cfg.LongWindow+1)
	g.longRTT = g.longRTT*(1-f) + rtt*f
}
