package admission_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore/admission"
)

func TestSetCountLimit_ChangesCountOnlyAndAdmitsWaitersThatNowFit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New("reads", limits(1, 100))
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
		assert.Equal(t, limits(2, 20), c.Stats().Used, "permits keep what they hold")
		r.p.Release()
		p.Release()
		assert.Equal(t, limits(0, 0), c.Stats().Used)
	})
}

func TestSetCountLimit_PanicsOnNegativeAndInAGroup(t *testing.T) {
	c := admission.New("reads", limits(1, 100))
	assert.PanicsWithValue(t, `admission "reads": SetCountLimit(-1): negative limit`, func() { c.SetCountLimit(-1) })
	g := admission.NewGroup("g", limits(10, 100))
	m := g.Add("m", 1)
	assert.Panics(t, func() { m.SetCountLimit(3) })
}
