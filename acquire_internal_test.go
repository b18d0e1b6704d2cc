package semaphore

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// blockedIn polls, with a deadline, until some goroutine's stack shows fn.
func blockedIn(t *testing.T, fn string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	require.Eventually(t, func() bool {
		return strings.Contains(string(buf[:runtime.Stack(buf, true)]), fn)
	}, 10*time.Second, time.Millisecond, "no goroutine reached %s", fn)
}

// A call that missed the lock-free grant but finds the units free once it holds the
// lock is granted at once, and Stats counts it as immediate, not as waited for.
func TestStats_GrantUnderTheLockCountsAsImmediate(t *testing.T) {
	s := New(1)
	require.True(t, s.TryAcquire(1))
	s.mu.Lock() // hold the lock so that the call below stops in join
	done := make(chan error, 1)
	go func() { done <- s.Acquire(context.Background(), 1) }()
	blockedIn(t, "semaphore.(*Semaphore).join")
	s.Release(1) // lock-free: nobody waits yet
	s.mu.Unlock()
	require.NoError(t, <-done)
	st := s.Stats()
	assert.Equal(t, uint64(2), st.Acquired)
	assert.Equal(t, uint64(2), st.AcquiredImmediately)
	assert.Zero(t, st.Queued)
	s.Release(1)
}
