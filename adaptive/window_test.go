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

func TestWindow_MeasuresRoundTripFromGrantAndInFlightAtStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		alg := &script{limit: 4}
		l := adaptive.New(semaphore.New(4), alg, adaptive.WithWindow(2, 0, 40*time.Millisecond))
		a, err := l.Acquire(context.Background())
		require.NoError(t, err)
		time.Sleep(10 * time.Millisecond)
		b, err := l.Acquire(context.Background())
		require.NoError(t, err)
		assert.Equal(t, 2, l.InFlight())
		time.Sleep(30 * time.Millisecond)
		a.Done(adaptive.Success) // 40ms, 1 in flight at its start
		b.Done(adaptive.Success) // 30ms, 2 in flight at its start
		require.Len(t, alg.samples, 1)
		s := alg.samples[0]
		assert.Equal(t, 35*time.Millisecond, s.RTT)
		assert.Equal(t, 30*time.Millisecond, s.MinRTT)
		assert.Equal(t, 2, s.InFlight)
		assert.Equal(t, 2, s.Count)
		assert.Equal(t, 0, s.Drops)
		assert.Equal(t, 0, l.InFlight())
	})
}

func TestWindow_LeavesDroppedRoundTripsOutOfTheMean(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		alg := &script{limit: 4}
		l := adaptive.New(semaphore.New(4), alg, adaptive.WithWindow(2, 0, 0))
		a, _ := l.Acquire(context.Background())
		b, _ := l.Acquire(context.Background())
		time.Sleep(10 * time.Millisecond)
		a.Done(adaptive.Success)
		time.Sleep(90 * time.Millisecond)
		b.Done(adaptive.Dropped)
		require.Len(t, alg.samples, 1)
		assert.Equal(t, 10*time.Millisecond, alg.samples[0].RTT)
		assert.Equal(t, 1, alg.samples[0].Drops)
		assert.True(t, alg.samples[0].Dropped())
	})
}

func TestWindow_ClosesByCountAndTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		alg := &script{limit: 4}
		l := adaptive.New(semaphore.New(4), alg, adaptive.WithWindow(3, 50*time.Millisecond, time.Second))
		for range 5 { // 5 calls at once: count is reached, time is not
			c, _ := l.Acquire(context.Background())
			c.Done(adaptive.Success)
		}
		assert.Empty(t, alg.samples, "open less than minTime")
		time.Sleep(50 * time.Millisecond)
		c, _ := l.Acquire(context.Background())
		c.Done(adaptive.Success)
		require.Len(t, alg.samples, 1)
		assert.Equal(t, 6, alg.samples[0].Count)
		time.Sleep(time.Second)
		c, _ = l.Acquire(context.Background())
		c.Done(adaptive.Success)
		assert.Len(t, alg.samples, 1, "fewer than minSamples: the window stays open past maxTime")
	})
}
