package main

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scenarioA is scenario a, whose phases the report's tests use.
func scenarioA(t *testing.T) scenario {
	sc, err := scenarioNamed("a")
	require.NoError(t, err)
	return sc
}

// perPhase returns bpp samples per phase of sc, each phase's from fill.
func perPhase(sc scenario, bpp int, fill func(p, k int) int) []int {
	var out []int
	for p := range sc.phases {
		for k := range bpp {
			out = append(out, fill(p, k))
		}
	}
	return out
}

func TestLimitBack_FromTheFirstSampleThatStaysInTheBand(t *testing.T) {
	const bpp = 10
	sc := scenarioA(t)
	// Phase 2 (capacity 10): 30 for three buckets, 13 (outside), then 12 to
	// the end (inside ±25%).
	limits := perPhase(sc, bpp, func(p, k int) int {
		switch {
		case p != 1:
			return sc.phases[p].capacity
		case k < 3:
			return 30
		case k == 3:
			return 13
		}
		return 12
	})
	// The sample at the end of bucket 4 of the phase is 0.5s after the step.
	assert.Equal(t, 500*time.Millisecond, limitBack(sc, limits, 1, bpp))
	// Phase 3 (capacity 40) meets the step at 12, then is at 40 from the
	// first sample.
	assert.Equal(t, 100*time.Millisecond, limitBack(sc, limits, 2, bpp))
	// Phase 4 keeps capacity 40: the limit never left the band.
	assert.Equal(t, time.Duration(0), limitBack(sc, limits, 3, bpp))
	limits[3*bpp-1] = 60
	assert.Equal(t, never, limitBack(sc, limits, 2, bpp), "out of the band at the phase's end")
	assert.Equal(t, loadBound, limitBack(sc, limits, 0, bpp), "the first phase's load is below the capacity")
	// Loaded past its capacity from the start, the first phase counts from
	// the run's start: the first sample is at the end of the first bucket.
	sc.phases = append([]phase{{capacity: 40, base: 50 * time.Millisecond, rate: 1000}}, sc.phases[1:]...)
	limits[0], limits[1] = 20, 35
	assert.Equal(t, 200*time.Millisecond, limitBack(sc, limits, 0, bpp))
	limits[0] = 40
	assert.Equal(t, 100*time.Millisecond, limitBack(sc, limits, 0, bpp), "at the first sample")
}

func TestToldAtOnce_RefusedAtOnceOverTheCallersNotServed(t *testing.T) {
	var e [endings]int
	assert.True(t, math.IsNaN(toldAtOnce(e)), "every caller served")
	e[served], e[refused], e[refusedLater], e[queueTimeout], e[late] = 100, 9, 0, 1, 0
	assert.InDelta(t, 0.9, toldAtOnce(e), 1e-9)
	e[late] = 10
	assert.InDelta(t, 9.0/20, toldAtOnce(e), 1e-9)
	assert.InDelta(t, 10.0/120, lateShare(e), 1e-9)
}

func TestGoodputBack_EveryWindowFromThenOnWithinFivePercent(t *testing.T) {
	const bpp = 40
	sc := scenarioA(t)
	ref := perPhase(sc, bpp, func(int, int) int { return 100 })
	served := perPhase(sc, bpp, func(p, k int) int {
		if p == 1 && k < 5 {
			return 40
		}
		return 100
	})
	// From bucket 5 on, every 1s window serves 100 per bucket; the one from
	// bucket 4 serves 94%.
	assert.Equal(t, 500*time.Millisecond, goodputBack(served, ref, 1, bpp))
	served[2*bpp-1] = 40 // the last window serves 94%
	assert.Equal(t, never, goodputBack(served, ref, 1, bpp))
	assert.Equal(t, time.Duration(0), goodputBack(served, ref, 2, bpp))
}
