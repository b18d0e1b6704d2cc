// Package prom exports semaphores and admission controllers of
// github.com/fairsem/semaphore to Prometheus.
//
// A SemaphoreCollector is a prometheus.Collector for any number of core
// semaphores, labelled by name, and their Observer, which feeds a wait-time
// histogram:
//
//	c := prom.NewSemaphoreCollector()
//	sem := semaphore.New(10, semaphore.WithName("db"), semaphore.WithObserver(c))
//	c.Add(sem)
//	prometheus.MustRegister(c)
//
// An AdmissionCollector does the same for one admission.Controller; its Acquire
// and Do wrap the controller's to measure the wait per operation.
//
// Metric names follow Prometheus conventions: base units in the name
// (_seconds, _bytes, _units), _total for counters. Gauges and counters are read
// from Stats at scrape time, so a scrape costs one Stats call per semaphore or
// controller and nothing happens between scrapes; only the histograms are fed as
// events occur. The README lists the semaphore and admission metrics.
//
// Decisions: the wait-time histogram of a semaphore counts only calls that
// waited in the queue (a refusal without waiting is counted in
// semaphore_refusals_total instead, so it does not drag the quantiles to zero);
// the admission histograms count every Acquire made through the collector,
// including those admitted at once, because the controller's exported API does
// not tell the two apart.
package prom
