package adaptive

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCapacity_EachWindowPutsTheRuleInThePhaseItShows drives one window into
// a Capacity in a given phase and checks the phase the window leaves it in:
// the transitions of phaseOf, and those into and out of probing.
func TestCapacity_EachWindowPutsTheRuleInThePhaseItShows(t *testing.T) {
	const base = 20 * time.Millisecond
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// win is a window of 20 units in flight, its fastest call and its
	// typical round trip given as multiples of the no-load one.
	win := func(fast, typical float64, waited int) Sample {
		rtt := time.Duration(typical * float64(base))
		return Sample{Time: at.Add(time.Second), RTT: rtt, MinRTT: time.Duration(fast * float64(base)), InFlight: 20,
			Load: 20, Count: 10, Waited: waited, Throughput: 20 / rtt.Seconds()}
	}
	for _, tc := range []struct {
		name     string
		from     phase
		s        Sample
		want     phase
		wantMove string // "up", "down" or "" for the limit of 20
	}{
		{"starting, no queue, callers wait: grows by them", starting, win(1, 1, 10), starting, "up"},
		{"starting, no queue, nobody waits: comes down to the load's need", starting, win(1, 1, 0), starting, ""},
		{"starting, a queue: near capacity, starting is over", starting, win(1.1, 1.1, 10), nearCapacity, "down"},
		{"starting, a queue past Headroom: overloaded", starting, win(1.5, 1.5, 10), overloaded, "down"},
		{"room, no queue, callers wait: room", room, win(1, 1, 10), room, "up"},
		{"room, no queue, nobody waits: idle", room, win(1, 1, 0), idle, ""},
		{"idle, no queue, callers wait: room", idle, win(1, 1, 10), room, "up"},
		{"near, the fastest queued a little: near", nearCapacity, win(1.1, 1.1, 10), nearCapacity, "down"},
		{"room, the fastest did not queue but most did (FIFO): near, not room", room, win(1, 1.2, 10), nearCapacity, "down"},
		{"room, the fastest queued past Headroom: overloaded", room, win(1.3, 1.3, 10), overloaded, "down"},
		{"overloaded, no queue, callers wait: room", overloaded, win(1, 1, 10), room, "up"},
		{"overloaded, a queue: near", overloaded, win(1.1, 1.1, 10), nearCapacity, "down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCapacity(CapacityConfig{})
			c.noLoad, c.phase, c.streak, c.clean = base, tc.from, 1, at
			got := c.Update(tc.s)
			assert.Equal(t, tc.want, c.phase)
			switch tc.wantMove {
			case "up":
				assert.Greater(t, got, 20)
			case "down":
				assert.Less(t, got, 20)
			default:
				assert.Equal(t, 20, got)
			}
		})
	}

	t.Run("probing: due after ProbeInterval without a window near the no-load round trip, ended by the first window granted under it", func(t *testing.T) {
		c := NewCapacity(CapacityConfig{ProbeInterval: time.Second})
		c.noLoad, c.phase, c.streak, c.clean, c.est = base, nearCapacity, 1, at, 16
		s := win(1.2, 1.2, 10)
		s.Time = at.Add(time.Second)
		require.Equal(t, 8, c.Update(s), "half the estimate")
		require.Equal(t, probing, c.phase)
		s.Time = s.Time.Add(time.Millisecond) // granted before the probe: ignored
		require.Equal(t, 8, c.Update(s))
		require.Equal(t, probing, c.phase)
		s = win(1, 1, 10)
		s.Time, s.Load, s.InFlight = at.Add(2*time.Second), 8, 8
		assert.Equal(t, 20, c.Update(s), "back")
		assert.Equal(t, nearCapacity, c.phase)
		assert.Equal(t, base, c.noLoad)
	})

	t.Run("probing: a reading under the probe clearly slower than the no-load round trip is the no-load round trip now", func(t *testing.T) {
		c := NewCapacity(CapacityConfig{ProbeInterval: time.Second})
		c.noLoad, c.phase, c.streak, c.clean, c.est, c.calm = base, nearCapacity, 1, at, 16, 30
		s := win(2, 2, 10) // the backend got twice as slow
		s.Time = at.Add(time.Second)
		require.Equal(t, 8, c.Update(s))
		require.Equal(t, probing, c.phase)
		s = win(2, 2, 10)
		s.Time, s.Load, s.InFlight = at.Add(2*time.Second), 8, 8
		assert.Equal(t, 30, c.Update(s), "back to where it was before the cuts")
		assert.Equal(t, 2*base, c.noLoad)
	})
}

func TestPhase_String(t *testing.T) {
	for p, want := range map[phase]string{starting: "starting", overloaded: "overloaded", nearCapacity: "near capacity",
		room: "room", idle: "idle", probing: "probing", 9: "phase(9)"} {
		assert.Equal(t, want, p.String())
	}
}
