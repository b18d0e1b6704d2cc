// Package otel exports semaphores and admission controllers of
// github.com/fairsem/semaphore as OpenTelemetry metrics.
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
// Names and units follow the OpenTelemetry semantic-convention style, after the
// db.client.connection.* pool metrics: dot-separated lower-case names, UCUM units
// ("s", "By", "{request}"), one metric with an attribute where values add up
// (error.type for failures), and attributes semaphore.name /
// admission.controller.name to tell instances apart. State and counters are read
// from Stats in a callback at collection time; only the histograms are recorded
// as events occur. The README lists the semaphore and admission metrics.
package otel
