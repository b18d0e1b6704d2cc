package keyed_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/hostile"
	"github.com/fairsem/semaphore/keyed"
)

// A set with a global semaphore reads against its capacity, with what the set
// itself holds, and its break with the cause as given.
func TestReading_WithAGlobalSemaphoreShowsItsCapacityAndTheSetsHeldUnits(t *testing.T) {
	global := semaphore.New(8, semaphore.WithName("uploads-all"))
	require.True(t, global.TryAcquire(3)) // someone else's use of the shared semaphore
	set := keyed.New(2, keyed.WithName("uploads"), keyed.WithGlobal(global))
	u, err := set.Acquire(context.Background(), "alice", 2)
	require.NoError(t, err)
	r := set.Reading()
	assert.Equal(t, "keyed set", r.Kind)
	assert.Equal(t, "uploads", r.Name)
	assert.Equal(t, int64(2), r.Held, "the set's own units, not the global semaphore's")
	assert.Equal(t, int64(8), r.Capacity)
	assert.Equal(t, int64(3), r.Available)
	assert.Equal(t, uint64(1), r.Acquired)
	assert.Equal(t, semaphore.QueuedField, r.Unknown, "a set does not count the calls that queued")
	u.Release()
	set.Break(errors.New("closing"))
	r = set.Reading()
	assert.True(t, r.Broken)
	assert.Equal(t, "closing", r.Cause, "the cause as Break was given it")
}

// A set with a limit of its own reads against it, with the shares of the keys
// that hold the most; broken, it still counts what its holders hold, and has
// nothing available.
func TestReading_WithALimitShowsItTheSharesAndWhatIsHeldWhenBroken(t *testing.T) {
	set := keyed.New(4, keyed.WithName("tenants"), keyed.WithLimit(6),
		keyed.WithWeightFunc(func(k string) int64 { return int64(len(k)) }))
	a, _ := set.TryAcquire("a", 4)  // weight 1 of 3: share 2, borrows 2
	b, _ := set.TryAcquire("bb", 1) // weight 2 of 3: share 4
	r := set.Reading()
	assert.Equal(t, int64(6), r.Capacity)
	assert.Equal(t, int64(5), r.Held)
	assert.Equal(t, int64(1), r.Available)
	assert.False(t, r.Unlimited)
	require.Len(t, r.Details, 3)
	assert.Equal(t, semaphore.Detail{Name: `key "a"`, Value: "held 4, share 2, borrowed 2; weight 1, guarantee 0, capacity 4; 0 waiting"}, r.Details[1])
	assert.Equal(t, semaphore.Detail{Name: `key "bb"`, Value: "held 1, share 4, borrowed 0; weight 2, guarantee 0, capacity 4; 0 waiting"}, r.Details[2])

	set.Break(nil)
	r = set.Reading()
	assert.True(t, r.Broken)
	assert.Equal(t, int64(5), r.Held, "holders keep their units after Break, and the reading counts them")
	assert.Zero(t, r.Available, "nothing is available once broken")
	set.Resize(2) // does nothing once broken
	a.Release()
	r = set.Reading()
	assert.Equal(t, int64(1), r.Held)
	b.Release()
}

// A set without a second level limits each key only: it reads as having no
// limit in total, not as a capacity of 0.
func TestReading_WithoutASecondLevelIsUnlimited(t *testing.T) {
	set := keyed.New(2, keyed.WithName("uploads"))
	u, err := set.Acquire(context.Background(), "alice", 1)
	require.NoError(t, err)
	defer u.Release()
	r := set.Reading()
	assert.True(t, r.Unlimited)
	assert.Equal(t, int64(1), r.Held)
}

// A key with markup and line breaks is quoted in the details' names, so it
// cannot pose as another detail.
func TestReading_QuotesKeysInItsDetails(t *testing.T) {
	set := keyed.New(1, keyed.WithLimit(4))
	u, ok := set.TryAcquire("a\n<b>\"", 1)
	require.True(t, ok)
	defer u.Release()
	assert.Equal(t, `key "a\n<b>\""`, set.Reading().Details[1].Name)
}

// Names, keys and Break's cause are values a user controls: the reading's
// details, the dump and the errors quote them, so that each stays one value
// on its line.
func TestReading_AndTheDumpQuoteEveryValueAUserGives(t *testing.T) {
	lines := func(v string) int {
		set := keyed.New(2, keyed.WithName(v), keyed.WithLimit(4))
		u, ok := set.TryAcquire(v, 1)
		require.True(t, ok)
		defer u.Release()
		return strings.Count(set.Diagnostics(0), "\n")
	}
	want := lines("plain")
	for _, h := range hostile.Texts {
		quoted := strconv.Quote(h.Value)
		set := keyed.New(2, keyed.WithName(h.Value), keyed.WithLimit(4))
		u, ok := set.TryAcquire(h.Value, 1)
		require.True(t, ok)
		dump := set.Diagnostics(0)
		assert.Equal(t, want, strings.Count(dump, "\n"), "%s:\n%s", h.Name, dump)
		assert.Contains(t, dump, "keyed "+quoted, h.Name)
		assert.Contains(t, dump, "most held by "+quoted, h.Name)
		assert.Equal(t, "key "+quoted, set.Reading().Details[1].Name, h.Name)

		set.Break(errors.New(h.Value))
		_, err := set.Acquire(context.Background(), h.Value, 1)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "for key "+quoted+": broken: "+quoted, h.Name)
		assert.NotContains(t, err.Error(), "\n", h.Name)
		assert.Equal(t, h.Value, set.Reading().Cause, h.Name)
		u.Release()
	}
}
