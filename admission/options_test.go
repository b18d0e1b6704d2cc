package admission_test

import (
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/admission"
)

func TestWithName_NamesAControllerAndAGroupAlike(t *testing.T) {
	name := admission.WithName("reads")
	c := admission.New(limits(1, 100), name)
	g := admission.NewGroup(limits(1, 100), name, admission.WithSharedPool(0.5))
	assert.Equal(t, "reads", c.Stats().Name)
	assert.Equal(t, "reads", g.Stats().Name)
	assert.Contains(t, g.Diagnostics(0), `Group "reads"`)
	unnamed := admission.New(limits(1, 1))
	assert.Empty(t, unnamed.Stats().Name, "unnamed without it")
	unnamed.Break(nil)
	_, err := unnamed.Acquire(t.Context(), "scan", 1)
	require.Error(t, err)
	assert.Regexp(t, `^unnamed admission 0x[0-9a-f]+: admit "scan" \(memory 1B\): `, err.Error(),
		"messages tell unnamed controllers apart by address")
	ug := admission.NewGroup(limits(1, 1))
	assert.PanicsWithValue(t, fmt.Sprintf("unnamed admission group %p: SetTotal(count=-1 memory=0B): negative total", ug),
		func() { ug.SetTotal(limits(-1, 0)) })
}

func TestGroupAdd_TheMemberNameIsTheArgumentAndWithNamePanics(t *testing.T) {
	g := admission.NewGroup(limits(1, 100), admission.WithName("g"))
	m := g.Add("interactive", 1)
	assert.Equal(t, "interactive", m.Stats().Name)
	assert.PanicsWithValue(t, `admission "g": group: Add("batch", 1, WithName("other")): the member's name is Add's argument`,
		func() { g.Add("batch", 1, admission.WithName("other")) })
	require.Len(t, g.Stats().Members, 1, "the refused member was not added")
}

func TestSetMaxWaiters_ChangesTheBoundForLaterRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(1, 100), admission.WithName("reads"), admission.WithMaxWaiters(1))
		p := mustAcquire(t, c, "holder", 1)
		first := start(t.Context(), c, "first", 1)
		_, err := c.Acquire(t.Context(), "second", 1)
		require.ErrorIs(t, err, semaphore.ErrQueueFull)
		c.SetMaxWaiters(0) // unbounded
		second := start(t.Context(), c, "second", 1)
		assert.Equal(t, 2, c.Stats().Waiters)
		p.Release()
		(<-first).p.Release()
		(<-second).p.Release()
	})
}
