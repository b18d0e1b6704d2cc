package admission_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore/admission"
)

// Every test here: total 100, pool 20, members a and b with shares of 40 each.
func poolGroup() (g *admission.Group, a, b *admission.Controller) {
	g = admission.NewGroup(limits(10, 100), admission.WithName("g"), admission.WithSharedPool(0.2))
	return g, g.Add("a", 1), g.Add("b", 1)
}

func TestGroup_PoolClaimantEvictsAnotherMembersParkedBorrowersOldestFirstOnlyAsNeeded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, a, b := poolGroup()
		b1 := mustAcquire(t, b, "b1", 40)
		b2 := mustAcquire(t, b, "b2", 10)
		b3 := mustAcquire(t, b, "b3", 10) // b borrows the whole pool
		a1 := mustAcquire(t, a, "a1", 40)
		v2, v3 := &closer{}, &closer{}
		park(t, b, b2, v2) // the oldest parked borrower
		park(t, b, b3, v3)
		require.Equal(t, int64(20), g.Stats().Borrowed, "the pool is lent to b's parked permits")

		aw := start(t.Context(), a, "a2", 10)
		r, done := ready(aw)
		require.True(t, done, "a's request got in once b's oldest parked borrower was evicted")
		require.NoError(t, r.err)
		assert.Equal(t, admission.Evicted, b2.State())
		assert.True(t, v2.closed.Load(), "the evicted value is closed")
		assert.Equal(t, admission.Inactive, b3.State(), "only as many as needed are evicted")
		assert.False(t, v3.closed.Load())
		assert.Equal(t, uint64(1), b.Stats().PermitEvictions)
		assert.Equal(t, int64(20), g.Stats().Borrowed)

		a3 := mustAcquire(t, a, "a3", 10)
		assert.Equal(t, admission.Evicted, b3.State())
		assert.True(t, v3.closed.Load())
		for _, p := range []*admission.Permit{a1, r.p, a3, b1, b2, b3} {
			p.Release()
		}
		assert.Zero(t, g.Stats().Borrowed)
	})
}

func TestGroup_NeverEvictsAnotherMembersParkedPermitsWithinItsShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, a, b := poolGroup()
		b1 := mustAcquire(t, b, "b1", 30)
		b2 := mustAcquire(t, b, "b2", 25) // b borrows 15: b1's 30 is mostly within its share
		a1 := mustAcquire(t, a, "a1", 40)
		aw := start(t.Context(), a, "a2", 10)
		v1 := &closer{}
		park(t, b, b1, v1)
		synctest.Wait()
		_, done := ready(aw)
		assert.False(t, done, "only 5 of the pool is free")
		assert.Equal(t, admission.Inactive, b1.State(), "evicting b1 would take memory within b's share")
		assert.False(t, v1.closed.Load())
		assert.Zero(t, b.Stats().PermitEvictions)

		b2.Release() // b is within its share: the pool is free
		synctest.Wait()
		r, done := ready(aw)
		require.True(t, done)
		require.NoError(t, r.err)
		assert.Equal(t, admission.Inactive, b1.State())
		for _, p := range []*admission.Permit{a1, r.p, b1} {
			p.Release()
		}
		assert.Zero(t, g.Stats().Borrowed)
	})
}

func TestGroup_EvictsAnotherMembersBorrowersOnlyIfThatLetsTheHeadIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, a, b := poolGroup()
		b1 := mustAcquire(t, b, "b1", 40)
		b2 := mustAcquire(t, b, "b2", 10)
		b3 := mustAcquire(t, b, "b3", 5) // b borrows 15, 10 of it parked below
		a1 := mustAcquire(t, a, "a1", 40)
		aw := start(t.Context(), a, "a2", 20)
		v2 := &closer{}
		park(t, b, b2, v2)
		synctest.Wait()
		_, done := ready(aw)
		assert.False(t, done, "evicting b2 would leave 15 of the pool free, not 20")
		assert.Equal(t, admission.Inactive, b2.State(), "no eviction that does not let the head in")
		assert.False(t, v2.closed.Load())

		b3.Release() // now evicting b2 frees the whole pool
		synctest.Wait()
		r, done := ready(aw)
		require.True(t, done)
		require.NoError(t, r.err)
		assert.Equal(t, admission.Evicted, b2.State())
		assert.True(t, v2.closed.Load())
		for _, p := range []*admission.Permit{a1, r.p, b1, b2} {
			p.Release()
		}
		assert.Zero(t, g.Stats().Borrowed)
	})
}

func TestGroup_NeverEvictsAnotherMembersBorrowersWhenCPUHoldsTheHead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, a, b := poolGroup()
		b1 := mustAcquire(t, b, "b1", 40)
		b2 := mustAcquire(t, b, "b2", 20) // b borrows the whole pool
		a1 := mustAcquire(t, a, "a1", 40)
		cpuDone := a1.NeedCPU()
		aw := start(t.Context(), a, "a2", 10)
		v2 := &closer{}
		park(t, b, b2, v2)
		synctest.Wait()
		_, done := ready(aw)
		assert.False(t, done)
		assert.Equal(t, admission.Inactive, b2.State(), "CPU holds a's head: evicting would not let it in")
		assert.False(t, v2.closed.Load())

		cpuDone()
		synctest.Wait()
		r, done := ready(aw)
		require.True(t, done, "with CPU free, evicting b's borrower lets the head in")
		require.NoError(t, r.err)
		assert.Equal(t, admission.Evicted, b2.State())
		for _, p := range []*admission.Permit{a1, r.p, b1, b2} {
			p.Release()
		}
		assert.Zero(t, g.Stats().Borrowed)
	})
}
