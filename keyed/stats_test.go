package keyed_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/keyed"
)

func TestStats_SumTheActiveKeysAndCountCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := keyed.New(2, keyed.WithName("up"))
		a, _ := s.TryAcquire("a", 2)
		b, _ := s.TryAcquire("b", 1)
		ch := acquireAsync(context.Background(), s, "a", 1)
		synctest.Wait()
		assert.Equal(t, keyed.Stats{Name: "up", Keys: 2, Held: 3, Waiters: 1, Acquired: 2}, s.Stats())
		assert.Equal(t, keyed.KeyStats{Key: "a", Capacity: 2, Held: 2, Waiters: 1, Acquired: 1}, s.KeyStats("a"))
		assert.Equal(t, keyed.KeyStats{Key: "none", Capacity: 2}, s.KeyStats("none"))
		a.Release()
		r := <-ch
		require.NoError(t, r.err)
		r.u.Release()
		b.Release()
		assert.Equal(t, keyed.Stats{Name: "up", Acquired: 3}, s.Stats())
	})
}

func TestDiagnostics_NamesTheKeysThatHoldTheMost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := semaphore.New(10, semaphore.WithName("all"))
		s := keyed.New(4, keyed.WithName("uploads"), keyed.WithGlobal(g))
		var us []*keyed.Units
		for key, n := range map[string]int64{"alice": 4, "bob": 1, "carol": 2, "dave": 1} {
			u, ok := s.TryAcquire(key, n)
			require.True(t, ok)
			us = append(us, u)
		}
		ch := acquireAsync(context.Background(), s, "alice", 1)
		synctest.Wait()
		d := s.Diagnostics(2)
		assert.Equal(t, `keyed "uploads": 4 keys active, 8 units held, 1 call waiting; most held by "alice" (4 of 4 units, 1 waiting)
  global: semaphore "all" (2 of 10 units available, 0 waiting)
  "alice"                  held 4 of 4, 1 waiting
  "carol"                  held 2 of 4, 0 waiting
  … 2 more keys, holding 2 units, 0 waiting
`, d)
		for _, u := range us {
			u.Release()
		}
		r := <-ch
		require.NoError(t, r.err)
		r.u.Release()
		assert.Equal(t, "keyed \"uploads\": 0 keys active, 0 units held, 0 calls waiting\n  global: semaphore \"all\" (10 of 10 units available, 0 waiting)\n", s.Diagnostics(0))
	})
}

func TestDiagnostics_NamesTheKeysHoldingMoreThanTheirShares(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := keyed.New(10, keyed.WithName("up"), keyed.WithLimit(8),
			keyed.WithWeightFunc(weightsOf(map[string]int64{"b": 3})),
			keyed.WithGuaranteeFunc(weightsOf(map[string]int64{"a": 0, "b": 0, "c": 3})))
		a, _ := s.TryAcquire("a", 5) // share 8*1/5 = 1: borrows 4
		b, _ := s.TryAcquire("b", 2) // share 8*3/5 = 4
		c, _ := s.TryAcquire("c", 1) // share 8*1/5 = 1, raised to its guarantee 3
		assert.Equal(t, keyed.KeyStats{Key: "a", Capacity: 10, Held: 5, Weight: 1, Share: 1, Borrowed: 4, Acquired: 1}, s.KeyStats("a"))
		assert.Equal(t, keyed.KeyStats{Key: "c", Capacity: 10, Held: 1, Weight: 1, Guarantee: 3, Share: 3, Acquired: 1}, s.KeyStats("c"))
		assert.Equal(t, `keyed "up": 3 keys active, 8 units held, 0 calls waiting; most held by "a" (5 of 10 units, 0 waiting)
  limit: 8 units held of 8; over their shares: "a" (5, share 1)
  "a"                      held 5 of 10, 0 waiting; weight 1, guarantee 0, share 1, borrowed 4, acquired 1
  "b"                      held 2 of 10, 0 waiting; weight 3, guarantee 0, share 4, borrowed 0, acquired 1
  "c"                      held 1 of 10, 0 waiting; weight 1, guarantee 3, share 3, borrowed 0, acquired 1
`, s.Diagnostics(0))
		a.Release()
		b.Release()
		c.Release()
	})
}

func TestActiveKeys_MostHeldFirstAtMostMaxKeys(t *testing.T) {
	s := keyed.New(4, keyed.WithLimit(10))
	var us []*keyed.Units
	for key, n := range map[string]int64{"a": 1, "b": 3, "c": 2} {
		u, ok := s.TryAcquire(key, n)
		require.True(t, ok)
		us = append(us, u)
	}
	var keys []string
	for _, ks := range s.ActiveKeys(2) {
		keys = append(keys, ks.Key)
	}
	assert.Equal(t, []string{"b", "c"}, keys)
	assert.Len(t, s.ActiveKeys(0), 3)
	for _, u := range us {
		u.Release()
	}
	assert.Empty(t, s.ActiveKeys(0))
}
