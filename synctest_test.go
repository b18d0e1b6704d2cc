package semaphore_test

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
)

// waitEveryWay makes one parked, one timed and one context wait on a fresh
// semaphore, each granted by a Release, so that every kind of pooled waiter node
// goes through a full cycle.
func waitEveryWay(t *testing.T, settle func()) {
	t.Helper()
	s := semaphore.New(1)
	require.NoError(t, s.Acquire(context.Background(), 1))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	results := make(chan error, 3)
	go func() { results <- s.Acquire(context.Background(), 1) }()
	go func() { results <- s.AcquireTimeout(time.Hour, 1) }()
	go func() { results <- s.Acquire(ctx, 1) }()
	for s.Waiters() < 3 {
		settle()
	}
	for range 3 {
		s.Release(1)
		require.NoError(t, <-results)
	}
	s.Release(1)
}

// Waiter nodes are pooled across goroutines. A node used inside a synctest bubble
// must come back clean enough to be used outside it and in another bubble: the
// runtime makes a WaitGroup used from two bubbles a fatal error.
func TestSynctest_PooledWaitersMoveSafelyBetweenBubbles(t *testing.T) {
	for range 3 {
		synctest.Test(t, func(t *testing.T) { waitEveryWay(t, synctest.Wait) })
		deadline := time.Now().Add(10 * time.Second)
		waitEveryWay(t, func() {
			require.True(t, time.Now().Before(deadline), "waiters did not queue")
			runtime.Gosched()
		})
	}
}
