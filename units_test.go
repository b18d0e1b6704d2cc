package semaphore_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
)

// Units own their units: Release is idempotent and nil-safe; Return, Split, Adopt and Detach move units without creating or losing any.

func TestUnits_AcquireTryConsumeOwnTheirUnits(t *testing.T) {
	s := semaphore.New(10)
	u, err := s.AcquireUnits(context.Background(), 3)
	require.NoError(t, err)
	assert.Equal(t, int64(3), u.Count())
	assert.Same(t, s, u.Semaphore())

	v, ok := s.TryAcquireUnits(4)
	require.True(t, ok)
	assert.Equal(t, int64(4), v.Count())
	none, ok := s.TryAcquireUnits(4)
	assert.False(t, ok)
	assert.Nil(t, none)

	c := s.ConsumeUnits(5)
	assert.Equal(t, int64(5), c.Count())
	assert.Equal(t, int64(0), s.Available(), "3+4+5 of 10: in debt by 2")

	u.Release()
	v.Release()
	c.Release()
	assert.Equal(t, int64(10), s.Available())
}

func TestUnits_ReleaseIsIdempotentAndNilSafe(t *testing.T) {
	s := semaphore.New(2)
	u, err := s.AcquireUnits(context.Background(), 2)
	require.NoError(t, err)
	u.Release()
	u.Release()
	assert.Equal(t, int64(2), s.Available(), "returned once, not twice (which would panic)")
	assert.Equal(t, int64(0), u.Count())

	var missing *semaphore.Units
	assert.NotPanics(t, missing.Release, "the Release deferred after a failed acquire does nothing")
	assert.Equal(t, int64(0), missing.Count())
}

func TestUnits_NilUnitsQueriesAreZeroAndMovesPanicWithAClearMessage(t *testing.T) {
	var missing *semaphore.Units
	assert.Nil(t, missing.Semaphore())
	assert.Equal(t, int64(0), missing.Detach())
	assert.PanicsWithValue(t, "semaphore: Units.Return(1) on a nil *Units", func() { _ = missing.Return(1) })
	assert.PanicsWithValue(t, "semaphore: Units.Split(2) on a nil *Units", func() { _, _ = missing.Split(2) })
	assert.NoError(t, missing.Adopt(nil), "adopting nothing into nothing moves nothing")

	s := semaphore.New(3)
	u, err := s.AcquireUnits(context.Background(), 3)
	require.NoError(t, err)
	assert.PanicsWithValue(t, "semaphore: Units.Adopt(3 units) into a nil *Units", func() { _ = missing.Adopt(u) })
	assert.Equal(t, int64(3), u.Count(), "the panic moved nothing")
	u.Release()
	assert.Equal(t, int64(3), s.Available())
}

// Release takes the units out of the Units and returns them in one step (a swap),
// so concurrent Releases started together return them exactly once: the capacity
// comes back whole and nothing is released twice (which would panic).
func TestUnits_ConcurrentReleaseReturnsUnitsExactlyOnce(t *testing.T) {
	s := semaphore.New(1000)
	rounds := 20000
	if raceEnabled || testing.Short() {
		rounds = 2000
	}
	for range rounds {
		u, err := s.AcquireUnits(context.Background(), 1000)
		require.NoError(t, err)
		together(u.Release, u.Release)
		require.Equal(t, int64(1000), s.Available())
	}
}

func TestUnits_ReturnGivesBackPart(t *testing.T) {
	s := semaphore.New(5, semaphore.WithName("mem"))
	u, err := s.AcquireUnits(context.Background(), 5)
	require.NoError(t, err)
	require.NoError(t, u.Return(2))
	assert.Equal(t, int64(3), u.Count())
	assert.Equal(t, int64(2), s.Available())

	err = u.Return(4)
	require.ErrorIs(t, err, semaphore.ErrInsufficientUnits)
	assert.Equal(t, `semaphore "mem": Return 4 units: the units hold only 3`, err.Error())
	assert.Equal(t, int64(3), u.Count(), "a failed Return changes nothing")
	assert.Equal(t, int64(2), s.Available())
	requirePanic(t, "Units.Return(-1): negative units", func() { _ = u.Return(-1) })
	u.Release()
}

func TestUnits_ReturnWakesWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(4)
		u, err := s.AcquireUnits(context.Background(), 4)
		require.NoError(t, err)
		calls := queue(context.Background(), s, 2)
		require.NoError(t, u.Return(2))
		synctest.Wait()
		assert.Equal(t, map[int]error{0: nil}, finished(calls))
		u.Release()
		s.Release(2)
	})
}

func TestUnits_SplitMovesUnitsIntoANewOwner(t *testing.T) {
	s := semaphore.New(8)
	u, err := s.AcquireUnits(context.Background(), 8)
	require.NoError(t, err)
	part, err := u.Split(3)
	require.NoError(t, err)
	assert.Equal(t, int64(3), part.Count())
	assert.Equal(t, int64(5), u.Count())
	assert.Same(t, s, part.Semaphore())
	assert.Equal(t, int64(0), s.Available(), "splitting returns nothing")

	none, err := u.Split(6)
	assert.ErrorIs(t, err, semaphore.ErrInsufficientUnits)
	assert.Nil(t, none)
	assert.Equal(t, int64(5), u.Count())

	part.Release()
	assert.Equal(t, int64(3), s.Available())
	u.Release()
	assert.Equal(t, int64(8), s.Available())
}

func TestUnits_AdoptMergesUnitsOfTheSameSemaphore(t *testing.T) {
	s := semaphore.New(6)
	a, _ := s.TryAcquireUnits(2)
	b, _ := s.TryAcquireUnits(3)
	require.NoError(t, a.Adopt(b))
	assert.Equal(t, int64(5), a.Count())
	assert.Equal(t, int64(0), b.Count())
	b.Release()
	assert.Equal(t, int64(1), s.Available(), "the adopted units are a's now")
	require.NoError(t, a.Adopt(a), "adopting itself does nothing")
	require.NoError(t, a.Adopt(nil))
	assert.Equal(t, int64(5), a.Count())
	a.Release()
	assert.Equal(t, int64(6), s.Available())
}

func TestUnits_AdoptRefusesAnotherSemaphoresUnits(t *testing.T) {
	s := semaphore.New(2, semaphore.WithName("a"))
	other := semaphore.New(2, semaphore.WithName("b"))
	u, _ := s.TryAcquireUnits(1)
	v, _ := other.TryAcquireUnits(2)
	err := u.Adopt(v)
	require.ErrorIs(t, err, semaphore.ErrDifferentSemaphore)
	assert.Equal(t, `semaphore "a": Adopt 2 units of semaphore "b"`, err.Error())
	assert.Equal(t, int64(1), u.Count(), "nothing changed")
	assert.Equal(t, int64(2), v.Count())
	u.Release()
	v.Release()
}

// Adopt moves other's units in one step: a Return or Split on other that runs at
// the same time sees them either all still in other or all already gone, never a
// count that both sides act on. In each round one goroutine keeps moving the units
// back and forth between two Units with Adopt while another takes units out of both
// one at a time, so that any gap inside Adopt is crossed by one of those steps; the
// totals must stay exact.
func TestUnits_AdoptIsAtomicAgainstConcurrentUseOfTheOther(t *testing.T) {
	defer runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), 4))
	const capacity, each = 10000, 1000
	s := semaphore.New(capacity)
	takeOne := func(u *semaphore.Units, split bool) error {
		if !split {
			return u.Return(1)
		}
		p, err := u.Split(1)
		p.Release()
		return err
	}
	for round := range 100 {
		a, ok := s.TryAcquireUnits(each)
		require.True(t, ok)
		b, ok := s.TryAcquireUnits(each)
		require.True(t, ok)
		started, done := make(chan struct{}), make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			<-started
			for {
				select {
				case <-done:
					return
				default:
				}
				assert.NoError(t, a.Adopt(b))
				assert.NoError(t, b.Adopt(a))
			}
		})
		wg.Go(func() {
			defer close(done)
			split := round%2 == 1
			for i := 0; ; i++ {
				if i == 1 {
					close(started)
				}
				errA, errB := takeOne(a, split), takeOne(b, split)
				if errA != nil && errB != nil {
					return // both empty, or the units in flight inside an Adopt
				}
			}
		})
		wg.Wait()
		// Every unit is owned by a or b, or is back, exactly once.
		require.Equal(t, int64(capacity), a.Count()+b.Count()+s.Available(),
			"round %d: a owns %d, b %d, %d available", round, a.Count(), b.Count(), s.Available())
		a.Release()
		b.Release()
		require.Equal(t, int64(capacity), s.Available(), "round %d", round)
	}
}

func TestUnits_DetachKeepsTheUnitsTaken(t *testing.T) {
	s := semaphore.New(4)
	u, _ := s.TryAcquireUnits(3)
	assert.Equal(t, int64(3), u.Detach())
	assert.Equal(t, int64(0), u.Count())
	u.Release()
	assert.Equal(t, int64(1), s.Available(), "detached units are not returned by Release")
	s.Release(3)
	assert.Equal(t, int64(4), s.Available())
}

// Units returned after Break, by Return or Release, never panic and leave
// Available at 0, but they are counted for Drain.
func TestUnits_ReturnedAfterBreakCountForDrain(t *testing.T) {
	s := semaphore.New(3, semaphore.WithName("pool"))
	u, ok := s.TryAcquireUnits(3)
	require.True(t, ok)
	s.Break(errors.New("closing"))
	done, cancel := context.WithCancel(context.Background())
	cancel()
	assert.NotPanics(t, func() { require.NoError(t, u.Return(1)) })
	assert.Equal(t, int64(0), s.Available())
	require.ErrorContains(t, s.Drain(done), `semaphore "pool": drain: 2 units still out`, "the returned unit is counted")
	assert.NotPanics(t, u.Release)
	assert.Equal(t, int64(0), u.Count())
	assert.Equal(t, int64(0), s.Available())
	assert.NoError(t, s.Drain(done), "every unit is back")
}

// Units moved between owners by concurrent Split, Return, Adopt, Detach and
// Release never create or lose a unit. Two goroutines work on the same Units in
// tight loops, so that their read-modify-writes overlap.
func TestUnits_ConcurrentStormKeepsExactTotals(t *testing.T) {
	const capacity = 1 << 30
	s := semaphore.New(capacity)
	root, ok := s.TryAcquireUnits(capacity)
	require.True(t, ok)
	var detached, returned, overlaps atomic.Int64
	var progress [2]atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			var kept *semaphore.Units
			// Run until the two goroutines were seen running at the same time
			// many times, or for a second on a machine too busy to run them so.
			for i := 0; i < 100_000 || overlaps.Load() < 2_000 && (i%1024 != 0 || time.Since(start) < time.Second); i++ {
				before := progress[1-g].Load()
				progress[g].Add(1)
				p, err := root.Split(int64(1 + (g+i)%3))
				require.NoError(t, err)
				switch i % 8 {
				case 0:
					require.NoError(t, p.Return(1))
					returned.Add(1)
					p.Release()
				case 1:
					detached.Add(p.Detach())
				case 2:
					if kept == nil {
						kept = p
						continue
					}
					require.NoError(t, kept.Adopt(p))
				case 3:
					p.Release()
				default:
					require.NoError(t, root.Adopt(p))
				}
				if progress[1-g].Load() != before {
					overlaps.Add(1)
				}
			}
			require.NoError(t, root.Adopt(kept))
		})
	}
	wg.Wait()
	t.Logf("%d overlapping iterations", overlaps.Load())
	held := root.Count()
	root.Release()
	assert.Equal(t, capacity-detached.Load(), s.Available(), "units neither created nor lost")
	assert.Equal(t, capacity-detached.Load()-held, s.Available()-held)
	s.Release(detached.Load())
	assert.Equal(t, int64(capacity), s.Available())
}
