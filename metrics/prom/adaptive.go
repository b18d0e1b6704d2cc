package prom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fairsem/semaphore/adaptive"
)

// An AdaptiveCollector exports one adaptive.Limiter: its current limit and its
// algorithm's estimate of the capacity as gauges, the units in flight, the
// callers waiting, its counters, and each Priority's units in flight and
// waiting, calls acquired and calls shed (label priority="critical",
// "default" or "sheddable"), read from Stats at each scrape.
// Every metric carries the label limiter="NAME" (adaptive.WithName).
//
// All methods are safe for concurrent use.
type AdaptiveCollector struct {
	l    *adaptive.Limiter
	name string // fixed
}

var (
	adLabels = []string{"limiter"}

	descAdLimit    = prometheus.NewDesc("adaptive_limit", "The concurrency limit the limiter applies now.", adLabels, nil)
	descAdEstimate = prometheus.NewDesc("adaptive_capacity_estimate", "The algorithm's estimate of the backend's capacity, in units; 0 while unknown or when the algorithm makes none.", adLabels, nil)
	descAdInFlight = prometheus.NewDesc("adaptive_in_flight", "Units granted and not ended.", adLabels, nil)
	descAdCalls    = prometheus.NewDesc("adaptive_calls_total", "Calls ended, by verdict (success, dropped, ignored).", []string{"limiter", "outcome"}, nil)
	descAdWaiters  = prometheus.NewDesc("adaptive_waiters", "Calls waiting for the limit now.", adLabels, nil)
	descAdShed     = prometheus.NewDesc("adaptive_shed_total", "Calls refused by the deadline rule (or a level's cap), at once or after waiting.", adLabels, nil)
	descAdChanges  = prometheus.NewDesc("adaptive_limit_changes_total", "Windows that changed the limit, by direction (up, down).", []string{"limiter", "direction"}, nil)
	descAdWindows  = prometheus.NewDesc("adaptive_windows_total", "Sampling windows given to the algorithm.", adLabels, nil)

	adLevelLabels      = []string{"limiter", "priority"}
	descAdLevelFlight  = prometheus.NewDesc("adaptive_level_in_flight", "Units granted at the priority and not ended.", adLevelLabels, nil)
	descAdLevelWaiting = prometheus.NewDesc("adaptive_level_waiting", "Units waiting for the limit at the priority now.", adLevelLabels, nil)
	descAdLevelAcq     = prometheus.NewDesc("adaptive_level_acquired_total", "Calls granted at the priority.", adLevelLabels, nil)
	descAdLevelShed    = prometheus.NewDesc("adaptive_level_shed_total", "Calls shed at the priority, by when (at_once: refused before waiting; after_waiting: cut after waiting, or handed on at their grant).", []string{"limiter", "priority", "when"}, nil)
)

// NewAdaptiveCollector returns a collector for l. It panics if l is nil.
func NewAdaptiveCollector(l *adaptive.Limiter) *AdaptiveCollector {
	if l == nil {
		panic("prom: NewAdaptiveCollector(nil)")
	}
	return &AdaptiveCollector{l: l, name: l.Stats().Name}
}

// Describe implements prometheus.Collector.
func (c *AdaptiveCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descAdLimit, descAdEstimate, descAdInFlight, descAdWaiters, descAdCalls, descAdShed, descAdChanges, descAdWindows,
		descAdLevelFlight, descAdLevelWaiting, descAdLevelAcq, descAdLevelShed} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *AdaptiveCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.l.Stats()
	g := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{c.name}, labels...)...)
	}
	n := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), append([]string{c.name}, labels...)...)
	}
	g(descAdLimit, float64(s.Limit))
	g(descAdEstimate, float64(s.Estimate))
	g(descAdInFlight, float64(s.InFlight))
	n(descAdCalls, s.Succeeded, "success")
	n(descAdCalls, s.Dropped, "dropped")
	n(descAdCalls, s.Ignored, "ignored")
	n(descAdShed, s.Shed)
	n(descAdChanges, s.Increases, "up")
	n(descAdChanges, s.Decreases, "down")
	n(descAdWindows, s.Windows)
	g(descAdWaiters, float64(s.Waiters))
	for _, p := range []adaptive.Priority{adaptive.Critical, adaptive.Default, adaptive.Sheddable} {
		v, lv := s.Levels[p], p.String()
		g(descAdLevelFlight, float64(v.InFlight), lv)
		g(descAdLevelWaiting, float64(v.Waiting), lv)
		n(descAdLevelAcq, v.Acquired, lv)
		n(descAdLevelShed, v.ShedAtOnce, lv, "at_once")
		n(descAdLevelShed, v.Shed-v.ShedAtOnce, lv, "after_waiting")
	}
}
