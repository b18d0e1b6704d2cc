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
