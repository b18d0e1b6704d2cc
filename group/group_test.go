package group_test

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/group"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// gate is a task body that reports its start and returns err when let go.
type gate struct {
	started chan string
	release map[string]chan error
}

func newGate(names ...string) *gate {
	g := &gate{started: make(chan string, len(names)), release: map[string]chan error{}}
	for _, n := range names {
		g.release[n] = make(chan error, 1)
	}
	return g
}

func (g *gate) task(name string) func() error {
	return func() error {
		g.started <- name
		return <-g.release[name]
	}
}

// startedNow returns the tasks that have started since the last call. Call it
// after synctest.Wait.
func (g *gate) startedNow() []string {
	var names []string
	for {
		select {
		case n := <-g.started:
			names = append(names, n)
		default:
			return names
		}
	}
}

func TestGo_StartsNoGoroutineBeforeTheUnitsAreGranted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sem := semaphore.New(2)
		g := group.New(sem)
		gt := newGate("a", "b", "c")
		require.NoError(t, g.Go(t.Context(), 1, gt.task("a")))
		require.NoError(t, g.Go(t.Context(), 1, gt.task("b")))
		goDone := make(chan error, 1)
		go func() { goDone <- g.Go(t.Context(), 1, gt.task("c")) }()
		synctest.Wait()
		assert.ElementsMatch(t, []string{"a", "b"}, gt.startedNow())
		assert.Equal(t, 1, sem.Waiters(), "the third Go waits on the caller's goroutine")
		assert.Equal(t, 3, goroutinesIn("semaphore/group.(*Group)"),
			"two tasks and the caller waiting in Go: no goroutine for the task that waits")

		gt.release["a"] <- nil
		synctest.Wait()
		require.NoError(t, <-goDone)
		assert.Equal(t, []string{"c"}, gt.startedNow())
		gt.release["b"] <- nil
		gt.release["c"] <- nil
		require.NoError(t, g.Wait())
	})
}

func TestGo_GrantsInFIFOOrderWithWeights(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sem := semaphore.New(3)
		g := group.New(sem)
		gt := newGate("light", "heavy", "small")
		require.NoError(t, g.Go(t.Context(), 2, gt.task("light")))
		go func() { _ = g.Go(t.Context(), 3, gt.task("heavy")) }()
		synctest.Wait()
		go func() { _ = g.Go(t.Context(), 1, gt.task("small")) }()
		synctest.Wait()
		assert.Equal(t, []string{"light"}, gt.startedNow(), "small waits behind heavy although one unit is free")

		gt.release["light"] <- nil
		synctest.Wait()
		assert.Equal(t, []string{"heavy"}, gt.startedNow())
		gt.release["heavy"] <- nil
		synctest.Wait()
		assert.Equal(t, []string{"small"}, gt.startedNow())
		gt.release["small"] <- nil
		require.NoError(t, g.Wait())
		assert.Equal(t, int64(3), sem.Available())
	})
}

func TestGo_ContextEndingWhileWaitingReturnsItsErrorAndSkipsTheTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sem := semaphore.New(1)
		g := group.New(sem)
		gt := newGate("a")
		require.NoError(t, g.Go(t.Context(), 1, gt.task("a")))
		ctx, cancel := context.WithCancel(t.Context())
		var ran atomic.Bool
		goDone := make(chan error, 1)
		go func() { goDone <- g.Go(ctx, 1, func() error { ran.Store(true); return nil }) }()
		synctest.Wait()
		cancel()
		err := <-goDone
		require.ErrorIs(t, err, context.Canceled)
		gt.release["a"] <- nil
		assert.NoError(t, g.Wait(), "the refused Go is not the group's error")
		assert.False(t, ran.Load())
		assert.Equal(t, int64(1), sem.Available())
	})
}

func TestGo_SemaphoreRefusalsGoToTheCaller(t *testing.T) {
	sem := semaphore.New(2, semaphore.WithMaxWaiters(0))
	g := group.New(sem)
	never := func() error { t.Error("ran"); return nil }
	require.ErrorIs(t, g.Go(context.Background(), 3, never), semaphore.ErrTooLarge)

	release := make(chan struct{})
	require.NoError(t, g.Go(context.Background(), 2, func() error { <-release; return nil }))
	require.ErrorIs(t, g.Go(context.Background(), 1, never), semaphore.ErrQueueFull)

	sem.Break(errors.New("closing"))
	require.ErrorIs(t, g.Go(context.Background(), 1, never), semaphore.ErrBroken)
	assert.False(t, g.TryGo(1, never))
	close(release)
	assert.NoError(t, g.Wait())
}

func TestGo_WeightAboveMaxUnitsIsRefusedNotAPanic(t *testing.T) {
	sem := semaphore.New(semaphore.MaxUnits)
	g := group.New(sem)
	never := func() error { t.Error("ran"); return nil }
	for _, n := range []int64{semaphore.MaxUnits + 1, math.MaxInt64} {
		require.ErrorIs(t, g.Go(context.Background(), n, never), semaphore.ErrTooLarge, "n=%d", n)
		assert.False(t, g.TryGo(n, never), "n=%d", n)
	}
	require.NoError(t, g.Go(context.Background(), semaphore.MaxUnits, func() error { return nil }))
	require.NoError(t, g.Wait())
	assert.Equal(t, int64(semaphore.MaxUnits), sem.Available())
}

func TestTryGo_RunsOnlyWhenUnitsAreFreeAndNobodyWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sem := semaphore.New(2)
		g := group.New(sem)
		gt := newGate("a", "b", "c")
		assert.True(t, g.TryGo(1, gt.task("a")))
		assert.False(t, g.TryGo(2, gt.task("c")), "only one unit free")
		go func() { _ = g.Go(t.Context(), 2, gt.task("b")) }()
		synctest.Wait()
		assert.False(t, g.TryGo(1, gt.task("c")), "a unit is free but Go(2) waits ahead")
		assert.Equal(t, []string{"a"}, gt.startedNow())
		gt.release["a"] <- nil
		synctest.Wait()
		assert.Equal(t, []string{"b"}, gt.startedNow())
		gt.release["b"] <- nil
		require.NoError(t, g.Wait())
	})
}

func TestWait_ReturnsTheFirstError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := group.New(semaphore.New(3))
		gt := newGate("a", "b", "c")
		for _, n := range []string{"a", "b", "c"} {
			require.NoError(t, g.Go(t.Context(), 1, gt.task(n)))
		}
		first, second := errors.New("first"), errors.New("second")
		gt.release["b"] <- first
		synctest.Wait()
		gt.release["a"] <- second
		gt.release["c"] <- nil
		assert.Equal(t, first, g.Wait())
	})
}

func TestWithContext_FirstErrorCancelsWithItAsTheCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, ctx := group.WithContext(t.Context(), semaphore.New(1))
		boom := errors.New("boom")
		require.NoError(t, g.Go(ctx, 1, func() error { return boom }))
		// The next Go waits for the unit, and its context ends first or it runs
		// after the failure; either way the group's context is canceled.
		<-ctx.Done()
		assert.Equal(t, boom, context.Cause(ctx))
		err := g.Go(ctx, 1, func() error { t.Error("ran after cancel"); return nil })
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, boom, g.Wait())
	})
}

func TestWithContext_WaitCancelsTheContext(t *testing.T) {
	g, ctx := group.WithContext(context.Background(), semaphore.New(1))
	require.NoError(t, g.Go(ctx, 1, func() error { return nil }))
	require.NoError(t, g.Wait())
	assert.ErrorIs(t, ctx.Err(), context.Canceled)
}

func TestWait_RepanicsATaskPanicAfterEveryTaskHasFinished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sem := semaphore.New(2)
		g, ctx := group.WithContext(t.Context(), sem)
		var slowFinished atomic.Bool
		require.NoError(t, g.Go(ctx, 1, func() error {
			<-ctx.Done() // canceled by the panic
			slowFinished.Store(true)
			return nil
		}))
		require.NoError(t, g.Go(ctx, 1, func() error { panicky(); return nil }))

		var p any
		func() {
			defer func() { p = recover() }()
			_ = g.Wait()
		}()
		require.IsType(t, &group.PanicError{}, p)
		pe := p.(*group.PanicError)
		assert.Equal(t, "kaboom", pe.Value)
		assert.Contains(t, string(pe.Stack), "panicky", "the task's stack, not Wait's")
		assert.True(t, strings.HasPrefix(pe.Error(), "group: task panicked: kaboom"))
		assert.True(t, slowFinished.Load(), "Wait waited for the other task")
		assert.Equal(t, pe, context.Cause(ctx), "the panic canceled the context")
		assert.Equal(t, int64(2), sem.Available(), "the panicking task gave its units back")
	})
}

func panicky() { panic("kaboom") }

func TestPanicError_UnwrapsAnErrorValue(t *testing.T) {
	g := group.New(semaphore.New(1))
	require.NoError(t, g.Go(context.Background(), 1, func() error { panic(context.DeadlineExceeded) }))
	defer func() {
		err, ok := recover().(error)
		require.True(t, ok)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	}()
	_ = g.Wait()
	t.Fatal("Wait did not panic")
}

func TestWait_PanicWinsOverAnEarlierError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := group.New(semaphore.New(2))
		require.NoError(t, g.Go(t.Context(), 1, func() error { return errors.New("plain") }))
		synctest.Wait()
		require.NoError(t, g.Go(t.Context(), 1, func() error { panic("later") }))
		assert.Panics(t, func() { _ = g.Wait() }, "a panic is never swallowed")
	})
}

func TestGoexit_EndsTheTaskWithoutErrorAndReturnsItsUnits(t *testing.T) {
	sem := semaphore.New(1)
	g := group.New(sem)
	require.NoError(t, g.Go(context.Background(), 1, func() error { runtime.Goexit(); return nil }))
	assert.NoError(t, g.Wait())
	assert.Equal(t, int64(1), sem.Available())
}

func TestWait_WaitsForGoCallsStillWaitingForUnits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sem := semaphore.New(1)
		g := group.New(sem)
		gt := newGate("a")
		require.NoError(t, g.Go(t.Context(), 1, gt.task("a")))
		var bRan atomic.Bool
		go func() { _ = g.Go(t.Context(), 1, func() error { bRan.Store(true); return nil }) }()
		synctest.Wait()
		waited := make(chan error, 1)
		go func() { waited <- g.Wait() }()
		synctest.Wait()
		gt.release["a"] <- nil
		require.NoError(t, <-waited)
		assert.True(t, bRan.Load(), "Wait returned only after the waiting Go's task ran")
		assert.Equal(t, int64(1), sem.Available())
	})
}

func TestInvalidArguments_Panic(t *testing.T) {
	g := group.New(semaphore.New(1))
	assert.PanicsWithValue(t, "group: New(nil)", func() { group.New(nil) })
	assert.Panics(t, func() { group.WithContext(context.Background(), nil) })
	assert.Panics(t, func() { _ = g.Go(context.Background(), 1, nil) })
	assert.Panics(t, func() { g.TryGo(1, nil) })
	assert.Panics(t, func() { _ = g.Go(context.Background(), -1, func() error { return nil }) })
	assert.Panics(t, func() { g.TryGo(-1, func() error { return nil }) })
	assert.NoError(t, g.Wait(), "the panics left nothing behind")
}

func TestWait_RepanicsTheFirstPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := group.New(semaphore.New(2))
		require.NoError(t, g.Go(t.Context(), 1, func() error { panic("first") }))
		synctest.Wait()
		require.NoError(t, g.Go(t.Context(), 1, func() error { panic("second") }))
		defer func() {
			assert.Equal(t, "first", recover().(*group.PanicError).Value)
		}()
		_ = g.Wait()
	})
}

// goroutinesIn counts the goroutines whose stack has a frame matching fn.
func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		// Only goroutines in a bubble, the caller's (tests here do not run in
		// parallel): a goroutine of an earlier test may still be on its way
		// out, with the same functions on its stack.
		header, _, _ := strings.Cut(g, "\n")
		if strings.Contains(header, "synctest bubble") && strings.Contains(g, fn) {
			n++
		}
	}
	return n
}

// A Go whose context is cancelled while it waits returns an error whose
// Outcome is Cancelled, whatever sentinel the context's cause matches.
func TestGo_ACancelledWaitIsCancelledWhateverItsCause(t *testing.T) {
	for _, cause := range []error{semaphore.ErrBroken, semaphore.ErrTimedOut, semaphore.ErrQueueFull, semaphore.ErrShed, semaphore.ErrTooLarge} {
		t.Run(cause.Error(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sem := semaphore.New(1)
				g := group.New(sem)
				gt := newGate("a")
				require.NoError(t, g.Go(t.Context(), 1, gt.task("a")))
				ctx, cancel := context.WithCancelCause(t.Context())
				goDone := make(chan error, 1)
				go func() { goDone <- g.Go(ctx, 1, func() error { return nil }) }()
				synctest.Wait()
				cancel(errors.Join(errors.New("elsewhere"), cause))
				err := <-goDone
				require.ErrorIs(t, err, cause)
				o, ok := semaphore.OutcomeOf(err)
				require.True(t, ok)
				assert.Equal(t, semaphore.Cancelled, o)
				assert.Equal(t, uint64(1), sem.Stats().Cancelled)
				gt.release["a"] <- nil
				require.NoError(t, g.Wait())
			})
		})
	}
}
