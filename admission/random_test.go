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

// shared is a pool of permits every goroutine of the randomized test may call
// into, so that the same permit is used, parked, readmitted and released from
// several goroutines at once, and keeps being called after its Release.
type shared struct {
	mu      sync.Mutex
	permits []*admission.Permit
	parked  []*admission.Parked
}

func (s *shared) add(p *admission.Permit) {
	s.mu.Lock()
	s.permits = append(s.permits, p)
	s.mu.Unlock()
}

func (s *shared) pick(rng *rand.Rand) *admission.Permit {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.permits) == 0 {
		return nil
	}
	return s.permits[rng.IntN(len(s.permits))]
}

func (s *shared) addParked(pk *admission.Parked) {
	s.mu.Lock()
	s.parked = append(s.parked, pk)
	s.mu.Unlock()
}

func (s *shared) pickParked(rng *rand.Rand) *admission.Parked {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.parked) == 0 {
		return nil
	}
	return s.parked[rng.IntN(len(s.parked))]
}

// expected reports whether err is one of the failures a request may meet in this
// test.
func expected(err error) bool {
	for _, e := range []error{semaphore.ErrQueueFull, semaphore.ErrShed, semaphore.ErrTimedOut, context.Canceled,
		admission.ErrMemoryLimit, admission.ErrEvicted, admission.ErrReleased} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// held is what one goroutine took through a permit and must give back.
type held struct {
	p      *admission.Permit
	memory int64
}

func TestRandomized_EveryPublicMethodFromManyGoroutinesLeavesNothingHeld(t *testing.T) {
	base := limits(6, 1<<20)
	c := admission.New(base, admission.WithName("random"), admission.WithCPUConcurrency(2), admission.WithMaxWaiters(32),
		admission.WithSerializeLimit(1.5), admission.WithKillLimit(3), admission.WithShedFactor(0.2))
	pool := &shared{}
	var wg sync.WaitGroup
	for g := range 12 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 99))
			var marks []func()
			var mine []held
			for range 300 {
				randomStep(t, c, pool, rng, &marks, &mine)
			}
			for _, done := range marks {
				done()
			}
			for _, h := range mine {
				h.p.Return(limits(0, h.memory))
			}
		})
	}
	wg.Wait()
	for _, p := range pool.permits {
		p.Release()
	}
	c.SetLimits(base)
	c.SetCPUConcurrency(2)

	st := c.Stats()
	assert.Equal(t, admission.Resources{}, st.Held, "everything came back")
	assert.Zero(t, st.CurrentPermits)
	assert.Zero(t, st.Waiters)
	assert.Zero(t, st.MemoryWaiters)
	assert.Zero(t, st.Inactive)
	assert.Zero(t, st.NeedCPUPermits)
	assert.Zero(t, st.AwaitingPermits)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := c.Acquire(ctx, "after", base.Memory)
	require.NoError(t, err, "the controller still admits:\n%s", c.Diagnostics(0))
	assert.Equal(t, admission.Active, p.State())
	p.Release()
	c.Break(nil)
	require.NoError(t, c.Drain(ctx))
	t.Logf("stats: %+v", st)
}

// randomStep calls one public method chosen by rng.
func randomStep(t *testing.T, c *admission.Controller, pool *shared, rng *rand.Rand, marks *[]func(), mine *[]held) {
	check := func(what string, err error) {
		if err != nil && !expected(err) {
			t.Errorf("%s: unexpected error: %v", what, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(3000))*time.Microsecond)
	defer cancel()
	if rng.IntN(8) == 0 {
		cancel() // also cancellations, some before the call
	}
	ops := []string{"scan", "get"}
	switch p := pool.pick(rng); rng.IntN(20) {
	case 0, 1:
		q, err := c.Acquire(ctx, ops[rng.IntN(2)], int64(rng.IntN(256<<10)), maybeNotShed(rng)...)
		check("Acquire", err)
		if err == nil {
			pool.add(q)
		}
	case 2:
		pool.add(c.Track("track"))
	case 3:
		check("Do", c.Do(ctx, "do", int64(rng.IntN(128<<10)), func(ctx context.Context, q *admission.Permit) error {
			done := q.NeedCPU()
			defer done()
			wait := q.Await()
			wait()
			return nil
		}))
	case 4:
		if p != nil {
			p.Release()
		}
	case 5:
		if len(*marks) >= 1 { // a mark is held for a few steps, not for the whole run
			(*marks)[0]()
			*marks = (*marks)[1:]
		}
		if p != nil {
			*marks = append(*marks, p.NeedCPU())
		}
	case 6:
		if p != nil {
			*marks = append(*marks, p.Await())
		}
	case 7:
		if n := len(*marks); n > 0 {
			i := rng.IntN(n)
			(*marks)[i]()
			(*marks)[i]() // idempotent
			*marks = append((*marks)[:i], (*marks)[i+1:]...)
		}
	case 8:
		if p != nil {
			mem := int64(rng.IntN(128 << 10))
			err := p.Consume(limits(0, mem))
			check("Consume", err)
			if err == nil {
				*mine = append(*mine, held{p, mem})
			}
		}
	case 9:
		if n := len(*mine); n > 0 {
			i := rng.IntN(n)
			(*mine)[i].p.Return(limits(0, (*mine)[i].memory))
			*mine = append((*mine)[:i], (*mine)[i+1:]...)
		}
	case 10:
		if p != nil {
			mem := int64(rng.IntN(128 << 10))
			err := p.RequestMemory(ctx, mem)
			check("RequestMemory", err)
			if err == nil {
				*mine = append(*mine, held{p, mem})
			}
		}
	case 11:
		if p != nil {
			p.ReleaseBase()
		}
	case 12:
		if p != nil {
			var opts []admission.ParkOption
			if rng.IntN(3) == 0 {
				opts = append(opts, admission.WithTTL(time.Duration(rng.IntN(2000))*time.Microsecond))
			}
			pk, err := c.Park(p, &closer{}, opts...)
			check("Park", err)
			if err == nil {
				pool.addParked(pk)
			}
		}
	case 13:
		if pk := pool.pickParked(rng); pk != nil {
			_, _ = pk.Resume()
			_ = pk.Evicted()
		}
	case 14:
		if p != nil {
			check("Readmit", p.Readmit(ctx, maybeNotShed(rng)...))
		}
	case 15:
		if rng.IntN(2) == 0 {
			c.EvictOne()
		} else {
			c.EvictWhere(func(op string) bool { return op == "scan" })
		}
	case 16:
		c.SetLimits(limits(int64(2+rng.IntN(8)), int64(512<<10+rng.IntN(1<<20))))
	case 17:
		c.SetCPUConcurrency(1 + rng.IntN(3))
		c.SetMaxWaiters(rng.IntN(40))
	case 18:
		_ = c.Stats()
		_ = c.Diagnostics(rng.IntN(4))
	case 19:
		if p != nil {
			_ = p.State()
			_ = p.Consumed()
			_ = p.Op()
		}
	}
}

func maybeNotShed(rng *rand.Rand) []admission.PermitOption {
	if rng.IntN(4) == 0 {
		return []admission.PermitOption{admission.NotShed()}
	}
	return nil
}
