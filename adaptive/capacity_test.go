package adaptive_test

import (
	"slices"
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
func TestCapacity_CutsWhenTheCapacityFellToAQuarterAndLandsOnItWithinEightWindows(t *testing.T) {
	at := t0
	c := adaptive.NewCapacity(adaptive.CapacityConfig{ProbeInterval: -1})
	load(c, thrashing{40, 20 * time.Millisecond, 0.5}, 200, 100, &at)
	within(t, load(c, thrashing{40, 20 * time.Millisecond, 0.5}, 200, 50, &at), 40, 50)
	after := load(c, thrashing{10, 20 * time.Millisecond, 0.5}, 200, 200, &at)
	assert.Equal(t, []int{31, 15, 8}, after[:3], "by a quarter, then by half")
	within(t, after[7:], 8, 13)
	assert.Equal(t, 10, c.Estimate())
}

// A window whose calls were granted before a growth was taken up (fewer units
// in flight than the growth allows) holds the limit, once: it tells nothing of
// the grown limit, and growing again on it would overshoot.
func TestCapacity_WaitsForTheLastGrowthToBeTakenUpBeforeGrowingAgain(t *testing.T) {
	ms := 20 * time.Millisecond
	window := func(i int, load float64) adaptive.Sample {
		return adaptive.Sample{Time: t0.Add(time.Duration(i) * time.Second), RTT: ms, MinRTT: ms, InFlight: int(load),
			Load: load, Count: 10, Waited: 5, Throughput: load / ms.Seconds()}
	}
	c := adaptive.NewCapacity(adaptive.CapacityConfig{ProbeInterval: -1})
	require.Equal(t, 25, c.Update(window(1, 20)), "room at 20, 5 callers waited: grow")
	assert.Equal(t, 25, c.Update(window(2, 20)), "the growth not taken up: hold")
	assert.Equal(t, 30, c.Update(window(3, 20)), "a second such window: grow (calls larger than the growth never take it up)")
	assert.Equal(t, 35, c.Update(window(4, 25)), "taken up: grow at once")
}

// From the fourth window in a row that finds room, the limit grows by the
// callers that waited for it, up to doubling: the capacity rose far above it.
func TestCapacity_GrowsByTheCallersThatWaitedFromTheFourthWindowWithRoom(t *testing.T) {
	ms := 20 * time.Millisecond
	c := adaptive.NewCapacity(adaptive.CapacityConfig{InitialLimit: 10, ProbeInterval: -1})
	// A window at the no-load round trip, then one past the capacity (the
	// limit stays: it is near the estimate).
	c.Update(adaptive.Sample{Time: t0, RTT: ms, MinRTT: ms, InFlight: 10, Load: 10, Count: 10, Throughput: 10 / ms.Seconds()})
	require.Equal(t, 10, c.Update(adaptive.Sample{Time: t0.Add(time.Second / 2), RTT: ms * 107 / 100, MinRTT: ms * 107 / 100,
		InFlight: 10, Load: 10, Count: 10, Waited: 1, Throughput: 10 / (ms * 107 / 100).Seconds()}))
	var limits []int
	for i := range 6 {
		load := float64(c.Limit())
		limits = append(limits, c.Update(adaptive.Sample{Time: t0.Add(time.Duration(i) * time.Second), RTT: ms, MinRTT: ms,
			InFlight: c.Limit(), Load: load, Count: 10, Waited: 5 * (i + 1), Throughput: load / ms.Seconds()}))
	}
	assert.Equal(t, []int{11, 12, 15, 31, 56, 86}, limits, "by a quarter of Headroom, half, all of it, then by the callers that waited")
}

// Until a window first finds the backend queueing, the limit grows by the
// callers that waited for it from the first window with room, up to
// doubling: it knows nothing of the capacity yet, and starts as fast as the
// load asks.
func TestCapacity_GrowsByTheCallersThatWaitedUntilTheBackendFirstQueues(t *testing.T) {
	at := t0
	c := adaptive.NewCapacity(adaptive.CapacityConfig{InitialLimit: 4, ProbeInterval: -1})
	limits := load(c, thrashing{40, 20 * time.Millisecond, 0.5}, 200, 6, &at)
	assert.Equal(t, []int{8, 16, 32, 64, 64, 48}, limits, "doubling up to the first queue, then down to the capacity")
}

// A window granted as the load fell has its fastest call at the lowest load:
// the next, lighter window that is as fast as that call is no sign of a
// slower backend, and the no-load round trip stays.
func TestCapacity_TakesAWindowGrantedAsTheLoadFellAtItsMeanRoundTrip(t *testing.T) {
	c := adaptive.NewCapacity(adaptive.CapacityConfig{InitialLimit: 40, ProbeInterval: -1})
	ms := func(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
	window := func(i int, load float64, inFlight int, rtt, minRTT time.Duration) adaptive.Sample {
		return adaptive.Sample{Time: t0.Add(time.Duration(i) * time.Second), RTT: rtt, MinRTT: minRTT, InFlight: inFlight,
			Load: load, Count: 10, Waited: 5, Throughput: load / rtt.Seconds()}
	}
	c.Update(window(1, 40, 40, ms(50), ms(50)))
	c.Update(window(2, 21.4, 27, ms(85), ms(67)))
	c.Update(window(3, 13, 13, ms(67), ms(67)))
	assert.Equal(t, ms(50), c.NoLoadRTT())
	// A backend that got slower: the heavier window's calls all took as long.
	c.Update(window(4, 21, 21, ms(100), ms(100)))
	c.Update(window(5, 13, 13, ms(100), ms(100)))
	assert.Equal(t, ms(100), c.NoLoadRTT())
}

func TestCapacity_ReturnsToARisenCapacityWithinTenWindows(t *testing.T) {
	at := t0
	c := adaptive.NewCapacity(adaptive.CapacityConfig{ProbeInterval: -1})
	load(c, thrashing{10, 20 * time.Millisecond, 0.5}, 200, 100, &at)
	within(t, load(c, thrashing{40, 20 * time.Millisecond, 0.5}, 200, 200, &at)[10:], 35, 50)
}

func TestCapacity_DoublingTheBaseLatencyCutsTheLimitByAQuarterAtMost(t *testing.T) {
	at := t0
	c := adaptive.NewCapacity(adaptive.CapacityConfig{ProbeInterval: -1})
	before := load(c, thrashing{40, 20 * time.Millisecond, 0.5}, 200, 100, &at)
	after := load(c, thrashing{40, 40 * time.Millisecond, 0.5}, 200, 200, &at)
	within(t, after[10:], before[99]*3/4, before[99]*5/4)
	assert.Equal(t, 40*time.Millisecond, c.NoLoadRTT())
}

func TestCapacity_KeepsItsNoLoadRoundTripUnderSustainedOverload(t *testing.T) {
	at := t0
	c := adaptive.NewCapacity(adaptive.CapacityConfig{})
	limits := load(c, thrashing{40, 20 * time.Millisecond, 0.5}, 1000, 5000, &at)[10:]
	drains := 0
	for i, l := range limits {
		if l < 40 { // the probe: three quarters of the limit for one window
			drains++
			require.Less(t, l, 37, "window %d", i)
			continue
		}
		require.LessOrEqual(t, l, 50, "window %d", i)
	}
	assert.InDelta(t, 5000*40*time.Millisecond/(2*time.Second), drains, 10, "one drain per ProbeInterval")
	assert.Equal(t, 20*time.Millisecond, c.NoLoadRTT(), "no drift: the no-load round trip stays")
}

func TestCapacity_StaysNearWhatTheLoadNeedsBelowTheCapacity(t *testing.T) {
	at := t0
	c := adaptive.NewCapacity(adaptive.CapacityConfig{InitialLimit: 100, ProbeInterval: -1})
	limits := load(c, thrashing{40, 20 * time.Millisecond, 0.5}, 20, 1000, &at)
	within(t, limits[5:], 20, 60) // at or above the load, within 1.5x the capacity
	assert.LessOrEqual(t, limits[999], 30, "1+2 Headroom times the load")
	// The load rises to past the capacity: the limit follows it up, and stops
	// at the capacity.
	within(t, load(c, thrashing{40, 20 * time.Millisecond, 0.5}, 200, 100, &at)[10:], 40, 50)
}

func TestCapacity_LatencyCeilingBringsTheLimitDownWhateverTheBaseline(t *testing.T) {
	at := t0
	c := adaptive.NewCapacity(adaptive.CapacityConfig{MaxLatency: 30 * time.Millisecond, ProbeInterval: -1})
	// Past the capacity the round trip grows: the ceiling caps the limit at
	// 1.5x the capacity, where it reaches 30ms; the capacity rule is lower.
	within(t, load(c, thrashing{40, 20 * time.Millisecond, 0}, 200, 100, &at)[10:], 40, 50)
	// The backend got slower for good, past the ceiling: the limit falls to
	// its minimum though the no-load round trip follows the backend.
	limits := load(c, thrashing{40, 60 * time.Millisecond, 0}, 200, 100, &at)
	assert.Equal(t, 1, limits[99])
	without := adaptive.NewCapacity(adaptive.CapacityConfig{ProbeInterval: -1})
	at = t0
	load(without, thrashing{40, 20 * time.Millisecond, 0}, 200, 100, &at)
	assert.Greater(t, load(without, thrashing{40, 60 * time.Millisecond, 0}, 200, 100, &at)[99], 30, "without a ceiling the limit stays")
}

// A backend that got slower for good while the limit sat at its minimum (no
// lighter window to compare with) is only found by the probe.
func TestCapacity_ProbeReMeasuresANoLoadRoundTripThatIsOutOfDate(t *testing.T) {
	for _, probe := range []time.Duration{-1, 0} {
		at := t0
		c := adaptive.NewCapacity(adaptive.CapacityConfig{ProbeInterval: probe})
		load(c, thrashing{40, 20 * time.Millisecond, 0}, 200, 50, &at)
		load(c, thrashing{1, 80 * time.Millisecond, 0}, 200, 50, &at) // the limit falls to 1
		limits := load(c, thrashing{40, 80 * time.Millisecond, 0}, 200, 100, &at)
		if probe < 0 {
			assert.Equal(t, 20*time.Millisecond, c.NoLoadRTT())
			assert.Less(t, limits[99], 10, "without the probe, stuck far below the capacity")
			continue
		}
		assert.Equal(t, 80*time.Millisecond, c.NoLoadRTT())
		late := slices.Clone(limits[50:])
		slices.Sort(late)
		assert.GreaterOrEqual(t, late[len(late)/2], 35, "the median limit is back at the capacity: %v", limits)
	}
}

func TestCapacity_BacksOffOnDrops(t *testing.T) {
	c := adaptive.NewCapacity(adaptive.CapacityConfig{InitialLimit: 40})
	assert.Equal(t, 20, c.Update(adaptive.Sample{Time: t0, InFlight: 40, Count: 5, Drops: 5}), "every call dropped: half")
	assert.Equal(t, 25, c.Update(adaptive.Sample{Time: t0, InFlight: 40, Count: 5, Late: 5, Waited: 1}),
		"late calls only, callers waiting: grow")
	assert.Equal(t, 25, c.Update(adaptive.Sample{Time: t0, InFlight: 40, Count: 5, Late: 5}), "nobody waiting: keep")
	ms := 20 * time.Millisecond
	got := c.Update(adaptive.Sample{Time: t0.Add(time.Second), RTT: ms, MinRTT: ms, InFlight: 20, Count: 5, Drops: 1, Waited: 3,
		Throughput: 20 / ms.Seconds()})
	assert.Equal(t, 22, got, "a fifth dropped: at most 0.9 of the limit")
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
