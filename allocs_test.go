package semaphore_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
)

// The README and the package documentation promise these allocation counts; each
// test guards one. testing.AllocsPerRun counts every allocation of the process
// during the runs and rounds the average down.

func TestAllocs_UncontendedAcquireReleaseAllocatesNothing(t *testing.T) {
	s := semaphore.New(1)
	ctx := context.Background()
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		_ = s.Acquire(ctx, 1)
		s.Release(1)
	}))
}

func TestAllocs_TryAcquireReleaseAllocatesNothing(t *testing.T) {
	s := semaphore.New(1)
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		s.TryAcquire(1)
		s.Release(1)
	}))
}

func TestAllocs_AcquireUnitsReleaseAllocatesNothing(t *testing.T) {
	s := semaphore.New(1)
	ctx := context.Background()
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		u, _ := s.AcquireUnits(ctx, 1)
		u.Release()
	}))
}

func TestAllocs_CancellableContextAllocatesNothingWhenUnitsAreFree(t *testing.T) {
	s := semaphore.New(1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		_ = s.Acquire(ctx, 1)
		s.Release(1)
	}))
}

// blockedRound runs one blocked acquire per call of the returned function: a
// helper goroutine takes the only unit, the caller's acquire queues, and the helper
// releases once it sees the waiter. stop ends the helper.
func blockedRound(s *semaphore.Semaphore, acquire func() error) (round func(), stop func()) {
	hold, held := make(chan struct{}), make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for range hold {
			_ = s.Acquire(context.Background(), 1)
			held <- struct{}{}
			for s.Waiters() == 0 {
				runtime.Gosched()
			}
			s.Release(1)
		}
	}()
	round = func() {
		hold <- struct{}{}
		<-held
		if acquire() == nil {
			s.Release(1)
		}
	}
	return round, func() { close(hold); <-finished }
}

func TestAllocs_BlockedAcquireWithAContextThatCannotEndAllocatesNothing(t *testing.T) {
	s := semaphore.New(1)
	round, stop := blockedRound(s, func() error { return s.Acquire(context.Background(), 1) })
	defer stop()
	assert.Zero(t, testing.AllocsPerRun(200, round))
	assert.GreaterOrEqual(t, s.Stats().Queued, uint64(200), "every round waited")
}

// A lone timed waiter starts the semaphore's deadline timer: one allocation.
func TestAllocs_BlockedAcquireTimeoutAllocatesAtMostATimer(t *testing.T) {
	s := semaphore.New(1)
	round, stop := blockedRound(s, func() error { return s.AcquireTimeout(time.Hour, 1) })
	defer stop()
	assert.LessOrEqual(t, testing.AllocsPerRun(200, round), 1.0)
	assert.GreaterOrEqual(t, s.Stats().Queued, uint64(200))
}

// Timed waiters that keep arriving while others wait share the pending deadline
// timer, so under steady load a blocked AcquireTimeout allocates nothing.
// (CI runs it in the coverage pass, which is built without the race detector.)
func TestAllocs_TimedWaitersUnderSteadyLoadShareOneTimer(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's runtime allocates about once every four switches here")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	s := semaphore.New(1)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	for range 16 { // enough that the list seldom empties, which lets the timer go
		wg.Go(func() {
			for range 500 {
				if s.AcquireTimeout(time.Hour, 1) == nil {
					runtime.Gosched() // hold the unit across a switch, so that others queue
					s.Release(1)
				}
			}
		})
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	queued := s.Stats().Queued
	require.Greater(t, queued, uint64(1000), "the callers must have waited for this test to mean anything")
	perBlocked := float64(after.Mallocs-before.Mallocs) / float64(queued)
	assert.Less(t, perBlocked, 0.1, "%d allocations for %d blocked calls", after.Mallocs-before.Mallocs, queued)
}

func TestAllocs_BlockedAcquireWithACancellableContextAllocatesOnlyItsChannel(t *testing.T) {
	s := semaphore.New(1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	round, stop := blockedRound(s, func() error { return s.Acquire(ctx, 1) })
	defer stop()
	assert.LessOrEqual(t, testing.AllocsPerRun(200, round), 1.0)
}

// New without options is one allocation of at most 128 bytes, so that a map of
// per-key semaphores costs little per idle key; what only some semaphores use is
// made on first need.
func TestAllocs_NewIsOneSmallObject(t *testing.T) {
	assert.Equal(t, 1.0, testing.AllocsPerRun(1000, func() { _ = semaphore.New(4) }))
	var before, after runtime.MemStats
	const n = 10000
	keep := make([]*semaphore.Semaphore, n)
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range keep {
		keep[i] = semaphore.New(4)
	}
	runtime.ReadMemStats(&after)
	perSemaphore := float64(after.TotalAlloc-before.TotalAlloc) / n
	assert.LessOrEqual(t, perSemaphore, 128.0, "bytes per semaphore")
	runtime.KeepAlive(keep)
}

// A semaphore used only on its lock-free paths never makes the part kept for
// waiting, refusing, breaking and draining.
func TestAllocs_LockFreeUseMakesNothingMore(t *testing.T) {
	ctx := context.Background()
	assert.Equal(t, 1.0, testing.AllocsPerRun(1000, func() {
		s := semaphore.New(4)
		_ = s.Acquire(ctx, 2)
		s.TryAcquire(2)
		s.Release(4)
		_ = s.Stats()
	}))
}
