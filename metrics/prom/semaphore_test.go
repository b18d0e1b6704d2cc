package prom_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/metrics/prom"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func requirePanic(t *testing.T, contains string, f func()) {
	t.Helper()
	defer func() {
		r := recover()
		require.NotNil(t, r, "expected a panic containing %q", contains)
		assert.Contains(t, r, contains)
	}()
	f()
}

const semaphoreMetrics = `
# HELP semaphore_acquired_immediately_total Acquisitions granted without waiting.
# TYPE semaphore_acquired_immediately_total counter
semaphore_acquired_immediately_total{semaphore="db"} 1
# HELP semaphore_acquired_total Successful acquisitions, waited for or not.
# TYPE semaphore_acquired_total counter
semaphore_acquired_total{semaphore="db"} 2
# HELP semaphore_available_units Units that could be acquired now (0 while in debt or broken).
# TYPE semaphore_available_units gauge
semaphore_available_units{semaphore="db"} 1
# HELP semaphore_broken 1 once the semaphore is broken, else 0.
# TYPE semaphore_broken gauge
semaphore_broken{semaphore="db"} 0
# HELP semaphore_cancelled_total Calls whose context was cancelled (a deadline counts as timed out).
# TYPE semaphore_cancelled_total counter
semaphore_cancelled_total{semaphore="db"} 0
# HELP semaphore_capacity_units Units the semaphore holds in all.
# TYPE semaphore_capacity_units gauge
semaphore_capacity_units{semaphore="db"} 3
# HELP semaphore_queued_total Calls that joined the wait queue.
# TYPE semaphore_queued_total counter
semaphore_queued_total{semaphore="db"} 3
# HELP semaphore_refusals_total Calls that failed without waiting in the queue, by outcome.
# TYPE semaphore_refusals_total counter
semaphore_refusals_total{outcome="too_large",semaphore="db"} 1
# HELP semaphore_rejected_total Calls refused: queue full or larger than the capacity.
# TYPE semaphore_rejected_total counter
semaphore_rejected_total{semaphore="db"} 1
# HELP semaphore_timed_out_total Calls that failed on a deadline: AcquireTimeout's or the context's.
# TYPE semaphore_timed_out_total counter
semaphore_timed_out_total{semaphore="db"} 1
# HELP semaphore_wait_duration_seconds Time calls waited in the queue, by how the wait ended.
# TYPE semaphore_wait_duration_seconds histogram
semaphore_wait_duration_seconds_bucket{outcome="broken",semaphore="db",le="1"} 0
semaphore_wait_duration_seconds_bucket{outcome="broken",semaphore="db",le="5"} 0
semaphore_wait_duration_seconds_bucket{outcome="broken",semaphore="db",le="+Inf"} 0
semaphore_wait_duration_seconds_sum{outcome="broken",semaphore="db"} 0
semaphore_wait_duration_seconds_count{outcome="broken",semaphore="db"} 0
semaphore_wait_duration_seconds_bucket{outcome="cancelled",semaphore="db",le="1"} 0
semaphore_wait_duration_seconds_bucket{outcome="cancelled",semaphore="db",le="5"} 0
semaphore_wait_duration_seconds_bucket{outcome="cancelled",semaphore="db",le="+Inf"} 0
semaphore_wait_duration_seconds_sum{outcome="cancelled",semaphore="db"} 0
semaphore_wait_duration_seconds_count{outcome="cancelled",semaphore="db"} 0
semaphore_wait_duration_seconds_bucket{outcome="granted",semaphore="db",le="1"} 0
semaphore_wait_duration_seconds_bucket{outcome="granted",semaphore="db",le="5"} 1
semaphore_wait_duration_seconds_bucket{outcome="granted",semaphore="db",le="+Inf"} 1
semaphore_wait_duration_seconds_sum{outcome="granted",semaphore="db"} 3
semaphore_wait_duration_seconds_count{outcome="granted",semaphore="db"} 1
semaphore_wait_duration_seconds_bucket{outcome="queue_full",semaphore="db",le="1"} 0
semaphore_wait_duration_seconds_bucket{outcome="queue_full",semaphore="db",le="5"} 0
semaphore_wait_duration_seconds_bucket{outcome="queue_full",semaphore="db",le="+Inf"} 0
semaphore_wait_duration_seconds_sum{outcome="queue_full",semaphore="db"} 0
semaphore_wait_duration_seconds_count{outcome="queue_full",semaphore="db"} 0
semaphore_wait_duration_seconds_bucket{outcome="timed_out",semaphore="db",le="1"} 1
semaphore_wait_duration_seconds_bucket{outcome="timed_out",semaphore="db",le="5"} 1
semaphore_wait_duration_seconds_bucket{outcome="timed_out",semaphore="db",le="+Inf"} 1
semaphore_wait_duration_seconds_sum{outcome="timed_out",semaphore="db"} 0.5
semaphore_wait_duration_seconds_count{outcome="timed_out",semaphore="db"} 1
semaphore_wait_duration_seconds_bucket{outcome="too_large",semaphore="db",le="1"} 0
semaphore_wait_duration_seconds_bucket{outcome="too_large",semaphore="db",le="5"} 0
semaphore_wait_duration_seconds_bucket{outcome="too_large",semaphore="db",le="+Inf"} 0
semaphore_wait_duration_seconds_sum{outcome="too_large",semaphore="db"} 0
semaphore_wait_duration_seconds_count{outcome="too_large",semaphore="db"} 0
# HELP semaphore_wait_seconds_total Total time spent waiting in the queue.
# TYPE semaphore_wait_seconds_total counter
semaphore_wait_seconds_total{semaphore="db"} 3.5
# HELP semaphore_waiters Calls waiting in the queue now.
# TYPE semaphore_waiters gauge
semaphore_waiters{semaphore="db"} 1
`

func TestSemaphoreCollector_ExportsStateCountersAndTheWaitHistogram(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := prom.NewSemaphoreCollector(prom.WithBuckets(1, 5))
		sem := semaphore.New(3, semaphore.WithName("db"), semaphore.WithObserver(c))
		c.Add(sem)
		reg := prometheus.NewPedanticRegistry()
		require.NoError(t, reg.Register(c))

		require.NoError(t, sem.Acquire(context.Background(), 2)) // immediately
		assert.ErrorIs(t, sem.AcquireTimeout(time.Second/2, 2), semaphore.ErrTimedOut)
		granted := make(chan error)
		go func() { granted <- sem.Acquire(context.Background(), 2) }()
		synctest.Wait()
		time.Sleep(3 * time.Second)
		sem.Release(1) // grants the 2 after 3s
		require.NoError(t, <-granted)
		assert.ErrorIs(t, sem.Acquire(context.Background(), 4), semaphore.ErrTooLarge)
		waiting := make(chan error)
		go func() { waiting <- sem.Acquire(context.Background(), 3) }()
		synctest.Wait()
		sem.Release(1) // 1 available, still not enough for the 3

		require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(semaphoreMetrics)))

		sem.Release(2)
		require.NoError(t, <-waiting)
		sem.Release(3)
	})
}

func TestSemaphoreCollector_BrokenGaugeAndBrokenOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := prom.NewSemaphoreCollector(prom.WithBuckets(1))
		sem := semaphore.New(1, semaphore.WithName("db"), semaphore.WithObserver(c))
		c.Add(sem)
		reg := prometheus.NewPedanticRegistry()
		require.NoError(t, reg.Register(c))
		require.NoError(t, sem.Acquire(context.Background(), 1))
		failed := make(chan error)
		go func() { failed <- sem.Acquire(context.Background(), 1) }()
		synctest.Wait()
		sem.Break(errors.New("down"))
		assert.ErrorIs(t, <-failed, semaphore.ErrBroken)
		assert.ErrorIs(t, sem.Acquire(context.Background(), 1), semaphore.ErrBroken)
		require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP semaphore_broken 1 once the semaphore is broken, else 0.
# TYPE semaphore_broken gauge
semaphore_broken{semaphore="db"} 1
# HELP semaphore_refusals_total Calls that failed without waiting in the queue, by outcome.
# TYPE semaphore_refusals_total counter
semaphore_refusals_total{outcome="broken",semaphore="db"} 1
# HELP semaphore_wait_duration_seconds Time calls waited in the queue, by how the wait ended.
# TYPE semaphore_wait_duration_seconds histogram
semaphore_wait_duration_seconds_bucket{outcome="broken",semaphore="db",le="1"} 1
semaphore_wait_duration_seconds_bucket{outcome="broken",semaphore="db",le="+Inf"} 1
semaphore_wait_duration_seconds_sum{outcome="broken",semaphore="db"} 0
semaphore_wait_duration_seconds_count{outcome="broken",semaphore="db"} 1
semaphore_wait_duration_seconds_bucket{outcome="cancelled",semaphore="db",le="1"} 0
semaphore_wait_duration_seconds_bucket{outcome="cancelled",semaphore="db",le="+Inf"} 0
semaphore_wait_duration_seconds_sum{outcome="cancelled",semaphore="db"} 0
semaphore_wait_duration_seconds_count{outcome="cancelled",semaphore="db"} 0
semaphore_wait_duration_seconds_bucket{outcome="granted",semaphore="db",le="1"} 0
semaphore_wait_duration_seconds_bucket{outcome="granted",semaphore="db",le="+Inf"} 0
semaphore_wait_duration_seconds_sum{outcome="granted",semaphore="db"} 0
semaphore_wait_duration_seconds_count{outcome="granted",semaphore="db"} 0
semaphore_wait_duration_seconds_bucket{outcome="queue_full",semaphore="db",le="1"} 0
semaphore_wait_duration_seconds_bucket{outcome="queue_full",semaphore="db",le="+Inf"} 0
semaphore_wait_duration_seconds_sum{outcome="queue_full",semaphore="db"} 0
semaphore_wait_duration_seconds_count{outcome="queue_full",semaphore="db"} 0
semaphore_wait_duration_seconds_bucket{outcome="timed_out",semaphore="db",le="1"} 0
semaphore_wait_duration_seconds_bucket{outcome="timed_out",semaphore="db",le="+Inf"} 0
semaphore_wait_duration_seconds_sum{outcome="timed_out",semaphore="db"} 0
semaphore_wait_duration_seconds_count{outcome="timed_out",semaphore="db"} 0
semaphore_wait_duration_seconds_bucket{outcome="too_large",semaphore="db",le="1"} 0
semaphore_wait_duration_seconds_bucket{outcome="too_large",semaphore="db",le="+Inf"} 0
semaphore_wait_duration_seconds_sum{outcome="too_large",semaphore="db"} 0
semaphore_wait_duration_seconds_count{outcome="too_large",semaphore="db"} 0
`), "semaphore_broken", "semaphore_refusals_total", "semaphore_wait_duration_seconds"))
	})
}

func TestSemaphoreCollector_LabelsEachSemaphoreByName(t *testing.T) {
	c := prom.NewSemaphoreCollector()
	a := semaphore.New(1, semaphore.WithName("a"), semaphore.WithObserver(c))
	b := semaphore.New(2, semaphore.WithName("b"), semaphore.WithObserver(c))
	c.Add(a)
	c.Add(b)
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP semaphore_capacity_units Units the semaphore holds in all.
# TYPE semaphore_capacity_units gauge
semaphore_capacity_units{semaphore="a"} 1
semaphore_capacity_units{semaphore="b"} 2
`), "semaphore_capacity_units"))

	c.Remove(b)
	c.Remove(b) // removing twice does nothing
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP semaphore_capacity_units Units the semaphore holds in all.
# TYPE semaphore_capacity_units gauge
semaphore_capacity_units{semaphore="a"} 1
`), "semaphore_capacity_units"))
	c.Add(b) // and it can come back
	assert.Equal(t, 2, testutil.CollectAndCount(c, "semaphore_capacity_units"))
}

func TestSemaphoreCollector_ObservesSemaphoresNotAdded(t *testing.T) {
	c := prom.NewSemaphoreCollector(prom.WithBuckets(1))
	sem := semaphore.New(1, semaphore.WithName("other"), semaphore.WithObserver(c))
	require.NoError(t, sem.Acquire(context.Background(), 1))
	assert.ErrorIs(t, sem.AcquireTimeout(time.Millisecond, 1), semaphore.ErrTimedOut)
	assert.Equal(t, 1, testutil.CollectAndCount(c, "semaphore_wait_duration_seconds"),
		"the histogram works without Add; only the Stats metrics need it")
	assert.Equal(t, 0, testutil.CollectAndCount(c, "semaphore_capacity_units"))
}

func TestSemaphoreCollector_AddPanicsOnADuplicateName(t *testing.T) {
	c := prom.NewSemaphoreCollector()
	c.Add(semaphore.New(1, semaphore.WithName("db")))
	requirePanic(t, `prom: SemaphoreCollector.Add: a semaphore named "db" is already exported`, func() {
		c.Add(semaphore.New(1, semaphore.WithName("db")))
	})
}

func TestWithBuckets_InvalidValuesPanic(t *testing.T) {
	requirePanic(t, "prom: NewSemaphoreCollector: WithBuckets(): no buckets", func() {
		prom.NewSemaphoreCollector(prom.WithBuckets())
	})
	requirePanic(t, "prom: NewSemaphoreCollector: WithBuckets([1 1]): bounds must increase", func() {
		prom.NewSemaphoreCollector(prom.WithBuckets(1, 1))
	})
	requirePanic(t, "prom: NewSemaphoreCollector: WithBuckets([2 1]): bounds must increase", func() {
		prom.NewSemaphoreCollector(prom.WithBuckets(2, 1))
	})
}

func TestSemaphoreCollector_PassesTheLinter(t *testing.T) {
	c := prom.NewSemaphoreCollector()
	sem := semaphore.New(1, semaphore.WithName("db"), semaphore.WithObserver(c))
	c.Add(sem)
	assert.ErrorIs(t, sem.Acquire(context.Background(), 2), semaphore.ErrTooLarge)
	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	assert.Empty(t, problems)
}
