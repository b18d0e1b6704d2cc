package adaptive_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
)

// script is an Algorithm that answers each window with the next of its
// limits, and keeps the samples it was given.
type script struct {
	limits  []int
	limit   int
	samples []adaptive.Sample
}

func (s *script) Limit() int { return s.limit }

func (s *script) Update(x adaptive.Sample) int {
	s.samples = append(s.samples, x)
	if len(s.limits) > 0 {
		s.limit, s.limits = s.limits[0], s.limits[1:]
	}
	return s.limit
}

func TestNew_ResizesTheSemaphoreToTheInitialLimit(t *testing.T) {
	sem := semaphore.New(100)
	l := adaptive.New(sem, &script{limit: 7})
	assert.Equal(t, int64(7), sem.Capacity())
	assert.Equal(t, 7, l.Limit())
}

func TestLimiter_AppliesNewLimitsWithResizeWithoutRevoking(t *testing.T) {
	alg := &script{limit: 3, limits: []int{1, 5}}
	var changes [][2]int
	sem := semaphore.New(3)
	l := adaptive.New(sem, alg, adaptive.WithWindow(1, 0, 0), adaptive.WithOnChange(func(o, n int) { changes = append(changes, [2]int{o, n}) }))
	a, _ := l.Acquire(context.Background())
	b, _ := l.Acquire(context.Background())
	c, _ := l.Acquire(context.Background())
	a.Done(adaptive.Success) // limit 1 with 2 still held: they keep their units
	assert.Equal(t, int64(1), sem.Capacity())
	assert.Equal(t, 2, l.InFlight())
	assert.False(t, sem.TryAcquire(1))
	b.Done(adaptive.Dropped) // limit 5
	c.Release()
	assert.Equal(t, int64(5), sem.Available())
	assert.Equal(t, [][2]int{{3, 1}, {1, 5}}, changes)
	st := l.Stats()
	want := adaptive.Stats{Limit: 5, Available: 5, Acquired: 3, Succeeded: 1, Dropped: 1, Ignored: 1, Windows: 2,
		Increases: 1, Decreases: 1, LastChange: st.LastChange}
	want.Levels[adaptive.Default].Acquired = 3
	assert.Equal(t, want, st)
	assert.False(t, st.LastChange.IsZero())
}

func TestAcquire_FailsAsTheSemaphoreDoes(t *testing.T) {
	sem := semaphore.New(1)
	l := adaptive.New(sem, &script{limit: 1})
	c, err := l.Acquire(context.Background())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	_, err = l.Acquire(ctx)
	assert.ErrorIs(t, err, semaphore.ErrTimedOut)
	c.Release()
	sem.Break(nil)
	_, err = l.Acquire(context.Background())
	assert.ErrorIs(t, err, semaphore.ErrBroken)
	assert.ErrorIs(t, l.Do(context.Background(), func(context.Context) error { return nil }), semaphore.ErrBroken)
}

func TestDo_ClassifiesByDefaultTimeoutsAsDropsAndCancellationsAsIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		alg := &script{limit: 8}
		l := adaptive.New(semaphore.New(8), alg, adaptive.WithWindow(1, 0, 0))
		boom := errors.New("boom")
		timedOut := refusal(t, context.DeadlineExceeded) // a call further down timed out
		for _, tc := range []struct {
			err   error
			drops int
		}{{nil, 0}, {boom, 0}, {context.DeadlineExceeded, 1}, {timedOut, 1}} {
			err := l.Do(context.Background(), func(context.Context) error {
				time.Sleep(10 * time.Millisecond)
				return tc.err
			})
			assert.Equal(t, tc.err, err)
			assert.Equal(t, tc.drops, alg.samples[len(alg.samples)-1].Drops, "%v", tc.err)
		}
		n := len(alg.samples)
		_ = l.Do(context.Background(), func(context.Context) error { return context.Canceled })
		assert.Len(t, alg.samples, n, "a cancellation is no sample")
		cancelledWithTimeoutCause := refusal(t, semaphore.ErrTimedOut)
		require.ErrorIs(t, cancelledWithTimeoutCause, semaphore.ErrTimedOut)
		_ = l.Do(context.Background(), func(context.Context) error { return cancelledWithTimeoutCause })
		assert.Len(t, alg.samples, n, "cancelled, whatever its cause matches: no sample")
	})
}

// refusal returns the error of an acquire on a full semaphore whose context
// ends with cause: a deadline when cause is context.DeadlineExceeded, else a
// cancellation with that cause.
func refusal(t *testing.T, cause error) error {
	t.Helper()
	full := semaphore.New(1)
	require.NoError(t, full.Acquire(context.Background(), 1))
	defer full.Release(1)
	var ctx context.Context
	var cancel func()
	if cause == context.DeadlineExceeded {
		ctx, cancel = context.WithTimeout(context.Background(), time.Millisecond)
	} else {
		var cancelCause context.CancelCauseFunc
		ctx, cancelCause = context.WithCancelCause(context.Background())
		cancelCause(cause)
		cancel = func() {}
	}
	defer cancel()
	err := full.Acquire(ctx, 1)
	require.Error(t, err)
	return err
}

func TestClassify_JudgesModuleErrorsByHowTheCallEnded(t *testing.T) {
	sem := semaphore.New(1, semaphore.WithMaxWaiters(0))
	require.NoError(t, sem.Acquire(context.Background(), 1))
	queueFull := sem.Acquire(context.Background(), 1)
	sem.Release(1)
	sem.Break(errors.New("closing"))
	broken := sem.Acquire(context.Background(), 1)
	for _, tc := range []struct {
		err  error
		want adaptive.Verdict
	}{
		{nil, adaptive.Success},
		{errors.New("not found"), adaptive.Success},
		{context.DeadlineExceeded, adaptive.TimedOut},
		{context.Canceled, adaptive.Ignore},
		{queueFull, adaptive.Dropped},
		{broken, adaptive.Ignore},
		{refusal(t, semaphore.ErrBroken), adaptive.Ignore},
		{refusal(t, semaphore.ErrQueueFull), adaptive.Ignore},
		{refusal(t, context.DeadlineExceeded), adaptive.TimedOut},
	} {
		assert.Equal(t, tc.want, adaptive.Classify(tc.err), "%v", tc.err)
	}
}

func TestDo_CountsATimeoutSoonerThanTheUsualRoundTripAsLateNotDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		alg := &script{limit: 8}
		l := adaptive.New(semaphore.New(8), alg, adaptive.WithWindow(1, 0, 0))
		_ = l.Do(context.Background(), func(context.Context) error {
			time.Sleep(10 * time.Millisecond)
			return nil
		})
		err := l.Do(context.Background(), func(context.Context) error {
			time.Sleep(time.Millisecond) // granted with 1ms of its deadline left
			return context.DeadlineExceeded
		})
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		require.Len(t, alg.samples, 2)
		late := alg.samples[1]
		assert.Equal(t, 1, late.Late, "late: the call never had the time the backend usually takes")
		assert.Zero(t, late.Drops)
		assert.Zero(t, late.RTT, "no round trip")
		assert.Equal(t, uint64(1), l.Stats().Ignored)
		assert.Zero(t, l.Stats().Dropped)
	})
}

func TestDo_UsesTheClassifierAndReleasesOnPanic(t *testing.T) {
	alg := &script{limit: 1}
	sem := semaphore.New(1)
	l := adaptive.New(sem, alg, adaptive.WithWindow(1, 0, 0),
		adaptive.WithClassifier(func(error) adaptive.Verdict { return adaptive.Dropped }))
	_ = l.Do(context.Background(), func(context.Context) error { return nil })
	assert.Equal(t, 1, alg.samples[0].Drops)
	assert.Panics(t, func() { _ = l.Do(context.Background(), func(context.Context) error { panic("x") }) })
	assert.Equal(t, int64(1), sem.Available())
	assert.Equal(t, uint64(1), l.Stats().Ignored)
}

func TestLimiter_GrantedCallAllocatesNothing(t *testing.T) {
	l := adaptive.New(semaphore.New(4), adaptive.NewAIMD(adaptive.AIMDConfig{InitialLimit: 4, MinLimit: 1}))
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	assert.Zero(t, testing.AllocsPerRun(1000, func() { _ = l.Do(ctx, fn) }))
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		c, err := l.Acquire(ctx)
		if err != nil {
			panic(err)
		}
		defer c.Release()
		c.Done(adaptive.Success)
	}))
	d := adaptive.New(semaphore.New(8), &script{limit: 8}) // weighted calls
	assert.Zero(t, testing.AllocsPerRun(1000, func() { _ = d.DoN(ctx, 3, fn) }))
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		c, err := d.AcquireN(ctx, 2)
		if err != nil {
			panic(err)
		}
		c.Done(adaptive.TimedOut)
	}))
}

func TestNew_DrivesAnyResizerAndAcquiresOnItsOwnSemaphore(t *testing.T) {
	var sizes []int64
	alg := &script{limit: 3, limits: []int{2}}
	l := adaptive.New(adaptive.ResizeFunc(func(n int64) { sizes = append(sizes, n) }), alg, adaptive.WithWindow(1, 0, 0))
	assert.Equal(t, []int64{3}, sizes, "resized to the initial limit at once")
	c := l.Start(1, 0) // admitted by the target
	assert.Equal(t, 1, l.InFlight())
	c.Done(adaptive.Success)
	assert.Equal(t, []int64{3, 2}, sizes)
	a, err := l.Acquire(context.Background()) // every method works: the Limiter's own semaphore, at the same limit
	require.NoError(t, err)
	b, err := l.Acquire(context.Background())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = l.Acquire(ctx)
	require.Error(t, err, "the limit of 2 is reached")
	a.Release()
	b.Release()
}

func TestLimiter_ClampsAlgorithmAnswersToValidCapacities(t *testing.T) {
	sem := semaphore.New(1)
	l := adaptive.New(sem, &script{limit: 0, limits: []int{-5, 1 << 62}}, adaptive.WithWindow(1, 0, 0))
	assert.Equal(t, 1, l.Limit())
	_ = l.Do(context.Background(), func(context.Context) error { return nil })
	assert.Equal(t, 1, l.Limit())
	_ = l.Do(context.Background(), func(context.Context) error { return nil })
	assert.Equal(t, int64(semaphore.MaxUnits), sem.Capacity())
}

func TestStart_MeasuresACallAdmittedElsewhereWithoutTouchingUnits(t *testing.T) {
	sem := semaphore.New(4)
	alg := &script{limit: 4}
	l := adaptive.New(sem, alg, adaptive.WithWindow(1, 0, 0))
	require.NoError(t, sem.Acquire(context.Background(), 1)) // admitted by the semaphore directly
	c := l.Start(1, 0)
	assert.Equal(t, 1, l.InFlight())
	c.Done(adaptive.Success)
	assert.Len(t, alg.samples, 1)
	assert.Equal(t, int64(3), sem.Available(), "the caller still holds its unit")
	sem.Release(1)
	c = l.Start(1, 0)
	c.Release()
	assert.Equal(t, int64(4), sem.Available())
	assert.Zero(t, l.InFlight())
}

func TestDo_PanicsOnAClassifierAnswerThatIsNoVerdict(t *testing.T) {
	sem := semaphore.New(1)
	l := adaptive.New(sem, &script{limit: 1}, adaptive.WithClassifier(func(error) adaptive.Verdict { return 7 }))
	assert.PanicsWithValue(t, "adaptive: the classifier returned Verdict(7), not a Verdict",
		func() { _ = l.Do(context.Background(), func(context.Context) error { return nil }) })
	assert.Equal(t, int64(1), sem.Available(), "the slot is given back")
}
