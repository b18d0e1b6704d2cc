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

// A randomized run: 120 requests of mixed sizes acquire, need CPU and await,
// consume and return memory, park and resume or get evicted and readmit, while a
// chaos goroutine evicts and changes limits. Every request must finish, and the
// resources must return exactly to the limits.
func TestForwardProgress_RandomizedPermitsAllFinishAndResourcesReturn(t *testing.T) {
	c := admission.New(limits(8, 1<<20), admission.WithName("progress"),
		admission.WithCPUConcurrency(2), admission.WithMaxWaiters(200),
		admission.WithSerializeLimit(2), admission.WithKillLimit(4))
	stop := make(chan struct{})
	var chaos sync.WaitGroup
	chaos.Go(func() {
		rng := rand.New(rand.NewPCG(7, 7))
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(rng.IntN(200)) * time.Microsecond):
			}
			switch rng.IntN(4) {
			case 0:
				c.EvictOne()
			case 1:
				c.EvictWhere(func(op string) bool { return op == "scan" })
			case 2:
				c.SetLimits(limits(int64(4+rng.IntN(8)), int64(512<<10+rng.IntN(1<<20))))
			case 3:
				c.SetCPUConcurrency(1 + rng.IntN(3))
			}
		}
	})

	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[string]int{}
	for i := range 120 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			outcome := runRequest(t, c, rng)
			mu.Lock()
			outcomes[outcome]++
			mu.Unlock()
		})
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(60 * time.Second):
		t.Fatalf("no forward progress:\n%s", c.Diagnostics(0))
	}
	close(stop)
	chaos.Wait()
	c.SetLimits(limits(8, 1<<20))

	st := c.Stats()
	assert.Equal(t, admission.Resources{}, st.Held, "resources return exactly to the limits")
	assert.Zero(t, st.CurrentPermits)
	assert.Zero(t, st.Waiters)
	assert.Zero(t, st.MemoryWaiters)
	assert.Zero(t, st.Inactive)
	assert.Zero(t, st.NeedCPUPermits)
	assert.Zero(t, st.AwaitingPermits)
	assert.Positive(t, outcomes["done"], "outcomes: %v", outcomes)
	c.Break(nil)
	require.NoError(t, c.Drain(context.Background()))
	t.Logf("outcomes %v; evictions %d, shed %d, timed out %d", outcomes, st.PermitEvictions, st.Shed, st.TimedOut)
}

// runRequest plays one request's life and returns how it ended.
func runRequest(t *testing.T, c *admission.Controller, rng *rand.Rand) string {
	ops := []string{"scan", "get", "write"}
	op := ops[rng.IntN(len(ops))]
	ctx := context.Background()
	if rng.IntN(3) == 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(1+rng.IntN(20))*time.Millisecond)
		defer cancel()
	}
	p, err := c.Acquire(ctx, op, int64(rng.IntN(256<<10)))
	if err != nil {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, semaphore.ErrQueueFull) && !errors.Is(err, semaphore.ErrShed) {
			t.Errorf("unexpected admission error: %v", err)
		}
		return "refused"
	}
	defer p.Release()
	for range 1 + rng.IntN(4) {
		doneCPU := p.NeedCPU()
		if rng.IntN(2) == 0 {
			doneAwait := p.Await()
			time.Sleep(time.Duration(rng.IntN(100)) * time.Microsecond)
			doneAwait()
		}
		mem := int64(rng.IntN(64 << 10))
		if p.Consume(limits(0, mem)) == nil {
			p.Return(limits(0, mem))
		}
		doneCPU()
		if rng.IntN(3) == 0 {
			rctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
			if p.RequestMemory(rctx, int64(rng.IntN(128<<10))) == nil && rng.IntN(2) == 0 {
				p.ReleaseBase()
			}
			cancel()
		}
		if rng.IntN(2) == 0 {
			pk, err := c.Park(p, &closer{})
			if err != nil {
				t.Errorf("park: %v", err)
				return "failed"
			}
			time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
			if _, ok := pk.Resume(); !ok {
				rctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
				err := p.Readmit(rctx)
				cancel()
				if err != nil {
					return "evicted"
				}
			}
		}
	}
	return "done"
}
