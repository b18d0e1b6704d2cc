package adaptive_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
)

func at(ctx context.Context, p adaptive.Priority) context.Context {
	return adaptive.ContextWithPriority(ctx, p)
}

func TestPriority_DefaultIsTheZeroValueAndTheContextCarriesIt(t *testing.T) {
	assert.Equal(t, adaptive.Default, adaptive.PriorityFrom(context.Background()))
	assert.Equal(t, adaptive.Priority(0), adaptive.Default)
	for _, p := range []adaptive.Priority{adaptive.Critical, adaptive.Default, adaptive.Sheddable} {
		assert.Equal(t, p, adaptive.PriorityFrom(at(context.Background(), p)))
	}
	assert.Equal(t, []string{"critical", "default", "sheddable", "Level(7)"},
		[]string{adaptive.Critical.String(), adaptive.Default.String(), adaptive.Sheddable.String(), adaptive.Priority(7).String()})
	assert.PanicsWithValue(t, "adaptive: ContextWithPriority(Level(3)): not a Priority",
		func() { adaptive.ContextWithPriority(context.Background(), 3) })
}

func TestPriority_SheddableWaitsAtMostTheTargetWhereCriticalWaitsItsBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := measured(t, 1, 10*time.Millisecond)
		held := hold(t, l, 1)
		// One unit must come back, in 10ms: past a sheddable call's 5ms.
		_, err := l.Acquire(at(deadline(t, time.Second), adaptive.Sheddable))
		assert.ErrorIs(t, err, semaphore.ErrShed)
		assert.Contains(t, err.Error(), "shed at once: expected wait 10ms (0 units ahead, 1 in flight, limit 1) exceeds the 5ms a sheddable call waits")
		_, err = l.Acquire(at(context.Background(), adaptive.Sheddable))
		assert.ErrorIs(t, err, semaphore.ErrShed, "a sheddable call is capped without a deadline too")
		crit := wait(at(deadline(t, time.Second), adaptive.Critical), l, 1)
		assert.False(t, crit.ended(), "a critical call waits as its budget allows")
		st := l.Stats()
		assert.Equal(t, uint64(2), st.Levels[adaptive.Sheddable].ShedAtOnce)
		assert.Zero(t, st.Levels[adaptive.Critical].Shed)
		held[0].Release()
		<-crit.done
		require.NoError(t, crit.err)
		crit.c.Release()
	})
}

func TestPriority_ASheddableWaitIsCutAtTheTarget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := measured(t, 1, 2*time.Millisecond)
		held := hold(t, l, 1)
		start := time.Now()
		_, err := l.Acquire(at(context.Background(), adaptive.Sheddable)) // 2ms expected: admitted, never granted
		assert.ErrorIs(t, err, semaphore.ErrShed)
		assert.Equal(t, 5*time.Millisecond, time.Since(start))
		assert.Contains(t, err.Error(), "shed: waited 5ms, the most 5ms a sheddable call waits")
		held[0].Release()
	})
}

func TestPriority_DefaultIsCappedWhileSheddableCallsAreShed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := measured(t, 1, 2*time.Millisecond)
		held := hold(t, l, 1)
		var ahead []*waiter
		for range 4 {
			ahead = append(ahead, wait(at(context.Background(), adaptive.Critical), l, 1))
		}
		def := wait(deadline(t, time.Second), l, 1) // 10ms expected: nothing caps a default call yet
		assert.False(t, def.ended())
		_, err := l.Acquire(at(context.Background(), adaptive.Sheddable)) // 12ms: shed
		require.ErrorIs(t, err, semaphore.ErrShed)
		// Now a default call waits at most twice the target: 10ms.
		_, err = l.Acquire(deadline(t, time.Second))
		assert.ErrorIs(t, err, semaphore.ErrShed, "12ms expected")
		assert.Contains(t, err.Error(), "exceeds the 10ms a default call waits while sheddable calls are shed")
		crit := wait(at(deadline(t, time.Second), adaptive.Critical), l, 1)
		assert.False(t, crit.ended(), "a critical call is not capped by the levels below")
		time.Sleep(101 * time.Millisecond) // no sheddable call shed for the interval
		late := wait(context.Background(), l, 1)
		assert.False(t, late.ended(), "the default cap is lifted")

		held[0].Release()
		for _, w := range append(ahead, def, crit, late) {
			<-w.done
			require.NoError(t, w.err)
			w.c.Release()
		}
	})
}

func TestPriority_AdmittedCallsAreGrantedInArrivalOrderAcrossLevels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := adaptive.New(semaphore.New(2), &script{limit: 2})
		held := hold(t, l, 2)
		def := wait(context.Background(), l, 1)
		shed := wait(at(context.Background(), adaptive.Sheddable), l, 1)
		crit := wait(at(context.Background(), adaptive.Critical), l, 1)
		held[0].Release()
		synctest.Wait()
		assert.True(t, def.ended())
		assert.False(t, shed.ended() || crit.ended(), "one unit: the head only")
		held[1].Release()
		synctest.Wait()
		assert.True(t, shed.ended(), "the sheddable call arrived first")
		assert.False(t, crit.ended(), "a critical call never jumps a call admitted before it")
		def.c.Release()
		<-crit.done
		for _, w := range []*waiter{def, shed, crit} {
			require.NoError(t, w.err)
			w.c.Release()
		}
	})
}

func TestPriority_LevelsCountUnits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := adaptive.New(semaphore.New(4), &script{limit: 4})
		c, err := l.AcquireN(at(context.Background(), adaptive.Critical), 3)
		require.NoError(t, err)
		w := wait(at(context.Background(), adaptive.Sheddable), l, 2)
		st := l.Stats()
		assert.Equal(t, adaptive.LevelStats{InFlight: 3, Acquired: 1}, st.Levels[adaptive.Critical])
		assert.Equal(t, adaptive.LevelStats{Waiting: 2}, st.Levels[adaptive.Sheddable])
		assert.Equal(t, 1, st.Waiters)
		c.Release()
		<-w.done
		require.NoError(t, w.err)
		assert.Equal(t, adaptive.LevelStats{InFlight: 2, Acquired: 1}, l.Stats().Levels[adaptive.Sheddable])
		w.c.Release()
		assert.Zero(t, l.Stats().Levels[adaptive.Sheddable].InFlight)
	})
}

func TestWithFloor_AdmitsALevelBelowItsShareWhateverItsCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := measured(t, 4, 40*time.Millisecond, adaptive.WithFloor(adaptive.Sheddable, 0.5))
		held := hold(t, l, 4)
		// Each sheddable call expects 10ms or more, past its 5ms cap; the
		// level may hold 2 of the 4 units whatever its cap.
		a := wait(at(deadline(t, time.Second), adaptive.Sheddable), l, 1)
		b := wait(at(deadline(t, time.Second), adaptive.Sheddable), l, 1)
		assert.False(t, a.ended() || b.ended(), "within the floor")
		_, err := l.Acquire(at(deadline(t, time.Second), adaptive.Sheddable))
		assert.ErrorIs(t, err, semaphore.ErrShed, "past the floor: the cap again")
		for _, c := range held {
			c.Release()
		}
		for _, w := range []*waiter{a, b} {
			<-w.done
			require.NoError(t, w.err)
			w.c.Release()
		}
		assert.Panics(t, func() { adaptive.WithFloor(adaptive.Sheddable, 1.5) })
		assert.Panics(t, func() { adaptive.WithFloor(adaptive.Sheddable, -0.1) })
		assert.Panics(t, func() { adaptive.WithFloor(9, 0.5) })
	})
}
