package admission_test

import (
	"context"
	"math"
	"testing"

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
	assert.Equal(t, admission.Resources{Count: 2, Memory: math.MaxInt64}, c.Stats().Used)
	p.Release()
	q.Release()
	assert.Equal(t, admission.Resources{}, c.Stats().Used)
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
