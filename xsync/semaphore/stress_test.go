package semaphore_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore/xsync/semaphore"
)

// TestStress_MixedWeightsTimeoutsAndCancellations hammers one Weighted from many
// goroutines, for sizes on the core's path and on the exact path, with weights
// drawn across the range (0, small, near 2^43, 2^44 and 2^62, fractions of the
// size, the size, larger than the size), contexts that time out, are cancelled by
// another goroutine, or never end, TryAcquire, and releases split into pieces. It
// checks the invariants that must hold whatever the interleaving: the weight held
// never exceeds the size, every failure is exactly ctx.Err(), no Release panics,
// and at the end the whole size is free again.
func TestStress_MixedWeightsTimeoutsAndCancellations(t *testing.T) {
	for _, size := range []int64{8, 1<<44 - 1, 1 << 44, math.MaxInt64} {
		t.Run("size="+strconv.FormatInt(size, 10), func(t *testing.T) { stress(t, size) })
	}
}

func stress(t *testing.T, size int64) {
	workers, loops := 12, 300
	if testing.Short() {
		loops = 40
	}
	s := semaphore.NewWeighted(size)
	var held atomic.Int64 // a lower bound of what s holds: added after a grant, taken off before a Release
	take := func(n int64) {
		if now := held.Add(n); now > size || now < 0 { // < 0: the sum overflowed
			t.Errorf("more than the size %d held (%d more)", size, n)
		}
	}
	var wg sync.WaitGroup
	var granted, failed atomic.Int64
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), uint64(size)))
			for range loops {
				n := stressWeight(r, size)
				if r.IntN(4) == 0 {
					if s.TryAcquire(n) {
						take(n)
						releaseInPieces(t, r, s, &held, n)
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
					releaseInPieces(t, r, s, &held, n)
				}
				cancel()
			}
		})
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(time.Minute):
		// Lost units leave an Acquire with a context that never ends blocked for good.
		t.Fatalf("size %d: workers still blocked after a minute: units were lost or a waiter never woken", size)
	}
	assert.Zero(t, held.Load())
	require.True(t, s.TryAcquire(size), "units were lost")
	t.Logf("size %d: %d granted, %d failed", size, granted.Load(), failed.Load())
}

// stressWeight draws a request across the range, mostly ones that fit.
func stressWeight(r *rand.Rand, size int64) int64 {
	var n int64
	switch r.IntN(8) {
	case 0:
		n = 0
	case 1:
		n = 1 + r.Int64N(3)
	case 2:
		n = []int64{1<<43 - 1, 1<<44 - 1, 1 << 44, 1 << 62}[r.IntN(4)]
	case 3:
		n = size
	case 4:
		if size < math.MaxInt64 {
			n = size + 1
		}
	default:
		n = size / (2 + r.Int64N(6))
	}
	return n
}

// releaseInPieces gives n back in one to three pieces of any size.
func releaseInPieces(t *testing.T, r *rand.Rand, s *semaphore.Weighted, held *atomic.Int64, n int64) {
	for pieces := r.IntN(3); pieces > 0 && n > 0; pieces-- {
		p := r.Int64N(n) + r.Int64N(2) // 0 to n, without overflowing n+1
		held.Add(-p)
		if didPanic(func() { s.Release(p) }) {
			t.Errorf("Release(%d) panicked", p)
		}
		n -= p
	}
	held.Add(-n)
	if didPanic(func() { s.Release(n) }) {
		t.Errorf("Release(%d) panicked", n)
	}
}
