package adaptive_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore/adaptive"
)

// A model is a synthetic backend for Capacity: what a window of calls with
// inFlight units in flight measures.
type model interface {
	// times returns the round trip of the window's fastest call and its
	// typical round trip (weighted by load, averaged harmonically).
	times(inFlight int) (fast, typical time.Duration)
}

// thrashing is processor sharing with a capacity: up to capacity units are
// served at base latency; past it, the round trip grows with the units in
// flight and, by thrash per unit of excess, beyond them, so that throughput
// falls when it is pushed past its capacity. Every call of a window takes as
// long.
type thrashing struct {
	capacity int
	base     time.Duration
	thrash   float64 // extra cost per unit in flight past capacity, as a fraction of capacity
}

func (b thrashing) times(inFlight int) (time.Duration, time.Duration) {
	if inFlight <= b.capacity {
		return b.base, b.base
	}
	over := float64(inFlight) / float64(b.capacity)
	rtt := time.Duration(float64(b.base) * over * (1 + b.thrash*(over-1)))
	return rtt, rtt
}

// slots is a FIFO backend: capacity slots serving one unit each at base
// latency, behind a FIFO queue. Its throughput stays at capacity/base past
// the capacity, and the round trip grows with the queue. A window's load
// moves by a unit or so around its mean: its fastest call ran at one unit
// less than the rest, so just past the capacity it found a free slot while
// the others queued.
type slots struct {
	capacity int
	base     time.Duration
}

func (b slots) times(inFlight int) (time.Duration, time.Duration) {
	at := func(n int) time.Duration { return max(b.base, b.base*time.Duration(n)/time.Duration(b.capacity)) }
	return at(inFlight - 1), at(inFlight)
}

// feed drives alg with n windows of callers that want demand units in flight:
// each window runs under the limit the previous window left (the calls of a
// window were granted before it closed), records the units in flight, the
// round trips, the throughput by Little's law and whether callers waited, and
// lasts twice its typical round trip; the limits after each window are
// returned.
func feed(alg adaptive.Algorithm, b model, demand, n int, at *time.Time) []int {
	limits := make([]int, n)
	for i := range n {
		in := min(alg.Limit(), demand)
		fast, typical := b.times(in)
		s := adaptive.Sample{Time: *at, RTT: typical, MinRTT: fast, InFlight: in, Load: float64(in), Count: 10,
			Throughput: float64(in) / typical.Seconds()}
		if demand > alg.Limit() {
			s.Waited = demand - alg.Limit()
		}
		*at = at.Add(2 * typical)
		limits[i] = alg.Update(s)
	}
	return limits
}

// median returns the median of l.
func median(l []int) int {
	l = slices.Clone(l)
	slices.Sort(l)
	return l[len(l)/2]
}

// window is a window of calls at load units in flight, each of round trip
// rtt, closed at t0+at, with waited callers.
func window(at time.Duration, load int, rtt time.Duration, waited int) adaptive.Sample {
	return adaptive.Sample{Time: t0.Add(at), RTT: rtt, MinRTT: rtt, InFlight: load, Load: float64(load), Count: 10,
		Waited: waited, Throughput: float64(load) / rtt.Seconds()}
}

const ms20 = 20 * time.Millisecond

// Starting: until a window first finds the backend queueing, the limit grows
// by the callers that waited, up to doubling per window: nothing is known of
// the capacity, and it starts as fast as the load asks.
func TestCapacity_StartingGrowsByTheCallersThatWaitedUntilTheBackendFirstQueues(t *testing.T) {
	at := t0
	c := adaptive.NewCapacity(adaptive.CapacityConfig{InitialLimit: 4, ProbeInterval: -1})
	limits := feed(c, thrashing{40, ms20, 0.5}, 200, 6, &at)
	assert.Equal(t, []int{8, 16, 32, 64, 64, 48}, limits, "doubling up to the first queue, then down to the capacity")
}

// Overloaded: a thrashing backend past its capacity serves less than its
// capacity, so the first cut lands below it; the cuts go by a quarter at most
// in the first window of the streak, then by half, and the limit then grows
// back to the capacity.
func TestCapacity_OverloadedCutsByAQuarterThenByHalfAndLandsOnTheCapacity(t *testing.T) {
	at := t0
	c := adaptive.NewCapacity(adaptive.CapacityConfig{ProbeInterval: -1})
	feed(c, thrashing{40, ms20, 0.5}, 200, 100, &at)
	within(t, feed(c, thrashing{40, ms20, 0.5}, 200, 50, &at), 40, 50)
	after := feed(c, thrashing{10, ms20, 0.5}, 200, 200, &at)
	assert.Equal(t, []int{31, 15, 8}, after[:3], "by a quarter, then by half")
	within(t, after[7:], 8, 13)
	assert.Equal(t, 10, c.Estimate())
}

// Overloaded, with the limit far above what is in flight (a limit that
// started high, under a load that has not reached it): the cut is from what
// is in flight, since the limit bounds nothing.
func TestCapacity_OverloadedCutsFromWhatIsInFlightWhenTheLimitIsFarAbove(t *testing.T) {
	c := adaptive.NewCapacity(adaptive.CapacityConfig{InitialLimit: 200, ProbeInterval: -1})
	s := window(time.Second, 140, ms20, 0)
	s.InFlight = 150
	require.Equal(t, 200, c.Update(s), "no queue, nobody waits, 150 in flight: the limit stays")
	// The load fell to 48 in flight and the capacity to 32: behind a FIFO
	// backend every call queued half a round trip (past Headroom).
	got := c.Update(window(2*time.Second, 48, 30*time.Millisecond, 0))
	assert.Equal(t, 36, got, "a quarter off the 48 in flight, not off the limit of 200")
}

// Near capacity: calls queued, less than overloaded: the limit goes half the
// way to the estimate times the margin left by the queue.
func TestCapacity_NearCapacityGoesHalfTheWayToTheTarget(t *testing.T) {
	c := adaptive.NewCapacity(adaptive.CapacityConfig{ProbeInterval: -1})
	require.Equal(t, 20, c.Update(window(time.Second, 20, ms20, 0)))
	// Round trips 10% above the no-load one at 20 in flight: the estimate is
	// 20/1.1 = 18.2, the margin 1+0.125x(1-0.1/0.25) = 1.075, the target 19.5;
	// half the way from 20 is 19.8.
	got := c.Update(window(2*time.Second, 20, 22*time.Millisecond, 5))
	assert.Equal(t, 19, got)
	assert.Equal(t, 18, c.Estimate())
}

// Near capacity, not room: behind a FIFO backend just past its capacity, the
// fastest call found a free slot but most calls queued. However many callers
// wait, the limit does not grow: it would only lengthen the queue.
func TestCapacity_AFIFOBackendJustPastItsCapacityIsNearCapacityNotRoom(t *testing.T) {
	c := adaptive.NewCapacity(adaptive.CapacityConfig{InitialLimit: 9, ProbeInterval: -1})
	require.Equal(t, 9, c.Update(window(time.Second, 8, ms20, 0)))
	for i := range 20 {
		s := window(time.Duration(2+i)*time.Second, 9, 0, 100)
		s.MinRTT, s.RTT = ms20, ms20*9/8 // one queued behind the 8 slots
		s.Throughput = 9 / s.RTT.Seconds()
		require.LessOrEqual(t, c.Update(s), 9, "window %d", i)
	}
	assert.Equal(t, 8, c.Estimate())
}

// Room: the limit grows from what was in flight by a quarter of Headroom, half
// of it, all of it, then by twice Headroom in each next window in a row that
// finds room (by the callers that waited, if fewer): the capacity rose far
// above it.
func TestCapacity_RoomGrowsByAQuarterHalfAllOfHeadroomThenTwiceHeadroom(t *testing.T) {
	c := adaptive.NewCapacity(adaptive.CapacityConfig{InitialLimit: 10, ProbeInterval: -1})
	// A window at the no-load round trip, then one past the capacity (the
	// limit stays: it is near the estimate): starting is over.
	c.Update(window(0, 10, ms20, 0))
	require.Equal(t, 10, c.Update(window(time.Second/2, 10, ms20*107/100, 1)))
	var limits []int
	for i := range 6 {
		limits = append(limits, c.Update(window(time.Duration(1+i)*time.Second, c.Limit(), ms20, 5*(i+1))))
	}
	// From what was in flight, the limit of the window before, and by
	// Headroom/4 at most past the limit twice, then twice as much each time:
	// 10.6; 11.3 (10 x1.125, but 10.6 x1.0625); 12.7 (11 x1.25, but 11.3
	// x1.125); 15.9 (12 x1.5, but 12.7 x1.25); 22.5 (15 x1.5); 33 (22 x1.5).
	assert.Equal(t, []int{10, 11, 12, 15, 22, 33}, limits, "by a quarter of Headroom, half, all of it, then twice Headroom")
	limits = limits[:0]
	for i := range 2 { // few callers wait: by them, Headroom at least
		limits = append(limits, c.Update(window(time.Duration(7+i)*time.Second, c.Limit(), ms20, 15-10*i)))
	}
	assert.Equal(t, []int{48, 60}, limits, "33 x(1+15/33.75); 48 x1.25")
}

// Room: growth is from what was in flight, which the window found room at, not
// from a limit the load did not fill; and the limit moves by a quarter of
// Headroom at most past itself twice, then twice as much for each growth in a
// row, however quick the steps from the load have become.
func TestCapacity_RoomGrowsFromWhatWasInFlightAndMovesGentlyAtFirst(t *testing.T) {
	c := adaptive.NewCapacity(adaptive.CapacityConfig{ProbeInterval: -1})
	require.Equal(t, 20, c.Update(window(0, 20, ms20, 0)))
	require.Equal(t, 20, c.Update(window(time.Second/2, 20, ms20*107/100, 1)), "a queue: near capacity, starting is over")
	limits := []int{
		c.Update(window(1*time.Second, 16, ms20, 5)), // 16 x1.0625
		c.Update(window(2*time.Second, 16, ms20, 5)), // 16 x1.125
		c.Update(window(3*time.Second, 16, ms20, 5)), // 16 x1.25
		c.Update(window(4*time.Second, 20, ms20, 5)), // 20 x1.25, but 20.2 x1.0625 at most
		c.Update(window(5*time.Second, 21, ms20, 5)), // 21 x1.25, but 21.4 x1.0625 at most
		c.Update(window(6*time.Second, 22, ms20, 5)), // 22 x1.25, but 22.8 x1.125 at most
	}
	assert.Equal(t, []int{20, 20, 20, 21, 22, 25}, limits)
}

// Idle: while nobody waits the load bounds what is in flight: the limit
// comes down to 1+2 Headroom times it, and follows the load up to the
// capacity once the load needs more.
func TestCapacity_IdleComesDownToWhatTheLoadNeedsAndNeverGrows(t *testing.T) {
	at := t0
	c := adaptive.NewCapacity(adaptive.CapacityConfig{InitialLimit: 100, ProbeInterval: -1})
	limits := feed(c, thrashing{40, ms20, 0.5}, 20, 1000, &at)
	within(t, limits[5:], 20, 60)
	assert.LessOrEqual(t, limits[999], 30, "1+2 Headroom times the load")
	assert.Equal(t, 20, c.Estimate(), "bounded by the load: 20 in flight, not the capacity of 40")
	within(t, feed(c, thrashing{40, ms20, 0.5}, 200, 100, &at)[10:], 40, 50)
}

// Probing: after ProbeInterval without a window near the no-load round trip,
// the limit goes to half the estimate, below the capacity wherever the limit
// sat (here 1.5x a FIFO backend's capacity of 8), until a window granted
// there measures the no-load round trip; then it goes back.
func TestCapacity_ProbingRunsAtHalfTheEstimateBelowTheCapacityAndGoesBack(t *testing.T) {
	c := adaptive.NewCapacity(adaptive.CapacityConfig{InitialLimit: 12, ProbeInterval: time.Second})
	require.Equal(t, 12, c.Update(window(0, 8, ms20, 0)), "8 in flight at 20ms, nobody waits: idle at 12")
	require.Equal(t, 8, c.Estimate())
	// A second later, 12 in flight behind 8 slots: every call queued. The
	// probe is due.
	s := window(time.Second, 12, 0, 50)
	s.MinRTT, s.RTT = 27*time.Millisecond, 30*time.Millisecond
	s.Throughput = 12 / s.RTT.Seconds()
	assert.Equal(t, 4, c.Update(s), "half the estimate of 8")
	// Calls granted before the probe tell nothing; the first window granted
	// under it measures.
	assert.Equal(t, 4, c.Update(window(time.Second+10*time.Millisecond, 12, 30*time.Millisecond, 50)))
	assert.Equal(t, 12, c.Update(window(time.Second+100*time.Millisecond, 4, ms20, 50)), "back")
	assert.Equal(t, ms20, c.NoLoadRTT(), "the backend did not get slower")
}

// Probing follows a backend that got slower for good: the window granted
// under the probe is clearly slower than the no-load round trip known, so it
// is the no-load round trip now, and the limit goes back to where it was
// before the cuts the slower round trips caused.
func TestCapacity_ProbingFollowsABackendThatGotSlowerForGood(t *testing.T) {
	for _, probe := range []time.Duration{-1, 0} {
		at := t0
		c := adaptive.NewCapacity(adaptive.CapacityConfig{ProbeInterval: probe})
		feed(c, thrashing{40, ms20, 0}, 200, 50, &at)
		feed(c, thrashing{1, 80 * time.Millisecond, 0}, 200, 50, &at) // the limit falls to 1
		limits := feed(c, thrashing{40, 80 * time.Millisecond, 0}, 200, 100, &at)
		if probe < 0 {
			assert.Equal(t, ms20, c.NoLoadRTT())
			assert.Less(t, limits[99], 10, "without the probe, stuck far below the capacity")
			continue
		}
		assert.Equal(t, 80*time.Millisecond, c.NoLoadRTT())
		assert.GreaterOrEqual(t, median(limits[50:]), 35, "the median limit is back at the capacity: %v", limits)
	}
}

// Probing is not fooled by a queue: behind a FIFO backend held at its
// capacity for a long time, the no-load round trip stays where it is, and so
// does the limit; and the probe runs only when no window found the round trip
// near its no-load value for ProbeInterval, which a limit at the capacity
// does not cause.
func TestCapacity_ProbingKeepsTheNoLoadRoundTripOfABackendAtItsCapacity(t *testing.T) {
	at := t0
	c := adaptive.NewCapacity(adaptive.CapacityConfig{InitialLimit: 4})
	limits := feed(c, slots{8, ms20}, 100, 5000, &at)
	assert.Equal(t, ms20, c.NoLoadRTT())
	within(t, limits[50:], 6, 10)
	assert.LessOrEqual(t, median(limits[50:]), 9)
}

// Under sustained overload of a thrashing backend the limit settles at the
// capacity, where the round trip stays near its no-load value: the no-load
// round trip does not drift up, as a baseline that forgets its minimum over
// time does, and the probe, which runs only when the round trip stayed off
// that value, does not take the limit away from the capacity.
func TestCapacity_KeepsItsNoLoadRoundTripUnderSustainedOverload(t *testing.T) {
	at := t0
	c := adaptive.NewCapacity(adaptive.CapacityConfig{})
	within(t, feed(c, thrashing{40, ms20, 0.5}, 1000, 5000, &at)[20:], 38, 50)
	assert.Equal(t, ms20, c.NoLoadRTT())
}

// A long drop behind a FIFO backend: the capacity falls from 32 to 8 and stays
// there while callers always wait (a long queue in front of the limit). The
// limit is within a quarter of the capacity within a second and stays there,
// its median within 1.125x, with or without windows of calls all granted too
// late (long wait budgets).
func TestCapacity_StaysOnAFIFOBackendsCapacityThroughALongDrop(t *testing.T) {
	for _, lateEvery := range []int{0, 3} {
		at := t0
		c := adaptive.NewCapacity(adaptive.CapacityConfig{})
		feed(c, slots{32, ms20}, 12, 250, &at)
		drop := at
		var limits []int
		for at.Sub(drop) < 10*time.Second {
			if lateEvery > 0 && len(limits)%lateEvery == 0 {
				// Every call of the window was granted with too little of its
				// deadline left: no round trip.
				limits = append(limits, c.Update(adaptive.Sample{Time: at, InFlight: c.Limit(), Count: 10, Late: 10, Waited: 200}))
				at = at.Add(10 * time.Millisecond)
				continue
			}
			limits = append(limits, feed(c, slots{8, ms20}, 200, 1, &at)[0])
			if at.Sub(drop) < time.Second {
				continue
			}
			require.GreaterOrEqual(t, limits[len(limits)-1], 6, "late every %d: %v", lateEvery, limits)
			require.LessOrEqual(t, limits[len(limits)-1], 10, "late every %d: %v", lateEvery, limits)
		}
		assert.LessOrEqual(t, median(limits[len(limits)/10:]), 9, "late every %d: %v", lateEvery, limits)
	}
}

// Start and recovery: from an initial limit far under the capacity or far
// above it, and after the capacity returned, the limit is within a quarter of
// the capacity within a second of load past the capacity, and stays there.
func TestCapacity_WithinAQuarterOfTheCapacityWithinASecondOfAStartOrARise(t *testing.T) {
	for _, b := range []model{slots{32, ms20}, thrashing{32, ms20, 0.5}} {
		for _, initial := range []int{1, 16, 200} {
			at := t0
			c := adaptive.NewCapacity(adaptive.CapacityConfig{InitialLimit: initial})
			// The load ramps up: the first window's calls were granted as it
			// came, at half of it.
			feed(c, b, 20, 1, &at)
			inBand(t, c, b, 40, &at, 24, 40, "%T from %d", b, initial)
		}
		at := t0
		c := adaptive.NewCapacity(adaptive.CapacityConfig{InitialLimit: 4})
		feed(c, b, 40, 250, &at)
		feed(c, slots{8, ms20}, 40, 250, &at)
		inBand(t, c, b, 40, &at, 24, 40, "%T after the capacity returned from 8", b)
	}
}

// inBand feeds c 10 seconds of windows from b at demand units, and requires
// the limit to be within [lo, hi] from a second on.
func inBand(t *testing.T, c *adaptive.Capacity, b model, demand int, at *time.Time, lo, hi int, msg string, args ...any) {
	t.Helper()
	start := *at
	var limits []int
	for at.Sub(start) < 10*time.Second {
		limits = append(limits, feed(c, b, demand, 1, at)[0])
		if at.Sub(start) >= time.Second {
			l := limits[len(limits)-1]
			require.True(t, l >= lo && l <= hi, "%s: limit %d at %v: %v", fmt.Sprintf(msg, args...), l, at.Sub(start), limits)
		}
	}
}

func TestCapacity_DoublingTheBaseLatencyCutsTheLimitByAQuarterAtMost(t *testing.T) {
	at := t0
	c := adaptive.NewCapacity(adaptive.CapacityConfig{ProbeInterval: -1})
	before := feed(c, thrashing{40, ms20, 0.5}, 200, 100, &at)
	after := feed(c, thrashing{40, 40 * time.Millisecond, 0.5}, 200, 200, &at)
	within(t, after[10:], before[99]*3/4, before[99]*5/4)
	assert.Equal(t, 40*time.Millisecond, c.NoLoadRTT())
}

// A window granted as the load fell has its fastest call at the lowest load:
// the next, lighter window that is as fast as that call is no sign of a
// slower backend, and the no-load round trip stays.
func TestCapacity_TakesAWindowGrantedAsTheLoadFellAtItsMeanRoundTrip(t *testing.T) {
	c := adaptive.NewCapacity(adaptive.CapacityConfig{InitialLimit: 40, ProbeInterval: -1})
	ms := func(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
	win := func(i int, load float64, inFlight int, rtt, minRTT time.Duration) adaptive.Sample {
		return adaptive.Sample{Time: t0.Add(time.Duration(i) * time.Second), RTT: rtt, MinRTT: minRTT, InFlight: inFlight,
			Load: load, Count: 10, Waited: 5, Throughput: load / rtt.Seconds()}
	}
	c.Update(win(1, 40, 40, ms(50), ms(50)))
	c.Update(win(2, 21.4, 27, ms(85), ms(67)))
	c.Update(win(3, 13, 13, ms(67), ms(67)))
	assert.Equal(t, ms(50), c.NoLoadRTT())
	// A backend that got slower: the heavier window's calls all took as long.
	c.Update(win(4, 21, 21, ms(100), ms(100)))
	c.Update(win(5, 13, 13, ms(100), ms(100)))
	assert.Equal(t, ms(100), c.NoLoadRTT())
}

func TestCapacity_LatencyCeilingBringsTheLimitDownWhateverTheBaseline(t *testing.T) {
	at := t0
	c := adaptive.NewCapacity(adaptive.CapacityConfig{MaxLatency: 30 * time.Millisecond, ProbeInterval: -1})
	// Past the capacity the round trip grows: the ceiling caps the limit at
	// 1.5x the capacity, where it reaches 30ms; the capacity rule is lower.
	within(t, feed(c, thrashing{40, ms20, 0}, 200, 100, &at)[10:], 40, 50)
	// The backend got slower for good, past the ceiling: the limit falls to
	// its minimum though the no-load round trip follows the backend.
	limits := feed(c, thrashing{40, 60 * time.Millisecond, 0}, 200, 100, &at)
	assert.Equal(t, 1, limits[99])
	without := adaptive.NewCapacity(adaptive.CapacityConfig{ProbeInterval: -1})
	at = t0
	feed(without, thrashing{40, ms20, 0}, 200, 100, &at)
	assert.Greater(t, feed(without, thrashing{40, 60 * time.Millisecond, 0}, 200, 100, &at)[99], 30, "without a ceiling the limit stays")
}

// Whatever the phase, dropped calls take the limit down by at least half
// their share; a window of late calls only grows it a little while callers
// wait (the queue is too long for the limit to learn anything else), and
// leaves it while nobody waits.
func TestCapacity_BacksOffOnDropsAndGrowsALittleOnLateCallsOnly(t *testing.T) {
	c := adaptive.NewCapacity(adaptive.CapacityConfig{InitialLimit: 40})
	assert.Equal(t, 20, c.Update(adaptive.Sample{Time: t0, InFlight: 40, Count: 5, Drops: 5}), "every call dropped: half")
	assert.Equal(t, 21, c.Update(adaptive.Sample{Time: t0, InFlight: 40, Count: 5, Late: 5, Waited: 1}),
		"late calls only, callers waiting: a sixteenth more")
	assert.Equal(t, 21, c.Update(adaptive.Sample{Time: t0, InFlight: 40, Count: 5, Late: 5}), "nobody waiting: keep")
	got := c.Update(adaptive.Sample{Time: t0.Add(time.Second), RTT: ms20, MinRTT: ms20, InFlight: 20, Count: 5, Drops: 1, Waited: 3,
		Throughput: 20 / ms20.Seconds()})
	assert.Equal(t, 19, got, "a fifth dropped: at most 0.9 of the limit of 21.25")
}

func TestCapacity_IsDeterministicAndBounded(t *testing.T) {
	mk := func() adaptive.Algorithm {
		return adaptive.NewCapacity(adaptive.CapacityConfig{InitialLimit: 5, MinLimit: 3, MaxLimit: 30})
	}
	for _, b := range []model{thrashing{12, 5 * time.Millisecond, 1}, slots{12, 5 * time.Millisecond}} {
		at, at2 := t0, t0
		a := feed(mk(), b, 100, 300, &at)
		require.Equal(t, a, feed(mk(), b, 100, 300, &at2))
		within(t, a, 3, 30)
	}
	at := t0
	within(t, feed(mk(), thrashing{100, 5 * time.Millisecond, 1}, 100, 300, &at)[20:], 30, 30)
	within(t, feed(mk(), thrashing{1, 5 * time.Millisecond, 1}, 100, 300, &at), 3, 30)
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

// A reading is a round trip of windows: behind 32 slots that free together,
// windows of ten calls that all found a slot alternate with windows of ten
// that all queued, together as slow as the queue of the units in flight past
// 32. Taken one at a time, the lucky ones would read as room and grow the
// limit past the capacity; taken a round trip at a time, they read as the
// queue they are part of.
func TestCapacity_ReadsARoundTripOfWindowsAtATime(t *testing.T) {
	c := adaptive.NewCapacity(adaptive.CapacityConfig{InitialLimit: 36, ProbeInterval: -1})
	require.Equal(t, 36, c.Update(window(0, 30, ms20, 0)), "no queue, nobody waits")
	require.Equal(t, 36, c.Update(window(time.Second/2, 36, ms20*107/100, 50)), "a queue: near capacity, starting is over")
	at := time.Second/2 + 2*time.Millisecond
	for i := range 400 {
		in := c.Limit()
		s := window(at, in, ms20, 50)
		if r := max(1, float64(in)/32); i%2 == 1 {
			// Together with the lucky window, a typical round trip of r.
			s = window(at, in, time.Duration(float64(ms20)*r/(2-r)), 50)
			s.MinRTT = min(s.RTT, ms20*11/10)
		}
		require.LessOrEqual(t, c.Update(s), 36, "window %d", i)
		at += 2 * time.Millisecond
	}
	assert.LessOrEqual(t, c.Limit(), 35, "near capacity, down toward the estimate")
}
