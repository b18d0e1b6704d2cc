package otel

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/fairsem/semaphore/admission"
)

// AdmissionMetrics is the instrument set for one admission.Controller: its Stats,
// observed at each collection, and per operation the time Acquire took and the
// calls in progress, measured by its own Acquire and Do, which wrap the
// controller's. Every measurement carries admission.controller.name.
//
// All methods are safe for concurrent use.
type AdmissionMetrics struct {
	ctrl *admission.Controller
	name attribute.KeyValue // admission.controller.name; fixed

	wait      metric.Float64Histogram
	acquiring metric.Int64UpDownCounter
	reg       metric.Registration
}

const (
	keyController = attribute.Key("admission.controller.name")
	keyOperation  = attribute.Key("admission.operation")
	keyAdmOutcome = attribute.Key("admission.outcome")
	keyQueue      = attribute.Key("admission.queue")
	keyResource   = attribute.Key("admission.resource")
	keyEviction   = attribute.Key("admission.eviction.reason")
	keyAdmitNow   = attribute.Key("admission.immediate")
	keyPermitKind = attribute.Key("admission.permit.state")
)

// NewAdmissionMetrics creates the instruments for ctrl on meter. It returns the
// meter's error if an instrument or the callback cannot be registered, and panics
// if an option has an invalid value.
func NewAdmissionMetrics(meter metric.Meter, ctrl *admission.Controller, opts ...Option) (*AdmissionMetrics, error) {
	cfg := newConfig("NewAdmissionMetrics", opts)
	m := &AdmissionMetrics{ctrl: ctrl, name: keyController.String(ctrl.Stats().Name)}
	var (
		errs                               [18]error
		countLimit, countHeld              metric.Int64ObservableUpDownCounter
		memLimit, memHeld                  metric.Int64ObservableUpDownCounter
		queueLength, permits               metric.Int64ObservableUpDownCounter
		acquired, queued, causes, rejected metric.Int64ObservableCounter
		shed, timedOut, cancelled          metric.Int64ObservableCounter
		killed, evictions, total           metric.Int64ObservableCounter
	)
	m.wait, errs[0] = meter.Float64Histogram("admission.wait.duration", metric.WithUnit("s"),
		metric.WithDescription("Time Acquire took through these instruments, per operation and outcome."),
		metric.WithExplicitBucketBoundaries(cfg.buckets...))
	m.acquiring, errs[1] = meter.Int64UpDownCounter("admission.acquiring", metric.WithUnit("{request}"),
		metric.WithDescription("Acquire calls in progress through these instruments, per operation: queued, or being admitted."))
	countLimit, errs[2] = meter.Int64ObservableUpDownCounter("admission.count.limit", metric.WithUnit("{permit}"),
		metric.WithDescription("Limit on concurrent permits."))
	countHeld, errs[3] = meter.Int64ObservableUpDownCounter("admission.count.held", metric.WithUnit("{permit}"),
		metric.WithDescription("Count held by permits now (may exceed the limit)."))
	memLimit, errs[4] = meter.Int64ObservableUpDownCounter("admission.memory.limit", metric.WithUnit("By"),
		metric.WithDescription("Limit on memory held by permits."))
	memHeld, errs[5] = meter.Int64ObservableUpDownCounter("admission.memory.held", metric.WithUnit("By"),
		metric.WithDescription("Memory held by permits now (may exceed the limit)."))
	queueLength, errs[6] = meter.Int64ObservableUpDownCounter("admission.queue.length", metric.WithUnit("{request}"),
		metric.WithDescription("Requests in a queue now, by admission.queue."))
	permits, errs[7] = meter.Int64ObservableUpDownCounter("admission.permits", metric.WithUnit("{permit}"),
		metric.WithDescription("Permits now, by admission.permit.state: all (not yet released), inactive (parked), need_cpu, awaiting."))
	acquired, errs[8] = meter.Int64ObservableCounter("admission.acquired", metric.WithUnit("{permit}"),
		metric.WithDescription("Permits admitted (Acquire and Readmit), by whether they were admitted without queuing."))
	queued, errs[9] = meter.Int64ObservableCounter("admission.queued", metric.WithUnit("{request}"),
		metric.WithDescription("Requests that joined a queue, by admission.queue."))
	causes, errs[10] = meter.Int64ObservableCounter("admission.queue.causes", metric.WithUnit("{request}"),
		metric.WithDescription("Requests that queued for admission, by the admission.resource that was short."))
	rejected, errs[11] = meter.Int64ObservableCounter("admission.rejected", metric.WithUnit("{request}"),
		metric.WithDescription("Requests refused at once, the admission queue being full."))
	shed, errs[16] = meter.Int64ObservableCounter("admission.shed", metric.WithUnit("{request}"),
		metric.WithDescription("Requests queued, then refused at the head by preemptive shedding."))
	timedOut, errs[12] = meter.Int64ObservableCounter("admission.timed_out", metric.WithUnit("{request}"),
		metric.WithDescription("Requests whose context's deadline passed."))
	cancelled, errs[17] = meter.Int64ObservableCounter("admission.cancelled", metric.WithUnit("{request}"),
		metric.WithDescription("Requests whose context was cancelled, whatever its cause."))
	killed, errs[13] = meter.Int64ObservableCounter("admission.killed", metric.WithUnit("{permit}"),
		metric.WithDescription("Permits that hit the memory kill limit."))
	evictions, errs[14] = meter.Int64ObservableCounter("admission.evictions", metric.WithUnit("{permit}"),
		metric.WithDescription("Parked permits evicted, by admission.eviction.reason: demand (admission, explicit, Break) or ttl."))
	total, errs[15] = meter.Int64ObservableCounter("admission.permits.created", metric.WithUnit("{permit}"),
		metric.WithDescription("Permits ever created (Acquire and Track)."))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	var err error
	m.reg, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := m.ctrl.Stats()
		with := func(kv ...attribute.KeyValue) metric.ObserveOption {
			return metric.WithAttributes(append([]attribute.KeyValue{m.name}, kv...)...)
		}
		o.ObserveInt64(countLimit, st.Limits.Count, with())
		o.ObserveInt64(countHeld, st.Held.Count, with())
		o.ObserveInt64(memLimit, st.Limits.Memory, with())
		o.ObserveInt64(memHeld, st.Held.Memory, with())
		o.ObserveInt64(queueLength, int64(st.Waiters), with(keyQueue.String("admission")))
		o.ObserveInt64(queueLength, int64(st.MemoryWaiters), with(keyQueue.String("memory")))
		o.ObserveInt64(permits, int64(st.CurrentPermits), with(keyPermitKind.String("all")))
		o.ObserveInt64(permits, int64(st.Inactive), with(keyPermitKind.String("inactive")))
		o.ObserveInt64(permits, int64(st.NeedCPUPermits), with(keyPermitKind.String("need_cpu")))
		o.ObserveInt64(permits, int64(st.AwaitingPermits), with(keyPermitKind.String("awaiting")))
		o.ObserveInt64(acquired, int64(st.AcquiredImmediately), with(keyAdmitNow.Bool(true)))
		o.ObserveInt64(acquired, int64(st.Acquired-st.AcquiredImmediately), with(keyAdmitNow.Bool(false)))
		o.ObserveInt64(queued, int64(st.QueuedForAdmission), with(keyQueue.String("admission")))
		o.ObserveInt64(queued, int64(st.QueuedForMemory), with(keyQueue.String("memory")))
		o.ObserveInt64(causes, int64(st.QueuedBecauseCount), with(keyResource.String("count")))
		o.ObserveInt64(causes, int64(st.QueuedBecauseMemory), with(keyResource.String("memory")))
		o.ObserveInt64(causes, int64(st.QueuedBecauseCPU), with(keyResource.String("cpu")))
		o.ObserveInt64(rejected, int64(st.Rejected), with())
		o.ObserveInt64(shed, int64(st.Shed), with())
		o.ObserveInt64(timedOut, int64(st.TimedOut), with())
		o.ObserveInt64(cancelled, int64(st.Cancelled), with())
		o.ObserveInt64(killed, int64(st.Killed), with())
		o.ObserveInt64(evictions, int64(st.PermitEvictions), with(keyEviction.String("demand")))
		o.ObserveInt64(evictions, int64(st.TimeEvictions), with(keyEviction.String("ttl")))
		o.ObserveInt64(total, int64(st.TotalPermits), with())
		return nil
	}, countLimit, countHeld, memLimit, memHeld, queueLength, permits, acquired, queued, causes, rejected,
		shed, timedOut, cancelled, killed, evictions, total)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Unregister removes the collection callback from the meter.
func (m *AdmissionMetrics) Unregister() error { return m.reg.Unregister() }

// Acquire is the controller's Acquire, measured: the call counts in
// admission.acquiring while it runs, and its duration is recorded in
// admission.wait.duration with its operation and outcome.
func (m *AdmissionMetrics) Acquire(ctx context.Context, op string, memory int64, opts ...admission.PermitOption) (*admission.Permit, error) {
	opAttr := metric.WithAttributes(m.name, keyOperation.String(op))
	m.acquiring.Add(ctx, 1, opAttr)
	start := time.Now()
	p, err := m.ctrl.Acquire(ctx, op, memory, opts...)
	m.wait.Record(context.WithoutCancel(ctx), time.Since(start).Seconds(),
		metric.WithAttributes(m.name, keyOperation.String(op), keyAdmOutcome.String(admission.ResultLabel(err))))
	m.acquiring.Add(context.WithoutCancel(ctx), -1, opAttr)
	return p, err
}

// Do is the controller's Do with its admission measured as by Acquire: it admits
// the request, runs fn with the permit, and releases the permit on every path,
// including a panic in fn. fn is not called when admission fails.
func (m *AdmissionMetrics) Do(ctx context.Context, op string, memory int64, fn func(context.Context, *admission.Permit) error, opts ...admission.PermitOption) error {
	p, err := m.Acquire(ctx, op, memory, opts...)
	if err != nil {
		return err
	}
	defer p.Release()
	return fn(ctx, p)
}
