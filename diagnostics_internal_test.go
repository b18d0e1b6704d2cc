package semaphore

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The join times diagnostics keep are dropped as waiters leave the list, however
// they leave, so that the map never keeps a pooled node alive or grows past the
// waiters present.
func TestDiagnostics_JoinTimesLeaveWithTheirWaiters(t *testing.T) {
	s := New(2, WithHolderTracking())
	require.True(t, s.TryAcquire(2))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 4)
	wait := func(n int64, acquire func() error) {
		if acquire() == nil {
			s.Release(n) // a grant racing the cancellation or the timer is kept
		}
		done <- struct{}{}
	}
	go wait(1, func() error { return s.Acquire(context.Background(), 1) })
	go wait(1, func() error { return s.Acquire(ctx, 1) })
	go wait(1, func() error { return s.AcquireTimeout(time.Millisecond, 1) })
	go wait(2, func() error { return s.Acquire(context.Background(), 2) })
	require.Eventually(t, func() bool { return s.Stats().Queued == 4 }, 10*time.Second, time.Millisecond)
	cancel()
	s.Resize(1) // fails the waiter for 2
	s.Release(2)
	for range 4 {
		<-done
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	assert.Nil(t, s.waiting.Front())
	assert.Empty(t, s.diag.joined)
}

// Go maps never shrink, so the join times of a burst of waiters would keep the
// burst's buckets for good; like the deadline heap's array, they are let go once
// the list empties.
func TestDiagnostics_JoinTimesOfABurstAreLetGo(t *testing.T) {
	const burst = 100_000
	heap := func() uint64 {
		var m runtime.MemStats
		for range 3 { // the pool keeps nodes for two collections
			runtime.GC()
		}
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	s := New(1, WithHolderTracking())
	require.True(t, s.TryAcquire(1))
	before := heap()
	nodes := make([]*waiter, burst)
	for i := range nodes {
		w, e := s.join(1, true)
		require.NotNil(t, w, "%v", e.outcome)
		s.mu.Unlock()
		nodes[i] = w
	}
	s.mu.Lock()
	for _, w := range nodes {
		var woken wakeList
		s.leaveLocked(w, Cancelled, &woken)
	}
	s.mu.Unlock()
	nodes = nil
	after := heap()
	assert.Less(t, int64(after)-int64(before), int64(512<<10),
		"%d bytes still held after %d waiters came and went", int64(after)-int64(before), burst)
	runtime.KeepAlive(s)
}
