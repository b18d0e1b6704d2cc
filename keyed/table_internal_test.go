package keyed

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A key made active and inactive over and over leaves its table as it found
// it: no tombstone is left behind, and the table is not rebuilt.
func TestTable_AKeyThatComesAndGoesLeavesNoTombstones(t *testing.T) {
	s := New(1)
	keep, _ := s.TryAcquire("kept", 1) // a neighbour in one of the tables
	u, _ := s.TryAcquire("churn", 1)   // its table is made the first time
	u.Release()
	before := s.tables()
	for range 10_000 {
		u, ok := s.TryAcquire("churn", 1)
		require.True(t, ok)
		u.Release()
	}
	after := s.tables()
	assert.Equal(t, before, after, "the same tables, as many slots used")
	for i, ts := range after {
		assert.Equal(t, ts.live, ts.used, "table %d: slots used that hold no entry", i)
	}
	keep.Release()
}

// Tables grow as keys become active and shrink as they leave, and every
// active key is found at each step, whatever tombstones its search passes.
func TestTable_EveryActiveKeyIsFoundAsTablesGrowAndShrink(t *testing.T) {
	s := New(1)
	var held []*Units
	for i := range 5000 {
		u, ok := s.TryAcquire(strconv.Itoa(i), 1)
		require.True(t, ok)
		held = append(held, u)
		if i%3 == 0 { // leave tombstones among the entries
			held[i/2].Release()
		}
	}
	for i, u := range held {
		if u.Count() == 0 {
			continue
		}
		h, sh := s.shardOf(u.Key())
		require.Same(t, u.e, sh.table.Load().find(h, u.Key()), "key %d", i)
		_, ok := s.TryAcquire(u.Key(), 1)
		require.False(t, ok, "key %d has one entry, full", i)
	}
	for _, u := range held {
		u.Release()
	}
	entries, slots, _ := s.MapState()
	assert.Zero(t, entries)
	assert.Equal(t, shardCount*minSlots, slots, "every table shrank back")
}

// tableState is what a shard's table holds: its length and the slots used.
type tableState struct{ slots, used, live int }

// tables reads every shard's table.
func (s *Set) tables() []tableState {
	var ts []tableState
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		t := sh.table.Load()
		ts = append(ts, tableState{len(t.slots), sh.used, sh.live})
		sh.mu.Unlock()
	}
	return ts
}
