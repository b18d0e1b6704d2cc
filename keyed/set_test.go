package keyed_test

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/keyed"
)

// acquireAsync starts Acquire on a new goroutine and returns where its result
// arrives.
type result struct {
	u   *keyed.Units
	err error
}

func acquireAsync(ctx context.Context, s *keyed.Set, key string, n int64) <-chan result {
	ch := make(chan result, 1)
	go func() {
		u, err := s.Acquire(ctx, key, n)
		ch <- result{u, err}
	}()
	return ch
}

func TestNew_NegativeCapacityPanicsAndAHugeOneMeansMaxUnits(t *testing.T) {
	assert.PanicsWithValue(t, `keyed "up": capacity -1: negative`, func() {
		keyed.New(-1, keyed.WithName("up"))
	})
	for _, c := range []int64{semaphore.MaxUnits, semaphore.MaxUnits + 1, math.MaxInt64} {
		s := keyed.New(c)
		u, ok := s.TryAcquire("k", semaphore.MaxUnits)
		require.True(t, ok, "capacity %d", c)
		u.Release()
		_, err := s.Acquire(context.Background(), "k", semaphore.MaxUnits+1)
		require.ErrorIs(t, err, semaphore.ErrTooLarge)
	}
	s := keyed.New(1, keyed.WithCapacityFunc(func(string) int64 { return math.MaxInt64 }))
	u, ok := s.TryAcquire("k", semaphore.MaxUnits)
	require.True(t, ok, "a capacity function's huge result means MaxUnits too")
	u.Release()
}

func TestZeroSet_PanicsSayingUseNew(t *testing.T) {
	var s keyed.Set
	const msg = "keyed: zero Set: create it with keyed.New"
	assert.PanicsWithValue(t, msg, func() { _, _ = s.Acquire(context.Background(), "a", 1) })
	assert.PanicsWithValue(t, msg, func() { _, _ = s.TryAcquire("a", 1) })
	assert.PanicsWithValue(t, msg, func() { _, _ = s.AcquireTimeout(time.Second, "a", 1) })
	assert.PanicsWithValue(t, msg, func() { s.Break(nil) })
	assert.PanicsWithValue(t, msg, func() { _ = s.Err() })
	assert.PanicsWithValue(t, msg, func() { _ = s.Drain(context.Background()) })
	assert.PanicsWithValue(t, msg, func() { _ = s.Stats() })
	assert.PanicsWithValue(t, msg, func() { _ = s.KeyStats("a") })
	assert.PanicsWithValue(t, msg, func() { _ = s.Diagnostics(0) })
	assert.Contains(t, s.String(), "create it with keyed.New")
}

func TestAcquire_PanicsOnNegativeUnits(t *testing.T) {
	s := keyed.New(2, keyed.WithName("up"))
	assert.PanicsWithValue(t, `keyed "up": acquire -1 units for key "a": negative`, func() {
		_, _ = s.Acquire(context.Background(), "a", -1)
	})
	assert.Panics(t, func() { _, _ = s.TryAcquire("a", -1) })
	assert.Panics(t, func() { _, _ = s.AcquireTimeout(time.Second, "a", -1) })
	assert.Equal(t, 0, s.Stats().Keys, "a panicking call leaves no key behind")
}

func TestAcquire_LimitsEachKeyToItsCapacity(t *testing.T) {
	s := keyed.New(2)
	a, ok := s.TryAcquire("alice", 2)
	require.True(t, ok)
	_, ok = s.TryAcquire("alice", 1)
	assert.False(t, ok, "alice is at her capacity")
	b, ok := s.TryAcquire("bob", 2)
	assert.True(t, ok, "bob has a capacity of his own")
	a.Release()
	b.Release()
	assert.Equal(t, 0, s.Stats().Keys)
}

func TestAcquire_GlobalLimitsAllKeysTogether(t *testing.T) {
	g := semaphore.New(3)
	s := keyed.New(2, keyed.WithGlobal(g))
	a, ok := s.TryAcquire("alice", 2)
	require.True(t, ok)
	_, ok = s.TryAcquire("bob", 2)
	assert.False(t, ok, "only 1 global unit left")
	b, ok := s.TryAcquire("bob", 1)
	require.True(t, ok)
	assert.Equal(t, int64(0), g.Available())
	a.Release()
	b.Release()
	assert.Equal(t, int64(3), g.Available())
	assert.Same(t, g, s.Global())
}

func TestAcquire_GrantsInFIFOOrderWithinAKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := keyed.New(3)
		ctx := context.Background()
		first, err := s.Acquire(ctx, "k", 3)
		require.NoError(t, err)
		big := acquireAsync(ctx, s, "k", 3)
		synctest.Wait()
		small := acquireAsync(ctx, s, "k", 1)
		synctest.Wait()
		first.Release()
		synctest.Wait()
		r := <-big
		require.NoError(t, r.err)
		select {
		case <-small:
			t.Fatal("the small request behind the big one jumped the queue")
		default:
		}
		r.u.Release()
		r2 := <-small
		require.NoError(t, r2.err)
		r2.u.Release()
	})
}

func TestAcquire_FailureAtGlobalGivesBackTheKeyUnits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := semaphore.New(1)
		s := keyed.New(2, keyed.WithGlobal(g))
		other, err := s.Acquire(context.Background(), "bob", 1)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		ch := acquireAsync(ctx, s, "alice", 1)
		synctest.Wait()
		assert.Equal(t, keyed.KeyStats{Key: "alice", Capacity: 2, Held: 0, Waiters: 1}, s.KeyStats("alice"))
		assert.Equal(t, 1, g.Waiters(), "alice holds her key's unit and waits at the global level")
		cancel()
		r := <-ch
		require.ErrorIs(t, r.err, context.Canceled)
		assert.Nil(t, r.u)
		assert.Equal(t, keyed.KeyStats{Key: "alice", Capacity: 2}, s.KeyStats("alice"))
		assert.Equal(t, 1, s.Stats().Keys, "only bob is active")
		other.Release()
		assert.Equal(t, 0, s.Stats().Keys)
		assert.Equal(t, int64(1), g.Available())
	})
}

func TestAcquire_DoneContextFailsEvenWhenUnitsAreFree(t *testing.T) {
	s := keyed.New(2)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	u, err := s.Acquire(ctx, "a", 1)
	assert.Nil(t, u)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 0, s.Stats().Keys)
}

func TestAcquire_RequestLargerThanTheKeyCapacityIsTooLarge(t *testing.T) {
	s := keyed.New(2, keyed.WithName("up"))
	u, err := s.Acquire(context.Background(), "a", 3)
	assert.Nil(t, u)
	require.ErrorIs(t, err, semaphore.ErrTooLarge)
	assert.Equal(t, `keyed "up": acquire 3 units for key "a": more than the capacity of 2`, err.Error())
	_, err = s.AcquireTimeout(time.Second, "a", semaphore.MaxUnits+1)
	assert.ErrorIs(t, err, semaphore.ErrTooLarge)
	assert.Equal(t, 0, s.Stats().Keys)
	assert.Equal(t, uint64(2), s.Stats().Rejected)
}

func TestAcquire_RequestLargerThanTheGlobalCapacityIsTooLarge(t *testing.T) {
	g := semaphore.New(2, semaphore.WithName("all"))
	s := keyed.New(4, keyed.WithName("up"), keyed.WithGlobal(g))
	_, err := s.Acquire(context.Background(), "a", 3)
	require.ErrorIs(t, err, semaphore.ErrTooLarge)
	assert.Equal(t, `keyed "up": acquire 3 units for key "a": global semaphore "all": more than the capacity of 2`, err.Error())
	assert.Equal(t, 0, s.Stats().Keys)
}

func TestAcquire_ZeroCapacityKeyAdmitsOnlyZeroUnits(t *testing.T) {
	s := keyed.New(0)
	u, ok := s.TryAcquire("a", 0)
	require.True(t, ok)
	u.Release()
	_, err := s.Acquire(context.Background(), "a", 1)
	assert.ErrorIs(t, err, semaphore.ErrTooLarge)
}

func TestCapacityFunc_OverridesTheCapacityOfSomeKeys(t *testing.T) {
	s := keyed.New(1, keyed.WithCapacityFunc(func(key string) int64 {
		switch key {
		case "vip":
			return 5
		case "banned":
			return 0
		}
		return 1
	}))
	u, ok := s.TryAcquire("vip", 5)
	require.True(t, ok)
	assert.Equal(t, int64(5), s.KeyStats("vip").Capacity)
	u.Release()
	_, ok = s.TryAcquire("anyone", 2)
	assert.False(t, ok)
	_, err := s.Acquire(context.Background(), "banned", 1)
	assert.ErrorIs(t, err, semaphore.ErrTooLarge)
	assert.Equal(t, int64(0), s.KeyStats("banned").Capacity)
}

func TestCapacityFunc_PanicsOnANegativeCapacity(t *testing.T) {
	s := keyed.New(1, keyed.WithName("up"), keyed.WithCapacityFunc(func(key string) int64 { return -3 }))
	assert.PanicsWithValue(t, `keyed "up": capacity -3 for key "neg": negative`, func() {
		_, _ = s.TryAcquire("neg", 1)
	})
	assert.Panics(t, func() { _, _ = s.Acquire(context.Background(), "other", 1) })
	// The set still works: the panic happened without its lock.
	assert.Equal(t, 0, s.Stats().Keys)
}

func TestAcquireTimeout_BoundsTheWaitAtBothLevelsTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := semaphore.New(2, semaphore.WithName("all"))
		s := keyed.New(1, keyed.WithName("up"), keyed.WithGlobal(g))
		ctx := context.Background()
		a, err := s.Acquire(ctx, "a", 1)
		require.NoError(t, err)
		b, err := s.Acquire(ctx, "b", 1)
		require.NoError(t, err)
		other := make(chan error, 1)
		go func() { other <- g.Acquire(ctx, 1) }() // another user of the global semaphore, queued first
		synctest.Wait()
		go func() {
			time.Sleep(3 * time.Second)
			a.Release() // the key unit goes to the call below, the global unit to the other user
		}()
		start := time.Now()
		u, err := s.AcquireTimeout(5*time.Second, "a", 1)
		assert.Nil(t, u)
		require.ErrorIs(t, err, semaphore.ErrTimedOut)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 5*time.Second, time.Since(start), "3s at the key, then the 2s left at the global level")
		assert.Contains(t, err.Error(), `keyed "up": acquire 1 unit for key "a": global semaphore "all": timed out after 2s`)
		require.NoError(t, <-other)
		b.Release()
		g.Release(1)
		assert.Equal(t, 0, s.Stats().Keys)
		assert.Equal(t, int64(2), g.Available())
	})
}

func TestAcquireTimeout_NonPositiveNeverWaits(t *testing.T) {
	s := keyed.New(1)
	u, err := s.AcquireTimeout(0, "a", 1)
	require.NoError(t, err)
	_, err = s.AcquireTimeout(-time.Second, "a", 1)
	assert.ErrorIs(t, err, semaphore.ErrTimedOut)
	u.Release()
	assert.Equal(t, 0, s.Stats().Keys)
}

func TestTryAcquire_FailsWithoutHoldingWhenEitherLevelCannotGrant(t *testing.T) {
	g := semaphore.New(1)
	s := keyed.New(2, keyed.WithGlobal(g))
	a, ok := s.TryAcquire("a", 1)
	require.True(t, ok)
	u, ok := s.TryAcquire("b", 1)
	assert.False(t, ok)
	assert.Nil(t, u)
	assert.Equal(t, keyed.KeyStats{Key: "b", Capacity: 2}, s.KeyStats("b"), "b's key unit was given back")
	a.Release()
	assert.Equal(t, 0, s.Stats().Keys)
}

func TestTryAcquire_NeverJumpsTheKeyQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := keyed.New(2)
		a, err := s.Acquire(context.Background(), "k", 1)
		require.NoError(t, err)
		ch := acquireAsync(context.Background(), s, "k", 2)
		synctest.Wait()
		_, ok := s.TryAcquire("k", 1)
		assert.False(t, ok, "a unit is free, but a waiter is ahead")
		a.Release()
		r := <-ch
		require.NoError(t, r.err)
		r.u.Release()
	})
}

func TestMaxWaiters_BoundsEachKeyWaitList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := keyed.New(1, keyed.WithMaxWaiters(1))
		ctx, cancel := context.WithCancel(context.Background())
		a, err := s.Acquire(ctx, "k", 1)
		require.NoError(t, err)
		ch := acquireAsync(ctx, s, "k", 1)
		synctest.Wait()
		_, err = s.Acquire(ctx, "k", 1)
		assert.ErrorIs(t, err, semaphore.ErrQueueFull)
		other, err := s.Acquire(ctx, "other", 1)
		require.NoError(t, err, "other keys have their own wait lists")
		cancel()
		assert.ErrorIs(t, (<-ch).err, context.Canceled)
		a.Release()
		other.Release()
		assert.Equal(t, uint64(1), s.Stats().Rejected)
		assert.Equal(t, uint64(1), s.Stats().Cancelled)
	})
}

func TestActiveKeys_EntryLeavesWithItsLastUser(t *testing.T) {
	s := keyed.New(2)
	a, _ := s.TryAcquire("k", 1)
	b, _ := s.TryAcquire("k", 1)
	assert.Equal(t, 1, s.Stats().Keys)
	a.Release()
	assert.Equal(t, 1, s.Stats().Keys, "b still holds")
	b.Release()
	assert.Equal(t, 0, s.Stats().Keys)
	entries, _, _ := s.MapState()
	assert.Equal(t, 0, entries)
}
