package keyed_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/keyed"
)

func TestUnits_ReleaseIsIdempotentAndGivesBackBothLevelsOnce(t *testing.T) {
	g := semaphore.New(4)
	s := keyed.New(2, keyed.WithGlobal(g))
	u, ok := s.TryAcquire("k", 2)
	require.True(t, ok)
	other, ok := s.TryAcquire("j", 1)
	require.True(t, ok)
	assert.Equal(t, int64(2), u.Count())
	assert.Equal(t, "k", u.Key())
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(u.Release)
	}
	wg.Wait()
	u.Release()
	assert.Equal(t, int64(0), u.Count())
	assert.Equal(t, int64(3), g.Available(), "2 units back once; j still holds 1")
	assert.Equal(t, keyed.KeyStats{Key: "k", Capacity: 2}, s.KeyStats("k"))
	other.Release()
	assert.Equal(t, int64(4), g.Available())
}

func TestUnits_NilIsSafe(t *testing.T) {
	var u *keyed.Units
	assert.NotPanics(t, u.Release)
	assert.Equal(t, int64(0), u.Count())
	assert.Equal(t, "", u.Key())
}

func TestUnits_ReleasedEntryServesAnotherKeyWithoutConfusion(t *testing.T) {
	s := keyed.New(1)
	a, ok := s.TryAcquire("a", 1)
	require.True(t, ok)
	a.Release()
	b, ok := s.TryAcquire("b", 1) // may reuse a's idle entry
	require.True(t, ok)
	a.Release() // a second Release of a must not touch b's entry
	assert.Equal(t, keyed.KeyStats{Key: "b", Capacity: 1, Held: 1, Acquired: 1}, s.KeyStats("b"))
	assert.Equal(t, "a", a.Key(), "a released Units still names its key")
	_, ok = s.TryAcquire("b", 1)
	assert.False(t, ok)
	b.Release()
	assert.Equal(t, 0, s.Stats().Keys)
}
