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
// flight, the callers waiting, its counters, and each Priority's units in
// flight and waiting, calls acquired and calls shed (attribute
// adaptive.priority: critical, default, sheddable), observed from Stats at
// each collection. Every measurement carries adaptive.limiter.name
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
	keyAdPriority  = attribute.Key("adaptive.priority")
	keyAdShedWhen  = attribute.Key("adaptive.shed.when")
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
		errs                                [11]error
		limit, estimate                     metric.Int64ObservableGauge
		inFlight, waiters, lvFlight, lvWait metric.Int64ObservableUpDownCounter
		calls, shed, changes, lvAcq, lvShed metric.Int64ObservableCounter
	)
	limit, errs[0] = meter.Int64ObservableGauge("adaptive.limit", metric.WithUnit("{call}"),
		metric.WithDescription("The concurrency limit the limiter applies now."))
	inFlight, errs[1] = meter.Int64ObservableUpDownCounter("adaptive.in_flight", metric.WithUnit("{unit}"),
		metric.WithDescription("Units granted and not ended."))
	calls, errs[2] = meter.Int64ObservableCounter("adaptive.calls", metric.WithUnit("{call}"),
		metric.WithDescription("Calls ended, by adaptive.outcome: success, dropped, ignored."))
	shed, errs[3] = meter.Int64ObservableCounter("adaptive.shed", metric.WithUnit("{call}"),
		metric.WithDescription("Calls refused by the deadline rule (or a level's cap), at once or after waiting."))
	changes, errs[4] = meter.Int64ObservableCounter("adaptive.limit.changes", metric.WithUnit("{change}"),
		metric.WithDescription("Windows that changed the limit, by adaptive.direction: up, down."))
	estimate, errs[6] = meter.Int64ObservableGauge("adaptive.capacity.estimate", metric.WithUnit("{unit}"),
		metric.WithDescription("The algorithm's estimate of the backend's capacity; 0 while unknown or when the algorithm makes none."))
	waiters, errs[7] = meter.Int64ObservableUpDownCounter("adaptive.waiters", metric.WithUnit("{call}"),
		metric.WithDescription("Calls waiting for the limit now."))
	lvFlight, errs[8] = meter.Int64ObservableUpDownCounter("adaptive.level.in_flight", metric.WithUnit("{unit}"),
		metric.WithDescription("Units granted at the adaptive.priority and not ended."))
	lvWait, errs[9] = meter.Int64ObservableUpDownCounter("adaptive.level.waiting", metric.WithUnit("{unit}"),
		metric.WithDescription("Units waiting for the limit at the adaptive.priority now."))
	lvAcq, errs[10] = meter.Int64ObservableCounter("adaptive.level.acquired", metric.WithUnit("{call}"),
		metric.WithDescription("Calls granted at the adaptive.priority."))
	var lvShedErr error
	lvShed, lvShedErr = meter.Int64ObservableCounter("adaptive.level.shed", metric.WithUnit("{call}"),
		metric.WithDescription("Calls shed at the adaptive.priority, by adaptive.shed.when: at_once (refused before waiting), after_waiting."))
	if err := errors.Join(append(append(errs[:5:5], errs[6:]...), lvShedErr)...); err != nil {
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
		o.ObserveInt64(waiters, int64(s.Waiters), one)
		for _, p := range []adaptive.Priority{adaptive.Critical, adaptive.Default, adaptive.Sheddable} {
			v, lv := s.Levels[p], keyAdPriority.String(p.String())
			o.ObserveInt64(lvFlight, int64(v.InFlight), metric.WithAttributes(name, lv))
			o.ObserveInt64(lvWait, int64(v.Waiting), metric.WithAttributes(name, lv))
			o.ObserveInt64(lvAcq, int64(v.Acquired), metric.WithAttributes(name, lv))
			o.ObserveInt64(lvShed, int64(v.ShedAtOnce), metric.WithAttributes(name, lv, keyAdShedWhen.String("at_once")))
			o.ObserveInt64(lvShed, int64(v.Shed-v.ShedAtOnce), metric.WithAttributes(name, lv, keyAdShedWhen.String("after_waiting")))
		}
		return nil
	}, limit, estimate, inFlight, calls, shed, changes, waiters, lvFlight, lvWait, lvAcq, lvShed)
	if errs[5] != nil {
		return nil, errs[5]
	}
	return m, nil
}

// Unregister removes the collection callback from the meter.
func (m *AdaptiveMetrics) Unregister() error { return m.reg.Unregister() }
