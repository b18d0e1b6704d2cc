package semaphore_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
)

// Resize changes the units while lock-free acquirers keep counting their grants in
// the same word. However the two interleave (the grant counter passing its fold
// point included), no unit is created or lost: after everyone releases, Available
// equals the capacity, and the grant count is exact.
func TestResize_RacingLockFreeGrantsKeepsUnitsExact(t *testing.T) {
	defer runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), 2))
	const grants = 1 << 21 // 64 turns of the grant counter
	s := semaphore.New(10)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; !stop.Load(); i++ {
			s.Resize(int64(10 + i%2))
		}
		s.Resize(10)
	})
	var got uint64
	for range grants {
		if s.TryAcquire(1) {
			got++
			s.Release(1)
		}
	}
	stop.Store(true)
	wg.Wait()
	require.Equal(t, int64(10), s.Capacity())
	assert.Equal(t, int64(10), s.Available(), "no unit created or lost")
	assert.Equal(t, got, s.Stats().Acquired)
}

// Stats and String describe one consistent moment of the capacity and the units:
// a Resize running at the same time never makes them report more units available
// than the capacity.
func TestStats_CapacityAndAvailableAreReadTogether(t *testing.T) {
	defer runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), 2))
	s := semaphore.New(1)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; !stop.Load(); i++ {
			s.Resize(int64(1 + 1000*(i%2)))
		}
	})
	defer wg.Wait()
	defer stop.Store(true)
	for range 200000 {
		st := s.Stats()
		require.LessOrEqual(t, st.Available, st.Capacity, "Stats %+v", st)
	}
}

// String, like Stats, never shows more units available than the capacity.
func TestString_CapacityAndAvailableAreReadTogether(t *testing.T) {
	defer runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), 2))
	s := semaphore.New(1, semaphore.WithName("s"))
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; !stop.Load(); i++ {
			s.Resize(int64(1 + 1000*(i%2)))
		}
	})
	defer wg.Wait()
	defer stop.Store(true)
	for range 100000 {
		str := s.String()
		require.NotContains(t, str, "1001 of 1 unit", str)
	}
}
