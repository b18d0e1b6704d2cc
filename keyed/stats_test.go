package keyed_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/statsline/statslinetest"
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

// Stats and KeyStats print with %v as one line in the words of the metrics and
// Diagnostics.
func TestStats_PrintAsOneLineInTheMetricsWords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := keyed.New(2, keyed.WithName("up"))
		a, _ := s.TryAcquire("a", 2)
		ch := acquireAsync(context.Background(), s, "a", 1)
		synctest.Wait()
		assert.Equal(t, `keyed "up" keys=1 limit=none held=2 waiters=1 broken=false acquired=1 timed_out=0 cancelled=0 rejected=0`, fmt.Sprint(s.Stats()))
		assert.Equal(t, `key "a" capacity=2 held=2 waiters=1`, fmt.Sprint(s.KeyStats("a")))
		a.Release()
		r := <-ch
		require.NoError(t, r.err)
		r.u.Release()

		fair := keyed.New(3, keyed.WithLimit(4), keyed.WithWeightFunc(func(k string) int64 { return int64(len(k)) }))
		b, _ := fair.TryAcquire("bb", 3)
		c, _ := fair.TryAcquire("c", 1)
		assert.Equal(t, `unnamed keyed keys=2 limit=4 held=4 waiters=0 broken=false acquired=2 timed_out=0 cancelled=0 rejected=0`, fair.Stats().String())
		assert.Equal(t, `key "bb" capacity=3 held=3 waiters=0 weight=2 guarantee=0 share=2 borrowed=1 acquired=1`, fair.KeyStats("bb").String())
		b.Release()
		c.Release()
		fair.Break(nil)
		assert.Equal(t, `unnamed keyed keys=0 limit=4 held=0 waiters=0 broken=true acquired=2 timed_out=0 cancelled=0 rejected=0`, fair.Stats().String())
	})
}

func TestStats_StringNamesEveryField(t *testing.T) {
	st := keyed.Stats{Name: "n", Keys: 1, Limit: 1, Limited: true, Held: 1, Waiters: 1, Broken: true, Acquired: 1, TimedOut: 1, Cancelled: 1, Rejected: 1}
	statslinetest.EveryField(t, st, st.String(), map[string]string{"Limited": ""})
	ks := keyed.KeyStats{Key: "k", Capacity: 1, Held: 1, Waiters: 1, Weight: 1, Guarantee: 1, Share: 1, Borrowed: 1, Acquired: 1}
	statslinetest.EveryField(t, ks, ks.String(), map[string]string{"Key": ""})
}

func TestStats_StringQuotesHostileNamesAndKeys(t *testing.T) {
	for _, name := range []string{"a\nb", `<i>"x" held=999</i>`, strings.Repeat("x", 5000), "\xff"} {
		s := keyed.New(1, keyed.WithName(name))
		u, ok := s.TryAcquire(name, 1)
		require.True(t, ok)
		assert.Equal(t, "keyed "+strconv.Quote(name)+" keys=1 limit=none held=1 waiters=0 broken=false acquired=1 timed_out=0 cancelled=0 rejected=0", s.Stats().String())
		assert.Equal(t, "key "+strconv.Quote(name)+" capacity=1 held=1 waiters=0", s.KeyStats(name).String())
		u.Release()
	}
	assert.Equal(t, `key "" capacity=1 held=0 waiters=0`, keyed.New(1).KeyStats("").String(), "the empty key is a key")
}
