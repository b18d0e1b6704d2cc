package admission_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/admission"
)

// A randomized run across a group: 150 requests spread over three members (each
// one's life as in the single-controller run: CPU marks, Consume, RequestMemory,
// Park, eviction, Readmit) borrow from a shared pool, while a chaos goroutine
// re-splits the group (SetShares, SetTotal), evicts, and removes a fourth member
// whose own requests are failing with semaphore.ErrBroken. Every request must finish,
// the split must add up at every step, and every member's resources and the
// pool must return exactly to zero.
func TestGroup_ForwardProgressWithBorrowingAndLiveResharing(t *testing.T) {
	g := admission.NewGroup(limits(6, 2<<20), admission.WithName("progress"), admission.WithSharedPool(0.25))
	var members []*admission.Controller
	for i, name := range []string{"a", "b", "c"} {
		members = append(members, g.Add(name, int64(i+1), admission.WithCPUConcurrency(2),
			admission.WithMaxWaiters(100), admission.WithSerializeLimit(2), admission.WithKillLimit(4)))
	}
	temp := g.Add("temp", 2)

	stop := make(chan struct{})
	var chaos sync.WaitGroup
	chaos.Go(func() {
		rng := rand.New(rand.NewPCG(11, 11))
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(rng.IntN(200)) * time.Microsecond):
			}
			switch rng.IntN(4) {
			case 0:
				g.SetShares(members[rng.IntN(len(members))], int64(1+rng.IntN(5)))
			case 1:
				g.SetTotal(limits(int64(3+rng.IntN(6)), int64(1<<20+rng.IntN(2<<20))))
			case 2:
				members[rng.IntN(len(members))].EvictOne()
			case 3:
				if i > 50 {
					g.Remove(temp)
				}
			}
			checkSplit(t, g)
		}
	})

	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[string]int{}
	for i := range 150 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 2))
			outcome := runRequest(t, members[i%len(members)], rng)
			mu.Lock()
			outcomes[outcome]++
			mu.Unlock()
		})
	}
	for i := range 30 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(1+i%5)*time.Millisecond)
			defer cancel()
			p, err := temp.Acquire(ctx, "temp", int64(i)<<14)
			if err != nil {
				// Shed: the deadline rule found too little of its deadline left.
				if !errors.Is(err, semaphore.ErrBroken) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, semaphore.ErrShed) {
					t.Errorf("temp: unexpected error: %v", err)
				}
				return
			}
			if p.Consume(limits(0, 64<<10)) == nil {
				time.Sleep(time.Duration(i) * 10 * time.Microsecond)
			}
			p.Release()
		})
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(60 * time.Second):
		t.Fatalf("no forward progress:\n%s", g.Diagnostics(0))
	}
	close(stop)
	chaos.Wait()
	g.Remove(temp)
	require.NoError(t, temp.Drain(context.Background()))

	st := g.Stats()
	assert.Zero(t, st.Borrowed, "everything borrowed went back to the pool")
	assert.Len(t, st.Members, 3, "the removed member left once drained")
	for _, m := range st.Members {
		assert.Equal(t, admission.Resources{}, m.Held, "member %s", m.Name)
		assert.Zero(t, m.CurrentPermits, "member %s", m.Name)
		assert.Zero(t, m.Waiters+m.MemoryWaiters+m.Inactive, "member %s", m.Name)
		assert.Zero(t, m.NeedCPUPermits, "member %s", m.Name)
	}
	assert.Positive(t, outcomes["done"], "outcomes: %v", outcomes)
	for _, m := range members {
		m.Break(nil)
		require.NoError(t, m.Drain(context.Background()))
	}
	t.Logf("outcomes %v", outcomes)
}
