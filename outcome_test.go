package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
)

func TestOutcome_StringNamesEachOutcome(t *testing.T) {
	want := map[semaphore.Outcome]string{
		semaphore.Granted: "granted", semaphore.TimedOut: "timed_out", semaphore.Cancelled: "cancelled",
		semaphore.Broken: "broken", semaphore.TooLarge: "too_large", semaphore.QueueFull: "queue_full",
		semaphore.Shed: "shed", semaphore.Outcome(200): "unknown",
	}
	for o, s := range want {
		assert.Equal(t, s, o.String())
	}
}

func TestOutcomeOf_EveryFailedCallCarriesItsOutcomeThroughWrapping(t *testing.T) {
	full := semaphore.New(1, semaphore.WithMaxWaiters(0))
	require.True(t, full.TryAcquire(1))
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(1, 0))
	defer cancel2()
	broken := semaphore.New(1)
	broken.Break(errors.New("shutting down"))
	cases := []struct {
		name string
		err  error
		want semaphore.Outcome
	}{
		{"timeout", full.AcquireTimeout(0, 1), semaphore.TimedOut},
		{"deadline", full.Acquire(expired, 1), semaphore.TimedOut},
		{"cancelled", full.Acquire(cancelled, 1), semaphore.Cancelled},
		{"broken", broken.Acquire(context.Background(), 1), semaphore.Broken},
		{"too large", full.Acquire(context.Background(), 2), semaphore.TooLarge},
		{"queue full", full.Acquire(context.Background(), 1), semaphore.QueueFull},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Error(t, c.err)
			o, ok := semaphore.OutcomeOf(c.err)
			require.True(t, ok)
			assert.Equal(t, c.want, o)
			o, ok = semaphore.OutcomeOf(fmt.Errorf("handler: %w", c.err))
			require.True(t, ok, "through wrapping")
			assert.Equal(t, c.want, o)
		})
	}
}

func TestOutcomeOf_ACauseIsNotAnOutcome(t *testing.T) {
	other := semaphore.New(1)
	other.Break(errors.New("shutting down"))
	for _, cause := range []error{other.Err(), semaphore.ErrBroken, semaphore.ErrTimedOut, semaphore.ErrQueueFull, semaphore.ErrShed, semaphore.ErrTooLarge} {
		s := semaphore.New(1)
		require.True(t, s.TryAcquire(1))
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		err := s.Acquire(ctx, 1)
		require.ErrorIs(t, err, cause, "the cause still matches")
		o, ok := semaphore.OutcomeOf(err)
		require.True(t, ok)
		assert.Equal(t, semaphore.Cancelled, o, "cause %v", cause)
	}
}

func TestOutcomeOf_ErrorsThatEndNoCallHaveNone(t *testing.T) {
	s := semaphore.New(2)
	u, err := s.AcquireUnits(context.Background(), 1)
	require.NoError(t, err)
	_, err = u.Split(2)
	require.ErrorIs(t, err, semaphore.ErrInsufficientUnits)
	for _, err := range []error{nil, err, errors.New("elsewhere"), semaphore.ErrBroken, context.Canceled} {
		_, ok := semaphore.OutcomeOf(err)
		assert.False(t, ok, "%v", err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	other := semaphore.New(1)
	require.True(t, other.TryAcquire(1))
	cause := other.AcquireTimeout(0, 1) // an outcome of another call, as a cause
	cancel(cause)
	err = s.Drain(ctx)
	require.ErrorIs(t, err, cause)
	_, ok := semaphore.OutcomeOf(err)
	assert.False(t, ok, "Drain ends no call, whatever its context's cause")
	u.Release()
}

func TestObserver_GrantedWaitReportsDurationUnitsAndPlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		s := semaphore.New(2, semaphore.WithObserver(rec))
		require.NoError(t, s.Acquire(context.Background(), 2))
		calls := queue(context.Background(), s, 1, 2)
		time.Sleep(3 * time.Second)
		s.Release(1)
		synctest.Wait()
		time.Sleep(time.Second)
		s.Release(2)
		synctest.Wait()
		require.Len(t, finished(calls), 2)
		assert.Equal(t, []semaphore.WaitEvent{
			{Units: 1, Outcome: semaphore.Granted, Queued: true, Waited: 3 * time.Second, Ahead: 0},
			{Units: 2, Outcome: semaphore.Granted, Queued: true, Waited: 4 * time.Second, Ahead: 1},
		}, rec.got())
		assert.Equal(t, 7*time.Second, s.Stats().WaitTime, "the observer and Stats see the same clock reads")
	})
}

func TestObserver_ReportsEveryOutcomeOnce(t *testing.T) {
	cause := errors.New("shutting down")
	tests := []struct {
		name string
		run  func(t *testing.T, s *semaphore.Semaphore)
		want semaphore.WaitEvent
	}{
		{"timed out while waiting", func(t *testing.T, s *semaphore.Semaphore) {
			assert.ErrorIs(t, s.AcquireTimeout(time.Second, 1), semaphore.ErrTimedOut)
		}, semaphore.WaitEvent{Units: 1, Outcome: semaphore.TimedOut, Queued: true, Waited: time.Second}},
		{"context deadline while waiting", func(t *testing.T, s *semaphore.Semaphore) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			assert.ErrorIs(t, s.Acquire(ctx, 1), semaphore.ErrTimedOut)
		}, semaphore.WaitEvent{Units: 1, Outcome: semaphore.TimedOut, Queued: true, Waited: 2 * time.Second}},
		{"cancelled while waiting", func(t *testing.T, s *semaphore.Semaphore) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(time.Second, cancel)
			assert.ErrorIs(t, s.Acquire(ctx, 1), context.Canceled)
		}, semaphore.WaitEvent{Units: 1, Outcome: semaphore.Cancelled, Queued: true, Waited: time.Second}},
		{"broken while waiting", func(t *testing.T, s *semaphore.Semaphore) {
			time.AfterFunc(time.Second, func() { s.Break(cause) })
			assert.ErrorIs(t, s.Acquire(context.Background(), 1), semaphore.ErrBroken)
		}, semaphore.WaitEvent{Units: 1, Outcome: semaphore.Broken, Queued: true, Waited: time.Second}},
		{"resized away while waiting", func(t *testing.T, s *semaphore.Semaphore) {
			time.AfterFunc(time.Second, func() { s.Resize(1) })
			assert.ErrorIs(t, s.Acquire(context.Background(), 2), semaphore.ErrTooLarge)
		}, semaphore.WaitEvent{Units: 2, Outcome: semaphore.TooLarge, Queued: true, Waited: time.Second}},
		{"too large at once", func(t *testing.T, s *semaphore.Semaphore) {
			assert.ErrorIs(t, s.Acquire(context.Background(), 3), semaphore.ErrTooLarge)
		}, semaphore.WaitEvent{Units: 3, Outcome: semaphore.TooLarge}},
		{"queue full", func(t *testing.T, s *semaphore.Semaphore) {
			go func() { _ = s.AcquireTimeout(time.Second, 1) }()
			synctest.Wait()
			assert.ErrorIs(t, s.Acquire(context.Background(), 1), semaphore.ErrQueueFull)
			time.Sleep(time.Second) // the waiter that filled the queue times out afterwards
		}, semaphore.WaitEvent{Units: 1, Outcome: semaphore.QueueFull}},
		{"broken before waiting", func(t *testing.T, s *semaphore.Semaphore) {
			s.Break(cause)
			assert.ErrorIs(t, s.Acquire(context.Background(), 1), semaphore.ErrBroken)
		}, semaphore.WaitEvent{Units: 1, Outcome: semaphore.Broken}},
		{"context done before waiting", func(t *testing.T, s *semaphore.Semaphore) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			assert.ErrorIs(t, s.Acquire(ctx, 1), context.Canceled)
		}, semaphore.WaitEvent{Units: 1, Outcome: semaphore.Cancelled}},
		{"timeout not positive", func(t *testing.T, s *semaphore.Semaphore) {
			assert.ErrorIs(t, s.AcquireTimeout(0, 1), semaphore.ErrTimedOut)
		}, semaphore.WaitEvent{Units: 1, Outcome: semaphore.TimedOut}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &recorder{}
				s := semaphore.New(2, semaphore.WithObserver(rec), semaphore.WithMaxWaiters(1))
				require.NoError(t, s.Acquire(context.Background(), 2))
				tt.run(t, s)
				synctest.Wait()
				got := rec.got()
				require.NotEmpty(t, got)
				assert.Equal(t, tt.want, got[0], "the call's own event comes first")
				if tt.want.Outcome == semaphore.QueueFull {
					require.Len(t, got, 2, "and the waiter that filled the queue reports its own end")
					assert.Equal(t, semaphore.TimedOut, got[1].Outcome)
				} else {
					assert.Len(t, got, 1, "exactly one event per call")
				}
			})
		})
	}
}

func TestObserver_NotCalledForCallsGrantedAtOnce(t *testing.T) {
	rec := &recorder{}
	s := semaphore.New(2, semaphore.WithObserver(rec))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	require.NoError(t, s.Acquire(context.Background(), 1))
	require.NoError(t, s.Acquire(ctx, 1))
	s.Release(2)
	require.True(t, s.TryAcquire(2))
	require.False(t, s.TryAcquire(1), "a failed TryAcquire is not a wait either")
	s.Release(2)
	u, err := s.AcquireUnits(ctx, 2)
	require.NoError(t, err)
	u.Release()
	require.NoError(t, s.AcquireTimeout(time.Second, 1))
	s.Release(1)
	assert.Empty(t, rec.got())
}

func TestObserver_BrokenCalledOnceWithTheCause(t *testing.T) {
	rec := &recorder{}
	s := semaphore.New(1, semaphore.WithObserver(rec))
	cause := errors.New("shutting down")
	s.Break(cause)
	s.Break(errors.New("again"))
	assert.Equal(t, []error{cause}, rec.breaks)
}

func TestObserver_RunsWithoutTheLockHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{during: func(s *semaphore.Semaphore) {
			_ = s.Stats()
			_ = s.Diagnostics(0)
			_ = s.String()
		}}
		s := semaphore.New(1, semaphore.WithObserver(rec))
		require.NoError(t, s.Acquire(context.Background(), 1))
		done := started(context.Background(), s, 1)
		synctest.Wait()
		s.Release(1)
		require.NoError(t, <-done, "an observer that reads the semaphore must not deadlock")
		assert.Len(t, rec.got(), 1)
	})
}

// breakReader is an Observer whose Broken reads the semaphore, as the Observer
// documentation allows.
type breakReader struct {
	stats semaphore.Stats
	dump  string
}

func (r *breakReader) WaitEnded(*semaphore.Semaphore, semaphore.WaitEvent) {}
func (r *breakReader) Broken(s *semaphore.Semaphore, _ error) {
	r.stats, r.dump = s.Stats(), s.Diagnostics(0)
}

// Broken runs after the lock is released, so an observer may read the semaphore
// there: Break returns, and what it read shows the break done.
func TestObserver_BrokenMayCallStatsAndDiagnostics(t *testing.T) {
	r := &breakReader{}
	s := semaphore.New(1, semaphore.WithObserver(r), semaphore.WithName("db"))
	done := make(chan struct{})
	go func() {
		s.Break(errors.New("closing"))
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Break deadlocked in an observer that reads the semaphore")
	}
	assert.True(t, r.stats.Broken)
	assert.Contains(t, r.dump, `semaphore "db": broken (closing)`)
}

// The observer and Stats report one outcome per call, decided once: a context
// cancelled with another semaphore's broken error as its cause is Cancelled in
// both, not Broken in one and Cancelled in the other.
func TestObserver_AgreesWithStatsWhenTheCauseIsAnotherSemaphoresBreak(t *testing.T) {
	other := semaphore.New(1)
	other.Break(errors.New("shutting down"))
	rec := &recorder{}
	s := semaphore.New(1, semaphore.WithObserver(rec))
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(other.Err())

	err := s.Acquire(ctx, 1)
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, rec.got(), 1)
	assert.Equal(t, semaphore.Cancelled, rec.got()[0].Outcome)
	assert.Equal(t, uint64(1), s.Stats().Cancelled)
	assert.NoError(t, s.Err(), "this semaphore is healthy")
}

// Errors: each message says which semaphore, what was asked and why it failed.

func TestErrors_SayWhichSemaphoreWhatWasAskedAndWhy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(4, semaphore.WithName("db-conns"))
		require.NoError(t, s.Acquire(context.Background(), 4))
		queue(context.Background(), s, 1, 1, 1)
		err := s.AcquireTimeout(1500*time.Millisecond, 2)
		assert.Equal(t, `semaphore "db-conns": acquire 2 units: timed out after 1.5s, queued behind 3 waiters (0 of 4 units available)`, err.Error())
		s.Break(errors.New("shutting down"))
		assert.Equal(t, `semaphore "db-conns": acquire 1 unit: broken: shutting down`, s.Acquire(context.Background(), 1).Error())
		assert.Equal(t, `semaphore "db-conns": broken: shutting down`, s.Err().Error())
	})
}

func TestErrors_UnnamedSemaphoreIsStillIdentified(t *testing.T) {
	s := semaphore.New(1)
	msg := s.Acquire(context.Background(), 2).Error()
	assert.Regexp(t, `^unnamed semaphore 0x[0-9a-f]+: acquire 2 units: more than the capacity of 1$`, msg)
	assert.Contains(t, s.String(), strings.SplitN(msg, ":", 2)[0])
}

// Messages count in the singular for one: "1 waiter", "1 unit available".
func TestErrors_SayOneInTheSingular(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(1, semaphore.WithName("one"))
		require.True(t, s.TryAcquire(1))
		queue(context.Background(), s, 1)
		err := s.AcquireTimeout(time.Second, 1)
		assert.Equal(t, `semaphore "one": acquire 1 unit: timed out after 1s, queued behind 1 waiter (0 of 1 unit available)`, err.Error())
		s.Release(1)
		synctest.Wait()
		s.Release(1)
		assert.Equal(t, `semaphore "one" (1 of 1 unit available, 0 waiting)`, s.String())
	})
}

// Errors: every sentinel is distinct under errors.Is.

func TestErrors_SentinelsAreDistinct(t *testing.T) {
	all := []error{semaphore.ErrBroken, semaphore.ErrTimedOut, semaphore.ErrQueueFull,
		semaphore.ErrTooLarge, semaphore.ErrInsufficientUnits, semaphore.ErrDifferentSemaphore}
	for i, a := range all {
		for j, b := range all {
			assert.Equal(t, i == j, errors.Is(a, b), "%v vs %v", a, b)
		}
	}
}

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
	for range 200000 {
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
