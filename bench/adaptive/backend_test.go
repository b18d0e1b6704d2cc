package main

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// within is the tolerance on a completion time: the backend completes a
// request up to a microsecond of service early (see complete).
const within = 2 * time.Microsecond

// callsAt starts n calls at once and returns when each completed, from now.
func callsAt(b *backend, n int) []time.Duration {
	start := time.Now()
	out := make([]time.Duration, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := b.call(context.Background()); err == nil {
				out[i] = time.Since(start)
			}
		})
	}
	wg.Wait()
	return out
}

func TestBackend_ServesAtBaseLatencyUpToCapacity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(phase{capacity: 8, base: 50 * time.Millisecond})
		defer b.stop()
		for _, d := range callsAt(b, 8) {
			assert.InDelta(t, 50*time.Millisecond, d, float64(within))
		}
	})
}

func TestBackend_SharesAFallingThroughputPastCapacity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(phase{capacity: 8, base: 50 * time.Millisecond})
		defer b.stop()
		// 16 in flight share 8/(1+thrash*8) requests' worth of service.
		want := time.Duration(float64(50*time.Millisecond) * 16 / (8 / (1 + thrash*8)))
		for _, d := range callsAt(b, 16) {
			assert.InDelta(t, want, d, float64(within))
		}
		assert.Greater(t, want, 100*time.Millisecond, "twice the capacity takes more than twice the base latency")
	})
}

func TestBackend_LatencyFollowsTheRequestsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(phase{capacity: 4, base: 40 * time.Millisecond})
		defer b.stop()
		first := make(chan time.Duration)
		start := time.Now()
		go func() {
			require.NoError(t, b.call(context.Background()))
			first <- time.Since(start)
		}()
		time.Sleep(20 * time.Millisecond) // half of the first request's work done
		others := make(chan []time.Duration)
		go func() { others <- callsAt(b, 4) }()
		// From now 5 share 4/(1+thrash) requests' worth: the first's other
		// half takes longer than 20ms.
		speed := 4 / (1 + thrash) / 5
		assert.InDelta(t, 20*time.Millisecond+time.Duration(float64(20*time.Millisecond)/speed), <-first, float64(within))
		for _, d := range <-others {
			assert.Greater(t, d, 40*time.Millisecond)
		}
	})
}

func TestBackend_ServesARequestWhoseCallerLeftToItsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(phase{capacity: 4, base: 40 * time.Millisecond})
		defer b.stop()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		start := time.Now()
		require.ErrorIs(t, b.call(ctx), context.DeadlineExceeded)
		assert.Equal(t, 10*time.Millisecond, time.Since(start))
		assert.Equal(t, 1, b.inFlight(), "the request is served on after its caller left")
		time.Sleep(30*time.Millisecond - time.Microsecond)
		assert.Equal(t, 1, b.inFlight())
		time.Sleep(2 * time.Microsecond)
		assert.Equal(t, 0, b.inFlight())
	})
}

func TestBackend_PhaseChangeSlowsTheRequestsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(phase{capacity: 2, base: 40 * time.Millisecond})
		defer b.stop()
		done := make(chan []time.Duration)
		go func() { done <- callsAt(b, 2) }()
		time.Sleep(10 * time.Millisecond)
		b.setPhase(phase{capacity: 1, base: 80 * time.Millisecond})
		// 30ms of work left each, at 1/(1+thrash)/2 of full speed.
		want := 10*time.Millisecond + time.Duration(float64(30*time.Millisecond)*2*(1+thrash))
		for _, d := range <-done {
			assert.InDelta(t, want, d, float64(within))
		}
		// A request entering now brings the new base latency.
		assert.InDelta(t, 80*time.Millisecond, callsAt(b, 1)[0], float64(within))
	})
}
