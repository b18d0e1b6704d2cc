package semaphore_test

import (
	"context"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
)

// logRecords is a slog.Handler that keeps the records it is given.
type logRecords struct {
	mu      sync.Mutex
	records []slog.Record
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecords) WithGroup(string) slog.Handler            { return l }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r.Clone())
	return nil
}

func (l *logRecords) got() []slog.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]slog.Record(nil), l.records...)
}

func attr(r slog.Record, key string) slog.Value {
	var v slog.Value
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value.Resolve()
			return false
		}
		return true
	})
	return v
}

func TestWatchdog_LogsTheDumpWhenTheHeadWaitsPastTheThreshold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logRecords{}
		s := semaphore.New(1, semaphore.WithName("db"),
			semaphore.WithWatchdog(5*time.Second, time.Minute, slog.New(logs)))
		u, err := s.AcquireUnits(semaphore.ContextWithHolderLabel(context.Background(), "forgetful"), 1)
		require.NoError(t, err)
		calls := queue(context.Background(), s, 1)
		time.Sleep(5*time.Second - time.Nanosecond)
		assert.Empty(t, logs.got(), "quiet below the threshold")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		records := logs.got()
		require.Len(t, records, 1)
		r := records[0]
		assert.Equal(t, slog.LevelWarn, r.Level)
		assert.Equal(t, "semaphore: head waiter stalled", r.Message)
		assert.Equal(t, 5*time.Second, attr(r, "waited").Duration())
		assert.Contains(t, attr(r, "diagnostics").String(),
			`semaphore "db": head waiter wants 1 unit (waiting 5s), 0 available, 1 held by 1 holder for 5s (oldest: "forgetful" (watchdog_test.go:`)
		assert.Equal(t, slog.KindGroup, attr(r, "semaphore").Kind(), "the semaphore logs as its LogValue group")
		u.Release()
		synctest.Wait()
		require.Len(t, finished(calls), 1)
		s.Release(1)
	})
}

func TestWatchdog_LogsAtMostOncePerIntervalWhileTheStallLasts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logRecords{}
		s := semaphore.New(1, semaphore.WithWatchdog(time.Second, 10*time.Second, slog.New(logs)))
		require.NoError(t, s.Acquire(context.Background(), 1))
		calls := queue(context.Background(), s, 1, 1)
		time.Sleep(time.Second)
		synctest.Wait()
		require.Len(t, logs.got(), 1)
		time.Sleep(10*time.Second - time.Nanosecond)
		assert.Len(t, logs.got(), 1, "rate-limited")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Len(t, logs.got(), 2, "the stall lasts, so it is logged again after the interval")

		s.Release(1) // the head is granted; the new head has waited 11s, but the interval holds
		synctest.Wait()
		time.Sleep(5 * time.Second)
		assert.Len(t, logs.got(), 2)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Len(t, logs.got(), 3)
		s.Release(1)
		synctest.Wait()
		require.Len(t, finished(calls), 2)
		time.Sleep(time.Hour)
		assert.Len(t, logs.got(), 3, "no waiters, no dumps")
		s.Release(1)
	})
}

func TestWatchdog_RearmsWhenTheListFillsAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logRecords{}
		s := semaphore.New(1, semaphore.WithWatchdog(time.Second, time.Second, slog.New(logs)))
		require.NoError(t, s.Acquire(context.Background(), 1))
		for i := range 3 {
			// A short wait: below the threshold, nothing is logged.
			calls := queue(context.Background(), s, 1)
			time.Sleep(time.Second / 2)
			s.Release(1)
			synctest.Wait()
			require.Len(t, finished(calls), 1)
			assert.Empty(t, logs.got(), "round %d", i)
		}
		calls := queue(context.Background(), s, 1)
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Len(t, logs.got(), 1, "a long wait after the short ones is noticed")
		s.Release(1)
		synctest.Wait()
		require.Len(t, finished(calls), 1)
		s.Release(1)
	})
}

func TestWatchdog_NewStallWithinTheIntervalWaitsForIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logRecords{}
		s := semaphore.New(1, semaphore.WithWatchdog(time.Second, time.Minute, slog.New(logs)))
		require.NoError(t, s.Acquire(context.Background(), 1))
		first := queue(context.Background(), s, 1)
		time.Sleep(time.Second)
		synctest.Wait()
		require.Len(t, logs.got(), 1)
		s.Release(1) // the stalled head is granted
		synctest.Wait()
		require.Len(t, finished(first), 1)
		second := queue(context.Background(), s, 1) // a new head, which stalls too
		time.Sleep(30 * time.Second)
		assert.Len(t, logs.got(), 1, "a second stall within the interval is not logged yet")
		time.Sleep(30 * time.Second) // the first dump was at 1s: the interval ends at 61s
		synctest.Wait()
		assert.Len(t, logs.got(), 2, "it is logged once the interval has passed")
		s.Release(1)
		synctest.Wait()
		require.Len(t, finished(second), 1)
		s.Release(1)
	})
}

func TestWatchdog_NilLoggerUsesTheDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logRecords{}
		prev := slog.Default()
		slog.SetDefault(slog.New(logs))
		defer slog.SetDefault(prev)
		s := semaphore.New(1, semaphore.WithWatchdog(time.Second, time.Second, nil))
		require.NoError(t, s.Acquire(context.Background(), 1))
		calls := queue(context.Background(), s, 1)
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Len(t, logs.got(), 1)
		s.Release(1)
		synctest.Wait()
		require.Len(t, finished(calls), 1)
		s.Release(1)
	})
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
