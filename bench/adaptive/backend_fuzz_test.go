package main

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An op of the backend's model-based tests: a request arriving at offset at
// (bringing the work of the phase then), or, if change, the phase changing to
// to at that offset.
type op struct {
	at     time.Duration
	change bool
	to     phase
}

// modelCompletions is the reference the backend is held to: a plain
// discrete-event simulation of processor sharing that keeps each request's
// remaining work and steps from event to event (an arrival, a phase change, a
// completion), with none of the backend's virtual clock or heap. It returns
// each arrival's completion offset, in the order of the arrivals.
func modelCompletions(start phase, ops []op) []time.Duration {
	type req struct {
		idx  int
		left float64 // seconds of service
	}
	var (
		cur     = start
		now     float64
		running []req
		done    []float64
		arrived int
	)
	speed := func(n int) float64 {
		if n <= cur.capacity {
			return 1
		}
		c := float64(cur.capacity)
		return c / (1 + thrash*(float64(n)-c)) / float64(n)
	}
	// advance serves everything running until t, completing requests on the
	// way.
	advance := func(t float64) {
		for len(running) > 0 {
			sp := speed(len(running))
			first := math.Inf(1)
			for _, r := range running {
				first = math.Min(first, r.left)
			}
			end := now + first/sp
			if end > t {
				break
			}
			kept := running[:0]
			for _, r := range running {
				r.left -= first
				if r.left <= 1e-6 { // the backend's rule: due with under a microsecond of service left
					done[r.idx] = end
				} else {
					kept = append(kept, r)
				}
			}
			running, now = kept, end
		}
		sp := speed(len(running))
		for i := range running {
			running[i].left -= (t - now) * sp
		}
		now = t
	}
	for _, o := range ops {
		advance(o.at.Seconds())
		if o.change {
			cur = o.to
			continue
		}
		running = append(running, req{idx: arrived, left: cur.base.Seconds()})
		done = append(done, math.NaN())
		arrived++
	}
	advance(math.Inf(1))
	out := make([]time.Duration, len(done))
	for i, d := range done {
		out[i] = time.Duration(d * float64(time.Second))
	}
	return out
}

// runOps replays ops on a backend in a synctest bubble and returns each
// arrival's completion offset.
func runOps(t *testing.T, start phase, ops []op) []time.Duration {
	n := 0
	for _, o := range ops {
		if !o.change {
			n++
		}
	}
	out := make([]time.Duration, n) // each element written by its request's goroutine only
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(start)
		defer b.stop()
		begin := time.Now()
		var wg sync.WaitGroup
		i := 0
		for _, o := range ops {
			time.Sleep(time.Until(begin.Add(o.at)))
			if o.change {
				b.setPhase(o.to)
				continue
			}
			at := &out[i]
			i++
			wg.Go(func() {
				require.NoError(t, b.call(context.Background()))
				*at = time.Since(begin)
			})
			synctest.Wait() // the request is in before the next op at the same instant
		}
		wg.Wait()
		assert.Zero(t, b.inFlight())
	})
	return out
}

// opsFrom decodes a fuzz input: each byte pair is a gap of 0–25.5ms before the
// next op and, in its low bits, a request or a change to one of four phases.
func opsFrom(data []byte) []op {
	kinds := []phase{{capacity: 1, base: 10 * time.Millisecond}, {capacity: 3, base: 20 * time.Millisecond},
		{capacity: 6, base: 5 * time.Millisecond}, {capacity: 2, base: 40 * time.Millisecond}}
	var ops []op
	var at time.Duration
	for i := 0; i+1 < len(data) && len(ops) < 200; i += 2 {
		at += time.Duration(data[i]) * 100 * time.Microsecond
		if k := data[i+1]; k%4 == 0 {
			ops = append(ops, op{at: at, change: true, to: kinds[int(k/4)%len(kinds)]})
		} else {
			ops = append(ops, op{at: at})
		}
	}
	return ops
}

// FuzzBackendModel holds the backend's completion times to the reference
// simulation's, for any sequence of arrivals and phase changes.
func FuzzBackendModel(f *testing.F) {
	f.Add([]byte{0, 1, 0, 1, 0, 1, 0, 1, 10, 1, 0, 4, 30, 1})
	f.Add([]byte{0, 1, 5, 1, 5, 1, 5, 1, 5, 1, 5, 1, 5, 1, 5, 8, 5, 1, 50, 12, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		start := phase{capacity: 2, base: 10 * time.Millisecond}
		ops := opsFrom(data)
		want := modelCompletions(start, ops)
		got := runOps(t, start, ops)
		require.Len(t, got, len(want))
		for i := range want {
			// The model completes requests by the backend's rule (under a
			// microsecond of service left); the backend also rounds its timer
			// to the nanosecond.
			assert.InDelta(t, want[i], got[i], float64(20*time.Microsecond), "request %d", i)
		}
	})
}

// TestBackend_StressKeepsItsInvariants sends thousands of requests at random
// times, many of whose callers leave early, across random phase changes:
// every call returns, none completes sooner than its base latency, and the
// backend ends empty.
func TestBackend_StressKeepsItsInvariants(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 4))
		b := newBackend(phase{capacity: 8, base: 20 * time.Millisecond})
		defer b.stop()
		var wg sync.WaitGroup
		for i := range 3000 {
			time.Sleep(time.Duration(r.IntN(1000)) * time.Microsecond)
			if i%200 == 0 {
				b.setPhase(phase{capacity: 1 + r.IntN(16), base: time.Duration(5+r.IntN(50)) * time.Millisecond})
			}
			leave := time.Duration(r.IntN(200)) * time.Millisecond
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), leave)
				defer cancel()
				start := time.Now()
				if err := b.call(ctx); err == nil {
					assert.GreaterOrEqual(t, time.Since(start), 5*time.Millisecond-time.Microsecond)
				} else {
					assert.ErrorIs(t, err, context.DeadlineExceeded)
				}
			})
		}
		wg.Wait()
		for b.inFlight() > 0 {
			time.Sleep(time.Millisecond)
		}
		assert.Zero(t, b.inFlight())
	})
}
