package semaphore

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A waiter costs 64 bytes, one size class, with diagnostics on or off: what
// diagnostics add is kept beside the list, not in the node.
func TestWaiter_Is64Bytes(t *testing.T) {
	assert.Equal(t, uintptr(64), unsafe.Sizeof(waiter{}))
}

// Signalling the Cond outside the lock can lose a wakeup, too rarely for a stress
// test to see; race-enabled builds, where the tests run, catch every such Signal.
func TestSignalLocked_PanicsWithoutTheLockInRaceBuilds(t *testing.T) {
	if !checkLocks {
		t.Skip("the check is made in race-enabled builds only")
	}
	s := New(1, WithName("sig"))
	s.extra() // made by the first waiter, before any Signal
	assert.PanicsWithValue(t, `semaphore "sig": Cond signalled without holding the lock`, s.signalLocked)
	s.mu.Lock()
	assert.NotPanics(t, s.signalLocked)
	s.mu.Unlock()
}

// The deadline heap, against a sorted slice: pushes and removals from anywhere, in
// random order, keep the earliest deadline first and every slot pointing at its
// waiter.
func TestDeadlineHeap_RemovingFromAnywhereKeepsTheEarliestFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 40 {
		var h deadlineHeap
		var in []*waiter
		deadlines := map[*waiter]time.Duration{}
		for range 200 {
			if len(in) == 0 || rng.IntN(3) != 0 {
				w := &waiter{}
				deadlines[w] = time.Duration(rng.IntN(50))
				h.push(w, deadlines[w])
				in = append(in, w)
			} else {
				i := rng.IntN(len(in))
				h.remove(in[i])
				require.Zero(t, in[i].slot, "round %d: a removed waiter keeps no slot", round)
				in = slices.Delete(in, i, i+1)
			}
			require.Len(t, h, len(in))
			for i, e := range h { // plain checks: require here would dominate the run time
				if e.w.slot != i+1 {
					t.Fatalf("round %d: heap[%d] has slot %d", round, i, e.w.slot)
				}
				if e.deadline != deadlines[e.w] {
					t.Fatalf("round %d: heap[%d] has another waiter's deadline", round, i)
				}
				if i > 0 && h[(i-1)/2].deadline > e.deadline {
					t.Fatalf("round %d: heap order broken at %d", round, i)
				}
			}
			if len(in) > 0 {
				earliest := slices.MinFunc(in, func(a, b *waiter) int { return int(deadlines[a] - deadlines[b]) })
				require.Equal(t, deadlines[earliest], h[0].deadline, "round %d", round)
			}
		}
	}
}
