package admission_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/admission"
)

// member returns the stats of the group's member named name.
func member(t *testing.T, g *admission.Group, name string) admission.MemberStats {
	t.Helper()
	for _, m := range g.Stats().Members {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("no member %q", name)
	return admission.MemberStats{}
}

// checkSplit checks that the members' shares and the pool add up to the total. It
// may run on any goroutine.
func checkSplit(t *testing.T, g *admission.Group) {
	t.Helper()
	st := g.Stats()
	sum := st.Pool
	for _, m := range st.Members {
		sum += m.Limits.Memory
	}
	assert.Equal(t, st.Total.Memory, sum, "shares and pool add up to the total")
}

func TestGroup_MembersGetMemoryInProportionToTheirShares(t *testing.T) {
	g := admission.NewGroup(limits(100, 1000), admission.WithName("g"))
	a := g.Add("a", 3)
	b := g.Add("b", 1)
	assert.Equal(t, limits(100, 750), a.Stats().Limits)
	assert.Equal(t, limits(100, 250), b.Stats().Limits)
	assert.Zero(t, g.Stats().Pool)
	checkSplit(t, g)

	c := g.Add("c", 1)
	assert.Equal(t, int64(600), a.Stats().Limits.Memory, "adding a member re-splits")
	assert.Equal(t, int64(200), c.Stats().Limits.Memory)
	checkSplit(t, g)
}

func TestGroup_RoundingLeftoversGoToThePool(t *testing.T) {
	g := admission.NewGroup(limits(1, 101), admission.WithName("g"), admission.WithSharedPool(0.1))
	for _, name := range []string{"a", "b", "c"} {
		g.Add(name, 1)
	}
	st := g.Stats()
	assert.Equal(t, int64(11), st.Pool, "10% of 101, plus the 1 that 91/3 leaves")
	for _, m := range st.Members {
		assert.Equal(t, int64(30), m.Limits.Memory)
	}
	checkSplit(t, g)
}

func TestGroup_SplitAddsUpAtTheEdgesOfTheRange(t *testing.T) {
	for _, tc := range []struct {
		name   string
		total  int64
		frac   float64
		shares []int64
	}{
		{"zero memory", 0, 0.5, []int64{1, 2}},
		{"all pool", 100, 1, []int64{1, 1}},
		{"largest total, all pool", math.MaxInt64, 1, []int64{1, 3}},
		{"largest total and shares", math.MaxInt64, 0.3, []int64{admission.MaxShares, admission.MaxShares, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := admission.NewGroup(limits(1, tc.total), admission.WithName("g"), admission.WithSharedPool(tc.frac))
			for i, s := range tc.shares {
				g.Add(string(rune('a'+i)), s)
			}
			checkSplit(t, g)
			if tc.frac == 1 {
				assert.Equal(t, tc.total, g.Stats().Pool)
			}
		})
	}
}

func TestGroup_EachMemberIsBoundedByItsShareWithoutAPool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := admission.NewGroup(limits(10, 100), admission.WithName("g"))
		a, b := g.Add("a", 1), g.Add("b", 1)
		a1 := mustAcquire(t, a, "a1", 50)
		waiting := start(t.Context(), a, "a2", 10)
		_, done := ready(waiting)
		assert.False(t, done, "a's share is used up and there is no pool, though b is idle")
		assert.Zero(t, g.Stats().Borrowed)

		b1 := mustAcquire(t, b, "b1", 50) // b's share is its own
		a1.Release()
		synctest.Wait()
		r, done := ready(waiting)
		require.True(t, done)
		require.NoError(t, r.err)
		r.p.Release()
		b1.Release()
	})
}

func TestGroup_SharedPoolLendsWhenTheShareIsUsedUpAndTakesItBackOnRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 100: pool 20, shares 40 and 40.
		g := admission.NewGroup(limits(10, 100), admission.WithName("g"), admission.WithSharedPool(0.2))
		a, _ := g.Add("a", 1), g.Add("b", 1)
		a1 := mustAcquire(t, a, "a1", 30)
		a2 := mustAcquire(t, a, "a2", 25) // 10 of its own, 15 borrowed
		assert.Equal(t, int64(15), a.Stats().Borrowed)
		assert.Equal(t, int64(15), g.Stats().Borrowed)

		waiting := start(t.Context(), a, "a3", 10) // the pool has 5 left
		_, done := ready(waiting)
		require.False(t, done)

		a2.Release()
		synctest.Wait()
		r, done := ready(waiting)
		require.True(t, done, "the borrowed memory came back to the pool")
		require.NoError(t, r.err)
		assert.Equal(t, int64(0), a.Stats().Borrowed, "30+10 is within the share")

		r.p.Release()
		a1.Release()
		assert.Zero(t, g.Stats().Borrowed)
		assert.Equal(t, admission.Resources{}, a.Stats().Held)
	})
}

func TestGroup_ConsumeBeyondTheShareCountsAsBorrowedUntilReturned(t *testing.T) {
	g := admission.NewGroup(limits(10, 100), admission.WithName("g"), admission.WithSharedPool(0.2))
	a := g.Add("a", 1)
	p := mustAcquire(t, a, "a1", 80)
	require.NoError(t, p.Consume(limits(0, 15)))
	assert.Equal(t, int64(15), g.Stats().Borrowed)
	p.Return(limits(0, 10))
	assert.Equal(t, int64(5), g.Stats().Borrowed)
	p.Release()
	assert.Zero(t, g.Stats().Borrowed)
	assert.Equal(t, admission.Resources{}, a.Stats().Held)

	p = mustAcquire(t, a, "a2", 70)
	require.NoError(t, p.Consume(limits(0, 15)))
	assert.Equal(t, int64(5), g.Stats().Borrowed)
	p.Release() // gives back the consumed memory with the base
	assert.Zero(t, g.Stats().Borrowed)
	assert.Equal(t, admission.Resources{}, a.Stats().Held)
}

func TestGroup_MultipleBorrowersShareThePool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 100: pool 30, shares 35, 35.
		g := admission.NewGroup(limits(10, 100), admission.WithName("g"), admission.WithSharedPool(0.3))
		a, b := g.Add("a", 1), g.Add("b", 1)
		held := []*admission.Permit{mustAcquire(t, a, "a", 35), mustAcquire(t, b, "b", 35),
			mustAcquire(t, a, "a-borrow", 10), mustAcquire(t, b, "b-borrow", 10)}
		st := g.Stats()
		assert.Equal(t, int64(20), st.Borrowed)
		assert.Equal(t, int64(10), st.Members[0].Borrowed)
		assert.Equal(t, int64(10), st.Members[1].Borrowed)

		aw := start(t.Context(), a, "a-more", 15) // 10 left in the pool
		_, done := ready(aw)
		require.False(t, done)
		bw := start(t.Context(), b, "b-more", 10)
		_, done = ready(bw)
		require.False(t, done, "a and b borrow alike and a's claim came first: it holds the pool")

		held[3].Release() // b gives back 10: 20 free, and b borrows nothing now
		synctest.Wait()
		rb, done := ready(bw)
		require.True(t, done, "b is within its share again: its claim ranks first")
		require.NoError(t, rb.err)
		_, done = ready(aw)
		assert.False(t, done, "10 left for a's 15")
		assert.Equal(t, int64(20), g.Stats().Borrowed, "a 10, b 10")
		rb.p.Release()
		synctest.Wait()
		r, done := ready(aw)
		require.True(t, done)
		require.NoError(t, r.err)
		assert.Equal(t, int64(25), g.Stats().Borrowed)
		r.p.Release()
		rb.p.Release()
		for _, p := range held {
			p.Release()
		}
		assert.Zero(t, g.Stats().Borrowed)
	})
}

func TestGroup_SharedPoolRaisesTheSerializeAndKillLimits(t *testing.T) {
	// Share 40, pool 20: the limits are taken of 60, what the member may hold.
	g := admission.NewGroup(limits(10, 100), admission.WithName("g"), admission.WithSharedPool(0.2))
	a := g.Add("a", 1, admission.WithSerializeLimit(1), admission.WithKillLimit(1))
	g.Add("b", 1)
	p1 := mustAcquire(t, a, "p1", 0)
	p2 := mustAcquire(t, a, "p2", 0)
	require.NoError(t, p1.RequestMemory(t.Context(), 50))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	// Below the raised serialize limit nobody is blessed, so p2 is granted at
	// once (a done context would fail a request that has to wait).
	require.NoError(t, p2.RequestMemory(ctx, 5))
	require.NoError(t, p2.Consume(limits(0, 5)), "60 is at the raised kill limit, not past it")
	err := p2.Consume(limits(0, 1))
	require.ErrorIs(t, err, admission.ErrMemoryLimit)
	assert.Contains(t, err.Error(), "60B in use of 60B")
	p1.Release()
	p2.Release()
}

func TestGroup_MemberWithinItsShareGetsThePoolAheadOfBorrowers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 100: pool 20, shares 40 and 40.
		g := admission.NewGroup(limits(10, 100), admission.WithName("g"), admission.WithSharedPool(0.2))
		a, b := g.Add("a", 1), g.Add("b", 1)
		a1 := mustAcquire(t, a, "a1", 45) // borrows 5
		a2 := mustAcquire(t, a, "a2", 15) // borrows the rest of the pool
		aw := start(t.Context(), a, "a3", 15)
		b1 := mustAcquire(t, b, "b1", 35)
		bw := start(t.Context(), b, "b2", 10) // 5 of its own, 5 from the pool
		_, done := ready(bw)
		require.False(t, done)

		a2.Release() // 15 back: enough for either, not for both
		synctest.Wait()
		r, done := ready(bw)
		require.True(t, done, "b borrows nothing: it goes first, although a3 queued earlier")
		require.NoError(t, r.err)
		_, done = ready(aw)
		assert.False(t, done, "10 left in the pool: a3 waits")
		assert.Equal(t, int64(10), g.Stats().Borrowed)

		r.p.Release()
		synctest.Wait()
		ra, done := ready(aw)
		require.True(t, done)
		require.NoError(t, ra.err)
		for _, p := range []*admission.Permit{ra.p, a1, b1} {
			p.Release()
		}
	})
}

func TestGroup_NewcomerWithinItsShareOvertakesAQueuedBorrowerForThePool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := admission.NewGroup(limits(10, 100), admission.WithName("g"), admission.WithSharedPool(0.2))
		a, b := g.Add("a", 1), g.Add("b", 1)
		a1 := mustAcquire(t, a, "a1", 50) // borrows 10
		aw := start(t.Context(), a, "a2", 15)
		_, done := ready(aw)
		require.False(t, done, "10 left in the pool")
		b1 := mustAcquire(t, b, "b1", 45) // 40 own + 5: b borrowed nothing before
		_, done = ready(aw)
		assert.False(t, done)
		assert.Equal(t, int64(5), b.Stats().Borrowed)
		a1.Release()
		synctest.Wait()
		r, done := ready(aw)
		require.True(t, done)
		require.NoError(t, r.err)
		r.p.Release()
		b1.Release()
	})
}

func TestGroup_AClaimantAheadHoldsThePoolAgainstSmallerLaterBorrowers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := admission.NewGroup(limits(10, 100), admission.WithName("g"), admission.WithSharedPool(0.2))
		a, b := g.Add("a", 1), g.Add("b", 1)
		a1 := mustAcquire(t, a, "a1", 40)
		b1 := mustAcquire(t, b, "b1", 50) // b borrows 10
		aw := start(t.Context(), a, "a2", 15)
		_, done := ready(aw)
		require.False(t, done, "the pool has 10")
		bw := start(t.Context(), b, "b2", 5)
		_, done = ready(bw)
		assert.False(t, done, "b borrows more than a: a's claim is ahead, though 5 would fit")
		b1.Release()
		synctest.Wait()
		for _, ch := range []<-chan result{aw, bw} {
			r, done := ready(ch)
			require.True(t, done)
			require.NoError(t, r.err)
			r.p.Release()
		}
		a1.Release()
	})
}

func TestGroup_ReleasingToThePoolWakesEveryWaiterItCanAdmitAcrossMembers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 100: pool 40, shares 15 each.
		g := admission.NewGroup(limits(10, 100), admission.WithName("g"), admission.WithSharedPool(0.4))
		ms := []*admission.Controller{g.Add("a", 1), g.Add("b", 1), g.Add("c", 1), g.Add("d", 1)}
		var held []*admission.Permit
		for _, m := range ms {
			held = append(held, mustAcquire(t, m, "own", 15))
		}
		big := mustAcquire(t, ms[3], "big", 40) // d borrows the pool whole
		var waiting []<-chan result
		for _, m := range ms[:3] {
			waiting = append(waiting, start(t.Context(), m, "borrow", 10))
		}
		for _, ch := range waiting {
			_, done := ready(ch)
			require.False(t, done)
		}
		big.Release()
		synctest.Wait()
		for i, ch := range waiting {
			r, done := ready(ch)
			require.True(t, done, "waiter %d was woken by another member's release", i)
			require.NoError(t, r.err)
			held = append(held, r.p)
		}
		assert.Equal(t, int64(30), g.Stats().Borrowed)
		for _, p := range held {
			p.Release()
		}
		assert.Zero(t, g.Stats().Borrowed)
	})
}

func TestGroup_EvictsParkedPermitsWhenThatLetsARequestBorrowTheRest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 100: pool 20, shares 40 and 40.
		g := admission.NewGroup(limits(10, 100), admission.WithName("g"), admission.WithSharedPool(0.2))
		a := g.Add("a", 1)
		g.Add("b", 1)
		idle := mustAcquire(t, a, "idle", 30)
		v := &closer{}
		park(t, a, idle, v)
		busy := mustAcquire(t, a, "busy", 20) // 50 held: 10 borrowed
		// 25 more: not from 10 left in the pool; evicting idle leaves 20 of the
		// share, and the pool has the other 5.
		p := mustAcquire(t, a, "more", 25)
		assert.True(t, v.closed.Load(), "the parked permit was evicted")
		assert.Equal(t, admission.Evicted, idle.State())
		assert.Equal(t, int64(5), g.Stats().Borrowed)
		for _, q := range []*admission.Permit{p, busy, idle} {
			q.Release()
		}
		assert.Zero(t, g.Stats().Borrowed)
	})
}

func TestGroup_ZeroSharedPoolLendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := admission.NewGroup(limits(10, 100), admission.WithName("g"), admission.WithSharedPool(0))
		a, _ := g.Add("a", 1), g.Add("b", 1)
		a1 := mustAcquire(t, a, "a1", 45)
		aw := start(t.Context(), a, "a2", 10)
		_, done := ready(aw)
		assert.False(t, done)
		assert.Zero(t, g.Stats().Pool)
		assert.Zero(t, g.Stats().Borrowed)
		a1.Release()
		synctest.Wait()
		r, done := ready(aw)
		require.True(t, done)
		r.p.Release()
	})
}

func TestGroup_AlwaysAdmitsOnePerMember(t *testing.T) {
	g := admission.NewGroup(limits(10, 100), admission.WithName("g"), admission.WithSharedPool(0.2))
	a := g.Add("a", 1)
	g.Add("b", 1)
	p := mustAcquire(t, a, "huge", 90) // no count in use in a: admitted, borrowing past the pool
	assert.Equal(t, int64(50), g.Stats().Borrowed)
	p.Release()
}

func TestGroup_SetSharesResplitsLiveWithoutRevokingAnything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := admission.NewGroup(limits(10, 100), admission.WithName("g"))
		a, b := g.Add("a", 1), g.Add("b", 1)
		a1 := mustAcquire(t, a, "a1", 50)
		b1 := mustAcquire(t, b, "b1", 20)
		bw := start(t.Context(), b, "b2", 40)
		_, done := ready(bw)
		require.False(t, done)

		g.SetShares(b, 3) // a: 25, b: 75
		synctest.Wait()
		checkSplit(t, g)
		r, done := ready(bw)
		require.True(t, done, "b's share grew: its waiter is in")
		require.NoError(t, r.err)
		assert.Equal(t, admission.Active, a1.State(), "a keeps what it holds")
		assert.Equal(t, int64(50), a.Stats().Held.Memory)

		aw := start(t.Context(), a, "a2", 1)
		_, done = ready(aw)
		assert.False(t, done, "a is over its new share: it admits nothing")
		a1.Release()
		synctest.Wait()
		ra, done := ready(aw)
		require.True(t, done, "back under its share")
		for _, p := range []*admission.Permit{ra.p, r.p, b1} {
			p.Release()
		}
	})
}

func TestGroup_SetTotalResplitsLive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := admission.NewGroup(limits(1, 100), admission.WithName("g"), admission.WithSharedPool(0.5))
		a := g.Add("a", 1)
		a1 := mustAcquire(t, a, "a1", 50)
		aw := start(t.Context(), a, "a2", 50)
		_, done := ready(aw)
		require.False(t, done, "count 1")
		g.SetTotal(limits(2, 200))
		synctest.Wait()
		checkSplit(t, g)
		assert.Equal(t, limits(2, 100), a.Stats().Limits)
		assert.Equal(t, int64(100), g.Stats().Pool)
		r, done := ready(aw)
		require.True(t, done)
		require.NoError(t, r.err)

		g.SetTotal(limits(2, 20)) // shrinks below what is held: nothing is taken back
		assert.Equal(t, int64(100), a.Stats().Held.Memory)
		assert.Equal(t, admission.Active, a1.State())
		r.p.Release()
		a1.Release()
	})
}

func TestGroup_RemoveBreaksTheMemberAndKeepsWhatItHoldsUntilReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := admission.NewGroup(limits(10, 100), admission.WithName("g"))
		a, b := g.Add("a", 1), g.Add("b", 1)
		b1 := mustAcquire(t, b, "b1", 50)
		bw := start(t.Context(), b, "b2", 10)
		aw := func() <-chan result {
			a1 := mustAcquire(t, a, "a1", 50)
			ch := start(t.Context(), a, "a2", 10)
			t.Cleanup(a1.Release)
			return ch
		}()

		g.Remove(b)
		synctest.Wait()
		r, done := ready(bw)
		require.True(t, done)
		require.ErrorIs(t, r.err, semaphore.ErrBroken)
		assert.Equal(t, `admission "b": admit "b2" (memory 10B): `+semaphore.ErrBroken.Error()+`: "removed from its group"`, r.err.Error())
		_, err := b.Acquire(t.Context(), "b3", 1)
		require.ErrorIs(t, err, semaphore.ErrBroken)

		ms := member(t, g, "b")
		assert.True(t, ms.Removed)
		assert.Zero(t, ms.Shares)
		assert.Equal(t, int64(50), ms.Borrowed, "b's holding now counts against the pool")
		assert.Equal(t, int64(100), a.Stats().Limits.Memory, "a gets the whole budget at once")
		ra, done := ready(aw)
		require.True(t, done, "a's share grew")
		ra.p.Release()
		assert.Len(t, g.Stats().Members, 2, "b still holds memory")

		b1.Release()
		assert.Len(t, g.Stats().Members, 1, "a drained removed member leaves the group")
		require.NoError(t, b.Drain(t.Context()))
		g.Remove(b) // nothing more to do
	})
}

func TestGroup_StatsAndDiagnosticsNameBorrowersAndTheBottleneckMember(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := admission.NewGroup(limits(10, 100<<20), admission.WithName("tenants"), admission.WithSharedPool(0.2))
		batch, web := g.Add("batch", 1), g.Add("web", 3)
		held := []*admission.Permit{mustAcquire(t, batch, "scan", 30<<20)} // share 20M: borrows 10M
		w := start(t.Context(), batch, "scan", 20<<20)
		_, done := ready(w)
		require.False(t, done)
		held = append(held, mustAcquire(t, web, "get", 1<<20))

		st := g.Stats()
		assert.Equal(t, "batch", st.Bottleneck)
		assert.Equal(t, int64(10<<20), st.Borrowed)
		assert.Equal(t, int64(10<<20), st.Members[0].Borrowed)
		assert.Zero(t, st.Members[1].Borrowed)
		assert.Equal(t, 1, st.Members[0].Waiters)

		d := g.Diagnostics(0)
		assert.Contains(t, d, `Group "tenants" with count 10 per member and 100M memory, shared pool 10M/20M lent`)
		assert.Contains(t, d, `Bottleneck member: "batch"`)
		lines := strings.Split(d, "\n")
		require.Greater(t, len(lines), 4)
		assert.True(t, strings.HasSuffix(lines[3], `"batch"`), "the largest borrower comes first: %q", lines[3])
		assert.Contains(t, d, `Controller "batch" with 1/10 count and 30M/20M memory resources (10M borrowed from group "tenants"'s pool)`)
		assert.Contains(t, d, `Controller "web"`)

		held[0].Release()
		synctest.Wait()
		r, done := ready(w)
		require.True(t, done)
		r.p.Release()
		held[1].Release()
		assert.Empty(t, g.Stats().Bottleneck)
	})
}

func TestGroup_PanicsOnInvalidArguments(t *testing.T) {
	g := admission.NewGroup(limits(1, 10), admission.WithName("g"))
	a := g.Add("a", 1)
	other := admission.NewGroup(limits(1, 10), admission.WithName("other")).Add("x", 1)
	for name, f := range map[string]func(){
		"negative total":  func() { admission.NewGroup(limits(-1, 10), admission.WithName("g")) },
		"pool below zero": func() { admission.NewGroup(limits(1, 10), admission.WithName("g"), admission.WithSharedPool(-0.1)) },
		"pool above one":  func() { admission.NewGroup(limits(1, 10), admission.WithName("g"), admission.WithSharedPool(1.5)) },
		"pool not a number": func() {
			admission.NewGroup(limits(1, 10), admission.WithName("g"), admission.WithSharedPool(math.NaN()))
		},
		"shares past MaxShares": func() { g.Add("z", admission.MaxShares+1) },
		"zero shares":           func() { g.Add("z", 0) },
		"SetShares to zero":     func() { g.SetShares(a, 0) },
		"SetShares non-member":  func() { g.SetShares(other, 1) },
		"Remove non-member":     func() { g.Remove(other) },
		"negative SetTotal":     func() { g.SetTotal(limits(1, -1)) },
		"SetLimits on member":   func() { a.SetLimits(limits(1, 1)) },
		"invalid member option": func() { g.Add("bad", 1, admission.WithCPUConcurrency(0)) },
	} {
		assert.Panics(t, f, name)
	}
	g.Remove(a)
	assert.PanicsWithValue(t, `admission "g": group: SetShares("a", 2): the member was removed`, func() { g.SetShares(a, 2) })
	_, err := a.Acquire(t.Context(), "after", 1)
	assert.True(t, errors.Is(err, semaphore.ErrBroken))
}
