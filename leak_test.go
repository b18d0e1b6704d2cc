package semaphore_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
)

// leakReports collects leak reports; the reports come from the finalizer goroutine.
func leakReports() (chan semaphore.LeakReport, semaphore.Option) {
	ch := make(chan semaphore.LeakReport, 16)
	return ch, semaphore.WithLeakDetection(func(r semaphore.LeakReport) { ch <- r })
}

// nextLeak collects garbage until a report arrives, or fails after a deadline.
func nextLeak(t *testing.T, ch chan semaphore.LeakReport) semaphore.LeakReport {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		runtime.GC()
		select {
		case r := <-ch:
			return r
		case <-deadline:
			require.FailNow(t, "no leak report")
		case <-time.After(time.Millisecond):
		}
	}
}

// drop acquires units with a Units it then loses without releasing it.
//
//go:noinline
func drop(t *testing.T, s *semaphore.Semaphore, ctx context.Context, n int64) {
	u, err := s.AcquireUnits(ctx, n)
	require.NoError(t, err)
	_ = u
}

func TestLeakDetection_ReportsUnitsDroppedWithoutRelease(t *testing.T) {
	reports, opt := leakReports()
	s := semaphore.New(5, semaphore.WithName("db"), opt)
	drop(t, s, semaphore.ContextWithHolderLabel(context.Background(), "worker-7"), 2)
	r := nextLeak(t, reports)
	assert.Same(t, s, r.Semaphore)
	assert.Equal(t, int64(2), r.Units)
	assert.Equal(t, "worker-7", r.Label)
	assert.Regexp(t, `^leak_test\.go:\d+$`, r.Site)
	assert.Empty(t, r.Stack, "no stack without WithAcquireStacks")
	assert.GreaterOrEqual(t, r.Age, time.Duration(0))
	assert.Regexp(t, `^semaphore "db": 2 units leaked by a Units acquired at leak_test\.go:\d+ \(worker-7\) \S+ ago$`, r.String())
	assert.Equal(t, int64(3), s.Available(), "the leaked units are not returned silently")
	assert.NotContains(t, s.Diagnostics(0), "worker-7", "a collected Units leaves the holder list")
}

func TestLeakDetection_ReclaimReturnsTheUnitsOnce(t *testing.T) {
	reports, opt := leakReports()
	s := semaphore.New(5, opt)
	drop(t, s, context.Background(), 4)
	r := nextLeak(t, reports)
	r.Reclaim()
	r.Reclaim()
	assert.Equal(t, int64(5), s.Available())
}

func TestLeakDetection_ReleasedOrEmptiedUnitsAreNotReported(t *testing.T) {
	reports, opt := leakReports()
	s := semaphore.New(10, opt)
	func() {
		u, err := s.AcquireUnits(context.Background(), 1)
		require.NoError(t, err)
		u.Release()
		u2, ok := s.TryAcquireUnits(2)
		require.True(t, ok)
		s.Release(u2.Detach())
		u3 := s.ConsumeUnits(3)
		require.NoError(t, u3.Return(3))
	}()
	drop(t, s, context.Background(), 1) // a marker that must be the only report
	r := nextLeak(t, reports)
	assert.Equal(t, int64(1), r.Units)
	for range 3 {
		runtime.GC()
	}
	select {
	case r := <-reports:
		assert.Fail(t, "unexpected report", "%v", r)
	default:
	}
}

func TestLeakDetection_SplitPartsAreReportedSeparately(t *testing.T) {
	reports, opt := leakReports()
	s := semaphore.New(10, opt)
	func() {
		u, err := s.AcquireUnits(context.Background(), 5)
		require.NoError(t, err)
		part, err := u.Split(2)
		require.NoError(t, err)
		u.Release()
		_ = part
	}()
	r := nextLeak(t, reports)
	assert.Equal(t, int64(2), r.Units, "only the split-off part was dropped")
	assert.Regexp(t, `^leak_test\.go:\d+$`, r.Site, "a split keeps the acquire site")
	r.Reclaim()
	assert.Equal(t, int64(10), s.Available())
}

func TestLeakDetection_StackWithAcquireStacks(t *testing.T) {
	reports, opt := leakReports()
	s := semaphore.New(1, opt, semaphore.WithAcquireStacks())
	drop(t, s, context.Background(), 1)
	r := nextLeak(t, reports)
	assert.Contains(t, r.Stack, "semaphore_test.drop\n\t")
	assert.Contains(t, r.Stack, "semaphore_test.TestLeakDetection_StackWithAcquireStacks\n\t")
	assert.NotContains(t, r.Stack, "semaphore.(*Semaphore)", "the stack starts at the caller")
}

func TestLeakReport_ZeroValueReclaimDoesNothing(t *testing.T) {
	assert.NotPanics(t, func() { semaphore.LeakReport{}.Reclaim() })
}
