package semaphore_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/statsline/statslinetest"
)

func TestStats_CountsEveryKindOfOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(2, semaphore.WithMaxWaiters(1))
		require.True(t, s.TryAcquire(2))
		c := started(context.Background(), s, 1)
		synctest.Wait()
		assert.ErrorIs(t, s.Acquire(context.Background(), 1), semaphore.ErrQueueFull)
		assert.ErrorIs(t, s.Acquire(context.Background(), 3), semaphore.ErrTooLarge)
		time.Sleep(time.Second)
		s.Release(2)
		require.NoError(t, <-c)
		assert.ErrorIs(t, s.AcquireTimeout(time.Second, 2), semaphore.ErrTimedOut)
		st := s.Stats()
		assert.Equal(t, uint64(2), st.Acquired)
		assert.Equal(t, uint64(1), st.AcquiredImmediately)
		assert.Equal(t, uint64(2), st.Queued)
		assert.Equal(t, uint64(1), st.TimedOut)
		assert.Equal(t, uint64(2), st.Rejected)
		assert.Equal(t, 2*time.Second, st.WaitTime)
	})
}

// A wait that ends at its context's deadline is a timeout in Stats, as in its error.
func TestStats_ContextDeadlineCountsAsTimedOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(1)
		require.True(t, s.TryAcquire(1))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err := s.Acquire(ctx, 1)
		require.ErrorIs(t, err, semaphore.ErrTimedOut)
		st := s.Stats()
		assert.Equal(t, uint64(1), st.TimedOut)
		assert.Zero(t, st.Cancelled)
		assert.Equal(t, time.Second, st.WaitTime)
		assert.ErrorIs(t, s.Acquire(ctx, 1), semaphore.ErrTimedOut, "already past its deadline")
		assert.Equal(t, uint64(2), s.Stats().TimedOut, "a call failed before waiting on a deadline is a timeout too")
	})
}

// The lock-free path counts its grants in a 16-bit field of the state word that is
// folded into a 64-bit total; crossing the fold many times must lose no count.
func TestStats_CountsLockFreeGrantsExactlyAcrossFolds(t *testing.T) {
	s := semaphore.New(3)
	const rounds = 3*65535 + 17
	for range rounds {
		require.True(t, s.TryAcquire(1))
		require.NoError(t, s.Acquire(context.Background(), 2))
		s.Release(3)
	}
	st := s.Stats()
	assert.Equal(t, uint64(2*rounds), st.AcquiredImmediately)
	assert.Equal(t, uint64(2*rounds), st.Acquired)
	assert.Equal(t, int64(3), s.Available(), "folding never touches the units")
}

// Stats are exact after a mixed concurrent run: every success counted once, as
// immediate or as waited for, whichever path granted it.
func TestStats_ExactAfterAMixedConcurrentRun(t *testing.T) {
	s := semaphore.New(2)
	var ok, tries, triesOK atomic.Uint64
	var wg sync.WaitGroup
	var stop atomic.Bool
	observer := make(chan struct{})
	go func() { // keeps the lock busy, as a metrics scraper may, so that some
		// calls that missed the lock-free grant find the units free under the lock
		defer close(observer)
		for !stop.Load() {
			_ = s.Stats()
		}
	}()
	for g := range 8 {
		wg.Go(func() {
			for i := range 3000 {
				n := int64(1 + (g+i)%2)
				switch i % 3 {
				case 0:
					if s.TryAcquire(n) {
						ok.Add(1)
						triesOK.Add(1)
						s.Release(n)
					}
					tries.Add(1)
				case 1:
					require.NoError(t, s.Acquire(context.Background(), n))
					ok.Add(1)
					s.Release(n)
				default:
					require.NoError(t, s.AcquireTimeout(time.Hour, n))
					ok.Add(1)
					runtime.Gosched()
					s.Release(n)
				}
			}
		})
	}
	wg.Wait()
	stop.Store(true)
	<-observer
	st := s.Stats()
	assert.Equal(t, ok.Load(), st.Acquired, "every success counted once")
	assert.Equal(t, st.Acquired-st.AcquiredImmediately, st.Queued, "every queued call was granted, and counted as waited for")
	assert.Zero(t, st.TimedOut+st.Cancelled+st.Rejected)
	assert.Equal(t, int64(2), s.Available())
}

// Stats and String describe one consistent moment of the capacity and the units:
// a Resize running at the same time never makes them report more units available
// than the capacity.
func TestStats_CapacityAndAvailableAreReadTogether(t *testing.T) {
	defer runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), 2))
	s := semaphore.New(1)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; !stop.Load(); i++ {
			s.Resize(int64(1 + 1000*(i%2)))
		}
	})
	defer wg.Wait()
	defer stop.Store(true)
	rounds := 200000
	if testing.Short() {
		rounds = 10000
	}
	for range rounds {
		st := s.Stats()
		require.LessOrEqual(t, st.Available, st.Capacity, "Stats %+v", st)
	}
}

// With holder tracking, Stats tells how long the head waiter has waited and how
// old the oldest holder is; without it both are 0.
func TestStats_HeadWaitAndOldestHolderWithTracking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(2, semaphore.WithHolderTracking())
		u, err := s.AcquireUnits(context.Background(), 2)
		require.NoError(t, err)
		time.Sleep(3 * time.Second)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- s.Acquire(ctx, 1) }()
		synctest.Wait()
		time.Sleep(2 * time.Second)
		st := s.Stats()
		assert.Equal(t, 2*time.Second, st.HeadWait)
		assert.Equal(t, 5*time.Second, st.OldestHolder)
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		u.Release()
		st = s.Stats()
		assert.Zero(t, st.HeadWait, "nobody waits")
		assert.Zero(t, st.OldestHolder, "nobody holds")

		plain := semaphore.New(1)
		require.NoError(t, plain.Acquire(context.Background(), 1))
		time.Sleep(time.Second)
		assert.Zero(t, plain.Stats().OldestHolder, "not tracked")
		plain.Release(1)
	})
}

// A grant that races its waiter's cancellation is taken back out of the count:
// Stats.Acquired counts exactly the calls that returned nil. On each round the
// context is cancelled, which wakes the waiter, and the unit is handed to it
// before it runs (one processor), so it finds itself granted as it leaves.
func TestStats_AGrantLostToACancellationIsNotCounted(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // the waiter runs only once both happened
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(1)
		succeeded := uint64(0)
		for range 100 {
			require.True(t, s.TryAcquire(1))
			succeeded++
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- s.Acquire(ctx, 1) }()
			synctest.Wait() // queued
			cancel()        // wakes the waiter to leave...
			s.Release(1)    // ...and grants it before it runs
			if err := <-done; err == nil {
				succeeded++
				s.Release(1)
			} else {
				require.ErrorIs(t, err, context.Canceled)
			}
		}
		st := s.Stats()
		assert.Equal(t, succeeded, st.Acquired)
		assert.Equal(t, int64(1), st.Available)
		assert.Equal(t, uint64(100), succeeded, "every grant was lost to its cancellation")
	})
}

// Stats print with %v as one line in the metrics' words: what fmt.Println of a
// snapshot shows.
func TestStats_PrintsAsOneLineInTheMetricsWords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(2, semaphore.WithName("db"), semaphore.WithMaxWaiters(1), semaphore.WithHolderTracking())
		u, err := s.AcquireUnits(context.Background(), 2)
		require.NoError(t, err)
		assert.ErrorIs(t, s.AcquireTimeout(1500*time.Millisecond, 1), semaphore.ErrTimedOut)
		c := started(context.Background(), s, 1)
		synctest.Wait()
		assert.ErrorIs(t, s.Acquire(context.Background(), 1), semaphore.ErrQueueFull)
		time.Sleep(time.Second)
		assert.Equal(t, `semaphore "db" capacity=2 available=0 held=2 waiters=1 broken=false acquired=1 acquired_immediately=1 queued=2 timed_out=1 cancelled=0 rejected=1 wait_time=1.5s head_wait=1s oldest_holder=2.5s`,
			fmt.Sprint(s.Stats()))
		u.Release()
		require.NoError(t, <-c)
		s.Release(1)
		s.Break(nil)
		assert.Equal(t, `semaphore "db" capacity=2 available=0 held=0 waiters=0 broken=true acquired=2 acquired_immediately=1 queued=2 timed_out=1 cancelled=0 rejected=1 wait_time=2.5s`,
			s.Stats().String(), "head_wait and oldest_holder only when known and not zero")
	})
}

func TestStats_StringNamesEveryField(t *testing.T) {
	st := semaphore.Stats{Name: "n", Capacity: 1, Available: 1, Waiters: 1, Broken: true, Acquired: 1, AcquiredImmediately: 1,
		Queued: 1, TimedOut: 1, Cancelled: 1, Rejected: 1, WaitTime: 1, HeadWait: 1, OldestHolder: 1}
	statslinetest.EveryField(t, st, st.String(), nil)
}

func TestStats_StringQuotesHostileNames(t *testing.T) {
	for _, name := range []string{"a\nb", "<script>alert(1)</script>\" waiters=99", strings.Repeat("x", 5000), "\xff", ""} {
		got := semaphore.New(1, semaphore.WithName(name)).Stats().String()
		want := "unnamed semaphore"
		if name != "" {
			want = "semaphore " + strconv.Quote(name)
		}
		assert.Equal(t, want+" capacity=1 available=1 held=0 waiters=0 broken=false acquired=0 acquired_immediately=0 queued=0 timed_out=0 cancelled=0 rejected=0 wait_time=0s", got)
	}
}
