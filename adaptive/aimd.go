package adaptive

import "time"

// AIMDConfig configures an AIMD. A zero field takes its default, the value of
// Netflix concurrency-limits' AIMDLimit.
type AIMDConfig struct {
	InitialLimit int // the limit before the first sample; default 20, or MinLimit if higher
	MinLimit     int // the limit never goes below it; default 20, or InitialLimit if lower
	MaxLimit     int // the limit never goes above it; default 200, or InitialLimit if higher

	// BackoffRatio multiplies the limit on a window with a drop; in [0.5, 1),
	// default 0.9.
	BackoffRatio float64

	// Timeout: a window whose mean round trip is longer counts as a drop even
	// if no call was dropped; default 5s.
	Timeout time.Duration
}

// AIMD is the loss-based algorithm of TCP Reno: it adds one to the limit after
// each window without a drop in which the limit was used (at least half of it
// in flight), and multiplies the limit by BackoffRatio after a window with a
// drop. The additive step, one per window, is its smoothing. It suits
// backends whose latency says little but which fail or time out when
// overloaded.
//
// On the module's benchmark (the README's table: a backend that thrashes past
// its capacity, which falls to a quarter and comes back), AIMD serves 0.65 of
// the best static limit per phase in real time (0.64 simulated): it sees no
// drop while the backend still answers within the deadline, so its limit
// climbs to 8–9 times a capacity of 10.
type AIMD struct {
	cfg   AIMDConfig
	limit int
}

// NewAIMD returns an AIMD at cfg's initial limit. It panics if the limits are
// not 1 <= MinLimit <= InitialLimit <= MaxLimit (after defaults), if
// BackoffRatio is outside [0.5, 1) or Timeout is negative.
func NewAIMD(cfg AIMDConfig) *AIMD {
	bounds("AIMD", &cfg.MinLimit, &cfg.InitialLimit, &cfg.MaxLimit, 20, 20, 200)
	if cfg.BackoffRatio == 0 {
		cfg.BackoffRatio = 0.9
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	checkRange("AIMD", "BackoffRatio", cfg.BackoffRatio, 0.5, 1, false, true)
	if cfg.Timeout < 0 {
		panic("adaptive: AIMD: Timeout " + cfg.Timeout.String() + " is negative")
	}
	return &AIMD{cfg: cfg, limit: cfg.InitialLimit}
}

// Limit returns the current limit.
func (a *AIMD) Limit() int { return a.limit }

// Update applies one window: back off on a drop or a mean round trip past
// Timeout, add one if at least half the limit was in flight, else keep the
// limit (the callers, not the backend, limit the load).
func (a *AIMD) Update(s Sample) int {
	switch {
	case s.Dropped() || s.RTT > a.cfg.Timeout:
		a.limit = max(a.cfg.MinLimit, int(float64(a.limit)*a.cfg.BackoffRatio))
	case s.InFlight*2 >= a.limit:
		a.limit = min(a.cfg.MaxLimit, a.limit+1)
	}
	return a.limit
}
