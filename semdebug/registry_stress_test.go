package semdebug

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRegistry_StressKeepsItsInvariants registers, unregisters, drops and records
// semaphores that are in use, with timeouts and cancellations, while other
// goroutines render every view and the collector runs; then it checks that the
// registry's two indexes agree, that every listed entry still has a
// registration, and that the sampler exits once nothing is left.
func TestRegistry_StressKeepsItsInvariants(t *testing.T) {
	r := newRegistry()
	h := newHandler(r, WithStallThreshold(time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var undo []func()

	for w := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := 0; ctx.Err() == nil; i++ {
				s := semaphore.New(1+rng.Int64N(4), semaphore.WithName(fmt.Sprintf("s%d", rng.IntN(8))),
					semaphore.WithHolderTracking())
				unregister := registerPtr(r, s)
				switch rng.IntN(4) {
				case 0:
					unregister()
					unregister()
				case 1: // dropped: the collector removes it
				default:
					stop := recordPtr(r, s)
					mu.Lock()
					undo = append(undo, unregister, stop)
					mu.Unlock()
				}
				// Use it: weights, timeouts and cancellations.
				var users sync.WaitGroup
				for range 3 {
					n, timed, d := rng.Int64N(3), rng.IntN(2) == 0, time.Duration(rng.IntN(200))*time.Microsecond
					users.Go(func() {
						if timed {
							if s.AcquireTimeout(d, n) == nil {
								s.Release(n)
							}
							return
						}
						c, stop := context.WithCancel(ctx)
						go stop()
						if s.Acquire(c, n) == nil {
							s.Release(n)
						}
					})
				}
				users.Wait()
				if i%16 == 0 {
					runtime.GC()
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(9, 9))
			for ctx.Err() == nil {
				for _, path := range []string{"/d/", "/d/?format=json", "/d/?format=text&sort=waiters",
					fmt.Sprintf("/d/%d", 1+rng.IntN(64)), fmt.Sprintf("/d/%d?format=text", 1+rng.IntN(64))} {
					code, _, _ := get(t, h, path)
					assert.Contains(t, []int{200, 404}, code, path)
				}
			}
		})
	}
	time.AfterFunc(500*time.Millisecond, cancel)
	wg.Wait()

	r.mu.Lock()
	require.Equal(t, len(r.entries), len(r.byPtr))
	for id, e := range r.entries {
		require.Equal(t, id, e.id)
		require.Same(t, e, r.byPtr[e.key])
		require.Positive(t, e.refs)
	}
	r.mu.Unlock()

	for _, u := range undo {
		u()
	}
	require.Eventually(t, func() bool {
		runtime.GC()
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.entries) == 0 && !r.sampler.running
	}, 10*time.Second, time.Millisecond, "every object leaves, and the sampler with them")
}
