package otel_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
	"github.com/fairsem/semaphore/metrics/otel"
)

func TestAdaptiveMetrics_ObservesTheLimitAsAGaugeAndItsChanges(t *testing.T) {
	meter, reader := newMeter(t)
	l := adaptive.New(semaphore.New(1), adaptive.NewAIMD(adaptive.AIMDConfig{InitialLimit: 4, MinLimit: 1}),
		adaptive.WithName("api"), adaptive.WithWindow(1, 0, 0))
	m, err := otel.NewAdaptiveMetrics(meter, l)
	require.NoError(t, err)
	c, err := l.Acquire(context.Background())
	require.NoError(t, err)
	c.Done(adaptive.Dropped) // 4 -> 3
	got := collect(t, reader)
	name := attribute.String("adaptive.limiter.name", "api")
	assert.Equal(t, 3.0, got.value(t, "adaptive.limit", name))
	assert.Equal(t, 0.0, got.value(t, "adaptive.capacity.estimate", name), "AIMD makes no estimate")
	assert.Equal(t, 0.0, got.value(t, "adaptive.in_flight", name))
	assert.Equal(t, 1.0, got.value(t, "adaptive.calls", name, attribute.String("adaptive.outcome", "dropped")))
	assert.Equal(t, 1.0, got.value(t, "adaptive.limit.changes", name, attribute.String("adaptive.direction", "down")))
	assert.Equal(t, 0.0, got.value(t, "adaptive.limit.changes", name, attribute.String("adaptive.direction", "up")))
	require.NoError(t, m.Unregister())
	requirePanic(t, "NewAdaptiveMetrics(nil)", func() { _, _ = otel.NewAdaptiveMetrics(meter, nil) })
}

func TestAdaptiveMetrics_ObservesEachPriority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meter, reader := newMeter(t)
		l := adaptive.New(semaphore.New(2), adaptive.NewAIMD(adaptive.AIMDConfig{InitialLimit: 2, MinLimit: 1}), adaptive.WithName("api"))
		m, err := otel.NewAdaptiveMetrics(meter, l)
		require.NoError(t, err)
		crit, err := l.AcquireN(adaptive.ContextWithPriority(context.Background(), adaptive.Critical), 2)
		require.NoError(t, err)
		_, err = l.Acquire(adaptive.ContextWithPriority(context.Background(), adaptive.Sheddable)) // waits its cap, then is shed
		require.ErrorIs(t, err, semaphore.ErrShed)
		got := collect(t, reader)
		name := attribute.String("adaptive.limiter.name", "api")
		level := func(p string) attribute.KeyValue { return attribute.String("adaptive.priority", p) }
		assert.Equal(t, 2.0, got.value(t, "adaptive.level.in_flight", name, level("critical")))
		assert.Equal(t, 0.0, got.value(t, "adaptive.level.in_flight", name, level("sheddable")))
		assert.Equal(t, 0.0, got.value(t, "adaptive.level.waiting", name, level("default")))
		assert.Equal(t, 1.0, got.value(t, "adaptive.level.acquired", name, level("critical")))
		assert.Equal(t, 1.0, got.value(t, "adaptive.level.shed", name, level("sheddable"), attribute.String("adaptive.shed.when", "after_waiting")))
		assert.Equal(t, 0.0, got.value(t, "adaptive.level.shed", name, level("sheddable"), attribute.String("adaptive.shed.when", "at_once")))
		assert.Equal(t, 1.0, got.value(t, "adaptive.shed", name))
		assert.Equal(t, 0.0, got.value(t, "adaptive.waiters", name))
		crit.Release()
		require.NoError(t, m.Unregister())
	})
}
