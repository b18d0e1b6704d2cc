package semaphore_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
)

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
	assert.Contains(t, r.dump, `semaphore "db": broken ("closing")`)
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
