package keyed

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A call that loaded an entry just before it became another key's takes no
// reference on it for its own key: it finds the other key's entry, or one
// whose hash alone matches, and leaves its references as they were.
func TestLookup_AnEntryThatBecameAnotherKeysIsNotTaken(t *testing.T) {
	s := New(1)
	u, ok := s.TryAcquire("b", 1)
	require.True(t, ok)
	e := u.e
	require.Equal(t, int32(1), e.refs.Load())
	hA, _ := s.shardOf("a")
	assert.False(t, s.refFor(e, hA, "a"), "another key's entry, its hash differing")
	assert.False(t, s.refFor(e, e.hash.Load(), "a"), "another key's entry, its hash the same")
	assert.Equal(t, int32(1), e.refs.Load(), "the references taken were dropped")
	assert.True(t, s.refFor(e, e.hash.Load(), "b"))
	s.leave(e)
	u.Release()
	assert.Zero(t, s.activeKeys())
	assert.False(t, s.refFor(e, e.hash.Load(), "b"), "an entry with no reference left is not in the table")
}

// An entry is 128 bytes, a size the allocator places on a 128-byte boundary,
// and what a call on an active key touches is in its first 64 bytes: refs,
// hash, key, acquired, second, and the semaphore's first two words (its state
// and capacity, which its lock-free acquire and release read).
func TestEntryLayout(t *testing.T) {
	var e entry
	assert.Equal(t, uintptr(128), unsafe.Sizeof(e), "the size of an entry")
	assert.LessOrEqual(t, unsafe.Offsetof(e.sem)+16, uintptr(64), "the semaphore's state and capacity in the first cache line")
	assert.Less(t, unsafe.Offsetof(e.second), unsafe.Offsetof(e.sem))
	assert.Less(t, unsafe.Offsetof(e.acquired), unsafe.Offsetof(e.sem))
}
