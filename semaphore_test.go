package semaphore_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
)

// New: a semaphore starts with its whole capacity available; a capacity out of range panics.

func TestNew_StartsWithAllUnitsAvailable(t *testing.T) {
	s := semaphore.New(7)
	assert.Equal(t, int64(7), s.Capacity())
	assert.Equal(t, int64(7), s.Available())
	assert.Equal(t, 0, s.Waiters())
	assert.NoError(t, s.Err())
}

func TestNew_PanicsOnNegativeCapacity(t *testing.T) {
	requirePanic(t, "New(-1): capacity must be between 0", func() { semaphore.New(-1, semaphore.WithName("db")) })
	requirePanic(t, `semaphore "db"`, func() { semaphore.New(-1, semaphore.WithName("db")) })
	requirePanic(t, "capacity must be between", func() { semaphore.New(semaphore.MaxUnits + 1) })
}

// The queries report the live state; on a zero Semaphore they describe it, and
// everything else panics.

func TestSemaphore_QueriesReportLiveState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(3, semaphore.WithName("q"))
		assert.Equal(t, "q", s.Name())
		require.NoError(t, s.Acquire(context.Background(), 3))
		ctx, cancel := context.WithCancel(context.Background())
		calls := queue(ctx, s, 1, 1)
		assert.Equal(t, 2, s.Waiters())
		assert.Equal(t, `semaphore "q" (0 of 3 units available, 2 waiting)`, s.String())
		time.Sleep(time.Second)
		cancel()
		synctest.Wait()
		assert.Equal(t, 0, s.Waiters())
		assert.Len(t, finished(calls), 2)
		st := s.Stats()
		assert.Equal(t, semaphore.Stats{
			Name: "q", Capacity: 3, Available: 0, Held: 3, Waiters: 0,
			Acquired: 1, AcquiredImmediately: 1, Queued: 2, Cancelled: 2,
			WaitTime: 2 * time.Second,
		}, st)
	})
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
	rounds := 100000
	if testing.Short() {
		rounds = 5000
	}
	for range rounds {
		str := s.String()
		require.NotContains(t, str, "1001 of 1 unit", str)
	}
}

// The zero Semaphore is not usable: every call that takes, returns or waits for
// units panics with a message that says to use New.
func TestSemaphore_ZeroValuePanicsSayingToUseNew(t *testing.T) {
	calls := map[string]func(s *semaphore.Semaphore){
		"Acquire":         func(s *semaphore.Semaphore) { _ = s.Acquire(context.Background(), 1) },
		"Acquire0":        func(s *semaphore.Semaphore) { _ = s.Acquire(context.Background(), 0) },
		"AcquireTimeout":  func(s *semaphore.Semaphore) { _ = s.AcquireTimeout(time.Second, 0) },
		"AcquireUnits":    func(s *semaphore.Semaphore) { _, _ = s.AcquireUnits(context.Background(), 1) },
		"TryAcquire":      func(s *semaphore.Semaphore) { s.TryAcquire(0) },
		"TryAcquireUnits": func(s *semaphore.Semaphore) { s.TryAcquireUnits(0) },
		"Release":         func(s *semaphore.Semaphore) { s.Release(0) },
		"Consume":         func(s *semaphore.Semaphore) { s.Consume(1) },
		"Resize":          func(s *semaphore.Semaphore) { s.Resize(1) },
		"Break":           func(s *semaphore.Semaphore) { s.Break(nil) },
		"Drain":           func(s *semaphore.Semaphore) { _ = s.Drain(context.Background()) },
		"WithSemaphore": func(s *semaphore.Semaphore) {
			_ = semaphore.WithSemaphore(context.Background(), s, 0, func(context.Context) error { return nil })
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			var s semaphore.Semaphore
			assert.PanicsWithValue(t, "semaphore: zero Semaphore: create it with New", func() { call(&s) })
		})
	}
}

// The queries describe a zero Semaphore without panicking, so that logging one
// never crashes.
func TestSemaphore_ZeroValueQueriesDoNotPanic(t *testing.T) {
	var s semaphore.Semaphore
	assert.Equal(t, int64(0), s.Capacity())
	assert.Equal(t, int64(0), s.Available())
	assert.Equal(t, 0, s.Waiters())
	assert.NoError(t, s.Err())
	assert.Contains(t, s.String(), "zero Semaphore")
}

// A Semaphore kept inside another struct and made with Init is what New
// returns: its capacity, its options, and the zero Semaphore's panics before.
func TestInit_MakesASemaphoreKeptInsideAnotherValue(t *testing.T) {
	var holder struct {
		name string
		sem  semaphore.Semaphore
	}
	assert.PanicsWithValue(t, "semaphore: zero Semaphore: create it with New", func() { holder.sem.Release(1) })
	s := holder.sem.Init(2, semaphore.WithName("inline"), semaphore.WithMaxWaiters(0))
	require.Same(t, &holder.sem, s)
	assert.True(t, s.TryAcquire(2))
	err := s.AcquireTimeout(time.Second, 1)
	assert.ErrorIs(t, err, semaphore.ErrQueueFull, "the options apply")
	assert.Contains(t, err.Error(), `semaphore "inline"`)
	s.Release(2)
	assert.Equal(t, int64(2), s.Available())
	assert.PanicsWithValue(t, `semaphore "inline": Init(3): already made`, func() { s.Init(3) })
	assert.PanicsWithValue(t, `semaphore "bad": Init(-1): capacity must be between 0 and 17592186044415`, func() {
		new(semaphore.Semaphore).Init(-1, semaphore.WithName("bad"))
	})
}
