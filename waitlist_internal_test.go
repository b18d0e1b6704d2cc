package semaphore

import (
	"context"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A waiter costs 64 bytes, one size class, with diagnostics on or off: what
// diagnostics add is kept beside the list, not in the node.
func TestWaiter_Is64Bytes(t *testing.T) {
	assert.Equal(t, uintptr(64), unsafe.Sizeof(waiter{}))
}

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
	assert.Nil(t, s.head)
	assert.Empty(t, s.diag.joined)
}

// Signalling the Cond outside the lock can lose a wakeup, too rarely for a stress
// test to see; race-enabled builds, where the tests run, catch every such Signal.
func TestSignalLocked_PanicsWithoutTheLockInRaceBuilds(t *testing.T) {
	if !checkLocks {
		t.Skip("the check is made in race-enabled builds only")
	}
	s := New(1, WithName("sig"))
	s.extra() // made by the first waiter, before any Signal
	assert.PanicsWithValue(t, `semaphore "sig": Cond signalled without holding the lock`, s.signalLocked)
	s.mu.Lock()
	assert.NotPanics(t, s.signalLocked)
	s.mu.Unlock()
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

// The struct New allocates stays within 128 bytes (an 80-byte size class today):
// every field added to it is paid by every semaphore, used or not.
func TestSemaphore_StructIsAtMost128Bytes(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(Semaphore{}), uintptr(128))
}
