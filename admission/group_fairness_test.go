package admission_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore/admission"
)

// Two members at shares 3:1, both saturated (far more requests than fit), with a
// shared pool they both borrow from: the memory-time they are admitted, summed
// over permits as memory x time held on synctest's fake clock, converges to 3:1.
// The shares give 3:1 by construction; the pool keeps it because it goes to the
// claimant borrowing least per share. Tolerance: 5%.
func TestGroup_SaturatedMembersGetMemoryTimeInProportionToTheirShares(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := admission.NewGroup(limits(1000, 1000), admission.WithName("fair"), admission.WithSharedPool(0.2))
		members := []*admission.Controller{g.Add("three", 3), g.Add("one", 1)}
		var mu sync.Mutex
		memoryTime := make([]float64, len(members)) // byte-seconds
		const run = 3 * time.Second
		deadline := time.Now().Add(run)
		var wg sync.WaitGroup
		for i, m := range members {
			for w := range 60 { // 60 x 25 bytes: each member wants more than the total
				wg.Go(func() {
					hold := time.Duration(5+w%7) * time.Millisecond
					for time.Now().Before(deadline) {
						p, err := m.Acquire(t.Context(), "work", 25)
						if err != nil {
							t.Errorf("acquire: %v", err)
							return
						}
						start := time.Now()
						time.Sleep(hold)
						mem := float64(p.Consumed().Memory)
						p.Release()
						mu.Lock()
						memoryTime[i] += mem * time.Since(start).Seconds()
						mu.Unlock()
					}
				})
			}
		}
		wg.Wait()
		st := g.Stats()
		require.Zero(t, st.Borrowed)
		ratio := memoryTime[0] / memoryTime[1]
		t.Logf("memory-time %.1f : %.1f byte-seconds, ratio %.3f", memoryTime[0], memoryTime[1], ratio)
		assert.InDelta(t, 3.0, ratio, 3*0.05, "3:1 within 5%%")
		// Both borrowed all along: on average they held the whole budget.
		average := (memoryTime[0] + memoryTime[1]) / run.Seconds()
		assert.InDelta(t, 1000, average, 1000*0.03, "the budget was used whole")
	})
}
