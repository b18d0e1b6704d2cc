package adaptive_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore/adaptive"
)

// thrashing is a synthetic backend for Capacity: up to capacity units are
// served at base latency; past it, the round trip grows with the units in
// flight (processor sharing) and, by thrash per unit of excess, beyond them,
// so that throughput falls when it is pushed past its capacity.
type thrashing struct {
	capacity int
	base     time.Duration
	thrash   float64 // extra cost per unit in flight past capacity, as a fraction of capacity
}

func (b thrashing) rtt(inFlight int) time.Duration {
	if inFlight <= b.capacity {
		return b.base
	}
	over := float64(inFlight) / float64(b.capacity)
	return time.Duration(float64(b.base) * over * (1 + b.thrash*(over-1)))
}

// load drives alg with n windows of callers that want demand units in flight:
// each window runs under the limit the previous window left (the calls of a
// window were granted before it closed), records the units in flight, the
// round trip, the throughput by Little's law and whether callers waited, and
// the limits after each window are returned.
func load(alg adaptive.Algorithm, b thrashing, demand, n int, at *time.Time) []int {
	limits := make([]int, n)
	for i := range n {
		in := min(alg.Limit(), demand)
		rtt := b.rtt(in)
		s := adaptive.Sample{Time: *at, RTT: rtt, MinRTT: rtt, InFlight: in, Count: 10,
			Throughput: float64(in) / rtt.Seconds()}
		if demand > alg.Limit() {
			s.Waited = demand - alg.Limit()
		}
		*at = at.Add(2 * rtt)
		limits[i] = alg.Update(s)
	}
	return limits
}

// A thrashing backend past its capacity serves less than its capacity, so the
// first cut lands below it; the limit then grows back to it.
func TestCapacity_LandsOnACapacityThatFellToAQuarterWithinFiveWindowsAndStays(t *testing.T) {
	at := t0
	c := adaptive.NewCapacity(adaptive.CapacityConfig{})
	load(c, thrashing{40, 20 * time.Millisecond, 0.5}, 200, 100, &at)
	within(t, load(c, thrashing{40, 20 * time.Millisecond, 0.5}, 200, 50, &at), 40, 50)
	after := load(c, thrashing{10, 20 * time.Millisecond, 0.5}, 200, 200, &at)
	assert.Less(t, after[0], 10, "cut below the capacity at once")
	within(t, after[4:], 8, 12)
	assert.Equal(t, 10, c.Estimate())
}

func TestCapacity_ReturnsToARisenCapacityWithinTenWindows(t *testing.T) {
	at := t0
	c := adaptive.NewCapacity(adaptive.CapacityConfig{})
	load(c, thrashing{10, 20 * time.Millisecond, 0.5}, 200, 100, &at)
	within(t, load(c, thrashing{40, 20 * time.Millisecond, 0.5}, 200, 200, &at)[10:], 35, 50)
}

func TestCapacity_DoublingTheBaseLatencyCutsTheLimitByAQuarterAtMost(t *testing.T) {
	at := t0
	c := adaptive.NewCapacity(adaptive.CapacityConfig{})
	before := load(c, thrashing{40, 20 * time.Millisecond, 0.5}, 200, 100, &at)
	after := load(c, thrashing{40, 40 * time.Millisecond, 0.5}, 200, 200, &at)
	within(t, after[10:], before[99]*3/4, before[99]*5/4)
	assert.Equal(t, 40*time.Millisecond, c.NoLoadRTT())
}

func TestCapacity_KeepsItsNoLoadRoundTripUnderSustainedOverload(t *testing.T) {
	at := t0
	c := adaptive.NewCapacity(adaptive.CapacityConfig{})
	within(t, load(c, thrashing{40, 20 * time.Millisecond, 0.5}, 1000, 5000, &at)[10:], 40, 50)
	assert.Equal(t, 20*time.Millisecond, c.NoLoadRTT(), "no drift: the shortest round trip stays")
}

func TestCapacity_StaysNearWhatTheLoadNeedsBelowTheCapacity(t *testing.T) {
	at := t0
	c := adaptive.NewCapacity(adaptive.CapacityConfig{InitialLimit: 100})
	limits := load(c, thrashing{40, 20 * time.Millisecond, 0.5}, 20, 1000, &at)
	within(t, limits[5:], 20, 60) // at or above the load, within 1.5x the capacity
	assert.LessOrEqual(t, limits[999], 25, "1+Headroom times the load")
	// The load rises to past the capacity: the limit follows it up, and stops
	// at the capacity.
	within(t, load(c, thrashing{40, 20 * time.Millisecond, 0.5}, 200, 100, &at)[10:], 40, 50)
}

func TestCapacity_LatencyCeilingBringsTheLimitDownWhateverTheBaseline(t *testing.T) {
	at := t0
	c := adaptive.NewCapacity(adaptive.CapacityConfig{MaxLatency: 30 * time.Millisecond})
	// Past the capacity the round trip grows: the ceiling caps the limit at
	// 1.5x the capacity, where it reaches 30ms; the capacity rule is lower.
	within(t, load(c, thrashing{40, 20 * time.Millisecond, 0}, 200, 100, &at)[10:], 40, 50)
	// The backend got slower for good, past the ceiling: the limit falls to
	// its minimum though the no-load round trip follows the backend.
	limits := load(c, thrashing{40, 60 * time.Millisecond, 0}, 200, 100, &at)
	assert.Equal(t, 1, limits[99])
	without := adaptive.NewCapacity(adaptive.CapacityConfig{})
	at = t0
	load(without, thrashing{40, 20 * time.Millisecond, 0}, 200, 100, &at)
	assert.Greater(t, load(without, thrashing{40, 60 * time.Millisecond, 0}, 200, 100, &at)[99], 30, "without a ceiling the limit stays")
}

func TestCapacity_BacksOffOnDrops(t *testing.T) {
	c := adaptive.NewCapacity(adaptive.CapacityConfig{InitialLimit: 40})
	assert.Equal(t, 20, c.Update(adaptive.Sample{Time: t0, InFlight: 40, Count: 5, Drops: 5}), "every call dropped: half")
	ms := 20 * time.Millisecond
	got := c.Update(adaptive.Sample{Time: t0, RTT: ms, MinRTT: ms, InFlight: 20, Count: 5, Drops: 1, Waited: 3,
		Throughput: 20 / ms.Seconds()})
	assert.Equal(t, 18, got, "a fifth dropped: at most 0.9 of the limit")
}

func TestCapacity_IsDeterministicAndBounded(t *testing.T) {
	mk := func() adaptive.Algorithm {
		return adaptive.NewCapacity(adaptive.CapacityConfig{InitialLimit: 5, MinLimit: 3, MaxLimit: 30})
	}
	at, at2 := t0, t0
	a := load(mk(), thrashing{12, 5 * time.Millisecond, 1}, 100, 300, &at)
	require.Equal(t, a, load(mk(), thrashing{12, 5 * time.Millisecond, 1}, 100, 300, &at2))
	within(t, a, 3, 30)
	at = t0
	within(t, load(mk(), thrashing{100, 5 * time.Millisecond, 1}, 100, 300, &at)[20:], 30, 30)
	within(t, load(mk(), thrashing{1, 5 * time.Millisecond, 1}, 100, 300, &at), 3, 30)
}

func TestNewCapacity_DefaultsAndPanicsOnInvalid(t *testing.T) {
	c := adaptive.NewCapacity(adaptive.CapacityConfig{})
	assert.Equal(t, 20, c.Limit())
	assert.Zero(t, c.Estimate())
	assert.Zero(t, c.NoLoadRTT())
	assert.Equal(t, 5, adaptive.NewCapacity(adaptive.CapacityConfig{InitialLimit: 5}).Limit())
	for name, f := range map[string]func(){
		"headroom 0 < h": func() { adaptive.NewCapacity(adaptive.CapacityConfig{Headroom: -0.1}) },
		"headroom <= 1":  func() { adaptive.NewCapacity(adaptive.CapacityConfig{Headroom: 1.5}) },
		"max latency":    func() { adaptive.NewCapacity(adaptive.CapacityConfig{MaxLatency: -1}) },
		"min > max":      func() { adaptive.NewCapacity(adaptive.CapacityConfig{MinLimit: 5, MaxLimit: 4}) },
	} {
		assert.Panics(t, f, name)
	}
}
