package otel_test

import (
	"context"
	"testing"

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
