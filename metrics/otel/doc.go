// Package otel exports semaphores, admission controllers, keyed sets and
// adaptive limiters of github.com/fairsem/semaphore as OpenTelemetry metrics.
//
// SemaphoreMetrics registers instruments for any number of core semaphores on a
// metric.Meter and is their Observer, which feeds a wait-duration histogram:
//
//	m, err := otel.NewSemaphoreMetrics(meter)
//	sem := semaphore.New(10, semaphore.WithName("db"), semaphore.WithObserver(m))
//	m.Add(sem)
//
// AdmissionMetrics does the same for one admission.Controller; its Acquire and
// Do wrap the controller's to measure the wait per operation.
//
// KeyedMetrics observes one keyed.Set: the set's keys active, units held,
// waiters, limit (with keyed.WithLimit), broken state and counters, and the
// units held and waiters of at most topKeys keys, those holding the most:
//
//	km, err := otel.NewKeyedMetrics(meter, uploads, 10)
//
// Per-key measurements are bounded by topKeys, never one per active key, since
// keys (tenants, users) are unbounded and so would be the attribute sets;
// topKeys = 0 observes none. A collection has at most topKeys of them, but a
// backend keeps every key that was ever in the top. A keyed set has no wait-duration histogram: a
// keyed.Observer hears the key level only, so the waits at the set's limit or
// global semaphore would be missing from it. AdaptiveMetrics observes one
// adaptive.Limiter.
//
// Names and units follow the OpenTelemetry semantic-convention style, after the
// db.client.connection.* pool metrics: dot-separated lower-case names, UCUM units
// ("s", "By", "{request}"), one metric with an attribute where values add up
// (error.type for failures), and attributes semaphore.name,
// admission.controller.name, keyed.set.name and adaptive.limiter.name to tell
// instances apart. State and counters are read from Stats in a callback at
// collection time (for a keyed set, O(k) for k active keys, O(k log k) with
// topKeys > 0); only the histograms are recorded as events occur. The README
// lists the semaphore, admission and keyed metrics.
package otel
