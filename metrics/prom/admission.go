package prom

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fairsem/semaphore/admission"
)

// An AdmissionCollector exports one admission.Controller: its Stats, read at each
// scrape, and per operation the time Acquire took and the calls in progress,
// measured by the collector's own Acquire and Do, which wrap the controller's.
// Every metric carries the label controller="NAME".
//
// All methods are safe for concurrent use.
type AdmissionCollector struct {
	ctrl *admission.Controller
	name string // the controller's name; fixed

	wait    *prometheus.HistogramVec // controller, op, outcome
	waiting *prometheus.GaugeVec     // controller, op
}

var (
	admLabels = []string{"controller"}

	descLimitCount     = prometheus.NewDesc("admission_count_limit", "Limit on concurrent permits.", admLabels, nil)
	descLimitMemory    = prometheus.NewDesc("admission_memory_limit_bytes", "Limit on memory held by permits.", admLabels, nil)
	descHeldCount      = prometheus.NewDesc("admission_count_held", "Count held by permits now (may exceed the limit).", admLabels, nil)
	descHeldMemory     = prometheus.NewDesc("admission_memory_held_bytes", "Memory held by permits now (may exceed the limit).", admLabels, nil)
	descAdmAcquired    = prometheus.NewDesc("admission_acquired_total", "Permits admitted (Acquire and Readmit), at once or after queuing.", admLabels, nil)
	descAdmAcquiredNow = prometheus.NewDesc("admission_acquired_immediately_total", "Permits admitted without queuing.", admLabels, nil)
	descQueuedTotal    = prometheus.NewDesc("admission_queued_total", "Requests that joined a queue: admission, or memory past the serialize limit.", []string{"controller", "queue"}, nil)
	descQueuedReason   = prometheus.NewDesc("admission_queued_reason_total", "Requests that queued for admission, by the resource that was short.", []string{"controller", "reason"}, nil)
	descAdmRejected    = prometheus.NewDesc("admission_rejected_total", "Requests refused at once, the admission queue being full.", admLabels, nil)
	descShed           = prometheus.NewDesc("admission_shed_total", "Requests queued, then refused at the head by preemptive shedding.", admLabels, nil)
	descAdmTimedOut    = prometheus.NewDesc("admission_timed_out_total", "Requests whose context's deadline passed.", admLabels, nil)
	descAdmCancelled   = prometheus.NewDesc("admission_cancelled_total", "Requests whose context was cancelled, whatever its cause.", admLabels, nil)
	descKilled         = prometheus.NewDesc("admission_killed_total", "Permits that hit the memory kill limit.", admLabels, nil)
	descEvictions      = prometheus.NewDesc("admission_evictions_total", "Parked permits evicted: for admission, explicitly or on Break (demand), or by their TTL (ttl).", []string{"controller", "reason"}, nil)
	descPermitsMade    = prometheus.NewDesc("admission_permits_created_total", "Permits ever created (Acquire and Track).", admLabels, nil)
	descQueueLength    = prometheus.NewDesc("admission_queue_length", "Requests in a queue now.", []string{"controller", "queue"}, nil)
	descInactive       = prometheus.NewDesc("admission_inactive_permits", "Parked permits now.", admLabels, nil)
	descPermits        = prometheus.NewDesc("admission_permits", "Permits not yet released, admitted or waiting.", admLabels, nil)
	descNeedCPU        = prometheus.NewDesc("admission_need_cpu_permits", "Permits holding NeedCPU now.", admLabels, nil)
	descAwaiting       = prometheus.NewDesc("admission_awaiting_permits", "Permits holding NeedCPU and Await now.", admLabels, nil)
)

// NewAdmissionCollector returns a collector for ctrl. It panics if an option has
// an invalid value.
func NewAdmissionCollector(ctrl *admission.Controller, opts ...Option) *AdmissionCollector {
	cfg := newConfig("NewAdmissionCollector", opts)
	name := ctrl.Stats().Name
	return &AdmissionCollector{
		ctrl: ctrl,
		name: name,
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:        "admission_wait_duration_seconds",
			Help:        "Time Acquire took through the collector, per operation and outcome.",
			Buckets:     cfg.buckets,
			ConstLabels: prometheus.Labels{"controller": name},
		}, []string{"op", "outcome"}),
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name:        "admission_acquiring",
			Help:        "Acquire calls in progress through the collector, per operation: queued, or being admitted.",
			ConstLabels: prometheus.Labels{"controller": name},
		}, []string{"op"}),
	}
}

// Acquire is the controller's Acquire, measured: the call counts in
// admission_acquiring{op} while it runs, and its duration goes into
// admission_wait_duration_seconds{op, outcome}.
func (c *AdmissionCollector) Acquire(ctx context.Context, op string, memory int64, opts ...admission.PermitOption) (*admission.Permit, error) {
	g := c.waiting.WithLabelValues(op)
	g.Inc()
	start := time.Now()
	p, err := c.ctrl.Acquire(ctx, op, memory, opts...)
	c.wait.WithLabelValues(op, admission.ResultLabel(err)).Observe(time.Since(start).Seconds())
	g.Dec()
	return p, err
}

// Do is the controller's Do with its admission measured as by Acquire: it admits
// the request, runs fn with the permit, and releases the permit on every path,
// including a panic in fn. fn is not called when admission fails.
func (c *AdmissionCollector) Do(ctx context.Context, op string, memory int64, fn func(context.Context, *admission.Permit) error, opts ...admission.PermitOption) error {
	p, err := c.Acquire(ctx, op, memory, opts...)
	if err != nil {
		return err
	}
	defer p.Release()
	return fn(ctx, p)
}

// Describe implements prometheus.Collector.
func (c *AdmissionCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLimitCount, descLimitMemory, descHeldCount, descHeldMemory,
		descAdmAcquired, descAdmAcquiredNow, descQueuedTotal, descQueuedReason, descAdmRejected, descShed,
		descAdmTimedOut, descAdmCancelled,
		descKilled, descEvictions, descPermitsMade, descQueueLength, descInactive, descPermits,
		descNeedCPU, descAwaiting} {
		ch <- d
	}
	c.wait.Describe(ch)
	c.waiting.Describe(ch)
}

// Collect implements prometheus.Collector: one Stats call.
func (c *AdmissionCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.ctrl.Stats()
	emit := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, t, v, append([]string{c.name}, labels...)...)
	}
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	emit(descLimitCount, gauge, float64(st.Limits.Count))
	emit(descLimitMemory, gauge, float64(st.Limits.Memory))
	emit(descHeldCount, gauge, float64(st.Held.Count))
	emit(descHeldMemory, gauge, float64(st.Held.Memory))
	emit(descAdmAcquired, counter, float64(st.Acquired))
	emit(descAdmAcquiredNow, counter, float64(st.AcquiredImmediately))
	emit(descQueuedTotal, counter, float64(st.QueuedForAdmission), "admission")
	emit(descQueuedTotal, counter, float64(st.QueuedForMemory), "memory")
	emit(descQueuedReason, counter, float64(st.QueuedBecauseCount), "count")
	emit(descQueuedReason, counter, float64(st.QueuedBecauseMemory), "memory")
	emit(descQueuedReason, counter, float64(st.QueuedBecauseCPU), "cpu")
	emit(descAdmRejected, counter, float64(st.Rejected))
	emit(descShed, counter, float64(st.Shed))
	emit(descAdmTimedOut, counter, float64(st.TimedOut))
	emit(descAdmCancelled, counter, float64(st.Cancelled))
	emit(descKilled, counter, float64(st.Killed))
	emit(descEvictions, counter, float64(st.PermitEvictions), "demand")
	emit(descEvictions, counter, float64(st.TimeEvictions), "ttl")
	emit(descPermitsMade, counter, float64(st.TotalPermits))
	emit(descQueueLength, gauge, float64(st.Waiters), "admission")
	emit(descQueueLength, gauge, float64(st.MemoryWaiters), "memory")
	emit(descInactive, gauge, float64(st.Inactive))
	emit(descPermits, gauge, float64(st.CurrentPermits))
	emit(descNeedCPU, gauge, float64(st.NeedCPUPermits))
	emit(descAwaiting, gauge, float64(st.AwaitingPermits))
	c.wait.Collect(ch)
	c.waiting.Collect(ch)
}
