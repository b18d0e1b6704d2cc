package main

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// The sweep that tunes failsafe-go's adaptive limiter for a scenario (-scenario),
// so that the comparison is with failsafe-go at its best there, not at
// defaults chosen for other backends. It runs in simulated time, where a configuration
// costs a fraction of a second, not a minute, on arrivals of their own (seeds
// 101 and 102, not those of the comparison's runs), and its score is the
// comparison's: goodput over the whole run (the mean of the two), ties broken
// by the lower p99.
//
// The grid covers what moves the limiter on a backend of 20–100ms whose
// capacity steps every few seconds:
//   - the recent window (WithRecentWindow): its default of 1s and 50 samples
//     reacts once a second at best; 25–250ms windows react within a few round
//     trips;
//   - the recent quantile (WithRecentQuantile): p90 by default, or the median;
//   - the baseline's age (WithBaselineWindow): 10 windows by default, or 3, to
//     forget a baseline taken at another capacity sooner;
//   - WithMaxLimitFactor: the headroom over what is in flight, 5 by default;
//     2 keeps the limit near the load;
//   - queueing (WithQueueing): off (the default: refuse when full), or a queue
//     of 2–3 times the limit, each waiting within its queue budget.
//
// A scenario's tuned configuration holds the winner of `go run . -sweep
// -scenario NAME`; the limits (1, 200, 20) are its defaults.
func sweepGrid() []failsafeConfig {
	var grid []failsafeConfig
	for _, rw := range []struct {
		min     time.Duration
		samples uint
	}{{25 * time.Millisecond, 5}, {50 * time.Millisecond, 10}, {100 * time.Millisecond, 20}, {250 * time.Millisecond, 50}, {time.Second, 50}} {
		for _, q := range []float64{0.5, 0.9} {
			for _, age := range []uint{3, 10} {
				for _, f := range []float64{2, 5} {
					for _, reject := range [][2]float64{{0, 0}, {2, 3}} {
						grid = append(grid, failsafeConfig{recentMin: rw.min, recentMax: 30 * time.Second, recentSamples: rw.samples,
							recentQuantile: q, baselineAge: age, maxLimitFactor: f, rejectInit: reject[0], rejectAt: reject[1]})
					}
				}
			}
		}
	}
	return grid
}

func (c failsafeConfig) String() string {
	q := "no queue"
	if c.rejectInit > 0 {
		q = fmt.Sprintf("queue %.1f–%.1fx", c.rejectInit, c.rejectAt)
		if c.maxWait > 0 {
			q += fmt.Sprintf(", max wait %v", c.maxWait)
		}
	}
	return fmt.Sprintf("recent window %v/%d samples at p%.0f, baseline age %d, max limit factor %.0f, %s",
		c.recentMin, c.recentSamples, 100*c.recentQuantile, c.baselineAge, c.maxLimitFactor, q)
}

// runSweep runs every configuration of the grid on two runs' arrivals in
// simulated time and prints them by score, the best first.
func runSweep(t *testing.T, sc scenario) {
	type scored struct {
		cfg     failsafeConfig
		goodput float64
		p99     time.Duration
	}
	var out []scored
	for _, c := range sweepGrid() {
		ns := namedStrategy{name: c.String(), group: "failsafe", make: c.strategy}
		s := scored{cfg: c}
		const runs = 2
		for r := range runs {
			arr := sc.arrivals(uint64(101 + r))
			var res result
			synctest.Test(t, func(*testing.T) { res = runOne(sc, ns, arr) })
			st, _ := measure(sc, []namedStrategy{ns}, []result{res})
			s.goodput += st[0].overall / runs
			s.p99 += st[0].allP99 / runs
		}
		fmt.Fprintf(os.Stderr, "%s: %.0f/s, p99 %v\n", c, s.goodput, s.p99.Round(time.Millisecond))
		out = append(out, s)
	}
	slices.SortStableFunc(out, func(a, b scored) int {
		if a.goodput != b.goodput {
			if a.goodput > b.goodput {
				return -1
			}
			return 1
		}
		return int(a.p99 - b.p99)
	})
	fmt.Printf("failsafe-go's adaptive limiter on scenario %s, simulated, by goodput over the run (mean of 2 runs):\n\n| configuration | goodput/s | p99 ms |\n|---|---|---|\n", sc.name)
	for _, s := range out {
		mark := ""
		if s.cfg == sc.tuned {
			mark = " (tuned)"
		}
		fmt.Printf("| %s%s | %.0f | %.0f |\n", s.cfg, mark, s.goodput, float64(s.p99)/float64(time.Millisecond))
	}
}
