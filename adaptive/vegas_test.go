package adaptive_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/fairsem/semaphore/adaptive"
)

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

// With the estimated queue exactly at Threshold x L, the limit grows fast (by
// Beta x L), as at any queue up to the threshold.
func TestVegas_GrowsByBetaWhileTheQueueIsAtMostTheThreshold(t *testing.T) {
	v := adaptive.NewVegas(adaptive.VegasConfig{InitialLimit: 20, ProbeMultiplier: -1})
	v.Update(adaptive.Sample{RTT: 100 * time.Millisecond, InFlight: 20, Count: 10}) // the no-load RTT
	// queue = ceil(20 x (1 - 100/104)) = 1 = Threshold x L, with L = 1.
	assert.Equal(t, 26, v.Update(adaptive.Sample{RTT: 104 * time.Millisecond, InFlight: 20, Count: 10}))
}
