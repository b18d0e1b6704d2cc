package adaptive_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore/adaptive"
)

// backend is a synthetic backend for the algorithms: capacity calls run at
// base latency; past it, latency grows in proportion (the excess queues).
type backend struct {
	capacity int
	base     time.Duration
}

func (b backend) rtt(inFlight int) time.Duration {
	if inFlight <= b.capacity {
		return b.base
	}
	return b.base * time.Duration(inFlight) / time.Duration(b.capacity)
}

// drive feeds alg n windows of a saturated load (as many in flight as the
// limit) against b, dropping the window when its latency passes deadline (0:
// never), and returns the limits after each window.
func drive(alg adaptive.Algorithm, b backend, n int, deadline time.Duration, t0 time.Time) []int {
	limits := make([]int, n)
	for i := range n {
		in := alg.Limit()
		rtt := b.rtt(in)
		s := adaptive.Sample{Time: t0.Add(time.Duration(i) * 100 * time.Millisecond), RTT: rtt, MinRTT: rtt, InFlight: in, Count: 10}
		if deadline > 0 && rtt > deadline {
			s.Drops, s.RTT, s.MinRTT = 10, 0, 0
		}
		limits[i] = alg.Update(s)
	}
	return limits
}

func within(t *testing.T, got []int, lo, hi int) {
	t.Helper()
	for i, l := range got {
		require.True(t, l >= lo && l <= hi, "limit %d at window %d outside [%d, %d]", l, i, lo, hi)
	}
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestAIMD_GrowsByOneWhileUsedAndBacksOffByRatioOnDrop(t *testing.T) {
	a := adaptive.NewAIMD(adaptive.AIMDConfig{InitialLimit: 10, MinLimit: 1, MaxLimit: 100})
	assert.Equal(t, 11, a.Update(adaptive.Sample{RTT: time.Millisecond, InFlight: 5, Count: 1}))
	assert.Equal(t, 11, a.Update(adaptive.Sample{RTT: time.Millisecond, InFlight: 5, Count: 1}), "less than half in flight: app-limited")
	assert.Equal(t, 9, a.Update(adaptive.Sample{InFlight: 11, Count: 1, Drops: 1}), "floor(11 x 0.9)")
	assert.Equal(t, 8, a.Update(adaptive.Sample{RTT: 6 * time.Second, InFlight: 9, Count: 1}), "past Timeout counts as a drop")
}

func TestAIMD_ConvergesNearCapacityWhenOverloadDrops(t *testing.T) {
	a := adaptive.NewAIMD(adaptive.AIMDConfig{InitialLimit: 50, MinLimit: 1, MaxLimit: 100})
	b := backend{capacity: 16, base: 10 * time.Millisecond}
	limits := drive(a, b, 400, 12*time.Millisecond, t0) // drops once over 19 in flight
	within(t, limits[200:], 15, 20)
}

func TestAIMD_RespectsBounds(t *testing.T) {
	a := adaptive.NewAIMD(adaptive.AIMDConfig{InitialLimit: 5, MinLimit: 4, MaxLimit: 6})
	within(t, drive(a, backend{capacity: 100, base: time.Millisecond}, 50, 0, t0), 4, 6)
	assert.Equal(t, 6, a.Limit())
	within(t, drive(a, backend{capacity: 1, base: time.Millisecond}, 50, time.Millisecond, t0), 4, 6)
	assert.Equal(t, 4, a.Limit())
}

func TestVegas_ConvergesAboveCapacityByItsQueueAllowance(t *testing.T) {
	for _, capacity := range []int{8, 32} {
		v := adaptive.NewVegas(adaptive.VegasConfig{InitialLimit: 4, ProbeMultiplier: -1}) // starts below capacity: sees the no-load RTT
		limits := drive(v, backend{capacity: capacity, base: 20 * time.Millisecond}, 300, 0, t0)
		within(t, limits[200:], capacity, capacity+2*6+2) // queue kept under Beta x L (plus one step)
	}
}

func TestVegas_ReconvergesAfterCapacityStep(t *testing.T) {
	v := adaptive.NewVegas(adaptive.VegasConfig{InitialLimit: 4})
	drive(v, backend{capacity: 32, base: 20 * time.Millisecond}, 200, 0, t0)
	within(t, drive(v, backend{capacity: 8, base: 20 * time.Millisecond}, 300, 0, t0)[100:], 8, 30)
	within(t, drive(v, backend{capacity: 32, base: 20 * time.Millisecond}, 300, 0, t0)[150:], 32, 60)
}

func TestVegas_BacksOffOnDrop(t *testing.T) {
	v := adaptive.NewVegas(adaptive.VegasConfig{InitialLimit: 20})
	assert.Equal(t, 19, v.Update(adaptive.Sample{InFlight: 20, Count: 1, Drops: 1}))
	v.Update(adaptive.Sample{RTT: 10 * time.Millisecond, InFlight: 19, Count: 1}) // learns the no-load RTT
	assert.Equal(t, 18, v.Update(adaptive.Sample{RTT: 10 * time.Millisecond, InFlight: 19, Count: 2, Drops: 1}))
}

func TestVegas_RespectsBounds(t *testing.T) {
	v := adaptive.NewVegas(adaptive.VegasConfig{InitialLimit: 5, MinLimit: 3, MaxLimit: 7})
	within(t, drive(v, backend{capacity: 100, base: time.Millisecond}, 100, 0, t0), 3, 7)
	assert.Equal(t, 7, v.Limit())
	for range 20 {
		v.Update(adaptive.Sample{InFlight: 7, Count: 1, Drops: 1})
	}
	assert.Equal(t, 3, v.Limit())
}

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

func TestAlgorithms_AreDeterministic(t *testing.T) {
	mk := []func() adaptive.Algorithm{
		func() adaptive.Algorithm { return adaptive.NewAIMD(adaptive.AIMDConfig{}) },
		func() adaptive.Algorithm { return adaptive.NewVegas(adaptive.VegasConfig{}) },
		func() adaptive.Algorithm { return adaptive.NewGradient2(adaptive.Gradient2Config{}) },
	}
	b := backend{capacity: 12, base: 5 * time.Millisecond}
	for _, f := range mk {
		assert.Equal(t, drive(f(), b, 200, 9*time.Millisecond, t0), drive(f(), b, 200, 9*time.Millisecond, t0))
	}
}

func TestConfigs_DefaultToPublishedValuesAndPanicOnInvalid(t *testing.T) {
	assert.Equal(t, 20, adaptive.NewAIMD(adaptive.AIMDConfig{}).Limit())
	assert.Equal(t, 20, adaptive.NewVegas(adaptive.VegasConfig{}).Limit())
	assert.Equal(t, 20, adaptive.NewGradient2(adaptive.Gradient2Config{}).Limit())
	assert.Equal(t, 5, adaptive.NewAIMD(adaptive.AIMDConfig{InitialLimit: 5}).Limit(), "MinLimit follows a lower InitialLimit")
	assert.Equal(t, 5, adaptive.NewGradient2(adaptive.Gradient2Config{InitialLimit: 5}).Limit())
	for name, f := range map[string]func(){
		"AIMD min > max":       func() { adaptive.NewAIMD(adaptive.AIMDConfig{MinLimit: 5, MaxLimit: 4}) },
		"AIMD negative min":    func() { adaptive.NewAIMD(adaptive.AIMDConfig{MinLimit: -1}) },
		"AIMD backoff 1":       func() { adaptive.NewAIMD(adaptive.AIMDConfig{BackoffRatio: 1}) },
		"AIMD backoff 0.4":     func() { adaptive.NewAIMD(adaptive.AIMDConfig{BackoffRatio: 0.4}) },
		"AIMD timeout":         func() { adaptive.NewAIMD(adaptive.AIMDConfig{Timeout: -1}) },
		"Vegas initial > max":  func() { adaptive.NewVegas(adaptive.VegasConfig{InitialLimit: 10, MaxLimit: 5}) },
		"Vegas smoothing":      func() { adaptive.NewVegas(adaptive.VegasConfig{Smoothing: 1.5}) },
		"Vegas alpha > beta":   func() { adaptive.NewVegas(adaptive.VegasConfig{Alpha: 7, Beta: 6}) },
		"Gradient2 tolerance":  func() { adaptive.NewGradient2(adaptive.Gradient2Config{Tolerance: 0.5}) },
		"Gradient2 smoothing":  func() { adaptive.NewGradient2(adaptive.Gradient2Config{Smoothing: -0.1}) },
		"Gradient2 longwindow": func() { adaptive.NewGradient2(adaptive.Gradient2Config{LongWindow: -1}) },
	} {
		assert.Panics(t, f, name)
	}
}
