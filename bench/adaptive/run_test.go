package main

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunOne_EveryRequestEndsOnce runs each strategy of each scenario on short
// phases in simulated time and checks the bookkeeping: every arrival ends
// exactly once, the served ones are counted in the buckets, and the limit is
// sampled in every bucket.
func TestRunOne_EveryRequestEndsOnce(t *testing.T) {
	for _, sc := range scenarios {
		sc.phaseLen = 500 * time.Millisecond
		arr := sc.arrivals(1)
		for _, s := range sc.strategies() {
			t.Run(sc.name+"/"+s.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					r := runOne(sc, s, arr)
					total, nServed := 0, 0
					for p := range sc.phases {
						for e := range endings {
							total += r.ends[p][e]
						}
						nServed += r.ends[p][served]
						assert.Len(t, r.latency[p], r.ends[p][served])
					}
					assert.Equal(t, len(arr), total)
					assert.LessOrEqual(t, sum(r.served), nServed, "the buckets count the served requests that completed within the run")
					assert.Len(t, r.lag, len(arr))
					for k, l := range r.limits {
						assert.Positive(t, l, "bucket %d", k)
					}
				})
			})
		}
	}
}

// strategyNamed returns sc's strategy of that name.
func strategyNamed(t *testing.T, sc scenario, name string) namedStrategy {
	all := sc.strategies()
	i := slices.IndexFunc(all, func(s namedStrategy) bool { return s.name == name })
	require.GreaterOrEqual(t, i, 0, "no strategy %q in scenario %s", name, sc.name)
	return all[i]
}

func TestRunOne_AStaticLimitAtCapacityServesALightLoad(t *testing.T) {
	sc, err := scenarioNamed("a")
	require.NoError(t, err)
	sc.phaseLen = time.Second
	synctest.Test(t, func(t *testing.T) {
		r := runOne(sc, strategyNamed(t, sc, "static 40"), sc.arrivals(1))
		// Phase 1 is 0.7x a capacity of 40: nearly everything is served at
		// about the base latency.
		assert.GreaterOrEqual(t, float64(r.ends[0][served]), 0.95*float64(sum(r.ends[0][:])))
		assert.Less(t, quantile(r.latency[0], 0.5), 60*time.Millisecond)
	})
}

// Behind a FIFO backend, a static limit at the capacity with FIFO waiting
// for as long as the deadline serves most callers after their deadline once
// the load passes the capacity: the spiral of death scenario b shows.
func TestRunOne_FIFOWaitingUpToTheDeadlineServesLateUnderOverload(t *testing.T) {
	sc, err := scenarioNamed("b-fifo")
	require.NoError(t, err)
	sc.phaseLen = 2 * time.Second
	synctest.Test(t, func(t *testing.T) {
		r := runOne(sc, strategyNamed(t, sc, "static 8"), sc.arrivals(1))
		e := r.ends[1]
		assert.Greater(t, lateShare(e), 0.2, "1.5x overload, FIFO waits up to the deadline: %v", e)
		assert.Less(t, float64(e[served]), 0.5*sc.phases[1].ceiling()*sc.phaseLen.Seconds())
	})
}

// runNamed runs sc's strategies of the given names, and its static limits,
// once in simulated time, and returns them with their results.
func runNamed(t *testing.T, sc scenario, names ...string) ([]namedStrategy, []result) {
	var run []namedStrategy
	for _, s := range sc.strategies() {
		if s.group == "static" || slices.Contains(names, s.name) {
			run = append(run, s)
		}
	}
	require.Len(t, run, 2*len(sc.statics)+len(names))
	var rs []result
	arr := sc.arrivals(1)
	for _, s := range run {
		synctest.Test(t, func(t *testing.T) { rs = append(rs, runOne(sc, s, arr)) })
	}
	return run, rs
}

// Scenario b: through the long drop to a quarter of the capacity, while
// callers always wait, the default limit is within a quarter of the capacity
// from a second after the drop to the end of the phase, and its median within
// 1.125x; with a long wait budget (the standing-queue policy keeps the queue
// short) and with a short one, behind the FIFO backend and the thrashing one.
func TestScenarioB_TheLimitStaysOnTheCapacityThroughALongDrop(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		queue    time.Duration
		strategy string
	}{
		{"b-fifo", 0, "Capacity +standing"},
		{"b-fifo", 20 * time.Millisecond, "Capacity"},
		{"b-thrash", 40 * time.Millisecond, "Capacity"},
		{"b-thrash", 0, "Capacity +standing"},
	} {
		t.Run(fmt.Sprintf("%s/%v/%s", tc.scenario, tc.queue, tc.strategy), func(t *testing.T) {
			sc, err := scenarioNamed(tc.scenario)
			require.NoError(t, err)
			if tc.queue > 0 {
				sc.queueBudget = tc.queue
			}
			var r result
			synctest.Test(t, func(t *testing.T) { r = runOne(sc, strategyNamed(t, sc, tc.strategy), sc.arrivals(1)) })
			bpp := int(sc.phaseLen / bucket)
			c := sc.phases[1].capacity
			after := r.limits[bpp+int(time.Second/bucket) : 2*bpp]
			within := func(l int) bool { return 4*l >= 3*c && 4*l <= 5*c }
			assert.True(t, !slices.ContainsFunc(after, func(l int) bool { return !within(l) }), "limits from 1s after the drop: %v", after)
			assert.LessOrEqual(t, 8*median(after), 9*c, "median of %v", after)
			assert.LessOrEqual(t, limitBack(sc, r.limits, 1, bpp), time.Second)
		})
	}
}

// Scenario start: from a limit of 16 under a capacity of 32 and from 200 above
// it, after the drop to 8 and after the return to 32, each under a load past
// the capacity, the default limit is within a quarter of the capacity within
// a second and stays there, and the p99 of the requests served is at most
// 1.2x the best static limit's in every phase.
func TestScenarioStart_TheLimitReachesTheCapacityWithinASecondAtNoLatencyCost(t *testing.T) {
	sc, err := scenarioNamed("start")
	require.NoError(t, err)
	names := []string{"Capacity from 16", "Capacity from 200", "Capacity from 16 +standing", "Capacity from 200 +standing"}
	run, rs := runNamed(t, sc, names...)
	st, _ := measure(sc, run, rs)
	best := st[len(st)-1]
	for i, s := range run {
		if s.group != "adaptive" {
			continue
		}
		for p := range sc.phases {
			assert.LessOrEqual(t, st[i].limitBack[p], time.Second, "%s, phase %d: %v", s.name, p+1, rs[i].limits)
			assert.LessOrEqual(t, float64(st[i].p99[p]), 1.2*float64(best.p99[p]), "%s, phase %d", s.name, p+1)
			assert.GreaterOrEqual(t, st[i].ratio[p], 0.95, "%s, phase %d: goodput of the best static's", s.name, p+1)
		}
	}
}

// median returns the median of l.
func median(l []int) int {
	l = slices.Clone(l)
	slices.Sort(l)
	return l[len(l)/2]
}
