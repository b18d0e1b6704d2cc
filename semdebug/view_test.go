package semdebug

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPageKeys_NameWhenUniqueElseNameAndID(t *testing.T) {
	rows := []row{{ID: 1, Name: "db"}, {ID: 2, Name: "cache"}, {ID: 3, Name: "cache"}, {ID: 4, Name: ""},
		{ID: 5, Name: "db#7"}, {ID: 7, Name: "db"[:2]}}
	assert.Equal(t, []string{"db#1", "cache#2", "cache#3", "#4", "db#7#5", "db#7"}, pageKeys(rows))
}

func TestPageKeys_NeverCollide(t *testing.T) {
	alphabet := []string{"a", "#", "1", "a#1", ""}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		rows := make([]row, 1+rng.IntN(6))
		for i := range rows {
			var name strings.Builder
			for range rng.IntN(3) {
				name.WriteString(alphabet[rng.IntN(len(alphabet))])
			}
			rows[i] = row{ID: uint64(1 + rng.IntN(30)), Name: name.String()}
		}
		ids := map[uint64]bool{}
		unique := rows[:0]
		for _, r := range rows {
			if !ids[r.ID] {
				ids[r.ID] = true
				unique = append(unique, r)
			}
		}
		seen := map[string]uint64{}
		for i, k := range pageKeys(unique) {
			prev, dup := seen[k]
			require.False(t, dup, "objects %d and %d both show as %q", prev, unique[i].ID, k)
			seen[k] = unique[i].ID
		}
	}
}

func TestIndex_StalledRowsComeFirstWhateverTheSort(t *testing.T) {
	r := newRegistry()
	for _, f := range []*fakeSource{
		newFake("a", Snapshot{Capacity: 9}),
		newFake("z-stalled", Snapshot{Capacity: 1, Waiters: 1, HeadWait: time.Minute}),
		newFake("m", Snapshot{Capacity: 5, Waiters: 1, HeadWait: time.Second}),
	} {
		defer registerPtr(r, f)()
	}
	h := newHandler(r, WithStallThreshold(10*time.Second))
	order := func(sort string, desc bool) []string {
		var keys []string
		for _, row := range h.index(sort, desc).Rows {
			keys = append(keys, row.Key)
		}
		return keys
	}
	assert.Equal(t, []string{"z-stalled", "a", "m"}, order("", false))
	assert.Equal(t, []string{"z-stalled", "m", "a"}, order("name", true))
	assert.Equal(t, []string{"z-stalled", "m", "a"}, order("capacity", false))
	assert.Equal(t, []string{"z-stalled", "a", "m"}, order("capacity", true))
	assert.Equal(t, []string{"z-stalled", "a", "m"}, order("no-such-column", false))
	assert.Equal(t, 1, h.index("", false).Stalled)
}

func TestIndex_EveryColumnSorts(t *testing.T) {
	r := newRegistry()
	low := newFake("a", Snapshot{})
	high := newFake("b", Snapshot{Capacity: 1, InUse: 1, Available: 1, Waiters: 1, OldestHolder: 1, Broken: true})
	high.kind = "zz"
	defer registerPtr(r, low)()
	defer registerPtr(r, high)()
	h := newHandler(r)
	for _, c := range columns {
		if c.Key == "headwait" || strings.HasSuffix(c.Title, "/s") {
			continue // derived from readings over time; see the golden and handler tests
		}
		rows := h.index(c.Key, true).Rows
		assert.Equal(t, "b", rows[0].Key, c.Key)
		rows = h.index(c.Key, false).Rows
		assert.Equal(t, "a", rows[0].Key, c.Key)
	}
}

func TestOptions_PanicOnInvalidValues(t *testing.T) {
	assert.PanicsWithValue(t, "semdebug: WithStallThreshold(0s): the threshold must be positive", func() { WithStallThreshold(0) })
	assert.PanicsWithValue(t, "semdebug: WithRefresh(-1s): the interval must not be negative", func() { WithRefresh(-time.Second) })
	h := newHandler(newRegistry(), WithRefresh(0), WithStallThreshold(time.Hour))
	assert.Equal(t, time.Duration(0), h.refresh)
	assert.Equal(t, time.Hour, h.threshold)
	_, _, body := get(t, h, "/d/")
	assert.Contains(t, body, `data-refresh-ms="0"`)
}
