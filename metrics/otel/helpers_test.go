package otel_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"
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

// newMeter returns a meter whose measurements the returned reader collects in
// memory.
func newMeter(t *testing.T) (metric.Meter, *sdkmetric.ManualReader) {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { require.NoError(t, provider.Shutdown(context.Background())) })
	return provider.Meter("test"), reader
}

// collected is one collection, indexed by metric name.
type collected map[string]metricdata.Metrics

func collect(t *testing.T, r *sdkmetric.ManualReader) collected {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	out := collected{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// value returns the int64 or float64 point of metric name with exactly the given
// attributes, as a float64, and its unit.
func (c collected) value(t *testing.T, name string, kv ...attribute.KeyValue) float64 {
	t.Helper()
	m, ok := c[name]
	require.True(t, ok, "no metric %q", name)
	want := attribute.NewSet(kv...)
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			if p.Attributes.Equals(&want) {
				return float64(p.Value)
			}
		}
	case metricdata.Sum[float64]:
		for _, p := range d.DataPoints {
			if p.Attributes.Equals(&want) {
				return p.Value
			}
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			if p.Attributes.Equals(&want) {
				return float64(p.Value)
			}
		}
	default:
		require.Failf(t, "unexpected data", "%s: %T", name, m.Data)
	}
	require.Failf(t, "no point", "%s{%v}", name, want.Encoded(attribute.DefaultEncoder()))
	return 0
}

// histogram returns the point of histogram name with exactly the given attributes.
func (c collected) histogram(t *testing.T, name string, kv ...attribute.KeyValue) metricdata.HistogramDataPoint[float64] {
	t.Helper()
	m, ok := c[name]
	require.True(t, ok, "no metric %q", name)
	d, ok := m.Data.(metricdata.Histogram[float64])
	require.True(t, ok, "%s: %T", name, m.Data)
	want := attribute.NewSet(kv...)
	for _, p := range d.DataPoints {
		if p.Attributes.Equals(&want) {
			return p
		}
	}
	require.Failf(t, "no point", "%s{%v}", name, want.Encoded(attribute.DefaultEncoder()))
	return metricdata.HistogramDataPoint[float64]{}
}
