package otel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/fairsem/semaphore/adaptive"
)

// AdaptiveMetrics is the instrument set for one adaptive.Limiter: its current
// limit and its algorithm's estimate of the capacity as gauges, the units in
// flight, and its counters, observed from Stats
// at each collection. Every measurement carries adaptive.limiter.name
// (adaptive.WithName).
//
// All methods are safe for concurrent use.
type AdaptiveMetrics struct {
	reg metric.Registration
}

const (
	keyLimiter     = attribute.Key("adaptive.limiter.name")
	keyAdOutcome   = attribute.Key("adaptive.outcome")
	keyAdDirection = attribute.Key("adaptive.direction")
)

// NewAdaptiveMetrics creates the instruments for l on meter. It returns the
// meter's error if an instrument or the callback cannot be registered, and
// panics if l is nil.
func NewAdaptiveMetrics(meter metric.Meter, l *adaptive.Limiter) (*AdaptiveMetrics, error) {
	if l == nil {
		panic("otel: NewAdaptiveMetrics(nil)")
	}
	name := keyLimiter.String(l.Stats().Name)
	var (
		errs                 [7]error
		limit, estimate      metric.Int64ObservableGauge
		inFlight             metric.Int64ObservableUpDownCounter
		calls, shed, changes metric.Int64ObservableCounter
	)
	limit, errs[0] = meter.Int64ObservableGauge("adaptive.limit", metric.WithUnit("{call}"),
		metric.WithDescription("The concurrency limit the limiter applies now."))
	inFlight, errs[1] = meter.Int64ObservableUpDownCounter("adaptive.in_flight", metric.WithUnit("{unit}"),
		metric.WithDescription("Units granted and not ended."))
	calls, errs[2] = meter.Int64ObservableCounter("adaptive.calls", metric.WithUnit("{call}"),
		metric.WithDescription("Calls ended, by adaptive.outcome: success, dropped, ignored."))
	shed, errs[3] = meter.Int64ObservableCounter("adaptive.shed", metric.WithUnit("{call}"),
		metric.WithDescription("Waits failed by the standing-queue policy."))
	changes, errs[4] = meter.Int64ObservableCounter("adaptive.limit.changes", metric.WithUnit("{change}"),
		metric.WithDescription("Windows that changed the limit, by adaptive.direction: up, down."))
	estimate, errs[6] = meter.Int64ObservableGauge("adaptive.capacity.estimate", metric.WithUnit("{unit}"),
		metric.WithDescription("The algorithm's estimate of the backend's capacity; 0 while unknown or when the algorithm makes none."))
	if err := errors.Join(append(errs[:5:5], errs[6])...); err != nil {
		return nil, err
	}
	m := &AdaptiveMetrics{}
	one := metric.WithAttributes(name)
	m.reg, errs[5] = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := l.Stats()
		o.ObserveInt64(limit, int64(s.Limit), one)
		o.ObserveInt64(estimate, int64(s.Estimate), one)
		o.ObserveInt64(inFlight, int64(s.InFlight), one)
		o.ObserveInt64(calls, int64(s.Succeeded), metric.WithAttributes(name, keyAdOutcome.String("success")))
		o.ObserveInt64(calls, int64(s.Dropped), metric.WithAttributes(name, keyAdOutcome.String("dropped")))
		o.ObserveInt64(calls, int64(s.Ignored), metric.WithAttributes(name, keyAdOutcome.String("ignored")))
		o.ObserveInt64(shed, int64(s.Shed), one)
		o.ObserveInt64(changes, int64(s.Increases), metric.WithAttributes(name, keyAdDirection.String("up")))
		o.ObserveInt64(changes, int64(s.Decreases), metric.WithAttributes(name, keyAdDirection.String("down")))
		return nil
	}, limit, estimate, inFlight, calls, shed, changes)
	if errs[5] != nil {
		return nil, errs[5]
	}
	return m, nil
}

// Unregister removes the collection callback from the meter.
func (m *AdaptiveMetrics) Unregister() error { return m.reg.Unregister() }
