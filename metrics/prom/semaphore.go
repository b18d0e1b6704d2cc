package prom

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fairsem/semaphore"
)

// A SemaphoreCollector exports core semaphores: their state and counters, read
// from Stats at each scrape, and a histogram of the time calls waited, fed as the
// semaphores' Observer. Register it once; Add the semaphores to export. Every
// metric carries the label semaphore="NAME" (WithName), so names must be unique
// within a collector.
//
// All methods are safe for concurrent use.
type SemaphoreCollector struct {
	mu   sync.Mutex
	sems map[string]*semaphore.Semaphore // by name; guarded by mu

	outcomes sync.Map // *semaphore.Semaphore → *[nOutcomes]prometheus.Observer, filled by Add

	wait    *prometheus.HistogramVec // semaphore, outcome
	refused *prometheus.CounterVec   // semaphore, outcome
}

// nOutcomes counts the outcomes a core semaphore ends calls in: all but Shed,
// which only admission and adaptive decide.
const nOutcomes = int(semaphore.QueueFull) + 1

var (
	semLabels = []string{"semaphore"}

	descCapacity  = prometheus.NewDesc("semaphore_capacity_units", "Units the semaphore holds in all.", semLabels, nil)
	descAvailable = prometheus.NewDesc("semaphore_available_units", "Units that could be acquired now (0 while in debt or broken).", semLabels, nil)
	descWaiters   = prometheus.NewDesc("semaphore_waiters", "Calls waiting in the queue now.", semLabels, nil)
	descBroken    = prometheus.NewDesc("semaphore_broken", "1 once the semaphore is broken, else 0.", semLabels, nil)
	descAcquired  = prometheus.NewDesc("semaphore_acquired_total", "Successful acquisitions, waited for or not.", semLabels, nil)
	descImmediate = prometheus.NewDesc("semaphore_acquired_immediately_total", "Acquisitions granted without waiting.", semLabels, nil)
	descQueued    = prometheus.NewDesc("semaphore_queued_total", "Calls that joined the wait queue.", semLabels, nil)
	descTimedOut  = prometheus.NewDesc("semaphore_timed_out_total", "Calls that failed on a deadline: AcquireTimeout's or the context's.", semLabels, nil)
	descCancelled = prometheus.NewDesc("semaphore_cancelled_total", "Calls whose context was cancelled (a deadline counts as timed out).", semLabels, nil)
	descRejected  = prometheus.NewDesc("semaphore_rejected_total", "Calls refused: queue full or larger than the capacity.", semLabels, nil)
	descWaitTime  = prometheus.NewDesc("semaphore_wait_seconds_total", "Total time spent waiting in the queue.", semLabels, nil)
)

// NewSemaphoreCollector returns a collector with no semaphores yet. It panics if
// an option has an invalid value.
func NewSemaphoreCollector(opts ...Option) *SemaphoreCollector {
	cfg := newConfig("NewSemaphoreCollector", opts)
	return &SemaphoreCollector{
		sems: map[string]*semaphore.Semaphore{},
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "semaphore_wait_duration_seconds",
			Help:    "Time calls waited in the queue, by how the wait ended.",
			Buckets: cfg.buckets,
		}, []string{"semaphore", "outcome"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "semaphore_refusals_total",
			Help: "Calls that failed without waiting in the queue, by outcome.",
		}, []string{"semaphore", "outcome"}),
	}
}

// Add exports sem. It panics if a semaphore of the same name was added and not
// removed: the two would be indistinguishable.
func (c *SemaphoreCollector) Add(sem *semaphore.Semaphore) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.sems[sem.Name()]; dup {
		panic(fmt.Sprintf("prom: SemaphoreCollector.Add: a semaphore named %q is already exported", sem.Name()))
	}
	c.sems[sem.Name()] = sem
	var obs [nOutcomes]prometheus.Observer
	for o := range obs {
		obs[o] = c.wait.WithLabelValues(sem.Name(), semaphore.Outcome(o).String())
	}
	c.outcomes.Store(sem, &obs)
}

// Remove stops exporting sem, and drops its histogram and refusal series.
func (c *SemaphoreCollector) Remove(sem *semaphore.Semaphore) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sems[sem.Name()] != sem {
		return
	}
	delete(c.sems, sem.Name())
	c.outcomes.Delete(sem)
	c.wait.DeletePartialMatch(prometheus.Labels{"semaphore": sem.Name()})
	c.refused.DeletePartialMatch(prometheus.Labels{"semaphore": sem.Name()})
}

// WaitEnded implements semaphore.Observer: a wait that queued goes into the
// wait-time histogram, a refusal into semaphore_refusals_total.
func (c *SemaphoreCollector) WaitEnded(s *semaphore.Semaphore, e semaphore.WaitEvent) {
	if !e.Queued {
		c.refused.WithLabelValues(s.Name(), e.Outcome.String()).Inc()
		return
	}
	if obs, ok := c.outcomes.Load(s); ok && int(e.Outcome) < nOutcomes {
		obs.(*[nOutcomes]prometheus.Observer)[e.Outcome].Observe(e.Waited.Seconds())
		return
	}
	c.wait.WithLabelValues(s.Name(), e.Outcome.String()).Observe(e.Waited.Seconds())
}

// Broken implements semaphore.Observer. It records nothing: semaphore_broken
// reads the state at scrape time, and the waiters that Break fails are counted
// with outcome="broken".
func (c *SemaphoreCollector) Broken(*semaphore.Semaphore, error) {}

// Describe implements prometheus.Collector.
func (c *SemaphoreCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCapacity, descAvailable, descWaiters, descBroken, descAcquired,
		descImmediate, descQueued, descTimedOut, descCancelled, descRejected, descWaitTime} {
		ch <- d
	}
	c.wait.Describe(ch)
	c.refused.Describe(ch)
}

// Collect implements prometheus.Collector: one Stats call per semaphore.
func (c *SemaphoreCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	sems := make([]*semaphore.Semaphore, 0, len(c.sems))
	for _, s := range c.sems {
		sems = append(sems, s)
	}
	c.mu.Unlock()
	for _, s := range sems {
		st := s.Stats()
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, st.Name)
		}
		counter := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, st.Name)
		}
		gauge(descCapacity, float64(st.Capacity))
		gauge(descAvailable, float64(st.Available))
		gauge(descWaiters, float64(st.Waiters))
		gauge(descBroken, boolValue(st.Broken))
		counter(descAcquired, float64(st.Acquired))
		counter(descImmediate, float64(st.AcquiredImmediately))
		counter(descQueued, float64(st.Queued))
		counter(descTimedOut, float64(st.TimedOut))
		counter(descCancelled, float64(st.Cancelled))
		counter(descRejected, float64(st.Rejected))
		counter(descWaitTime, st.WaitTime.Seconds())
	}
	c.wait.Collect(ch)
	c.refused.Collect(ch)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
