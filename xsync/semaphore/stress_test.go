package semaphore_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore/xsync/semaphore"
)

// TestStress_MixedWeightsTimeoutsAndCancellations hammers one Weighted from many
// goroutines with weights from 0 to size+1 (too large included), contexts that
// time out, are cancelled by another goroutine, or never end, and TryAcquire. It
// checks the invariants that must hold whatever the interleaving: the weight held
// never exceeds the size, every failure is exactly ctx.Err(), and at the end the
// whole size is free again.
func TestStress_MixedWeightsTimeoutsAndCancellations(t *testing.T) {
	const size = 8
	workers, loops := 16, 400
	if testing.Short() {
		loops = 50
	}
	s := semaphore.NewWeighted(size)
	var held atomic.Int64
	take := func(n int64) {
		if now := held.Add(n); now > size {
			t.Errorf("%d units held, size %d", now, size)
		}
	}
	var wg sync.WaitGroup
	var granted, failed atomic.Int64
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range loops {
				n := r.Int64N(size + 2)
				if r.IntN(4) == 0 {
					if s.TryAcquire(n) {
						take(n)
						held.Add(-n)
						s.Release(n)
					}
					continue
				}
				ctx, cancel := context.WithCancel(context.Background())
				switch r.IntN(3) {
				case 0:
					ctx, cancel = context.WithTimeout(context.Background(), time.Duration(r.IntN(200))*time.Microsecond)
				case 1:
					go cancel() // races the grant
				default:
					if n > size {
						go cancel() // a too-large request with a context that never ends would block forever
					}
				}
				err := s.Acquire(ctx, n)
				if err != nil {
					if err != ctx.Err() { //nolint:errorlint // the contract is ==
						t.Errorf("Acquire(%d) = %v, ctx.Err() = %v", n, err, ctx.Err())
					}
					failed.Add(1)
				} else {
					take(n)
					granted.Add(1)
					held.Add(-n)
					s.Release(n)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	assert.Zero(t, held.Load())
	require.True(t, s.TryAcquire(size), "units were lost")
	t.Logf("%d granted, %d failed", granted.Load(), failed.Load())
}
