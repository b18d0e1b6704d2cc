package prom_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/admission"
	"github.com/fairsem/semaphore/metrics/prom"
)

const admissionMetrics = `
# HELP admission_acquiring Acquire calls in progress through the collector, per operation: queued, or being admitted.
# TYPE admission_acquiring gauge
admission_acquiring{controller="reads",op="get"} 0
admission_acquiring{controller="reads",op="scan"} 1
# HELP admission_acquired_immediately_total Permits admitted without queuing.
# TYPE admission_acquired_immediately_total counter
admission_acquired_immediately_total{controller="reads"} 2
# HELP admission_acquired_total Permits admitted (Acquire and Readmit), at once or after queuing.
# TYPE admission_acquired_total counter
admission_acquired_total{controller="reads"} 3
# HELP admission_count_limit Limit on concurrent permits.
# TYPE admission_count_limit gauge
admission_count_limit{controller="reads"} 1
# HELP admission_count_held Count held by permits now (may exceed the limit).
# TYPE admission_count_held gauge
admission_count_held{controller="reads"} 1
# HELP admission_memory_limit_bytes Limit on memory held by permits.
# TYPE admission_memory_limit_bytes gauge
admission_memory_limit_bytes{controller="reads"} 1000
# HELP admission_memory_held_bytes Memory held by permits now (may exceed the limit).
# TYPE admission_memory_held_bytes gauge
admission_memory_held_bytes{controller="reads"} 200
# HELP admission_queue_length Requests in a queue now.
# TYPE admission_queue_length gauge
admission_queue_length{controller="reads",queue="admission"} 1
admission_queue_length{controller="reads",queue="memory"} 0
# HELP admission_queued_reason_total Requests that queued for admission, by the resource that was short.
# TYPE admission_queued_reason_total counter
admission_queued_reason_total{controller="reads",reason="count"} 3
admission_queued_reason_total{controller="reads",reason="cpu"} 0
admission_queued_reason_total{controller="reads",reason="memory"} 0
# HELP admission_queued_total Requests that joined a queue: admission, or memory past the serialize limit.
# TYPE admission_queued_total counter
admission_queued_total{controller="reads",queue="admission"} 3
admission_queued_total{controller="reads",queue="memory"} 0
# HELP admission_timed_out_total Requests whose context's deadline passed.
# TYPE admission_timed_out_total counter
admission_timed_out_total{controller="reads"} 1
# HELP admission_wait_duration_seconds Time Acquire took through the collector, per operation and outcome.
# TYPE admission_wait_duration_seconds histogram
admission_wait_duration_seconds_bucket{controller="reads",op="get",outcome="acquired",le="1"} 2
admission_wait_duration_seconds_bucket{controller="reads",op="get",outcome="acquired",le="5"} 2
admission_wait_duration_seconds_bucket{controller="reads",op="get",outcome="acquired",le="+Inf"} 2
admission_wait_duration_seconds_sum{controller="reads",op="get",outcome="acquired"} 0
admission_wait_duration_seconds_count{controller="reads",op="get",outcome="acquired"} 2
admission_wait_duration_seconds_bucket{controller="reads",op="get",outcome="timed_out",le="1"} 0
admission_wait_duration_seconds_bucket{controller="reads",op="get",outcome="timed_out",le="5"} 1
admission_wait_duration_seconds_bucket{controller="reads",op="get",outcome="timed_out",le="+Inf"} 1
admission_wait_duration_seconds_sum{controller="reads",op="get",outcome="timed_out"} 2
admission_wait_duration_seconds_count{controller="reads",op="get",outcome="timed_out"} 1
admission_wait_duration_seconds_bucket{controller="reads",op="scan",outcome="acquired",le="1"} 0
admission_wait_duration_seconds_bucket{controller="reads",op="scan",outcome="acquired",le="5"} 1
admission_wait_duration_seconds_bucket{controller="reads",op="scan",outcome="acquired",le="+Inf"} 1
admission_wait_duration_seconds_sum{controller="reads",op="scan",outcome="acquired"} 4
admission_wait_duration_seconds_count{controller="reads",op="scan",outcome="acquired"} 1
`

func TestAdmissionCollector_ExportsStatsAndPerOpWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctrl := admission.New(admission.Resources{Count: 1, Memory: 1000}, admission.WithName("reads"))
		c := prom.NewAdmissionCollector(ctrl, prom.WithBuckets(1, 5))
		reg := prometheus.NewPedanticRegistry()
		require.NoError(t, reg.Register(c))

		first, err := c.Acquire(context.Background(), "get", 100)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err = c.Acquire(ctx, "get", 100)
		assert.ErrorIs(t, err, semaphore.ErrTimedOut)

		scanned := make(chan error)
		go func() {
			scanned <- c.Do(context.Background(), "scan", 200, func(context.Context, *admission.Permit) error {
				return errors.New("scan failed")
			})
		}()
		synctest.Wait()
		time.Sleep(4 * time.Second)
		first.Release()
		assert.EqualError(t, <-scanned, "scan failed", "Do returns fn's error")

		blocker, err := c.Acquire(context.Background(), "get", 200)
		require.NoError(t, err)
		waiting := make(chan error)
		go func() {
			waiting <- c.Do(context.Background(), "scan", 1, func(context.Context, *admission.Permit) error { return nil })
		}()
		synctest.Wait()

		require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(admissionMetrics),
			"admission_acquiring", "admission_acquired_immediately_total", "admission_acquired_total",
			"admission_count_limit", "admission_count_held", "admission_memory_limit_bytes",
			"admission_memory_held_bytes", "admission_queue_length", "admission_queued_reason_total",
			"admission_queued_total", "admission_timed_out_total", "admission_wait_duration_seconds"))
		blocker.Release()
		require.NoError(t, <-waiting)
	})
}

func TestAdmissionCollector_LabelsEachOutcome(t *testing.T) {
	ctrl := admission.New(admission.Resources{Count: 1, Memory: 1000}, admission.WithName("reads"), admission.WithMaxWaiters(1))
	c := prom.NewAdmissionCollector(ctrl, prom.WithBuckets(1))
	held, err := c.Acquire(context.Background(), "op", 0)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Acquire(ctx, "op", 0)
	assert.ErrorIs(t, err, context.Canceled)

	queued := make(chan error)
	go func() {
		_, err := c.Acquire(context.Background(), "op", 0)
		queued <- err
	}()
	require.Eventually(t, func() bool { return ctrl.Stats().Waiters == 1 }, 10*time.Second, time.Millisecond)
	_, err = c.Acquire(context.Background(), "op", 0)
	assert.ErrorIs(t, err, semaphore.ErrQueueFull)
	ctrl.Break(errors.New("down"))
	assert.ErrorIs(t, <-queued, semaphore.ErrBroken)
	held.Release()
	require.NoError(t, ctrl.Drain(context.Background()))
	_, err = c.Acquire(context.Background(), "op", 0)
	assert.Error(t, err)

	for _, outcome := range []string{"acquired", "cancelled", "queue_full", "broken"} {
		assert.Equal(t, 1, countSeries(t, c, `outcome="`+outcome+`"`), outcome)
	}
	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

// countSeries counts the histogram series of c whose text form contains match.
func countSeries(t *testing.T, c prometheus.Collector, match string) int {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	families, err := reg.Gather()
	require.NoError(t, err)
	n := 0
	for _, f := range families {
		if f.GetName() != "admission_wait_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if `outcome="`+l.GetValue()+`"` == match {
					n++
				}
			}
		}
	}
	return n
}

func TestNewAdmissionCollector_InvalidBucketsPanic(t *testing.T) {
	ctrl := admission.New(admission.Resources{Count: 1}, admission.WithName("reads"))
	requirePanic(t, "prom: NewAdmissionCollector: WithBuckets([3 2]): bounds must increase", func() {
		prom.NewAdmissionCollector(ctrl, prom.WithBuckets(3, 2))
	})
}

// A wait cancelled with a cause matching a sentinel is labelled cancelled, by
// the semaphore's collector and by the admission collector: the label is the
// Outcome the call ended in, not the cause.
func TestCollectors_ACancelledWaitIsLabelledCancelledWhateverItsCause(t *testing.T) {
	for _, cause := range []error{semaphore.ErrBroken, semaphore.ErrTimedOut, semaphore.ErrQueueFull, semaphore.ErrShed, semaphore.ErrTooLarge} {
		t.Run(cause.Error(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sc := prom.NewSemaphoreCollector()
				sem := semaphore.New(1, semaphore.WithName("db"), semaphore.WithObserver(sc))
				sc.Add(sem)
				ctrl := admission.New(admission.Resources{Count: 1, Memory: 100}, admission.WithName("reads"))
				ac := prom.NewAdmissionCollector(ctrl)
				require.NoError(t, sem.Acquire(context.Background(), 1))
				held, err := ctrl.Acquire(context.Background(), "holder", 0)
				require.NoError(t, err)

				ctx, cancel := context.WithCancelCause(context.Background())
				semDone, admDone := make(chan error, 1), make(chan error, 1)
				go func() { semDone <- sem.Acquire(ctx, 1) }()
				go func() {
					_, err := ac.Acquire(ctx, "op", 0)
					admDone <- err
				}()
				synctest.Wait()
				cancel(fmt.Errorf("elsewhere: %w", cause))
				require.ErrorIs(t, <-semDone, cause)
				require.ErrorIs(t, <-admDone, cause)

				assert.Equal(t, map[string]uint64{"cancelled": 1}, waitsByOutcome(t, sc, "semaphore_wait_duration_seconds"))
				assert.Equal(t, map[string]uint64{"cancelled": 1}, waitsByOutcome(t, ac, "admission_wait_duration_seconds"))
				assert.Equal(t, uint64(1), ctrl.Stats().Cancelled)
				assert.Equal(t, uint64(1), sem.Stats().Cancelled)
				held.Release()
				sem.Release(1)
			})
		})
	}
}

// waitsByOutcome returns the samples of histogram family in c by outcome label,
// leaving out the empty series.
func waitsByOutcome(t *testing.T, c prometheus.Collector, family string) map[string]uint64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	families, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]uint64{}
	for _, f := range families {
		if f.GetName() != family {
			continue
		}
		for _, m := range f.GetMetric() {
			if n := m.GetHistogram().GetSampleCount(); n > 0 {
				for _, l := range m.GetLabel() {
					if l.GetName() == "outcome" {
						got[l.GetValue()] += n
					}
				}
			}
		}
	}
	return got
}
