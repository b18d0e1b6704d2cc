package otel

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/fairsem/semaphore"
)

// SemaphoreMetrics is the instrument set for core semaphores: their state and
// counters, observed from Stats at each collection, and a histogram of the time
// calls waited, recorded as the semaphores' Observer. Add the semaphores to
// export; each is told apart by the attribute semaphore.name (WithName), so names
// must be unique within a SemaphoreMetrics.
//
// All methods are safe for concurrent use.
type SemaphoreMetrics struct {
	mu   sync.Mutex
	sems map[string]*semaphore.Semaphore // by name; guarded by mu

	// *semaphore.Semaphore → *[nOutcomes]metric.MeasurementOption, filled by Add,
	// so that recording a wait of an added semaphore builds no attribute set.
	outcomes sync.Map

	wait     metric.Float64Histogram
	refusals metric.Int64Counter
	reg      metric.Registration
}

// The attribute keys.
const (
	keySemaphore = attribute.Key("semaphore.name")
	keyOutcome   = attribute.Key("semaphore.wait.outcome")
	keyImmediate = attribute.Key("semaphore.acquisition.immediate")
	keyErrorType = attribute.Key("error.type")
)

// NewSemaphoreMetrics creates the instruments on meter. It returns the meter's
// error if an instrument or the callback cannot be registered, and panics if an
// option has an invalid value.
func NewSemaphoreMetrics(meter metric.Meter, opts ...Option) (*SemaphoreMetrics, error) {
	cfg := newConfig("NewSemaphoreMetrics", opts)
	m := &SemaphoreMetrics{sems: map[string]*semaphore.Semaphore{}}
	var errs [10]error
	var (
		capacity, available, pending   metric.Int64ObservableUpDownCounter
		broken                         metric.Int64ObservableGauge
		acquisitions, queued, failures metric.Int64ObservableCounter
		waitTime                       metric.Float64ObservableCounter
	)
	m.wait, errs[0] = meter.Float64Histogram("semaphore.wait.duration", metric.WithUnit("s"),
		metric.WithDescription("Time calls waited in the queue, by how the wait ended."),
		metric.WithExplicitBucketBoundaries(cfg.buckets...))
	m.refusals, errs[1] = meter.Int64Counter("semaphore.refusals", metric.WithUnit("{request}"),
		metric.WithDescription("Calls that failed without waiting in the queue, by outcome."))
	capacity, errs[2] = meter.Int64ObservableUpDownCounter("semaphore.capacity", metric.WithUnit("{unit}"),
		metric.WithDescription("Units the semaphore holds in all."))
	available, errs[3] = meter.Int64ObservableUpDownCounter("semaphore.units.available", metric.WithUnit("{unit}"),
		metric.WithDescription("Units that could be acquired now (0 while in debt or broken)."))
	pending, errs[4] = meter.Int64ObservableUpDownCounter("semaphore.pending_requests", metric.WithUnit("{request}"),
		metric.WithDescription("Calls waiting in the queue now."))
	broken, errs[5] = meter.Int64ObservableGauge("semaphore.broken", metric.WithUnit("1"),
		metric.WithDescription("1 once the semaphore is broken, else 0."))
	acquisitions, errs[6] = meter.Int64ObservableCounter("semaphore.acquisitions", metric.WithUnit("{acquisition}"),
		metric.WithDescription("Successful acquisitions, by whether they were granted without waiting."))
	queued, errs[7] = meter.Int64ObservableCounter("semaphore.queued", metric.WithUnit("{request}"),
		metric.WithDescription("Calls that joined the wait queue."))
	failures, errs[8] = meter.Int64ObservableCounter("semaphore.failures", metric.WithUnit("{request}"),
		metric.WithDescription("Calls that failed, by error.type: timed_out (a deadline: AcquireTimeout's or the context's), cancelled (a context cancelled), rejected (queue full or too large)."))
	waitTime, errs[9] = meter.Float64ObservableCounter("semaphore.wait.time", metric.WithUnit("s"),
		metric.WithDescription("Total time spent waiting in the queue."))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	var err error
	m.reg, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, s := range m.snapshot() {
			st := s.Stats()
			name := metric.WithAttributes(keySemaphore.String(st.Name))
			o.ObserveInt64(capacity, st.Capacity, name)
			o.ObserveInt64(available, st.Available, name)
			o.ObserveInt64(pending, int64(st.Waiters), name)
			o.ObserveInt64(broken, boolValue(st.Broken), name)
			o.ObserveInt64(acquisitions, int64(st.AcquiredImmediately),
				metric.WithAttributes(keySemaphore.String(st.Name), keyImmediate.Bool(true)))
			o.ObserveInt64(acquisitions, int64(st.Acquired-st.AcquiredImmediately),
				metric.WithAttributes(keySemaphore.String(st.Name), keyImmediate.Bool(false)))
			o.ObserveInt64(queued, int64(st.Queued), name)
			for _, f := range []struct {
				kind string
				n    uint64
			}{{"timed_out", st.TimedOut}, {"cancelled", st.Cancelled}, {"rejected", st.Rejected}} {
				o.ObserveInt64(failures, int64(f.n), metric.WithAttributes(keySemaphore.String(st.Name), keyErrorType.String(f.kind)))
			}
			o.ObserveFloat64(waitTime, st.WaitTime.Seconds(), name)
		}
		return nil
	}, capacity, available, pending, broken, acquisitions, queued, failures, waitTime)
	if err != nil {
		return nil, err
	}
	return m, nil
}

func (m *SemaphoreMetrics) snapshot() []*semaphore.Semaphore {
	m.mu.Lock()
	defer m.mu.Unlock()
	sems := make([]*semaphore.Semaphore, 0, len(m.sems))
	for _, s := range m.sems {
		sems = append(sems, s)
	}
	return sems
}

// Add exports sem's state and counters. It panics if a semaphore of the same
// name was added and not removed: the two would be indistinguishable.
func (m *SemaphoreMetrics) Add(sem *semaphore.Semaphore) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.sems[sem.Name()]; dup {
		panic("otel: SemaphoreMetrics.Add: a semaphore named " + quote(sem.Name()) + " is already exported")
	}
	m.sems[sem.Name()] = sem
	var attrs [nOutcomes]metric.MeasurementOption
	for o := range attrs {
		attrs[o] = outcomeAttrs(sem, semaphore.Outcome(o))
	}
	m.outcomes.Store(sem, &attrs)
}

// nOutcomes counts the outcomes a core semaphore ends calls in: all but Shed,
// which only admission and adaptive decide.
const nOutcomes = int(semaphore.QueueFull) + 1

func outcomeAttrs(s *semaphore.Semaphore, o semaphore.Outcome) metric.MeasurementOption {
	return metric.WithAttributeSet(attribute.NewSet(keySemaphore.String(s.Name()), keyOutcome.String(o.String())))
}

// Remove stops exporting sem's state and counters.
func (m *SemaphoreMetrics) Remove(sem *semaphore.Semaphore) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sems[sem.Name()] == sem {
		delete(m.sems, sem.Name())
		m.outcomes.Delete(sem)
	}
}

// Unregister removes the collection callback from the meter; the instruments
// then report nothing more for the state and counters.
func (m *SemaphoreMetrics) Unregister() error { return m.reg.Unregister() }

// WaitEnded implements semaphore.Observer: a wait that queued is recorded in
// semaphore.wait.duration, a refusal in semaphore.refusals.
func (m *SemaphoreMetrics) WaitEnded(s *semaphore.Semaphore, e semaphore.WaitEvent) {
	var attrs metric.MeasurementOption
	if cached, ok := m.outcomes.Load(s); ok && int(e.Outcome) < nOutcomes {
		attrs = cached.(*[nOutcomes]metric.MeasurementOption)[e.Outcome]
	} else {
		attrs = outcomeAttrs(s, e.Outcome)
	}
	if !e.Queued {
		m.refusals.Add(context.Background(), 1, attrs)
		return
	}
	m.wait.Record(context.Background(), e.Waited.Seconds(), attrs)
}

// Broken implements semaphore.Observer. It records nothing: semaphore.broken is
// observed from the state, and the waiters Break fails are recorded with outcome
// "broken".
func (m *SemaphoreMetrics) Broken(*semaphore.Semaphore, error) {}

func boolValue(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
