package keyed_test

import (
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/fulltest"
	"github.com/fairsem/semaphore/keyed"
)

// TestActiveKeys_MillionDistinctKeysLeaveTheMapEmpty runs 10^6 distinct keys
// (10^5 with -race, 3 x 10^4 with -short) through a set, 10^4 of them active at a time, and
// checks that the map holds exactly the active keys at each step and is empty at
// the end.
func TestActiveKeys_MillionDistinctKeysLeaveTheMapEmpty(t *testing.T) {
	total, window := 1_000_000, 10_000
	if raceEnabled {
		total = 100_000
	}
	if testing.Short() {
		total = 30_000
	}
	s := keyed.New(2, keyed.WithGlobal(semaphore.New(semaphore.MaxUnits)))
	held := make([]*keyed.Units, window)
	for base := 0; base < total; base += window {
		for i := range held {
			u, ok := s.TryAcquire(strconv.Itoa(base+i), 1)
			require.True(t, ok)
			held[i] = u
		}
		entries, _, _ := s.MapState()
		require.Equal(t, window, entries)
		for _, u := range held {
			u.Release()
		}
		entries, _, _ = s.MapState()
		require.Equal(t, 0, entries)
	}
	entries, peak, free := s.MapState()
	assert.Equal(t, 0, entries)
	assert.LessOrEqual(t, peak, 1024, "the map was rebuilt as it emptied")
	assert.LessOrEqual(t, free, 64)
	assert.Equal(t, keyed.Stats{Acquired: uint64(total)}, s.Stats())
}

// TestActiveKeys_MemoryComesBackWhenKeysLeave holds 10^5 keys active at once,
// releases them all, and checks that the heap shrinks back to near where it
// started: Go maps do not shrink, so this holds only because the set rebuilds its
// map.
func TestActiveKeys_MemoryComesBackWhenKeysLeave(t *testing.T) {
	fulltest.Long(t)
	const active = 100_000
	keys := make([]string, active)
	for i := range keys {
		keys[i] = strconv.Itoa(i)
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	s := keyed.New(1)
	held := make([]*keyed.Units, active)
	before := heap()
	for i, k := range keys {
		held[i], _ = s.TryAcquire(k, 1)
	}
	during := heap()
	for _, u := range held {
		u.Release()
	}
	clear(held)
	after := heap()
	t.Logf("%d bytes per active key, its Units included", (during-before)/active)
	require.Greater(t, during, before+active*100, "10^5 active keys take memory")
	assert.Less(t, after, before+(during-before)/10, "and give it back when they leave: before %d, during %d, after %d", before, during, after)
	runtime.KeepAlive(s)
	runtime.KeepAlive(keys) // made before, kept after: not counted, neither freed in between
}

func TestActiveKeys_ReusedEntryTakesTheNewKeysCapacity(t *testing.T) {
	s := keyed.New(1, keyed.WithCapacityFunc(func(key string) int64 { return int64(len(key)) }))
	var keys []string
	for i := range 200 { // more keys than the idle entries kept: most reuse one
		keys = append(keys, strings.Repeat("k", 1+i*7%5))
	}
	for _, key := range keys {
		u, ok := s.TryAcquire(key, int64(len(key)))
		require.True(t, ok, key)
		assert.Equal(t, int64(len(key)), s.KeyStats(key).Capacity)
		_, ok = s.TryAcquire(key, 1)
		assert.False(t, ok, "%s is full", key)
		u.Release()
	}
	_, _, free := s.MapState()
	assert.LessOrEqual(t, free, 64, "idle entries are kept up to a bound")
	assert.Positive(t, free, "idle entries are kept")
}
