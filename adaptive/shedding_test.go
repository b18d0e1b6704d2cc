package adaptive_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
)

func TestWithStandingQueue_FailsWaitsPastTargetOnceTheQueueStood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sem := semaphore.New(1)
		l := adaptive.New(sem, &script{limit: 1}, adaptive.WithName("api"),
			adaptive.WithStandingQueue(5*time.Millisecond, 100*time.Millisecond))
		holder, err := l.Acquire(context.Background())
		require.NoError(t, err)

		first := make(chan error, 1)
		go func() { // finds the queue empty: may wait as long as its context allows
			c, err := l.Acquire(context.Background())
			if err == nil {
				c.Release()
			}
			first <- err
		}()
		synctest.Wait()
		time.Sleep(150 * time.Millisecond) // nobody found the queue empty since: it stands

		start := time.Now()
		_, err = l.Acquire(context.Background())
		assert.ErrorIs(t, err, semaphore.ErrShed)
		assert.ErrorIs(t, err, semaphore.ErrQueueFull, "a shed call is refused for load")
		assert.NotErrorIs(t, err, semaphore.ErrTimedOut, "shed is its one meaning")
		assert.Equal(t, 5*time.Millisecond, time.Since(start), "waited the target only")
		assert.Contains(t, err.Error(), `adaptive limiter "api": acquire 1 unit: shed: waited 5ms, the most 5ms a call waits in a queue standing for over 100ms`)

		holder.Done(adaptive.Success) // the first waiter is granted 155ms late in a standing queue
		err = <-first
		assert.ErrorIs(t, err, semaphore.ErrShed, "granted late: the slot is handed on")
		assert.Equal(t, int64(1), sem.Available())
		assert.Equal(t, uint64(2), l.Stats().Shed)

		c, err := l.Acquire(context.Background()) // an empty queue again: no longer standing
		require.NoError(t, err)
		c.Release()
	})
}

func TestWithStandingQueue_LetsBurstsWaitWhileTheQueueDrains(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := adaptive.New(semaphore.New(1), &script{limit: 1}, adaptive.WithStandingQueue(5*time.Millisecond, 100*time.Millisecond))
		holder, _ := l.Acquire(context.Background())
		got := make(chan error, 1)
		go func() {
			c, err := l.Acquire(context.Background())
			if err == nil {
				c.Release()
			}
			got <- err
		}()
		synctest.Wait()
		time.Sleep(50 * time.Millisecond) // longer than the target, within the interval
		holder.Release()
		assert.NoError(t, <-got)
		assert.Zero(t, l.Stats().Shed)
	})
}

func TestWithStandingQueue_ReturnsTheCallersOwnContextError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := adaptive.New(semaphore.New(1), &script{limit: 1}, adaptive.WithStandingQueue(time.Second, time.Millisecond))
		holder, _ := l.Acquire(context.Background())
		time.Sleep(10 * time.Millisecond)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := l.Acquire(ctx)
		assert.ErrorIs(t, err, context.Canceled)
		assert.NotErrorIs(t, err, semaphore.ErrShed)
		holder.Release()
	})
}
