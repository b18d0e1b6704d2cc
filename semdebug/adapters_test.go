package semdebug

import (
	"context"
	"errors"
	"testing"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/admission"
	"github.com/fairsem/semaphore/keyed"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSemaphoreSource_ReadsStatsAndErr(t *testing.T) {
	s := semaphore.New(5, semaphore.WithName("db"))
	require.NoError(t, s.Acquire(context.Background(), 3))
	src, ok := sourceOf(s)
	require.True(t, ok)
	snap := src.Snapshot()
	assert.Equal(t, int64(5), snap.Capacity)
	assert.Equal(t, int64(3), snap.InUse)
	assert.Equal(t, int64(2), snap.Available)
	assert.Equal(t, uint64(1), snap.Acquired)
	assert.False(t, snap.Broken)
	assert.Equal(t, s.Diagnostics(10), src.Diagnostics(10))

	s.Break(errors.New("shutting down"))
	snap = src.Snapshot()
	assert.True(t, snap.Broken)
	assert.Contains(t, snap.Cause, "shutting down")
}

func TestControllerSource_ShowsTheCountResource(t *testing.T) {
	c := admission.New(admission.Resources{Count: 4, Memory: 1000}, admission.WithName("reads"))
	p, err := c.Acquire(context.Background(), "scan", 100)
	require.NoError(t, err)
	defer p.Release()
	src, _ := sourceOf(c)
	assert.Equal(t, "reads", src.Name())
	snap := src.Snapshot()
	assert.Equal(t, int64(4), snap.Capacity)
	assert.Equal(t, int64(1), snap.InUse)
	assert.Equal(t, int64(3), snap.Available)
	assert.Equal(t, uint64(1), snap.Acquired)
	assert.Contains(t, snap.Details, Detail{"memory in use", "100 of 1000 bytes"})
	assert.Contains(t, src.Diagnostics(10), `"reads"`)
}

func TestGroupSource_SumsTheMembers(t *testing.T) {
	g := admission.NewGroup(admission.Resources{Count: 2, Memory: 1000}, admission.WithName("all"))
	a, b := g.Add("a", 1), g.Add("b", 1)
	pa, err := a.Acquire(context.Background(), "x", 10)
	require.NoError(t, err)
	defer pa.Release()
	pb, err := b.Acquire(context.Background(), "y", 10)
	require.NoError(t, err)
	defer pb.Release()
	src, _ := sourceOf(g)
	assert.Equal(t, "all", src.Name())
	snap := src.Snapshot()
	assert.Equal(t, int64(4), snap.Capacity, "each member's count limit is the group's")
	assert.Equal(t, int64(2), snap.InUse)
	assert.Equal(t, uint64(2), snap.Acquired)
	assert.Contains(t, snap.Details, Detail{`member "a"`, "1 shares, count 1/2, 0 queued"})
	assert.Contains(t, src.Diagnostics(10), "all")
}

// A keyed set is shown by what it holds over all keys, with its global
// semaphore's capacity, and its break.
func TestSourceOf_KeyedSetShowsHeldUnitsAndTheGlobalsCapacity(t *testing.T) {
	global := semaphore.New(8, semaphore.WithName("uploads-all"))
	set := keyed.New(2, keyed.WithName("uploads"), keyed.WithGlobal(global))
	u, err := set.Acquire(context.Background(), "alice", 2)
	require.NoError(t, err)
	src, ok := sourceOf(set)
	require.True(t, ok)
	assert.Equal(t, "uploads", src.Name())
	assert.Equal(t, "keyed set", src.Kind())
	snap := src.Snapshot()
	assert.Equal(t, int64(2), snap.InUse)
	assert.Equal(t, int64(8), snap.Capacity)
	assert.Equal(t, int64(6), snap.Available)
	u.Release()
	set.Break(errors.New("closing"))
	snap = src.Snapshot()
	assert.True(t, snap.Broken)
	assert.Contains(t, snap.Cause, "closing")
}

// An admission controller's break shows on the page, with its cause.
func TestSourceOf_ControllerShowsItsBreak(t *testing.T) {
	c := admission.New(admission.Resources{Count: 1}, admission.WithName("reads"))
	src, _ := sourceOf(c)
	assert.False(t, src.Snapshot().Broken)
	c.Break(errors.New("closing"))
	snap := src.Snapshot()
	assert.True(t, snap.Broken)
	assert.Equal(t, `admission "reads": broken: closing`, snap.Cause)
}
