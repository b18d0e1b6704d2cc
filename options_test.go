package semaphore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
)

// WithName: the name appears in every error, panic, String and Stats.
func TestWithName_AppearsInErrorsPanicsStringAndStats(t *testing.T) {
	s := semaphore.New(1, semaphore.WithName("pool"))
	assert.Contains(t, s.Acquire(context.Background(), 5).Error(), `semaphore "pool"`)
	assert.Contains(t, s.String(), `semaphore "pool"`)
	assert.Equal(t, "pool", s.Stats().Name)
	requirePanic(t, `semaphore "pool"`, func() { s.Release(3) })
}

func TestWithMaxWaiters_NegativePanicsAsDocumented(t *testing.T) {
	for _, m := range []int{-1, -2, -100} {
		requirePanic(t, fmt.Sprintf(`semaphore "q": WithMaxWaiters(%d)`, m), func() {
			semaphore.New(1, semaphore.WithName("q"), semaphore.WithMaxWaiters(m))
		})
	}
	assert.NotPanics(t, func() { semaphore.New(1, semaphore.WithMaxWaiters(-1), semaphore.WithMaxWaiters(3)) },
		"a later option overrides an earlier one")
}

func TestWithObserver_NilMeansNoObserver(t *testing.T) {
	s := semaphore.New(1, semaphore.WithObserver(&recorder{}), semaphore.WithObserver(nil))
	require.NoError(t, s.Acquire(context.Background(), 1))
	assert.ErrorIs(t, s.AcquireTimeout(0, 1), semaphore.ErrTimedOut, "no observer to call, no panic")
	s.Break(nil)
}

func TestWithLeakDetection_NilPanics(t *testing.T) {
	requirePanic(t, `semaphore "db": WithLeakDetection(nil): the report function must not be nil`, func() {
		semaphore.New(1, semaphore.WithName("db"), semaphore.WithLeakDetection(nil))
	})
}

func TestWithWatchdog_InvalidValuesPanic(t *testing.T) {
	for _, tc := range []struct {
		threshold, every time.Duration
		want             string
	}{
		{0, time.Second, "WithWatchdog(0s, 1s): the threshold must be positive"},
		{-time.Second, time.Second, "WithWatchdog(-1s, 1s): the threshold must be positive"},
		{time.Second, 0, "WithWatchdog(1s, 0s): the interval between dumps must be positive"},
		{time.Second, -1, "WithWatchdog(1s, -1ns): the interval between dumps must be positive"},
	} {
		requirePanic(t, `semaphore "db": `+tc.want, func() {
			semaphore.New(1, semaphore.WithName("db"), semaphore.WithWatchdog(tc.threshold, tc.every, nil))
		})
	}
}
