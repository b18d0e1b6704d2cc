package semaphore_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
)

// Plain waiters (a context that cannot end) share one sync.Cond per semaphore. A
// Signal made after the lock is released can be lost when it races another Signal
// and a new waiter; then a granted waiter sleeps for good and, with weighted
// requests, the whole semaphore stalls. Many goroutines on many processors, weighted
// requests: every round must finish. The loss needs a preemption between two loads
// inside the runtime, so this test alone rarely sees it; in race-enabled builds
// every Signal also checks that the lock is held, and this test then fails at the
// first Signal made outside it.
func TestAcquire_PlainWaitersNeverMissAWakeup(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	rounds := 20
	if raceEnabled {
		rounds = 1
	}
	for round := range rounds {
		s := semaphore.New(16)
		finished := make(chan struct{})
		go func() {
			defer close(finished)
			var wg sync.WaitGroup
			for g := range 16 {
				wg.Go(func() {
					n := int64(g % 8)
					for range 2000 {
						n = n%8 + 1
						_ = s.Acquire(context.Background(), n)
						runtime.Gosched() // let others run while units are held, so that they queue
						s.Release(n)
					}
				})
			}
			wg.Wait()
		}()
		select {
		case <-finished:
		case <-time.After(time.Minute): // a watchdog, not a synchronization
			t.Fatalf("round %d: stalled with %v", round, s)
		}
		require.Equal(t, int64(16), s.Available())
		require.Equal(t, uint64(16*2000), s.Stats().Acquired)
	}
}

// A Resize that refuses a plain waiter behind other plain waiters wakes that one,
// at once, and the ones ahead of it stay queued and are granted in order later.
func TestResize_RefusingAPlainWaiterOutOfOrderKeepsTheOthersInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(5)
		require.True(t, s.TryAcquire(5))
		calls := queue(context.Background(), s, 1, 1, 5, 1, 1)
		s.Resize(4)
		synctest.Wait()
		got := finished(calls)
		require.Len(t, got, 1, "only the refused waiter returns")
		assert.ErrorIs(t, got[2], semaphore.ErrTooLarge)
		assert.Equal(t, 4, s.Waiters())
		s.Release(1) // 5 held of 4: this one only pays the debt
		synctest.Wait()
		assert.Empty(t, finished(calls))
		for _, i := range []int{0, 1, 3, 4} {
			s.Release(1)
			synctest.Wait()
			assert.Equal(t, map[int]error{i: nil}, finished(calls), "one release grants exactly the next in line")
		}
		s.Release(4)
		assert.Equal(t, int64(4), s.Available())
		st := s.Stats()
		assert.Equal(t, uint64(5), st.Queued)
		assert.Equal(t, uint64(5), st.Acquired, "the first TryAcquire and four waiters")
	})
}

// Resizes that keep refusing plain waiters from the middle of the list, while
// holders release and others queue, lose no wakeup and no unit.
func TestResize_RefusalStormLosesNoWakeup(t *testing.T) {
	s := semaphore.New(8)
	stop := make(chan struct{})
	resizer := make(chan struct{})
	go func() {
		defer close(resizer)
		for i := 0; ; i++ {
			select {
			case <-stop:
				s.Resize(8)
				return
			default:
				s.Resize(int64(4 + i%5))
				runtime.Gosched()
			}
		}
	}()
	var wg sync.WaitGroup
	for g := range 12 {
		wg.Go(func() {
			for i := range 1000 {
				n := int64(1 + (g+i)%8)
				if s.Acquire(context.Background(), n) == nil {
					runtime.Gosched()
					s.Release(n)
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	<-resizer
	assert.Equal(t, int64(8), s.Available())
	assert.Equal(t, 0, s.Waiters())
}
