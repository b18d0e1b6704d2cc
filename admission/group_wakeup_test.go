package admission_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/admission"
)

func TestGroup_BreakingAMemberWhoseClaimIsAheadWakesTheOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := admission.NewGroup(limits(10, 100), admission.WithName("g"), admission.WithSharedPool(0.2))
		a, b := g.Add("a", 1), g.Add("b", 1)
		a1 := mustAcquire(t, a, "a1", 40)
		b1 := mustAcquire(t, b, "b1", 50) // b borrows 10
		aw := start(t.Context(), a, "a2", 15)
		bw := start(t.Context(), b, "b2", 5)
		_, done := ready(bw)
		require.False(t, done, "a's claim is ahead")
		a.Break(errors.New("down"))
		synctest.Wait()
		r, done := ready(aw)
		require.True(t, done)
		assert.ErrorIs(t, r.err, semaphore.ErrBroken)
		r, done = ready(bw)
		require.True(t, done, "with a's claim gone, b borrows the 5 the pool has")
		require.NoError(t, r.err)
		r.p.Release()
		a1.Release()
		b1.Release()
		assert.Zero(t, g.Stats().Borrowed)
	})
}

func TestGroup_RemovingABrokenAndDrainedMemberDropsIt(t *testing.T) {
	g := admission.NewGroup(limits(10, 100), admission.WithName("g"))
	a := g.Add("a", 1)
	g.Add("b", 1)
	a.Break(nil)
	require.NoError(t, a.Drain(t.Context()))
	g.Remove(a)
	st := g.Stats()
	require.Len(t, st.Members, 1, "a holds nothing, so it leaves the group at once")
	assert.Equal(t, "b", st.Members[0].Name)
}

func TestGroup_TakingMemoryThatDropsAClaimantsRankLetsTheNextOneBorrow(t *testing.T) {
	for name, take := range map[string]func(*testing.T, *admission.Permit){
		"Consume": func(t *testing.T, p *admission.Permit) {
			require.NoError(t, p.Consume(admission.Resources{Memory: 40}))
		},
		"RequestMemory": func(t *testing.T, p *admission.Permit) {
			require.NoError(t, p.RequestMemory(t.Context(), 40))
		},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// 200: pool 100, shares 50 each.
				g := admission.NewGroup(limits(10, 200), admission.WithName("g"), admission.WithSharedPool(0.5))
				a, b := g.Add("a", 1), g.Add("b", 1)
				a1 := mustAcquire(t, a, "a1", 50)
				b1 := mustAcquire(t, b, "b1", 80) // b borrows 30
				aw := start(t.Context(), a, "a2", 80)
				bw := start(t.Context(), b, "b2", 20)
				_, done := ready(bw)
				require.False(t, done, "a borrows nothing, so its claim is ahead")
				take(t, a1) // a now borrows 40, more than b
				synctest.Wait()
				r, done := ready(bw)
				require.True(t, done, "b now ranks first and the pool has 30 free")
				require.NoError(t, r.err)
				r.p.Release()
				a1.Release()
				b1.Release()
				synctest.Wait()
				r, done = ready(aw)
				require.True(t, done)
				require.NoError(t, r.err)
				r.p.Release()
				assert.Zero(t, g.Stats().Borrowed)
			})
		})
	}
}

func TestGroup_ResumingAPermitWhoseMarksStopItsMembersClaimLetsTheNextOneBorrow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 100: pool 20, shares 40 each.
		g := admission.NewGroup(limits(10, 100), admission.WithName("g"), admission.WithSharedPool(0.2))
		a, b := g.Add("a", 1), g.Add("b", 1)
		a1 := mustAcquire(t, a, "a1", 40)
		b1 := mustAcquire(t, b, "b1", 50) // b borrows 10
		cpu := mustAcquire(t, a, "cpu", 0)
		done := cpu.NeedCPU()
		pk, err := a.Park(cpu, nil) // its mark stops counting
		require.NoError(t, err)
		aw := start(t.Context(), a, "a2", 15)
		bw := start(t.Context(), b, "b2", 5)
		_, ok := ready(bw)
		require.False(t, ok, "a's claim is ahead")
		_, ok = pk.Resume() // its mark counts again: a's head waits for CPU, not the pool
		require.True(t, ok)
		synctest.Wait()
		r, ok := ready(bw)
		require.True(t, ok, "a's head no longer claims the pool, so b borrows the 5 it has")
		require.NoError(t, r.err)
		r.p.Release()
		b1.Release()
		done()
		synctest.Wait()
		r, ok = ready(aw)
		require.True(t, ok)
		require.NoError(t, r.err)
		r.p.Release()
		cpu.Release()
		a1.Release()
		assert.Zero(t, g.Stats().Borrowed)
	})
}

func TestGroup_AMemoryGrantThatStopsAMembersClaimLetsAnEarlierMemberBorrow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 200: pool 100, shares 50 each; a's serialize limit is 0.4 x (50 + 100) = 60.
		g := admission.NewGroup(limits(10, 200), admission.WithName("g"), admission.WithSharedPool(0.5))
		b := g.Add("b", 1) // b first, so a's grant comes after b's turn in a pass
		a := g.Add("a", 1, admission.WithSerializeLimit(0.4))
		b1 := mustAcquire(t, b, "b1", 80) // b borrows 30
		a0 := mustAcquire(t, a, "a0", 0)
		t1 := a.Track("t1")
		require.NoError(t, t1.RequestMemory(t.Context(), 60)) // a at its serialize limit, t1 blessed; a borrows 10
		aw := start(t.Context(), a, "a2", 80)                 // a claims the pool first, but 60 is free
		bw := start(t.Context(), b, "b2", 20)
		mem := make(chan error, 1)
		go func() { mem <- a0.RequestMemory(t.Context(), 5) }()
		synctest.Wait()
		_, done := ready(bw)
		require.False(t, done, "a's claim is ahead")
		require.Len(t, mem, 0, "past the serialize limit, only t1 may grow")
		_, err := a.Park(t1, nil) // drops the blessing: a0's 5 is granted, a passes its serialize limit
		require.NoError(t, err)
		synctest.Wait()
		require.NoError(t, <-mem)
		r, done := ready(bw)
		require.True(t, done, "a's head waits for the serialize limit now, not the pool: b borrows")
		require.NoError(t, r.err)
		r.p.Release()
		b1.Release()
		t1.Release()
		a0.Release()
		synctest.Wait()
		r, done = ready(aw)
		require.True(t, done)
		require.NoError(t, r.err)
		r.p.Release()
		assert.Zero(t, g.Stats().Borrowed)
	})
}

func TestTrack_AfterBreakTakesNothing(t *testing.T) {
	g := admission.NewGroup(limits(10, 100), admission.WithName("g"), admission.WithSharedPool(0.5))
	a, b := g.Add("a", 1), g.Add("b", 1)
	g.Remove(a) // drained: a leaves the group at once
	b.Break(nil)
	for _, c := range []*admission.Controller{a, b} {
		p := c.Track("late")
		assert.Equal(t, admission.Released, p.State())
		assert.ErrorIs(t, p.Consume(admission.Resources{Memory: 80}), admission.ErrReleased)
		assert.ErrorIs(t, p.RequestMemory(t.Context(), 80), admission.ErrReleased)
		st := c.Stats()
		assert.Zero(t, st.Held)
		assert.Zero(t, st.CurrentPermits)
		p.Release()
	}
	assert.Zero(t, g.Stats().Borrowed)
}

func TestPark_AfterBreakEvictsAtOnceSoDrainCanFinish(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(2, 100), admission.WithName("c"))
		p := mustAcquire(t, c, "p", 10)
		c.Break(nil)
		closed := make(chan error, 1)
		go func() { closed <- c.Drain(t.Context()) }()
		synctest.Wait()
		require.Len(t, closed, 0, "p is held")
		v := &closer{}
		reasons := make(chan admission.EvictReason, 1)
		pk := park(t, c, p, v, admission.OnEvict(func(r admission.EvictReason) { reasons <- r }))
		assert.True(t, pk.Evicted(), "the controller is broken: nothing parks")
		assert.True(t, v.closed.Load())
		assert.Equal(t, admission.EvictedOnBreak, <-reasons)
		assert.Equal(t, admission.Evicted, p.State())
		assert.Zero(t, c.Stats().Held)
		p.Release()
		synctest.Wait()
		require.Len(t, closed, 1)
		require.NoError(t, <-closed)
	})
}

func TestPark_WithTTLOfZeroOrLessSetsNoTTL(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		synctest.Test(t, func(t *testing.T) {
			c := admission.New(limits(2, 100), admission.WithName("c"))
			p := mustAcquire(t, c, "p", 10)
			pk := park(t, c, p, &closer{}, admission.WithTTL(d))
			time.Sleep(time.Hour) // synctest: the fake clock advances at once
			synctest.Wait()
			assert.False(t, pk.Evicted(), "WithTTL(%v)", d)
			_, ok := pk.Resume()
			assert.True(t, ok)
			p.Release()
		})
	}
}

func TestNew_PanicsOnMultipliersThatAreNotFiniteNumbers(t *testing.T) {
	for name, opt := range map[string]admission.Option{
		"serialize NaN": admission.WithSerializeLimit(math.NaN()),
		"serialize Inf": admission.WithSerializeLimit(math.Inf(1)),
		"kill NaN":      admission.WithKillLimit(math.NaN()),
		"kill Inf":      admission.WithKillLimit(math.Inf(1)),
		"shed NaN":      admission.WithShedFactor(math.NaN()),
		"shed Inf":      admission.WithShedFactor(math.Inf(1)),
	} {
		assert.Panics(t, func() { admission.New(limits(1, 10), admission.WithName("c"), opt) }, name)
	}
}

func TestLimits_HugeMultipliersMeanNoLimitInPractice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { // a wrongly converted limit would block q forever
		c := admission.New(limits(2, 1<<60), admission.WithName("c"), admission.WithSerializeLimit(1e300), admission.WithKillLimit(1e300))
		p := mustAcquire(t, c, "p", 1<<30)
		require.NoError(t, p.Consume(admission.Resources{Memory: 1 << 50}))
		require.NoError(t, p.RequestMemory(t.Context(), 1<<50))
		q := mustAcquire(t, c, "q", 1)
		q.Release()
		p.Release()
	})
}

func TestShed_HugeFactorShedsEveryRequestThatQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(1, 100), admission.WithName("c"), admission.WithShedFactor(1e300))
		p := mustAcquire(t, c, "p", 10)
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		w := start(ctx, c, "w", 10)
		synctest.Wait()
		p.Release()
		synctest.Wait()
		r, done := ready(w)
		require.True(t, done)
		assert.ErrorIs(t, r.err, semaphore.ErrShed)
	})
}

func TestGroup_TakingMemoryThatLeavesAClaimantBeyondThePoolLetsTheNextOneBorrow(t *testing.T) {
	for _, memory := range []int64{0, 5} {
		t.Run(fmt.Sprint(memory), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// 100: pool 20, shares 40 each.
				g := admission.NewGroup(limits(10, 100), admission.WithName("g"), admission.WithSharedPool(0.2))
				a, b := g.Add("a", 1), g.Add("b", 1)
				a1 := mustAcquire(t, a, "a1", 50) // a borrows 10
				b1 := mustAcquire(t, b, "b1", 30)
				bw := start(t.Context(), b, "b2", 25) // needs 15 of the pool: b's head claims it
				aw := start(t.Context(), a, "a2", memory)
				_, done := ready(aw)
				require.False(t, done, "b borrows nothing, so its claim is ahead of a's head")
				require.NoError(t, b1.Consume(admission.Resources{Memory: 6})) // b2 would now need 21 of a pool of 20
				synctest.Wait()
				r, done := ready(aw)
				require.True(t, done, "b's head is no claimant any more, so a's head borrows from the pool")
				require.NoError(t, r.err)
				_, done = ready(bw)
				require.False(t, done)
				r.p.Release()
				a1.Release()
				b1.Release()
				synctest.Wait()
				r, done = ready(bw)
				require.True(t, done)
				require.NoError(t, r.err)
				r.p.Release()
				assert.Zero(t, g.Stats().Borrowed)
			})
		})
	}
}
