package semaphore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Drain whose context ends stops counting as waiting: with no Drain left, the
// flag that makes every Release take the lock is cleared, and a later Drain
// still sees the last unit come back.
func TestDrain_GivingUpClearsTheDrainingFlag(t *testing.T) {
	s := New(2)
	require.True(t, s.TryAcquire(1))
	for range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		require.ErrorIs(t, s.Drain(ctx), context.Canceled)
		assert.Zero(t, s.state.Load()&flagDraining, "no Drain waits")
		assert.Zero(t, s.x.Load().drainers)
	}
	done := make(chan error, 1)
	go func() { done <- s.Drain(context.Background()) }()
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.x.Load().drainers == 1
	}, 10*time.Second, time.Millisecond)
	s.Release(1)
	require.NoError(t, <-done)
	assert.Zero(t, s.state.Load()&flagDraining)
}
