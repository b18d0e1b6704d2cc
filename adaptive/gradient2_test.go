package adaptive_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/fairsem/semaphore/adaptive"
)

func TestGradient2_ShrinksWhenLatencyRisesAndGrowsWhenSteady(t *testing.T) {
	g := adaptive.NewGradient2(adaptive.Gradient2Config{InitialLimit: 20, MinLimit: 1, MaxLimit: 100})
	steady := adaptive.Sample{RTT: 10 * time.Millisecond, InFlight: 20, Count: 10}
	for range 10 {
		steady.InFlight = g.Limit()
		g.Update(steady)
	}
	grown := g.Limit()
	assert.Greater(t, grown, 20, "steady latency: the queue allowance raises the limit")
	slow := adaptive.Sample{RTT: 40 * time.Millisecond, InFlight: grown, Count: 10}
	assert.Less(t, g.Update(slow), grown, "latency past the tolerance: the limit shrinks")
}

func TestGradient2_ReconvergesAfterCapacityStep(t *testing.T) {
	g := adaptive.NewGradient2(adaptive.Gradient2Config{InitialLimit: 20, MinLimit: 1, MaxLimit: 200, LongWindow: 100})
	// Gradient2 bounds how fast latency may grow, not its level: with latency
	// rising in proportion to the limit it follows its long average up, and it
	// is the deadline's drops that bound it.
	drive(g, backend{capacity: 32, base: 20 * time.Millisecond}, 300, 60*time.Millisecond, t0)
	within(t, drive(g, backend{capacity: 8, base: 20 * time.Millisecond}, 300, 60*time.Millisecond, t0)[50:], 12, 26) // drops start past 24
}

func TestGradient2_BacksOffOnDrop(t *testing.T) {
	g := adaptive.NewGradient2(adaptive.Gradient2Config{InitialLimit: 100, MinLimit: 1, MaxLimit: 200})
	// 100 x 0.8 + (100 x 0.5 + 4) x 0.2 = 90.8
	assert.Equal(t, 90, g.Update(adaptive.Sample{InFlight: 100, Count: 3, Drops: 3}))
}

func TestGradient2_RespectsBounds(t *testing.T) {
	g := adaptive.NewGradient2(adaptive.Gradient2Config{InitialLimit: 10, MinLimit: 5, MaxLimit: 12})
	within(t, drive(g, backend{capacity: 100, base: time.Millisecond}, 100, 0, t0), 5, 12)
	assert.Equal(t, 12, g.Limit())
	for range 50 {
		g.Update(adaptive.Sample{InFlight: 12, Count: 1, Drops: 1})
	}
	assert.Equal(t, 5, g.Limit())
}
