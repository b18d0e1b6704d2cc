package otel_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/metrics/otel"
)

var db = attribute.String("semaphore.name", "db")

func TestSemaphoreMetrics_ObserveStateCountersAndTheWaitHistogram(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meter, reader := newMeter(t)
		m, err := otel.NewSemaphoreMetrics(meter, otel.WithBuckets(1, 5))
		require.NoError(t, err)
		sem := semaphore.New(3, semaphore.WithName("db"), semaphore.WithObserver(m))
		m.Add(sem)

		require.NoError(t, sem.Acquire(context.Background(), 2))
		assert.ErrorIs(t, sem.AcquireTimeout(time.Second/2, 2), semaphore.ErrTimedOut)
		granted := make(chan error)
		go func() { granted <- sem.Acquire(context.Background(), 2) }()
		synctest.Wait()
		time.Sleep(3 * time.Second)
		sem.Release(1)
		require.NoError(t, <-granted)
		assert.ErrorIs(t, sem.Acquire(context.Background(), 4), semaphore.ErrTooLarge)
		waiting := make(chan error)
		go func() { waiting <- sem.Acquire(context.Background(), 3) }()
		synctest.Wait()
		sem.Release(1)

		c := collect(t, reader)
		assert.Equal(t, 3.0, c.value(t, "semaphore.capacity", db))
		assert.Equal(t, 1.0, c.value(t, "semaphore.units.available", db))
		assert.Equal(t, 1.0, c.value(t, "semaphore.pending_requests", db))
		assert.Equal(t, 0.0, c.value(t, "semaphore.broken", db))
		assert.Equal(t, 1.0, c.value(t, "semaphore.acquisitions", db, attribute.Bool("semaphore.acquisition.immediate", true)))
		assert.Equal(t, 1.0, c.value(t, "semaphore.acquisitions", db, attribute.Bool("semaphore.acquisition.immediate", false)))
		assert.Equal(t, 3.0, c.value(t, "semaphore.queued", db))
		assert.Equal(t, 1.0, c.value(t, "semaphore.failures", db, attribute.String("error.type", "timed_out")))
		assert.Equal(t, 0.0, c.value(t, "semaphore.failures", db, attribute.String("error.type", "cancelled")))
		assert.Equal(t, 1.0, c.value(t, "semaphore.failures", db, attribute.String("error.type", "rejected")))
		assert.Equal(t, 3.5, c.value(t, "semaphore.wait.time", db))
		assert.Equal(t, 1.0, c.value(t, "semaphore.refusals", db, attribute.String("semaphore.wait.outcome", "too_large")))

		granted2 := c.histogram(t, "semaphore.wait.duration", db, attribute.String("semaphore.wait.outcome", "granted"))
		assert.Equal(t, []float64{1, 5}, granted2.Bounds)
		assert.Equal(t, []uint64{0, 1, 0}, granted2.BucketCounts)
		assert.Equal(t, 3.0, granted2.Sum)
		timedOut := c.histogram(t, "semaphore.wait.duration", db, attribute.String("semaphore.wait.outcome", "timed_out"))
		assert.Equal(t, []uint64{1, 0, 0}, timedOut.BucketCounts)
		assert.Equal(t, 0.5, timedOut.Sum)

		for name, unit := range map[string]string{
			"semaphore.capacity": "{unit}", "semaphore.units.available": "{unit}", "semaphore.pending_requests": "{request}",
			"semaphore.wait.duration": "s", "semaphore.wait.time": "s", "semaphore.acquisitions": "{acquisition}",
		} {
			assert.Equal(t, unit, c[name].Unit, name)
		}
		assert.True(t, c["semaphore.acquisitions"].Data.(metricdata.Sum[int64]).IsMonotonic)
		assert.False(t, c["semaphore.capacity"].Data.(metricdata.Sum[int64]).IsMonotonic)

		sem.Release(2)
		require.NoError(t, <-waiting)
		sem.Release(3)
	})
}

func TestSemaphoreMetrics_BrokenStateAndOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meter, reader := newMeter(t)
		m, err := otel.NewSemaphoreMetrics(meter)
		require.NoError(t, err)
		sem := semaphore.New(1, semaphore.WithName("db"), semaphore.WithObserver(m))
		m.Add(sem)
		require.NoError(t, sem.Acquire(context.Background(), 1))
		failed := make(chan error)
		go func() { failed <- sem.Acquire(context.Background(), 1) }()
		synctest.Wait()
		time.Sleep(time.Second)
		sem.Break(errors.New("down"))
		assert.ErrorIs(t, <-failed, semaphore.ErrBroken)
		c := collect(t, reader)
		assert.Equal(t, 1.0, c.value(t, "semaphore.broken", db))
		p := c.histogram(t, "semaphore.wait.duration", db, attribute.String("semaphore.wait.outcome", "broken"))
		assert.Equal(t, uint64(1), p.Count)
		assert.Equal(t, 1.0, p.Sum)
	})
}

func TestSemaphoreMetrics_AddRemoveAndUnregister(t *testing.T) {
	meter, reader := newMeter(t)
	m, err := otel.NewSemaphoreMetrics(meter)
	require.NoError(t, err)
	a := semaphore.New(1, semaphore.WithName("a"))
	b := semaphore.New(2, semaphore.WithName("b"))
	m.Add(a)
	m.Add(b)
	c := collect(t, reader)
	assert.Equal(t, 1.0, c.value(t, "semaphore.capacity", attribute.String("semaphore.name", "a")))
	assert.Equal(t, 2.0, c.value(t, "semaphore.capacity", attribute.String("semaphore.name", "b")))
	requirePanic(t, `otel: SemaphoreMetrics.Add: a semaphore named "a" is already exported`, func() {
		m.Add(semaphore.New(1, semaphore.WithName("a")))
	})
	m.Remove(b)
	m.Remove(b)
	c = collect(t, reader)
	assert.Len(t, c["semaphore.capacity"].Data.(metricdata.Sum[int64]).DataPoints, 1)
	require.NoError(t, m.Unregister())
	c = collect(t, reader)
	_, ok := c["semaphore.capacity"]
	assert.False(t, ok, "no callback, no state")
}

func TestWithBuckets_InvalidValuesPanic(t *testing.T) {
	meter, _ := newMeter(t)
	requirePanic(t, "otel: NewSemaphoreMetrics: WithBuckets(): no buckets", func() {
		_, _ = otel.NewSemaphoreMetrics(meter, otel.WithBuckets())
	})
	requirePanic(t, "otel: NewSemaphoreMetrics: WithBuckets([1 0.5]): bounds must increase", func() {
		_, _ = otel.NewSemaphoreMetrics(meter, otel.WithBuckets(1, 0.5))
	})
}

func TestSemaphoreMetrics_RecordsWaitsOfSemaphoresNotAdded(t *testing.T) {
	meter, reader := newMeter(t)
	m, err := otel.NewSemaphoreMetrics(meter)
	require.NoError(t, err)
	sem := semaphore.New(1, semaphore.WithName("other"), semaphore.WithObserver(m))
	require.NoError(t, sem.Acquire(context.Background(), 1))
	assert.ErrorIs(t, sem.AcquireTimeout(time.Millisecond, 1), semaphore.ErrTimedOut)
	c := collect(t, reader)
	other := attribute.String("semaphore.name", "other")
	p := c.histogram(t, "semaphore.wait.duration", other, attribute.String("semaphore.wait.outcome", "timed_out"))
	assert.Equal(t, uint64(1), p.Count, "the histogram works without Add")
	_, ok := c["semaphore.capacity"]
	assert.False(t, ok, "only the state needs Add")
}
