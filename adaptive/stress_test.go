package adaptive_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
)

// TestLimiter_StressKeepsAccountingUnderTimeoutsCancellationsAndVerdicts runs
// callers with deadlines, cancellations, every verdict, weighted calls, calls
// admitted elsewhere (Start), panics in Do and other users of the semaphore
// taking weighted units, while the limit moves between its bounds, and checks
// that the limit stayed in bounds, that every granted call was ended once, and
// that all units came back.
func TestLimiter_StressKeepsAccountingUnderTimeoutsCancellationsAndVerdicts(t *testing.T) {
	const lo, hi = 2, 12
	for name, alg := range map[string]func() adaptive.Algorithm{
		"AIMD": func() adaptive.Algorithm {
			return adaptive.NewAIMD(adaptive.AIMDConfig{InitialLimit: 6, MinLimit: lo, MaxLimit: hi, BackoffRatio: 0.5})
		},
		"Capacity": func() adaptive.Algorithm {
			return adaptive.NewCapacity(adaptive.CapacityConfig{InitialLimit: 6, MinLimit: lo, MaxLimit: hi})
		},
	} {
		t.Run(name, func(t *testing.T) { stress(t, alg(), lo, hi) })
	}
}

func stress(t *testing.T, alg adaptive.Algorithm, lo, hi int) {
	sem := semaphore.New(1, semaphore.WithName("stress"))
	var outOfBounds atomic.Int64
	l := adaptive.New(sem, alg,
		adaptive.WithWindow(3, 0, time.Millisecond), adaptive.WithStandingQueue(200*time.Microsecond, time.Millisecond),
		adaptive.WithOnChange(func(_, n int) {
			if n < lo || n > hi {
				outOfBounds.Add(1)
			}
		}))
	var wg sync.WaitGroup
	var ended atomic.Uint64
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 300 {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.IntN(500))*time.Microsecond)
				if r.IntN(5) == 0 {
					cancel()
				}
				switch r.IntN(5) {
				case 0: // a weighted user of the same semaphore, outside the limiter
					if n := int64(1 + r.IntN(2)); sem.Acquire(ctx, n) == nil {
						sem.Release(n)
					}
				case 1:
					func() {
						defer func() { _ = recover() }()
						_ = l.Do(ctx, func(ctx context.Context) error {
							if r.IntN(10) == 0 {
								panic("handler")
							}
							select {
							case <-ctx.Done():
								return ctx.Err()
							case <-time.After(time.Duration(r.IntN(200)) * time.Microsecond):
								return nil
							}
						})
					}()
				case 2: // a call admitted elsewhere, measured
					if sem.Acquire(ctx, 1) == nil {
						l.Start(1, time.Duration(r.IntN(2))).Done(adaptive.Verdict(r.IntN(4)))
						sem.Release(1)
					}
				default:
					c, err := l.AcquireN(ctx, int64(1+r.IntN(lo)))
					if err != nil {
						break
					}
					ended.Add(1)
					if o := adaptive.Verdict(r.IntN(5)); o <= adaptive.TimedOut {
						c.Done(o)
					}
					c.Release()
				}
				cancel()
			}
		}()
	}
	wg.Wait()
	st := l.Stats()
	assert.Zero(t, outOfBounds.Load())
	assert.Zero(t, st.InFlight)
	assert.Equal(t, st.Acquired, st.Succeeded+st.Dropped+st.Ignored, "every granted call ended once")
	require.GreaterOrEqual(t, st.Limit, lo)
	require.LessOrEqual(t, st.Limit, hi)
	assert.Equal(t, int64(st.Limit), sem.Capacity())
	assert.Equal(t, sem.Capacity(), sem.Available(), "every unit came back")
	assert.Zero(t, sem.Waiters())
}
