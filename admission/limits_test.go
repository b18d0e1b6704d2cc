package admission_test

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore/admission"
)

// The largest values a caller may pass to mean "no limit" are taken as such:
// nothing panics, overflows or refuses.
func TestNew_TheLargestLimitsAndOptionsMeanNoLimit(t *testing.T) {
	huge := admission.Resources{Count: math.MaxInt64, Memory: math.MaxInt64}
	c := admission.New(huge, admission.WithName("unlimited"), admission.WithMaxWaiters(math.MaxInt),
		admission.WithCPUConcurrency(math.MaxInt), admission.WithSerializeLimit(math.MaxFloat64),
		admission.WithKillLimit(math.MaxFloat64), admission.WithShedFactor(math.MaxFloat64),
		admission.WithDumpInterval(math.MaxInt64))
	p, err := c.Acquire(context.Background(), "big", math.MaxInt64/2)
	require.NoError(t, err)
	q, err := c.Acquire(context.Background(), "big", math.MaxInt64/2)
	require.NoError(t, err)
	require.NoError(t, q.Consume(admission.Resources{Memory: 1}))
	require.NoError(t, q.RequestMemory(context.Background(), 0))
	pk := park(t, c, q, nil, admission.WithTTL(math.MaxInt64))
	_, ok := pk.Resume()
	require.True(t, ok)
	assert.Equal(t, admission.Resources{Count: 2, Memory: math.MaxInt64}, c.Stats().Held)
	p.Release()
	q.Release()
	assert.Equal(t, admission.Resources{}, c.Stats().Held)
	c.SetLimits(huge)
	c.SetCPUConcurrency(math.MaxInt)
	c.SetMaxWaiters(math.MaxInt)

	g := admission.NewGroup(huge, admission.WithName("g"), admission.WithSharedPool(0.5))
	a := g.Add("a", admission.MaxShares)
	b := g.Add("b", 1)
	st := g.Stats()
	assert.Equal(t, int64(math.MaxInt64), st.Pool+st.Members[0].Limits.Memory+st.Members[1].Limits.Memory,
		"the shares and the pool add up to the total")
	for _, m := range []*admission.Controller{a, b} {
		r, err := m.Acquire(context.Background(), "x", 1<<40)
		require.NoError(t, err)
		r.Release()
	}
}

func TestSetCountLimit_ChangesCountOnlyAndAdmitsWaitersThatNowFit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(1, 100), admission.WithName("reads"))
		p := mustAcquire(t, c, "a", 10)
		waiting := start(context.Background(), c, "b", 10)
		_, ok := ready(waiting)
		require.False(t, ok, "count is exhausted")
		c.SetCountLimit(2)
		synctest.Wait()
		r, ok := ready(waiting)
		require.True(t, ok)
		assert.Equal(t, limits(2, 100), c.Stats().Limits, "memory untouched")
		c.SetCountLimit(0)
		assert.Equal(t, limits(2, 20), c.Stats().Held, "permits keep what they hold")
		r.p.Release()
		p.Release()
		assert.Equal(t, limits(0, 0), c.Stats().Held)
	})
}

func TestSetCountLimit_PanicsOnNegativeAndInAGroup(t *testing.T) {
	c := admission.New(limits(1, 100), admission.WithName("reads"))
	assert.PanicsWithValue(t, `admission "reads": SetCountLimit(-1): negative limit`, func() { c.SetCountLimit(-1) })
	g := admission.NewGroup(limits(10, 100), admission.WithName("g"))
	m := g.Add("m", 1)
	assert.Panics(t, func() { m.SetCountLimit(3) })
}

// Edges of the ranges: zero is a valid amount, limit and total, shares run from 1
// to MaxShares inclusive, and a limit whose multiple lands exactly on 2^63 is
// taken as the largest int64, not converted into a negative one.
func TestLimits_EdgesOfTheRangesAreAccepted(t *testing.T) {
	c := admission.New(admission.Resources{Count: 1, Memory: 100}, admission.WithName("edges"))
	p, err := c.Acquire(context.Background(), "op", 0)
	require.NoError(t, err)
	assert.NotPanics(t, func() { p.Return(admission.Resources{}) }, "returning nothing")
	require.NoError(t, p.Consume(admission.Resources{}))
	p.Release()
	assert.NotPanics(t, func() { c.SetLimits(admission.Resources{}) }, "zero limits")
	assert.NotPanics(t, func() { c.SetCountLimit(0) })

	g := admission.NewGroup(admission.Resources{Count: 1, Memory: 100})
	var m *admission.Controller
	assert.NotPanics(t, func() { m = g.Add("one", 1) }, "one share")
	assert.NotPanics(t, func() { g.Remove(g.Add("most", admission.MaxShares)) }, "MaxShares at Add")
	assert.Panics(t, func() { g.Add("too many", admission.MaxShares+1) })
	assert.NotPanics(t, func() { g.SetShares(m, admission.MaxShares) }, "MaxShares")
	assert.Panics(t, func() { g.SetShares(m, admission.MaxShares+1) })
	assert.Panics(t, func() { g.SetShares(m, 0) })
	assert.NotPanics(t, func() { g.SetTotal(admission.Resources{}) }, "a zero total")

	// 2 x 2^62 bytes is exactly 2^63: the kill limit is the largest int64, so
	// consuming up to it is allowed rather than refused by a wrapped limit.
	huge := admission.New(admission.Resources{Count: 1, Memory: 1 << 62}, admission.WithKillLimit(2))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a wrapped limit would hold it back for good
	defer cancel()
	q, err := huge.Acquire(ctx, "op", 0)
	require.NoError(t, err)
	require.NoError(t, q.Consume(admission.Resources{Memory: 1 << 62}))
	q.Release()
}
