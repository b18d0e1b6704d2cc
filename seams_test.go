package semaphore_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
)

// The observer and Stats report one outcome per call, decided once: a context
// cancelled with another semaphore's broken error as its cause is Cancelled in
// both, not Broken in one and Cancelled in the other.
func TestObserver_AgreesWithStatsWhenTheCauseIsAnotherSemaphoresBreak(t *testing.T) {
	other := semaphore.New(1)
	other.Break(errors.New("shutting down"))
	rec := &recorder{}
	s := semaphore.New(1, semaphore.WithObserver(rec))
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(other.Err())

	err := s.Acquire(ctx, 1)
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, rec.got(), 1)
	assert.Equal(t, semaphore.Cancelled, rec.got()[0].Outcome)
	assert.Equal(t, uint64(1), s.Stats().Cancelled)
	assert.NoError(t, s.Err(), "this semaphore is healthy")
}

// After Break the dump counts every unit that Drain waits for, those held outside
// Units included, as it does before Break.
func TestDiagnostics_AfterBreakCountsWhatDrainWaitsFor(t *testing.T) {
	for _, tracked := range []bool{false, true} {
		var opts []semaphore.Option
		if tracked {
			opts = append(opts, semaphore.WithHolderTracking())
		}
		s := semaphore.New(5, append(opts, semaphore.WithName("db"))...)
		require.NoError(t, s.Acquire(context.Background(), 2))
		u, err := s.AcquireUnits(context.Background(), 1)
		require.NoError(t, err)
		s.Break(errors.New("shutdown"))

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		require.ErrorContains(t, s.Drain(ctx), "3 units still out")
		dump := s.Diagnostics(0)
		first := strings.SplitN(dump, "\n", 2)[0]
		assert.Contains(t, first, "3 held", "tracked=%v: %s", tracked, dump)
		assert.Contains(t, dump, "held 3", "tracked=%v: %s", tracked, dump)
		if tracked {
			assert.Contains(t, first, "1 of them by 1 holder", dump)
		}
		u.Release()
		s.Release(2)
		require.NoError(t, s.Drain(context.Background()))
	}
}

// The watchdog's timer is armed only while someone waits: once the last waiter
// leaves, nothing keeps the semaphore reachable.
func TestWatchdog_TimerStopsWhenTheListEmpties(t *testing.T) {
	collected := func() weak.Pointer[semaphore.Semaphore] {
		s := semaphore.New(1, semaphore.WithWatchdog(time.Hour, time.Hour, nil))
		require.NoError(t, s.Acquire(context.Background(), 1))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- s.Acquire(ctx, 1) }()
		require.Eventually(t, func() bool { return s.Waiters() == 1 }, 10*time.Second, time.Millisecond)
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		return weak.Make(s)
	}()
	require.Eventually(t, func() bool {
		runtime.GC()
		return collected.Value() == nil
	}, 10*time.Second, 10*time.Millisecond, "a pending watchdog timer keeps the semaphore reachable")
}

// The zero Semaphore is not usable: every call that takes, returns or waits for
// units panics with a message that says to use New.
func TestZeroValue_PanicsSayingToUseNew(t *testing.T) {
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
func TestZeroValue_QueriesDoNotPanic(t *testing.T) {
	var s semaphore.Semaphore
	assert.Equal(t, int64(0), s.Capacity())
	assert.Equal(t, int64(0), s.Available())
	assert.Equal(t, 0, s.Waiters())
	assert.NoError(t, s.Err())
	assert.Contains(t, s.String(), "zero Semaphore")
}
