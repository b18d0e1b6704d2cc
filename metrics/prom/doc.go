// Package prom exports semaphores, admission controllers, keyed sets and
// adaptive limiters of github.com/fairsem/semaphore to Prometheus.
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
// A KeyedCollector exports one keyed.Set: the set's keys active, units held,
// waiters, limit (with keyed.WithLimit), broken state and counters, and the
// units held and waiters of at most topKeys keys, those holding the most:
//
//	prometheus.MustRegister(prom.NewKeyedCollector(uploads, 10))
//
// Per-key series are bounded by topKeys, never one per active key, since keys
// (tenants, users) are unbounded and so would be the series; topKeys = 0
// exports none. A scrape has at most topKeys of them, but the database keeps
// every key that was ever in the top. An AdaptiveCollector exports one adaptive.Limiter.
//
// Metric names follow Prometheus conventions: base units in the name
// (_seconds, _bytes, _units), _total for counters. Gauges and counters are read
// from Stats at scrape time, so a scrape costs one Stats call per semaphore or
// controller and nothing happens between scrapes (a KeyedCollector's costs O(k)
// for k active keys, O(k log k) with topKeys > 0); only the histograms are fed as events occur.
// The README lists the semaphore, admission and keyed metrics.
//
// Decisions: the wait-time histogram of a semaphore counts only calls that
// waited in the queue (a refusal without waiting is counted in
// semaphore_refusals_total instead, so it does not drag the quantiles to zero);
// the admission histograms count every Acquire made through the collector,
// including those admitted at once, because the controller's exported API does
// not tell the two apart. A keyed set has no wait-time histogram: a
// keyed.Observer hears the key level only, so the waits at the set's limit or
// global semaphore would be missing from it.
package prom
