package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// perPhase returns bpp samples per phase, each phase's from fill.
func perPhase(bpp int, fill func(p, k int) int) []int {
	var out []int
	for p := range phases {
		for k := range bpp {
			out = append(out, fill(p, k))
		}
	}
	return out
}

func TestLimitBack_FromTheFirstSampleThatStaysInTheBand(t *testing.T) {
	const bpp = 10
	// Phase 2 (capacity 10): 30 for three buckets, 13 (outside), then 12 to
	// the end (inside ±25%).
	limits := perPhase(bpp, func(p, k int) int {
		switch {
		case p != 1:
			return phases[p].capacity
		case k < 3:
			return 30
		case k == 3:
			return 13
		}
		return 12
	})
	// The sample at the end of bucket 4 of the phase is 0.5s after the step.
	assert.Equal(t, 500*time.Millisecond, limitBack(limits, 1, bpp))
	// Phase 3 (capacity 40) meets the step at 12, then is at 40 from the
	// first sample.
	assert.Equal(t, 100*time.Millisecond, limitBack(limits, 2, bpp))
	// Phase 4 keeps capacity 40: the limit never left the band.
	assert.Equal(t, time.Duration(0), limitBack(limits, 3, bpp))
	limits[3*bpp-1] = 60
	assert.Equal(t, never, limitBack(limits, 2, bpp), "out of the band at the phase's end")
	assert.Equal(t, never, limitBack(limits, 0, bpp), "no step into the first phase")
}

func TestGoodputBack_EveryWindowFromThenOnWithinFivePercent(t *testing.T) {
	const bpp = 40
	ref := perPhase(bpp, func(int, int) int { return 100 })
	served := perPhase(bpp, func(p, k int) int {
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
