package otel_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/admission"
	"github.com/fairsem/semaphore/metrics/otel"
)

var reads = attribute.String("admission.controller.name", "reads")

func TestAdmissionMetrics_ObserveStatsAndPerOpWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meter, reader := newMeter(t)
		ctrl := admission.New(admission.Resources{Count: 1, Memory: 1000}, admission.WithName("reads"))
		m, err := otel.NewAdmissionMetrics(meter, ctrl, otel.WithBuckets(1, 5))
		require.NoError(t, err)

		first, err := m.Acquire(context.Background(), "get", 100)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err = m.Acquire(ctx, "get", 100)
		assert.ErrorIs(t, err, semaphore.ErrTimedOut)
		scanned := make(chan error)
		go func() {
			scanned <- m.Do(context.Background(), "scan", 200, func(context.Context, *admission.Permit) error {
				return errors.New("scan failed")
			})
		}()
		synctest.Wait()
		time.Sleep(4 * time.Second)
		first.Release()
		assert.EqualError(t, <-scanned, "scan failed")
		blocker, err := m.Acquire(context.Background(), "get", 200)
		require.NoError(t, err)
		waiting := make(chan error)
		go func() {
			waiting <- m.Do(context.Background(), "scan", 1, func(context.Context, *admission.Permit) error { return nil })
		}()
		synctest.Wait()

		c := collect(t, reader)
		assert.Equal(t, 1.0, c.value(t, "admission.count.limit", reads))
		assert.Equal(t, 1.0, c.value(t, "admission.count.held", reads))
		assert.Equal(t, 1000.0, c.value(t, "admission.memory.limit", reads))
		assert.Equal(t, 200.0, c.value(t, "admission.memory.held", reads))
		assert.Equal(t, "By", c["admission.memory.held"].Unit)
		assert.Equal(t, 1.0, c.value(t, "admission.queue.length", reads, attribute.String("admission.queue", "admission")))
		assert.Equal(t, 0.0, c.value(t, "admission.queue.length", reads, attribute.String("admission.queue", "memory")))
		assert.Equal(t, 2.0, c.value(t, "admission.permits", reads, attribute.String("admission.permit.state", "all")))
		assert.Equal(t, 2.0, c.value(t, "admission.acquired", reads, attribute.Bool("admission.immediate", true)))
		assert.Equal(t, 1.0, c.value(t, "admission.acquired", reads, attribute.Bool("admission.immediate", false)))
		assert.Equal(t, 3.0, c.value(t, "admission.queued", reads, attribute.String("admission.queue", "admission")))
		assert.Equal(t, 3.0, c.value(t, "admission.queue.causes", reads, attribute.String("admission.resource", "count")))
		assert.Equal(t, 1.0, c.value(t, "admission.timed_out", reads))
		assert.Equal(t, 5.0, c.value(t, "admission.permits.created", reads))
		assert.Equal(t, 0.0, c.value(t, "admission.acquiring", reads, attribute.String("admission.operation", "get")))
		assert.Equal(t, 1.0, c.value(t, "admission.acquiring", reads, attribute.String("admission.operation", "scan")))

		op := func(name, outcome string) []attribute.KeyValue {
			return []attribute.KeyValue{reads, attribute.String("admission.operation", name), attribute.String("admission.outcome", outcome)}
		}
		getOK := c.histogram(t, "admission.wait.duration", op("get", "acquired")...)
		assert.Equal(t, uint64(2), getOK.Count)
		assert.Equal(t, 0.0, getOK.Sum)
		getTimedOut := c.histogram(t, "admission.wait.duration", op("get", "timed_out")...)
		assert.Equal(t, []uint64{0, 1, 0}, getTimedOut.BucketCounts)
		assert.Equal(t, 2.0, getTimedOut.Sum)
		scanOK := c.histogram(t, "admission.wait.duration", op("scan", "acquired")...)
		assert.Equal(t, 4.0, scanOK.Sum)

		blocker.Release()
		require.NoError(t, <-waiting)
		require.NoError(t, m.Unregister())
	})
}

func TestAdmissionMetrics_OutcomeOfEachFailure(t *testing.T) {
	meter, reader := newMeter(t)
	ctrl := admission.New(admission.Resources{Count: 1}, admission.WithName("reads"), admission.WithMaxWaiters(1))
	m, err := otel.NewAdmissionMetrics(meter, ctrl)
	require.NoError(t, err)
	held, err := m.Acquire(context.Background(), "op", 0)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = m.Acquire(ctx, "op", 0)
	assert.ErrorIs(t, err, context.Canceled)
	queued := make(chan error)
	go func() {
		_, err := m.Acquire(context.Background(), "op", 0)
		queued <- err
	}()
	require.Eventually(t, func() bool { return ctrl.Stats().Waiters == 1 }, 10*time.Second, time.Millisecond)
	_, err = m.Acquire(context.Background(), "op", 0)
	assert.ErrorIs(t, err, semaphore.ErrQueueFull)
	ctrl.Break(errors.New("down"))
	assert.ErrorIs(t, <-queued, semaphore.ErrBroken)
	held.Release()

	c := collect(t, reader)
	for _, outcome := range []string{"acquired", "cancelled", "queue_full", "broken"} {
		p := c.histogram(t, "admission.wait.duration", reads,
			attribute.String("admission.operation", "op"), attribute.String("admission.outcome", outcome))
		assert.Equal(t, uint64(1), p.Count, outcome)
	}
}

func TestNewAdmissionMetrics_InvalidBucketsPanic(t *testing.T) {
	meter, _ := newMeter(t)
	ctrl := admission.New(admission.Resources{Count: 1}, admission.WithName("reads"))
	requirePanic(t, "otel: NewAdmissionMetrics: WithBuckets([3 2]): bounds must increase", func() {
		_, _ = otel.NewAdmissionMetrics(meter, ctrl, otel.WithBuckets(3, 2))
	})
}

// A wait cancelled with a cause matching a sentinel is recorded as cancelled:
// the attribute is the Outcome the call ended in, not the cause.
func TestAdmissionMetrics_ACancelledWaitIsCancelledWhateverItsCause(t *testing.T) {
	for _, cause := range []error{semaphore.ErrBroken, semaphore.ErrTimedOut, semaphore.ErrQueueFull, semaphore.ErrShed, semaphore.ErrTooLarge} {
		t.Run(cause.Error(), func(t *testing.T) {
			meter, reader := newMeter(t)
			ctrl := admission.New(admission.Resources{Count: 1, Memory: 100}, admission.WithName("reads"))
			m, err := otel.NewAdmissionMetrics(meter, ctrl)
			require.NoError(t, err)
			held, err := ctrl.Acquire(context.Background(), "holder", 0)
			require.NoError(t, err)
			ctx, cancel := context.WithCancelCause(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := m.Acquire(ctx, "op", 0)
				done <- err
			}()
			require.Eventually(t, func() bool { return ctrl.Stats().Waiters == 1 }, 10*time.Second, time.Millisecond)
			cancel(fmt.Errorf("elsewhere: %w", cause))
			require.ErrorIs(t, <-done, cause)
			held.Release()
			c := collect(t, reader)
			p := c.histogram(t, "admission.wait.duration", attribute.String("admission.controller.name", "reads"),
				attribute.String("admission.operation", "op"), attribute.String("admission.outcome", "cancelled"))
			assert.Equal(t, uint64(1), p.Count)
			assert.Equal(t, 1.0, c.value(t, "admission.cancelled", attribute.String("admission.controller.name", "reads")))
		})
	}
}
