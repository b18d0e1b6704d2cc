package adaptive_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/fairsem/semaphore/adaptive"
)

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
