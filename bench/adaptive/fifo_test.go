package main

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fifoCallsAt starts n calls at once on b and returns when each completed,
// from now, in the order they entered.
func fifoCallsAt(b server, n int) []time.Duration {
	start := time.Now()
	out := make([]time.Duration, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := b.call(context.Background()); err == nil {
				out[i] = time.Since(start)
			}
		})
		synctest.Wait() // in order
	}
	wg.Wait()
	return out
}

func TestFIFOBackend_ServesAtBaseLatencyUpToCapacityThenQueues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFIFOBackend(phase{capacity: 4, base: 20 * time.Millisecond})
		defer b.stop()
		got := fifoCallsAt(b, 10)
		want := []time.Duration{20, 20, 20, 20, 40, 40, 40, 40, 60, 60}
		for i := range want {
			assert.Equal(t, want[i]*time.Millisecond, got[i], "request %d", i)
		}
		assert.Zero(t, b.inFlight())
	})
}

func TestFIFOBackend_ServesARequestWhoseCallerLeftToItsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFIFOBackend(phase{capacity: 1, base: 20 * time.Millisecond})
		defer b.stop()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer cancel()
		require.ErrorIs(t, b.call(ctx), context.DeadlineExceeded)
		assert.Equal(t, 1, b.inFlight(), "served on after its caller left")
		start := time.Now()
		require.NoError(t, b.call(context.Background()))
		assert.Equal(t, 35*time.Millisecond, time.Since(start), "behind the one whose caller left")
	})
}

func TestFIFOBackend_PhaseChangeKeepsTheRequestsInASlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFIFOBackend(phase{capacity: 2, base: 20 * time.Millisecond})
		defer b.stop()
		done := make(chan []time.Duration)
		go func() { done <- fifoCallsAt(b, 6) }()
		time.Sleep(10 * time.Millisecond)
		assert.Equal(t, 6, b.inFlight())
		// Four slots at 40ms from now: the two in a slot finish at 20ms, two
		// queued start at once, two more at 20ms.
		b.setPhase(phase{capacity: 4, base: 40 * time.Millisecond})
		got := <-done
		want := []time.Duration{20, 20, 50, 50, 60, 60}
		for i := range want {
			assert.Equal(t, want[i]*time.Millisecond, got[i], "request %d", i)
		}
		// A capacity that fell lets the requests in a slot finish.
		go func() { done <- fifoCallsAt(b, 4) }()
		time.Sleep(10 * time.Millisecond)
		b.setPhase(phase{capacity: 1, base: 10 * time.Millisecond})
		got = <-done
		for i, want := range []time.Duration{40, 40, 40, 40} {
			assert.Equal(t, want*time.Millisecond, got[i], "request %d", i)
		}
	})
}

// fifoModel is the reference for the FIFO backend: a discrete-event
// simulation of slots and a queue that keeps each request's start and end,
// in exact durations, with none of the backend's timers or maps. It returns
// each arrival's completion offset, in the order of the arrivals, and whether
// a phase changed at the instant a request completed: then either may come
// first, and the freed slot may go to the next request at the old phase or
// the new.
func fifoModel(start phase, ops []op) ([]time.Duration, bool) {
	cur := start
	var (
		queue   []int           // arrival indexes waiting, first come first
		serving []time.Duration // completion times of the requests in a slot
		idx     []int           // their arrival indexes
		done    []time.Duration // by arrival; -1 until it completes
		now     time.Duration
		tie     bool
	)
	fill := func() {
		for len(serving) < cur.capacity && len(queue) > 0 {
			serving, idx = append(serving, now+cur.base), append(idx, queue[0])
			queue = queue[1:]
		}
	}
	// advance completes the requests due by t, each freeing its slot for the
	// queue at its own completion time.
	advance := func(t time.Duration) {
		for len(serving) > 0 {
			k := 0
			for i := range serving {
				if serving[i] < serving[k] {
					k = i
				}
			}
			if serving[k] > t {
				break
			}
			now = serving[k]
			done[idx[k]] = now
			serving, idx = slices.Delete(serving, k, k+1), slices.Delete(idx, k, k+1)
			fill()
		}
		now = t
	}
	for _, o := range ops {
		advance(o.at)
		if o.change {
			tie = tie || slices.Contains(done, o.at)
			cur = o.to
		} else {
			queue = append(queue, len(done))
			done = append(done, -1)
		}
		fill()
	}
	advance(math.MaxInt64)
	return done, tie
}

// runFIFOOps replays ops on a FIFO backend in a synctest bubble and returns
// each arrival's completion offset.
func runFIFOOps(t *testing.T, start phase, ops []op) []time.Duration {
	n := 0
	for _, o := range ops {
		if !o.change {
			n++
		}
	}
	out := make([]time.Duration, n) // each element written by its request's goroutine only
	synctest.Test(t, func(t *testing.T) {
		b := newFIFOBackend(start)
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

// FuzzFIFOBackendModel holds the FIFO backend's completion times to the
// reference simulation's, for any sequence of arrivals and phase changes.
func FuzzFIFOBackendModel(f *testing.F) {
	f.Add([]byte{0, 1, 0, 1, 0, 1, 0, 1, 10, 1, 0, 4, 30, 1})
	f.Add([]byte{0, 1, 5, 1, 5, 1, 5, 1, 5, 1, 5, 1, 5, 1, 5, 8, 5, 1, 50, 12, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		start := phase{capacity: 2, base: 10 * time.Millisecond}
		ops := opsFrom(data)
		want, tie := fifoModel(start, ops)
		if tie {
			t.Skip("a phase change at the instant a request completes: either may come first")
		}
		got := runFIFOOps(t, start, ops)
		require.Len(t, got, len(want))
		for i := range want {
			assert.Equal(t, want[i], got[i], "request %d: times are exact in a bubble", i)
		}
	})
}
